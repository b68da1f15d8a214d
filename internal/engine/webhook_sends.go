package engine

import (
	"context"
	"errors"
	"time"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

// What a client sends to its own endpoints on demand: a test send, and a recover of failed and
// held deliveries (api/openapi.yaml, webhook endpoints).

// RecoverWindow is how far back a recover may reach.
const RecoverWindow = 14 * 24 * time.Hour

// recoverBatch is how many owed deliveries a recover starts per query.
const recoverBatch = 100

// TestSent answers SendTest: the delivery of the test event, and the event's ID (its webhook-id).
type TestSent struct{ DeliveryID, EventID string }

// findEndpoint loads a live endpoint of the scope; KindNotFound otherwise.
func (e *Webhooks) findEndpoint(ctx context.Context, scope WebhookScope, id string) (*models.WebhookEndpoint, error) {
	ep, err := e.store.WebhookEndpoint(ctx, scope.store(), id)
	if errors.Is(err, models.ErrNotFound) {
		return nil, refuse(KindNotFound, "", "", "No webhook endpoint with this ID.")
	}
	return ep, err
}

// SendTest sends a signed sample of the event type named (webhook.test when nil) to one of the
// scope's endpoints, marked as a test, through the normal delivery path: it shows in the delivery
// log and is retried. An event type the endpoint's API does not have, the empty string included,
// is KindInvalid naming "event"; a disabled endpoint is KindConflict.
func (e *Webhooks) SendTest(ctx context.Context, scope WebhookScope, endpointID string, named *string) (TestSent, error) {
	event := webhooks.EventWebhookTest
	if named != nil {
		event = *named
	}
	if !webhooks.IsEvent(scope.plugin(), event) {
		return TestSent{}, refuse(KindInvalid, "", "event", "%q is not an event type of this API; one of %v.", event, webhooks.EventsOf(scope.plugin()))
	}
	ep, err := e.findEndpoint(ctx, scope, endpointID)
	if err != nil {
		return TestSent{}, err
	}
	if ep.Status != models.EndpointEnabled {
		return TestSent{}, refuse(KindConflict, "", "", "The endpoint is disabled; enable it (PATCH status=enabled) before a test send.")
	}
	ev, owed, err := webhooks.RecordTestEvent(ctx, e.store, ep, event, !scope.Test)
	if err != nil {
		return TestSent{}, err
	}
	e.app.Outbox.StartOwedDeliveries(ctx, owed)
	return TestSent{DeliveryID: models.EventDeliveryID(ev.ID, ep.ID), EventID: ev.ID}, nil
}

// RecoverEndpoint sends again every delivery of one of the scope's endpoints created since since
// (and before until, when given) that ended failed or is held, and returns how many it queued.
// since may reach RecoverWindow back and may not be in the future (KindInvalid naming "since"
// otherwise: such a window holds no delivery), until must follow it (naming "until"); a disabled endpoint, or one whose earlier recover is still queueing, is
// KindConflict. The deliveries are committed as owed starts before any is started: what this call
// does not start (the client hung up, Temporal is away) the outbox sweep starts.
func (e *Webhooks) RecoverEndpoint(ctx context.Context, scope WebhookScope, endpointID string, since time.Time, until *time.Time) (int, error) {
	now := time.Now().UTC()
	if since.Before(now.Add(-RecoverWindow)) {
		return 0, refuse(KindInvalid, "", "since", "reaches at most 14 days back (not before %s).", now.Add(-RecoverWindow).Format(time.RFC3339))
	}
	if since.After(now) {
		return 0, refuse(KindInvalid, "", "since", "may not be in the future (now is %s).", now.Format(time.RFC3339))
	}
	end := now.Add(time.Second)
	if until != nil {
		if !until.After(since) {
			return 0, refuse(KindInvalid, "", "until", "must be later than since.")
		}
		end = *until
	}
	if _, err := e.findEndpoint(ctx, scope, endpointID); err != nil {
		return 0, err
	}
	n, err := e.store.QueueRecovery(ctx, endpointID, since, end, now)
	switch {
	case errors.Is(err, models.ErrNotFound):
		return 0, refuse(KindNotFound, "", "", "No webhook endpoint with this ID.")
	case errors.Is(err, models.ErrEndpointDisabled):
		return 0, refuse(KindConflict, "", "", "The endpoint is disabled; enable it (PATCH status=enabled) before a recover.")
	case errors.Is(err, models.ErrRecoveryRunning):
		return 0, refuse(KindConflict, "", "", "A recover of this endpoint is still queueing its deliveries; retry when it is done.")
	case err != nil:
		return 0, err
	}
	if n > 0 {
		go e.startRecovered(context.WithoutCancel(ctx), endpointID)
	}
	return n, nil
}

// startRecovered starts the deliveries a recover queued, in batches, then clears the endpoint's
// recovering mark. What it cannot start is left to the outbox sweep, which clears the mark after.
func (e *Webhooks) startRecovered(ctx context.Context, endpointID string) {
	for {
		owed, err := e.store.DeliveriesOwedStart(ctx, endpointID, recoverBatch)
		if err != nil || len(owed) == 0 {
			break
		}
		started := 0
		for i := range owed {
			sctx, cancel := context.WithTimeout(ctx, cancelNotifyTimeout)
			err := e.StartWebhookDelivery(sctx, &owed[i])
			if err == nil {
				err = e.store.MarkDeliveriesStarted(sctx, owed[i].ID)
			}
			cancel()
			if err == nil {
				started++
			}
		}
		if started == 0 {
			return // Temporal or the database is away: the sweep takes over
		}
	}
	_, _ = e.store.FinishRecoveries(ctx, endpointID)
}
