package models

import (
	"context"
	"time"

	"gorm.io/gorm/clause"
)

// webhookEnded are the statuses of a delivery that no workflow attempts any more: the retention
// sweep may delete it. A pending or delivering delivery (its workflow may still attempt it) and
// one whose start is owed (start_due_at set: the outbox, a recover) are kept whatever their age.
var webhookEnded = []string{WebhookDelivered, WebhookFailed, WebhookHeld}

// PurgedWebhookLog counts what one batch of the webhook log's retention deleted.
type PurgedWebhookLog struct {
	Deliveries, Attempts, Events int64
}

// PurgeExpiredWebhookDeliveries deletes up to limit ended deliveries (delivered, failed or held,
// with no start owed) created before cutoff, oldest first, with their attempts, in one transaction
// (a savepoint when the store is in one). On PostgreSQL the deliveries are locked first and those
// another transaction holds are skipped (a replay starting now), so a batch never waits on one.
// It returns what it deleted; fewer deliveries than limit means none is left to delete for now.
func (s *Store) PurgeExpiredWebhookDeliveries(ctx context.Context, cutoff time.Time, limit int) (PurgedWebhookLog, error) {
	var out PurgedWebhookLog
	err := s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		q := db.Model(&WebhookDelivery{}).Select("id").
			Where("created_at < ? AND status IN ? AND start_due_at IS NULL", cutoff.UTC(), webhookEnded).
			Order("created_at, id").Limit(limit)
		if db.Dialector.Name() == "postgres" {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		var ids []string
		if err := q.Pluck("id", &ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		res := db.Where("delivery_id IN ?", ids).Delete(&WebhookAttempt{})
		if res.Error != nil {
			return res.Error
		}
		out.Attempts = res.RowsAffected
		res = db.Where("id IN ?", ids).Delete(&WebhookDelivery{})
		if res.Error != nil {
			return res.Error
		}
		out.Deliveries = res.RowsAffected
		return nil
	})
	if err != nil {
		return PurgedWebhookLog{}, err
	}
	return out, nil
}

// eventWithoutDeliveries is true for a webhook_events row none of whose deliveries is left.
const eventWithoutDeliveries = `NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id)`

// PurgeExpiredWebhookEvents deletes up to limit events created before cutoff, oldest first, none
// of whose deliveries is left (PurgeExpiredWebhookDeliveries deletes them first; an event with a
// delivery still kept stays with it), and returns how many it deleted; fewer than limit means none
// is left to delete for now.
func (s *Store) PurgeExpiredWebhookEvents(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	var ids []string
	err := s.conn(ctx).Model(&WebhookEvent{}).Select("id").
		Where("created_at < ? AND "+eventWithoutDeliveries, cutoff.UTC()).
		Order("created_at, id").Limit(limit).Pluck("id", &ids).Error
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	// The condition again: a delivery recorded for one of them since (none is, for an event this
	// old, but the delete must not orphan one) keeps it.
	res := s.conn(ctx).Where("id IN ? AND "+eventWithoutDeliveries, ids).Delete(&WebhookEvent{})
	return res.RowsAffected, res.Error
}
