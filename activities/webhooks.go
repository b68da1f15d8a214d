package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

// maxErrorText bounds the error text stored with an attempt, in bytes.
const maxErrorText = 500

// RecordJobWebhook creates the delivery row of a terminal job run, with the payload fixed at
// this moment (a local activity). Its ID is derived from the job, run and event and the insert
// ignores conflicts, so a retried or replayed call returns the same delivery and creates nothing.
// Workflows call it only in runs started in the shapes before JobShapeQuiet, after EndJob or
// CompleteJob; FinishJob records in the same transaction as the job's end. The recording itself is
// webhooks.RecordJobDelivery, which support's re-drive of a stranded job calls too.
func (a *Activities) RecordJobWebhook(ctx context.Context, in contract.RecordWebhookInput) (contract.RecordWebhookResult, error) {
	return a.recordJobWebhook(ctx, a.Store, in)
}

// recordJobWebhook is RecordJobWebhook through st (a transaction of the caller's, or none). A run
// that is not terminal is a non-retryable contract.ErrTypeWebhookJobNotTerminal.
func (a *Activities) recordJobWebhook(ctx context.Context, st *models.Store, in contract.RecordWebhookInput) (contract.RecordWebhookResult, error) {
	return a.recordJobWebhookOf(ctx, st, in, nil)
}

// recordJobWebhookOf is recordJobWebhook of job, the job of in as st has just left it, when not nil
// (it is not read again), else of the job read by its ID.
func (a *Activities) recordJobWebhookOf(ctx context.Context, st *models.Store, in contract.RecordWebhookInput, job *models.Job) (contract.RecordWebhookResult, error) {
	var (
		rec webhooks.RecordedDelivery
		err error
	)
	if job != nil {
		rec, err = webhooks.RecordJobDeliveryOf(ctx, st, a.Signer, a.DownloadTTL, job, in.Run)
	} else {
		rec, err = webhooks.RecordJobDelivery(ctx, st, a.Signer, a.DownloadTTL, in.JobID, in.Run)
	}
	if errors.Is(err, webhooks.ErrJobNotTerminal) {
		return contract.RecordWebhookResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeWebhookJobNotTerminal, nil)
	}
	if err != nil {
		return contract.RecordWebhookResult{}, err
	}
	return contract.RecordWebhookResult{DeliveryID: rec.DeliveryID, Deliver: rec.Deliver, AccountID: rec.AccountID,
		InstallationID: rec.InstallationID, OrderID: rec.OrderID}, nil
}

// DeliverWebhook makes one attempt: it POSTs the delivery's payload, in its current shape (a
// payload recorded in the earlier shape is rewritten, webhooks.CurrentPayload), signed with every
// secret of the installation that is valid now, to the installation's callback URL, and records
// the attempt. A database that cannot be reached is ErrTypeDependencyUnavailable (the workflow waits
// for it and makes the same attempt again); other errors (secrets) are worth a few retries; an
// unknown delivery is a non-retryable error.
func (a *Activities) DeliverWebhook(ctx context.Context, in contract.DeliverInput) (contract.DeliverResult, error) {
	dctx, cancel := bounded(ctx)
	defer cancel()
	d, err := a.Store.GetWebhookDelivery(dctx, in.DeliveryID)
	if errors.Is(err, models.ErrNotFound) {
		return contract.DeliverResult{}, temporal.NewNonRetryableApplicationError("no webhook delivery "+in.DeliveryID, contract.ErrTypeWebhookDeliveryNotFound, err)
	}
	if err != nil {
		return contract.DeliverResult{}, unavailable(contract.DependencyDatabase, err)
	}
	if d.Status == models.WebhookDelivered && !in.Replay {
		// A retry of an attempt whose success was recorded but not reported: do not send again.
		res := contract.DeliverResult{Delivered: true}
		if d.LastStatusCode != nil {
			res.StatusCode = *d.LastStatusCode
		}
		return res, nil
	}
	inst, err := a.Store.GetInstallation(dctx, d.Installation())
	if errors.Is(err, models.ErrNotFound) {
		return contract.DeliverResult{}, fmt.Errorf("installation %s of delivery %s: %w", d.Installation(), d.ID, err)
	}
	if err != nil {
		return contract.DeliverResult{}, unavailable(contract.DependencyDatabase, fmt.Errorf("load installation: %w", err))
	}
	// A delivery recorded before the payload's current shape is sent in it (docs/webhooks.md).
	body, err := webhooks.CurrentPayload(d.Payload)
	if err != nil {
		return contract.DeliverResult{}, fmt.Errorf("payload of delivery %s: %w", d.ID, err)
	}
	started := time.Now()
	secrets, err := models.WebhookSecrets(a.Secrets, inst, started)
	if err != nil {
		return contract.DeliverResult{}, err
	}
	// The installation's current URL: a merchant who fixed a broken endpoint expects retries
	// and replays to go there.
	target := inst.CallbackURL
	var out webhooks.Outcome
	if target == "" {
		target = d.CallbackURL
		out.Err = errors.New("the installation no longer has a callback URL")
	} else {
		out = a.Webhooks.Send(ctx, webhooks.Message{
			URL: target, ID: d.ID, Timestamp: started, Secrets: secrets, Body: body,
		})
	}
	rec := models.AttemptRecord{
		Attempt: in.Attempt, Replay: in.Replay, CallbackURL: target, StartedAt: started, StatusCode: out.StatusCode,
		Latency: out.Latency, Delivered: out.Delivered(),
	}
	outcome := metrics.WebhookDelivered
	switch {
	case out.Err != nil:
		rec.Error = webhookErrorText(out.Err.Error())
		outcome = metrics.WebhookUnreachable
	case !rec.Delivered:
		rec.Error = fmt.Sprintf("HTTP %d", out.StatusCode)
		outcome = metrics.WebhookRejected
	}
	a.Metrics.WebhookAttempt(outcome, out.Latency)
	if !rec.Delivered && in.NextDelay > 0 {
		next := started.Add(max(in.NextDelay, out.RetryAfter)).UTC()
		rec.NextAttemptAt = &next
	}
	rctx, cancelRecord := bounded(ctx)
	defer cancelRecord()
	if err := a.Store.RecordWebhookAttempt(rctx, d.ID, rec); err != nil {
		return contract.DeliverResult{}, unavailable(contract.DependencyDatabase, fmt.Errorf("record attempt: %w", err))
	}
	if !rec.Delivered {
		a.Log.Info("webhook attempt failed", zap.String("delivery_id", d.ID), zap.Int("attempt", in.Attempt),
			zap.Bool("replay", in.Replay), zap.Int("status_code", out.StatusCode), zap.String("error", rec.Error))
	}
	return contract.DeliverResult{Delivered: rec.Delivered, StatusCode: out.StatusCode, RetryAfter: out.RetryAfter}, nil
}

// MarkWebhookFailed records that a delivery's run gave up after its last attempt (a local activity).
func (a *Activities) MarkWebhookFailed(ctx context.Context, deliveryID string) error {
	return a.Store.MarkWebhookFailed(ctx, deliveryID)
}

// webhookErrorText bounds the error text stored with an attempt.
func webhookErrorText(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	return strings.ToValidUTF8(s[:maxErrorText], "") + "…"
}
