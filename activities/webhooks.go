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

// DeliveryStarter starts the workflows of deliveries whose start a commit has just made owed
// (engine.Outbox.StartOwedDeliveries). What it cannot start, the outbox sweep starts.
type DeliveryStarter interface {
	StartOwedDeliveries(ctx context.Context, owed []models.WebhookDelivery)
}

// recorder records webhook events with the activities' URL signing.
func (a *Activities) recorder() webhooks.Recorder {
	return webhooks.Recorder{Signer: a.Signer, Files: a.Files, DownloadTTL: a.DownloadTTL}
}

// startDeliveries starts owed deliveries after the commit that recorded them.
func (a *Activities) startDeliveries(ctx context.Context, owed []models.WebhookDelivery) {
	if len(owed) > 0 && a.Deliveries != nil {
		a.Deliveries.StartOwedDeliveries(ctx, owed)
	}
}

// RecordJobWebhook records the events of a terminal job run (a local activity) and starts their
// deliveries (webhooks.Recorder.RecordJobEnd). Event IDs are derived from the job, run and event,
// so a retried or replayed call records nothing new. Workflows call it only in runs started in the
// shapes before JobShapeQuiet, after EndJob or CompleteJob; FinishJob records in the same
// transaction as the job's end. Its result never asks the workflow to start a delivery.
func (a *Activities) RecordJobWebhook(ctx context.Context, in contract.RecordWebhookInput) (contract.RecordWebhookResult, error) {
	owed, err := a.recordJobEnd(ctx, a.Store, in, nil)
	if err != nil {
		return contract.RecordWebhookResult{}, err
	}
	a.startDeliveries(ctx, owed)
	return contract.RecordWebhookResult{}, nil
}

// recordJobEnd records the events of the terminal run of in through st (a transaction of the
// caller's, or none), of job, the job of in as st has just left it, when not nil (it is not read
// again), else of the job read by its ID. A run that is not terminal is a non-retryable
// contract.ErrTypeWebhookJobNotTerminal.
func (a *Activities) recordJobEnd(ctx context.Context, st *models.Store, in contract.RecordWebhookInput, job *models.Job) ([]models.WebhookDelivery, error) {
	var (
		owed []models.WebhookDelivery
		err  error
	)
	if job != nil {
		owed, err = a.recorder().RecordJobEnd(ctx, st, job, in.Run)
	} else {
		owed, err = a.recorder().RecordJobEndByID(ctx, st, in.JobID, in.Run)
	}
	if errors.Is(err, webhooks.ErrJobNotTerminal) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeWebhookJobNotTerminal, nil)
	}
	return owed, err
}

// DeliverWebhook makes one attempt: it POSTs the delivery's body, in its current shape (a body
// recorded in the earlier shape is rewritten, webhooks.CurrentPayload), signed with every secret
// of the endpoint valid now (its own, or its installation's), to the endpoint's current URL, and
// records the attempt with the endpoint's failure streak; an attempt that disables the endpoint
// records endpoint.disabled for the scope's other endpoints. A disabled endpoint gets no attempt:
// the delivery is held and the run stops; a deleted one fails the delivery, and an attempt made
// while its endpoint was being deleted ends the delivery and the run too. A database that cannot
// be reached is ErrTypeDependencyUnavailable (the workflow waits for it and makes the same attempt
// again); other errors (secrets) are worth a few retries; an unknown delivery is a non-retryable
// error.
func (a *Activities) DeliverWebhook(ctx context.Context, in contract.DeliverInput) (contract.DeliverResult, error) {
	dctx, cancel := bounded(ctx)
	defer cancel()
	t, err := a.Store.LoadDeliveryTarget(dctx, in.DeliveryID)
	if errors.Is(err, models.ErrNotFound) {
		return contract.DeliverResult{}, temporal.NewNonRetryableApplicationError("no webhook delivery "+in.DeliveryID, contract.ErrTypeWebhookDeliveryNotFound, err)
	}
	if err != nil {
		return contract.DeliverResult{}, unavailable(contract.DependencyDatabase, err)
	}
	d, ep := &t.Delivery, t.Endpoint
	if d.Status == models.WebhookDelivered && !in.Replay {
		// A retry of an attempt whose success was recorded but not reported: do not send again.
		res := contract.DeliverResult{Delivered: true}
		if d.LastStatusCode != nil {
			res.StatusCode = *d.LastStatusCode
		}
		return res, nil
	}
	if stopped, err := a.stopAt(dctx, d, ep); stopped || err != nil {
		return contract.DeliverResult{Stopped: stopped}, err
	}
	var inst *models.Installation
	if d.InstallationID != nil {
		if inst, err = a.Store.GetInstallation(dctx, *d.InstallationID); errors.Is(err, models.ErrNotFound) {
			return contract.DeliverResult{}, fmt.Errorf("installation %s of delivery %s: %w", d.Installation(), d.ID, err)
		} else if err != nil {
			return contract.DeliverResult{}, unavailable(contract.DependencyDatabase, fmt.Errorf("load installation: %w", err))
		}
	}
	// A delivery recorded before the payload's current shape is sent in it (docs/webhooks.md), in the
	// mode of its scope when it predates livemode.
	body, err := webhooks.CurrentPayload(t.Body, func() (bool, error) {
		if inst != nil {
			return !inst.TestMode, nil
		}
		test, err := a.Store.AccountTestMode(dctx, d.AccountID)
		if err != nil && !errors.Is(err, models.ErrNotFound) {
			return false, unavailable(contract.DependencyDatabase, fmt.Errorf("load account: %w", err))
		}
		return !test, err
	})
	if err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			return contract.DeliverResult{}, app
		}
		return contract.DeliverResult{}, fmt.Errorf("payload of delivery %s: %w", d.ID, err)
	}
	started := time.Now()
	var out webhooks.Outcome
	target, endpointID := d.CallbackURL, ""
	if ep == nil {
		out.Err = errors.New("recorded before endpoints for an installation without a callback URL: it has no endpoint to go to")
	} else {
		// The endpoint's current URL: a client who fixed a broken one expects retries and replays to go there.
		target, endpointID = ep.URL, ep.ID
		secrets, err := models.EndpointSecrets(a.Secrets, ep, inst, started)
		if err != nil {
			return contract.DeliverResult{}, err
		}
		out = a.Webhooks.Send(ctx, webhooks.Message{URL: target, ID: d.EventID, Timestamp: started, Secrets: secrets, Body: body})
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
	ended, err := a.recordAttempt(ctx, d, endpointID, rec)
	if err != nil {
		return contract.DeliverResult{}, err
	}
	switch {
	case rec.Delivered:
		a.Metrics.WebhookDeliveryEnded(models.WebhookDelivered)
	case ended:
		// The endpoint was deleted while the request was under way: the delivery is failed, and
		// nothing more is sent.
		a.Metrics.WebhookDeliveryEnded(models.WebhookFailed)
		return contract.DeliverResult{Stopped: true, StatusCode: out.StatusCode}, nil
	default:
		a.Log.Info("webhook attempt failed", zap.String("delivery_id", d.ID), zap.String("endpoint_id", endpointID),
			zap.Int("attempt", in.Attempt), zap.Bool("replay", in.Replay), zap.Int("status_code", out.StatusCode),
			zap.String("error", rec.Error))
	}
	return contract.DeliverResult{Delivered: rec.Delivered, StatusCode: out.StatusCode, RetryAfter: out.RetryAfter}, nil
}

