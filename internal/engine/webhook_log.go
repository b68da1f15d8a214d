package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/ids"
)

// The delivery log and the events API (GET /webhook-deliveries, GET /events): what was sent to the
// scope's endpoints, with every attempt, and every event of the scope for the retention period.

// DeliveryStatuses are the statuses GET /webhook-deliveries filters by.
var DeliveryStatuses = []string{models.WebhookPending, models.WebhookDelivering, models.WebhookDelivered,
	models.WebhookFailed, models.WebhookHeld}

// DeliveryFilter selects a page of the scope's deliveries; an empty or nil field does not filter.
// Limit 0 is DefaultWebhookPageLimit; Cursor is a next cursor of this list.
type DeliveryFilter struct {
	EndpointID, Event, EventID, Status string
	CreatedAfter, CreatedBefore        *time.Time // inclusive, exclusive
	Limit                              int
	Cursor                             string
}

// ListDeliveries returns a page of the scope's deliveries matching f, newest first, each with its
// attempts, and the cursor of the next page ("" after the last). KindInvalid names a bad filter:
// an endpoint_id or event_id that is no ID, an event that is not an event type of the scope's API,
// an unknown status, created_after not before created_before, limit or cursor.
func (e *Webhooks) ListDeliveries(ctx context.Context, scope WebhookScope, f DeliveryFilter) ([]webhooks.Delivery, string, error) {
	limit, after, err := webhookPage(f.Limit, f.Cursor)
	if err != nil {
		return nil, "", err
	}
	q := models.DeliveryQuery{Event: f.Event, Status: f.Status, CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore,
		After: after, Limit: limit + 1}
	for _, id := range []struct {
		field string
		value string
		dst   *string
	}{{"endpoint_id", f.EndpointID, &q.EndpointID}, {"event_id", f.EventID, &q.EventID}} {
		if id.value == "" {
			continue
		}
		if !ids.IsUUID(id.value) {
			return nil, "", refuse(KindInvalid, "", id.field, "must be an ID (a UUID).")
		}
		*id.dst = ids.Canonical(id.value)
	}
	if f.Event != "" && !webhooks.IsEvent(scope.plugin(), f.Event) {
		return nil, "", refuse(KindInvalid, "", "event", "%q is not an event type; use one of: %s.", f.Event,
			strings.Join(webhooks.EventsOf(scope.plugin()), ", "))
	}
	if f.Status != "" && !contains(DeliveryStatuses, f.Status) {
		return nil, "", refuse(KindInvalid, "", "status", "must be one of: %s.", strings.Join(DeliveryStatuses, ", "))
	}
	if err := createdWindow(f.CreatedAfter, f.CreatedBefore); err != nil {
		return nil, "", err
	}
	rows, err := e.store.WebhookDeliveries(ctx, scope.store(), q)
	if err != nil {
		return nil, "", err
	}
	out, next := webhookPageOf(rows, limit, func(r *models.DeliveryWithAttempts) (webhooks.Delivery, time.Time, string) {
		return webhooks.DeliveryOf(&r.Delivery, r.Attempts), r.Delivery.CreatedAt, r.Delivery.ID
	})
	return out, next, nil
}

// webhookPageOf is the views of a page of a webhook list whose rows were fetched one beyond limit,
// and the cursor of the next page ("" after the last): view gives a row's view and its position
// (created_at, id).
func webhookPageOf[R, V any](rows []R, limit int, view func(*R) (V, time.Time, string)) ([]V, string) {
	rows, more := trimPage(rows, limit)
	out := make([]V, len(rows))
	var at time.Time
	var id string
	for i := range rows {
		out[i], at, id = view(&rows[i])
	}
	if !more {
		return out, ""
	}
	return out, encodeWebhookCursor(at, id)
}

// createdWindow refuses a created_after that is not before created_before.
func createdWindow(after, before *time.Time) error {
	if after != nil && before != nil && !after.Before(*before) {
		return refuse(KindInvalid, "", "created_after", "must be earlier than created_before (created_after is inclusive, created_before exclusive).")
	}
	return nil
}

// GetDelivery returns a delivery of the scope with every attempt; KindNotFound for a missing one or
// another scope's.
func (e *Webhooks) GetDelivery(ctx context.Context, scope WebhookScope, id string) (webhooks.Delivery, error) {
	d, err := e.store.ScopedWebhookDelivery(ctx, scope.store(), id)
	if errors.Is(err, models.ErrNotFound) {
		return webhooks.Delivery{}, refuse(KindNotFound, "", "", "No webhook delivery with this ID.")
	}
	if err != nil {
		return webhooks.Delivery{}, err
	}
	return webhooks.DeliveryOf(&d.Delivery, d.Attempts), nil
}

// EventFilter selects a page of the scope's events; an empty or nil field does not filter. Limit 0
// is DefaultWebhookPageLimit; Cursor is a next cursor of this list.
type EventFilter struct {
	Type                        string
	CreatedAfter, CreatedBefore *time.Time // inclusive, exclusive
	Limit                       int
	Cursor                      string
}

// ListEvents returns a page of the scope's events matching f, newest first, whether or not an
// endpoint received them, and the cursor of the next page ("" after the last). Test sends are not
// listed. KindInvalid names a bad filter: a type that is not an event type of the scope's API,
// created_after not before created_before, limit or cursor.
func (e *Webhooks) ListEvents(ctx context.Context, scope WebhookScope, f EventFilter) ([]webhooks.Event, string, error) {
	limit, after, err := webhookPage(f.Limit, f.Cursor)
	if err != nil {
		return nil, "", err
	}
	if f.Type != "" && !webhooks.IsEvent(scope.plugin(), f.Type) {
		return nil, "", refuse(KindInvalid, "", "type", "%q is not an event type; use one of: %s.", f.Type,
			strings.Join(webhooks.EventsOf(scope.plugin()), ", "))
	}
	if err := createdWindow(f.CreatedAfter, f.CreatedBefore); err != nil {
		return nil, "", err
	}
	rows, err := e.store.WebhookEvents(ctx, scope.store(), models.EventQuery{Type: f.Type, CreatedAfter: f.CreatedAfter,
		CreatedBefore: f.CreatedBefore, After: after, Limit: limit + 1})
	if err != nil {
		return nil, "", err
	}
	out, next := webhookPageOf(rows, limit, func(r *models.WebhookEvent) (webhooks.Event, time.Time, string) {
		return webhooks.EventOf(r, !scope.Test), r.CreatedAt, r.ID
	})
	return out, next, nil
}

// GetEvent returns an event of the scope, a test send's included; KindNotFound for a missing one or
// another scope's.
func (e *Webhooks) GetEvent(ctx context.Context, scope WebhookScope, id string) (webhooks.Event, error) {
	ev, err := e.store.ScopedWebhookEvent(ctx, scope.store(), id)
	if errors.Is(err, models.ErrNotFound) {
		return webhooks.Event{}, refuse(KindNotFound, "", "", "No event with this ID.")
	}
	if err != nil {
		return webhooks.Event{}, err
	}
	return webhooks.EventOf(ev, !scope.Test), nil
}
