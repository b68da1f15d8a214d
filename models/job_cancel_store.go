package models

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shotflow/shotflow/models/status"
)

// CancelJobNotBegun ends a job run cancelled if, and only if, it has not begun: the job is pending
// in that run and no attempt has started (started_at NULL, attempt_count 0). In one transaction (a
// savepoint when the store is in one) it releases the run's reservation, settles the idea record
// the job was to produce and moves the order's counters, as EndJob does. It reports false, and
// changes nothing, when the job has begun or ended (cancelled included) or runs another run.
//
// The condition is checked by the UPDATE itself, the same row BeginAttempt updates with its own
// condition (pending, retry_pending or in_progress): of a cancel and a first attempt racing,
// exactly one changes the row and the other finds it changed (PostgreSQL re-reads a row another
// transaction updated before applying its condition; SQLite runs one writer at a time). A cancel
// that wins leaves the job cancelled, which BeginAttempt refuses with ErrJobNotRunnable.
func (s *Store) CancelJobNotBegun(ctx context.Context, jobID string, run int) (*Job, bool, error) {
	var cancelled *Job
	err := s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		now := time.Now().UTC()
		var j Job
		res := tx.Model(&j).Clauses(clause.Returning{}).
			Where("id = ? AND run = ? AND status = ? AND started_at IS NULL AND attempt_count = 0", jobID, run, status.JobPending).
			Updates(map[string]any{"status": status.JobCancelled, "completed_at": now, "updated_at": now, "error_detail": ""})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		if err := finishReferenceItem(tx, &j, RefStatusFailed); err != nil {
			return err
		}
		settled, err := settle(tx, &j, LedgerRelease)
		if err != nil {
			return err
		}
		if err := endOfJob(tx, &j, "jobs_cancelled", "credits_released", settled); err != nil {
			return err
		}
		cancelled = &j
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return cancelled, cancelled != nil, nil
}

// MarkDeliveriesStarted records that the workflows of the deliveries have been started, in one
// statement (start_due_at cleared).
func (s *Store) MarkDeliveriesStarted(ctx context.Context, deliveryIDs ...string) error {
	if len(deliveryIDs) == 0 {
		return nil
	}
	return s.conn(ctx).Model(&WebhookDelivery{}).Where("id IN ? AND start_due_at IS NOT NULL", deliveryIDs).
		Update("start_due_at", nil).Error
}

// DeliveriesAwaitingStart returns up to limit deliveries whose workflow start has been due since
// cutoff or earlier and was never recorded, oldest first, by the partial index
// webhook_deliveries_start_due.
func (s *Store) DeliveriesAwaitingStart(ctx context.Context, cutoff time.Time, limit int) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	err := s.conn(ctx).Where("start_due_at IS NOT NULL AND start_due_at <= ?", cutoff.UTC()).
		Order("start_due_at").Limit(limit).Find(&out).Error
	return out, err
}
