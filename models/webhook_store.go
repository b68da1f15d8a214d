package models

import (
	"context"
	"time"
)

// GetWebhookDelivery loads a delivery by ID; ErrNotFound when there is none.
func (s *Store) GetWebhookDelivery(ctx context.Context, id string) (*WebhookDelivery, error) {
	return GetWebhookDelivery(s.conn(ctx), id)
}

// CreateWebhookDelivery inserts d unless a delivery with its ID or its (job, run, event) exists;
// created reports whether this call inserted it.
func (s *Store) CreateWebhookDelivery(ctx context.Context, d *WebhookDelivery) (created bool, err error) {
	return CreateWebhookDelivery(s.conn(ctx), d)
}

// RecordWebhookAttempt stores an attempt and brings its delivery up to date in one transaction;
// ErrNotFound when the delivery does not exist.
func (s *Store) RecordWebhookAttempt(ctx context.Context, deliveryID string, r AttemptRecord) error {
	return RecordWebhookAttempt(s.conn(ctx), deliveryID, r)
}

// MarkWebhookFailed records that the latest run of a delivery gave up; a delivery that was
// delivered in the meantime stays delivered.
func (s *Store) MarkWebhookFailed(ctx context.Context, deliveryID string) error {
	return s.conn(ctx).Model(&WebhookDelivery{}).
		Where("id = ? AND status <> ?", deliveryID, WebhookDelivered).
		Updates(map[string]any{"status": WebhookFailed, "next_attempt_at": nil, "updated_at": time.Now().UTC()}).Error
}

// FindWebhookDelivery loads a delivery of the installation by ID; ErrNotFound for a missing one or
// another installation's.
func (s *Store) FindWebhookDelivery(ctx context.Context, installationID, id string) (*WebhookDelivery, error) {
	return FindWebhookDelivery(s.conn(ctx), installationID, id)
}

// RotateWebhookSecret replaces the installation's webhook signing secret with newSecret, sealed by
// box, keeping the previous one valid until the time it returns (RotateWebhookSecret); ErrNotFound
// for an unknown installation.
func (s *Store) RotateWebhookSecret(ctx context.Context, box Sealer, installationID, newSecret string, now time.Time) (time.Time, error) {
	return RotateWebhookSecret(s.conn(ctx), box, installationID, newSecret, now)
}
