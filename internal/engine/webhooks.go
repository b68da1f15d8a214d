package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// Sealer encrypts secrets at rest (secrets.Box): webhook secrets, and recorded answers that show
// one.
type Sealer interface {
	Seal(plaintext string) string
	Open(sealed string) (string, error)
}

// retryReplayAfter is the Retry-After of a replay that could not be queued or started.
const retryReplayAfter = 5 * time.Second

// errReplayNotQueued wraps the error of a replay the store did not queue (Store.QueueReplay
// failed: the database unavailable, the delivery gone): nothing changed, unlike a replay queued
// whose start failed, which the outbox sweep starts.
var errReplayNotQueued = errors.New("replay not queued")

// ReplayWebhook re-sends a webhook delivery of the scope now (StartWebhookReplay), the same use
// case for both APIs (POST /webhooks/{delivery_id}/replay of the plugin API,
// POST /webhook-deliveries/{id}/replay of the external API), and returns the delivery as it is once
// the replay is queued: pending, unless the new run's first attempt was already recorded.
// KindNotFound for a missing delivery or another scope's; KindConflict for one whose endpoint is
// disabled (it would be held, not sent) or deleted, or that has no endpoint; KindUnavailable when
// the replay could not be queued (nothing changed: a retry queues it) or was queued and could not
// be started (it stays queued: the outbox sweep starts it).
func (e *Webhooks) ReplayWebhook(ctx context.Context, scope WebhookScope, deliveryID string) (WebhookDelivery, error) {
	d, err := e.store.ScopedWebhookDelivery(ctx, scope.store(), deliveryID)
	if errors.Is(err, models.ErrNotFound) {
		return WebhookDelivery{}, refuse(KindNotFound, "", "", "No webhook delivery with this ID.")
	}
	if err != nil {
		return WebhookDelivery{}, err
	}
	if err := e.replayable(ctx, &d.Delivery); err != nil {
		return WebhookDelivery{}, err
	}
	if err := replayStartRefusal(e.StartWebhookReplay(ctx, &d.Delivery)); err != nil {
		return WebhookDelivery{}, err
	}
	return e.GetDelivery(ctx, scope, d.Delivery.ID)
}

// replayStartRefusal is what a replay answers when StartWebhookReplay failed (nil when it did
// not), the same for both APIs and `shotflow admin webhooks replay`: KindConflict when the
// endpoint was deleted since the replay checked it; KindUnavailable when the replay could not be
// queued (nothing changed: a retry queues it) or was queued and could not be started (it stays
// queued: the outbox sweep starts it).
func replayStartRefusal(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, models.ErrEndpointDeleted):
		return replayEndpointDeleted()
	case errors.Is(err, errReplayNotQueued):
		return unavailable("The replay could not be queued now; nothing changed, so retry it.", retryReplayAfter, err)
	default:
		return unavailable("The replay could not be started now; the delivery stays pending and is sent once the service recovers, and a retry is harmless.", retryReplayAfter, err)
	}
}

// replayable checks that a delivery's endpoint can receive a replay: KindConflict when it was
// deleted, or is disabled (the replay would be held, not sent), and when the delivery has none
// (recorded before endpoints, migration 0016, for an installation without a callback URL; its
// every attempt fails for want of a URL). Both APIs' replays answer that refusal, so its message
// says why only of an installation's delivery: an account's own (the external API's) always has an
// endpoint, and the account was never asked for a callback URL.
func (e *Webhooks) replayable(ctx context.Context, d *models.WebhookDelivery) error {
	if d.EndpointID == nil {
		if d.InstallationID == nil {
			return refuse(KindConflict, "", "", "The delivery has no endpoint, so nothing can receive it.")
		}
		return refuse(KindConflict, "", "",
			"The delivery was recorded before webhook endpoints existed, for an installation without a callback URL: it has no endpoint, so nothing can receive it.")
	}
	scope := models.WebhookScope{AccountID: d.AccountID}
	if d.InstallationID != nil {
		scope.InstallationID = *d.InstallationID
	}
	ep, err := e.store.WebhookEndpoint(ctx, scope, *d.EndpointID)
	if errors.Is(err, models.ErrNotFound) {
		return replayEndpointDeleted()
	}
	if err != nil {
		return err
	}
	if ep.Status != models.EndpointEnabled {
		return refuse(KindConflict, "", "", "The delivery's endpoint is disabled; enable it (PATCH /webhook-endpoints/{id} status=enabled), then replay or recover.")
	}
	return nil
}

// replayEndpointDeleted refuses the replay of a delivery whose endpoint was deleted.
func replayEndpointDeleted() *Error {
	return refuse(KindConflict, "", "", "The delivery's endpoint was deleted; nothing can receive it.")
}

