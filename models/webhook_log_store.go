package models

import (
	"context"
	"time"
)

// DeliveryQuery selects a page of a scope's webhook deliveries (WebhookDeliveries); an empty or
// nil field does not filter.
type DeliveryQuery struct {
	EndpointID    string
	Event         string // the event's type
	EventID       string
	Status        string
	CreatedAfter  *time.Time // inclusive
	CreatedBefore *time.Time // exclusive
	After         *WebhookCursor
	Limit         int
}

// DeliveryWithAttempts is a delivery and its latest attempts (at most MaxKeptAttempts), oldest
// first; Delivery.Attempts counts every attempt it made.
type DeliveryWithAttempts struct {
	Delivery WebhookDelivery
	Attempts []WebhookAttempt
}

// WebhookDeliveries returns up to q.Limit deliveries of the scope matching q, newest first by
// (created_at, id), each with its latest attempts: the page is one query and its attempts another.
func (s *Store) WebhookDeliveries(ctx context.Context, scope WebhookScope, q DeliveryQuery) ([]DeliveryWithAttempts, error) {
	db := scope.where(s.conn(ctx).Model(&WebhookDelivery{}))
	for _, f := range []struct{ column, value string }{
		{"endpoint_id", q.EndpointID}, {"event", q.Event}, {"event_id", q.EventID}, {"status", q.Status},
	} {
		if f.value != "" {
			db = db.Where(f.column+" = ?", f.value)
		}
	}
	db = q.After.after(createdBetween(db, q.CreatedAfter, q.CreatedBefore))
	var rows []WebhookDelivery
	if err := db.Order("created_at DESC, id DESC").Limit(q.Limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]DeliveryWithAttempts, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]string, len(rows))
	index := make(map[string]int, len(rows))
	for i := range rows {
		ids[i], index[rows[i].ID] = rows[i].ID, i
		out[i] = DeliveryWithAttempts{Delivery: rows[i], Attempts: []WebhookAttempt{}}
	}
	var attempts []WebhookAttempt
	if err := s.conn(ctx).Where("delivery_id IN ?", ids).Order("started_at, created_at, id").Find(&attempts).Error; err != nil {
		return nil, err
	}
	for _, a := range keepLatestAttempts(attempts) {
		i := index[a.DeliveryID]
		out[i].Attempts = append(out[i].Attempts, a)
	}
	return out, nil
}

// ScopedWebhookDelivery loads a delivery of the scope with its latest attempts, oldest first;
// ErrNotFound for a missing one or another scope's.
func (s *Store) ScopedWebhookDelivery(ctx context.Context, scope WebhookScope, id string) (*DeliveryWithAttempts, error) {
	var d WebhookDelivery
	if err := scope.where(s.conn(ctx)).Where("id = ?", id).Take(&d).Error; err != nil {
		return nil, orNotFound(err)
	}
	attempts := []WebhookAttempt{}
	if err := s.conn(ctx).Where("delivery_id = ?", id).Order("started_at, created_at, id").Find(&attempts).Error; err != nil {
		return nil, err
	}
	return &DeliveryWithAttempts{Delivery: d, Attempts: keepLatestAttempts(attempts)}, nil
}

// EventQuery selects a page of a scope's events (WebhookEvents); an empty or nil field does not
// filter.
type EventQuery struct {
	Type          string
	CreatedAfter  *time.Time // inclusive
	CreatedBefore *time.Time // exclusive
	After         *WebhookCursor
	Limit         int
}

// WebhookEvents returns up to q.Limit events of the scope matching q, newest first by
// (created_at, id); test sends are not listed.
func (s *Store) WebhookEvents(ctx context.Context, scope WebhookScope, q EventQuery) ([]WebhookEvent, error) {
	db := scope.where(s.conn(ctx)).Where("test = ?", false)
	if q.Type != "" {
		db = db.Where("type = ?", q.Type)
	}
	db = q.After.after(createdBetween(db, q.CreatedAfter, q.CreatedBefore))
	var out []WebhookEvent
	err := db.Order("created_at DESC, id DESC").Limit(q.Limit).Find(&out).Error
	return out, err
}

// ScopedWebhookEvent loads an event of the scope, a test send's included; ErrNotFound for a
// missing one or another scope's.
func (s *Store) ScopedWebhookEvent(ctx context.Context, scope WebhookScope, id string) (*WebhookEvent, error) {
	var ev WebhookEvent
	if err := scope.where(s.conn(ctx)).Where("id = ?", id).Take(&ev).Error; err != nil {
		return nil, orNotFound(err)
	}
	return &ev, nil
}