// stopAt holds the delivery when its endpoint is disabled, and fails it when the endpoint was
// deleted; stopped reports either.
func (a *Activities) stopAt(ctx context.Context, d *models.WebhookDelivery, ep *models.WebhookEndpoint) (stopped bool, err error) {
	switch {
	case ep == nil:
		return false, nil
	case ep.DeletedAt != nil:
		var ended bool
		if ended, err = a.Store.FailDelivery(ctx, d.ID, models.EndpointDeletedError); ended {
			a.Metrics.WebhookDeliveryEnded(models.WebhookFailed)
		}
	case ep.Status != models.EndpointEnabled:
		// Held, or failed when the endpoint was deleted since it was read; "" when a repeated
		// call found it so already (counted then).
		var ended string
		if ended, err = a.Store.HoldDelivery(ctx, d.ID, ep.ID); ended != "" {
			a.Metrics.WebhookDeliveryEnded(ended)
		}
	default:
		return false, nil
	}
	if err != nil {
		return false, unavailable(contract.DependencyDatabase, fmt.Errorf("stop delivery %s: %w", d.ID, err))
	}
	return true, nil
}

// recordAttempt records an attempt, and when it disabled its endpoint, endpoint.disabled in the
// same transaction; it starts that event's deliveries after the commit and counts and logs the
// disabling. ended reports a failed attempt that ended its delivery, its endpoint deleted.
func (a *Activities) recordAttempt(ctx context.Context, d *models.WebhookDelivery, endpointID string, rec models.AttemptRecord) (ended bool, err error) {
	rctx, cancel := bounded(ctx)
	defer cancel()
	var owed []models.WebhookDelivery
	var disabled *models.WebhookEndpoint
	err = a.Store.Tx(rctx, func(tx *models.Store) error {
		eff, err := tx.RecordAttempt(rctx, d.ID, endpointID, rec, a.DisableAfter)
		ended = eff.Ended
		if err != nil || eff.Disabled == nil {
			return err
		}
		disabled = eff.Disabled
		owed, err = webhooks.RecordEndpointDisabled(rctx, tx, eff.Disabled)
		return err
	})
	if err != nil {
		return false, unavailable(contract.DependencyDatabase, fmt.Errorf("record attempt: %w", err))
	}
	if disabled != nil {
		a.Metrics.WebhookEndpointDisabled()
		a.Log.Warn("webhook endpoint disabled: every attempt failed for the disable window",
			zap.String("endpoint_id", disabled.ID), zap.String("url", webhooks.LoggableURL(disabled.URL)),
			zap.Timep("failing_since", disabled.FailingSince), zap.Duration("window", a.DisableAfter))
		a.startDeliveries(ctx, owed)
	}
	return ended, nil
}

// MarkWebhookFailed records that a delivery's run gave up after its last attempt (a local activity).
func (a *Activities) MarkWebhookFailed(ctx context.Context, deliveryID string) error {
	ended, err := a.Store.MarkWebhookFailed(ctx, deliveryID)
	if err != nil {
		return err
	}
	if ended { // not when a retry of this activity finds it failed already: counted once
		a.Metrics.WebhookDeliveryEnded(models.WebhookFailed)
	}
	return nil
}

// webhookErrorText bounds the error text stored with an attempt.
func webhookErrorText(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	return strings.ToValidUTF8(s[:maxErrorText], "") + "…"
}