// StartWebhookReplay queues the delivery again (Store.QueueReplay: pending, its start owed) and
// starts a new run of its WebhookDeliveryWorkflow: it sends the stored payload now, with the same
// webhook-id and a new timestamp, and retries on the usual schedule if needed. The start is
// recorded after it; a start that fails, or whose record fails, is left to the outbox sweep
// (StartPendingDeliveries), so a queued replay is sent even when Temporal is away. A delivery
// whose endpoint was deleted since the caller checked it is not queued (models.ErrEndpointDeleted)
// and nothing starts. Any error of the queueing wraps errReplayNotQueued: nothing changed. Both
// APIs' replays (ReplayWebhook) and `shotflow admin webhooks replay` come here.
func (e *Webhooks) StartWebhookReplay(ctx context.Context, d *models.WebhookDelivery) error {
	if err := e.store.QueueReplay(ctx, d.ID, time.Now()); err != nil {
		return fmt.Errorf("queue delivery %s again: %w: %w", d.ID, errReplayNotQueued, err)
	}
	_, err := e.cfg.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.WebhookWorkflowID(d.ID),
		TaskQueue: e.cfg.TaskQueue,
		// A replay is a new run of the same delivery, also after earlier runs closed.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// A run still waiting in its backoff is replaced, so the replay sends now rather than at
		// the next scheduled attempt.
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		TypedSearchAttributes:    workflows.WebhookSearchAttributes(d.AccountID, d.Installation(), d.Order(), !d.TestMode),
	}, workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: d.ID, Replay: true})
	if err != nil {
		return err
	}
	if err := e.store.MarkDeliveriesStarted(ctx, d.ID); err != nil {
		e.logger().Info("webhook replay started but its start not recorded; the sweeper will start the delivery again",
			zap.String("delivery_id", d.ID), zap.Error(err))
	}
	return nil
}

// StartWebhookDelivery starts a run of a delivery's WebhookDeliveryWorkflow whose start is owed:
// the first one of a recorded delivery, or a new one of a delivery a recover queued again. A run
// under way is left alone. A start made twice (its record was lost) makes a second run only after
// the first closed, and that run sends nothing when the first delivered it (DeliverWebhook).
func (e *Webhooks) StartWebhookDelivery(ctx context.Context, d *models.WebhookDelivery) error {
	_, err := e.cfg.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.WebhookWorkflowID(d.ID),
		TaskQueue: e.cfg.TaskQueue,
		// A recovered delivery's earlier run has closed: its new run reuses the ID.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    workflows.WebhookSearchAttributes(d.AccountID, d.Installation(), d.Order(), !d.TestMode),
	}, workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: d.ID})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}

// Bounds of the cancels a deletion of an endpoint sends to its deliveries' workflows
// (cancelDeliveryRuns): an endpoint may have many deliveries under way (a receiver that failed
// every one of a busy day's events), and the DELETE waits for the cancels.
const (
	// deliveryCancelWorkers is how many cancels are under way at once.
	deliveryCancelWorkers = 8
	// deliveryCancelDeadline bounds them all together, as cancelNotifyTimeout bounds each call a
	// job's cancel makes after its commit: the runs it does not reach end themselves.
	deliveryCancelDeadline = cancelNotifyTimeout
)

// cancelDeliveryRuns asks Temporal to cancel the WebhookDeliveryWorkflow of each of deliveryIDs,
// deliveries of endpointID that its deletion has just ended (committed, failed with
// models.EndpointDeletedError): a run waiting between attempts ends at once, canceled, without
// another attempt or record, instead of waking at its next attempt only to find the endpoint
// deleted. It is best effort: deliveryCancelWorkers at a time, all within deliveryCancelDeadline
// of the commit, which a client that hangs up does not shorten. A run that has closed or never
// started (Temporal answers not found) needs nothing; a run it does not reach, for an error or
// the deadline, still stops at its next attempt (DeliverWebhook finds the endpoint deleted). What
// failed is logged, once for the batch, and not returned.
func (e *Webhooks) cancelDeliveryRuns(ctx context.Context, endpointID string, deliveryIDs []string) {
	if len(deliveryIDs) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliveryCancelDeadline)
	defer cancel()
	var (
		mu       sync.Mutex
		failed   int
		firstErr error
	)
	next := make(chan string)
	var wg sync.WaitGroup
	for range min(deliveryCancelWorkers, len(deliveryIDs)) {
		wg.Go(func() {
			for id := range next {
				err := e.cfg.Temporal.CancelWorkflow(cctx, workflows.WebhookWorkflowID(id), "")
				var notFound *serviceerror.NotFound
				if err == nil || errors.As(err, &notFound) {
					continue
				}
				mu.Lock()
				failed++
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	sent := 0
feed:
	for _, id := range deliveryIDs {
		select {
		case next <- id:
			sent++
		case <-cctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if unsent := len(deliveryIDs) - sent; failed > 0 || unsent > 0 {
		e.logger().Warn("deleted endpoint: some of its deliveries' workflows were not cancelled; each stops at its next attempt",
			zap.String("endpoint_id", endpointID), zap.Int("deliveries", len(deliveryIDs)),
			zap.Int("failed", failed), zap.Int("not_tried", unsent), zap.Error(firstErr))
	}
}

// RotateWebhookSecret replaces the webhook signing secret of installationID, which must be the
// caller's own installation (KindNotFound otherwise), with a new one sealed by box. The previous
// secret keeps signing, next to the new one, for models.PreviousSecretGrace.
func (e *Webhooks) RotateWebhookSecret(ctx context.Context, box Sealer, callerInstallationID, installationID string) (RotatedSecret, error) {
	if installationID != callerInstallationID {
		return RotatedSecret{}, refuse(KindNotFound, "", "", "No installation with this ID.")
	}
	secret := webhooks.NewSecret()
	until, err := e.store.RotateWebhookSecret(ctx, box, installationID, secret, time.Now())
	if errors.Is(err, models.ErrNotFound) {
		return RotatedSecret{}, refuse(KindNotFound, "", "", "No installation with this ID.")
	}
	if err != nil {
		return RotatedSecret{}, err
	}
	return RotatedSecret{Secret: secret, PreviousSecretValidUntil: until}, nil
}
