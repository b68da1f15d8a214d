package models

import (
	"context"
	"time"
)

// GetWebhookDelivery loads a delivery by ID; ErrNotFound when there is none.
func (s *Store) GetWebhookDelivery(ctx context.Context, id string) (*WebhookDelivery, error) {
	return GetWebhookDelivery(s.conn(ctx), id)
}

// DeliveriesOfEvent returns the deliveries of a webhook event (one per endpoint it was recorded
// for), oldest first.
func (s *Store) DeliveriesOfEvent(ctx context.Context, eventID string) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	err := s.conn(ctx).Where("event_id = ?", eventID).Order("created_at, id").Find(&out).Error
	return out, err
}

// MarkWebhookFailed records that the latest run of a delivery gave up; a delivery that was
// delivered in the meantime stays delivered. ended reports that this call ended it: false for a
// delivery already delivered or failed (a repeated call), so that its end is counted once.
func (s *Store) MarkWebhookFailed(ctx context.Context, deliveryID string) (ended bool, err error) {
	res := s.conn(ctx).Model(&WebhookDelivery{}).
		Where("id = ? AND status NOT IN ?", deliveryID, []string{WebhookDelivered, WebhookFailed}).
		Updates(map[string]any{"status": WebhookFailed, "next_attempt_at": nil, "updated_at": time.Now().UTC()})
	return res.RowsAffected > 0, res.Error
}

// RotateWebhookSecret replaces the installation's webhook signing secret with newSecret, sealed by
// box, keeping the previous one valid until the time it returns (RotateWebhookSecret); ErrNotFound
// for an unknown installation.
func (s *Store) RotateWebhookSecret(ctx context.Context, box Sealer, installationID, newSecret string, now time.Time) (time.Time, error) {
	return RotateWebhookSecret(s.conn(ctx), box, installationID, newSecret, now)
}
