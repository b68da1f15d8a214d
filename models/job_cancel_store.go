package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shotflow/shotflow/models/status"
)

// CancelJobNotBegun ends a job run cancelled for reason (status.CancelRequested or
// status.CancelDeadline) if, and only if, it has not begun: the job is pending in that run and no
// attempt has started (started_at NULL, attempt_count 0); for status.CancelDeadline also only when
// its start deadline has passed. In one transaction (a savepoint when the store is in one) it
// records the reason, releases the run's reservation, settles the idea record the job was to
// produce and moves the order's counters, as EndJob does. It reports false, and changes nothing,
// when the job has begun or ended (cancelled included), runs another run, or (for a deadline) has
// no deadline or one still ahead.
//
// The condition is checked by the UPDATE itself, the same row BeginAttempt updates with its own
// condition (pending, retry_pending or in_progress; for a job not begun, its deadline not passed):
// of a cancel and a first attempt racing, exactly one changes the row and the other finds it
// changed (PostgreSQL re-reads a row another transaction updated before applying its condition;
// SQLite runs one writer at a time). A cancel that wins leaves the job cancelled, which
// BeginAttempt refuses with ErrJobNotRunnable; a deadline's cancel never races a first attempt,
// which BeginAttempt refuses past the deadline.
func (s *Store) CancelJobNotBegun(ctx context.Context, jobID string, run int, reason string) (*Job, bool, error) {
	if reason != status.CancelRequested && reason != status.CancelDeadline {
		return nil, false, fmt.Errorf("CancelJobNotBegun: %q is not a cancel reason", reason)
	}
	var cancelled *Job
	err := s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		now := time.Now().UTC()
		var j Job
		q := tx.Model(&j).Clauses(clause.Returning{}).
			Where("id = ? AND run = ? AND status = ? AND started_at IS NULL AND attempt_count = 0", jobID, run, status.JobPending)
		if reason == status.CancelDeadline {
			q = q.Where("start_deadline IS NOT NULL AND start_deadline <= ?", now)
		}
		res := q.Updates(map[string]any{"status": status.JobCancelled, "cancel_reason": reason,
			"completed_at": now, "updated_at": now, "error_detail": ""})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		if err := finishReferenceItem(tx, &j, RefStatusFailed); err != nil {
			return err
		}
		account, ok, err := settle(tx, &j, LedgerRelease)
		if err != nil {
			return err
		}
		if err := endOfJob(tx, &j, "jobs_cancelled", "credits_released", ok); err != nil {
			return err
		}
		if ok {
			// The account last (lock order: credits.go): now, or at the end of the store's Tx.
			if err := settled(tx, s.owed, account); err != nil {
				return err
			}
		}
		cancelled = &j
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return cancelled, cancelled != nil, nil
}

// JobsPastStartDeadline returns, earliest deadline first, up to limit jobs whose start deadline
// (Cancel-After) passed at or before now and that are still pending, with their ID and run only,
// by the partial index jobs_pending_start_deadline. A job among them whose first attempt has
// begun meanwhile is not cancelled (CancelJobNotBegun decides).
func (s *Store) JobsPastStartDeadline(ctx context.Context, now time.Time, limit int) ([]Job, error) {
	var jobs []Job
	err := s.conn(ctx).Select("id", "run").Where(pendingWithDeadline).Where("start_deadline <= ?", now.UTC()).
		Order("start_deadline").Limit(limit).Find(&jobs).Error
	return jobs, err
}

// pendingWithDeadline is the WHERE clause of the index jobs_pending_start_deadline, written out as
// SQLite needs it to use the index.
var pendingWithDeadline = fmt.Sprintf("status = '%s' AND start_deadline IS NOT NULL", status.JobPending)

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
