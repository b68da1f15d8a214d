package models

import (
	"context"
	"time"

	"github.com/shotflow/shotflow/models/status"
)

// OrdersAwaitingStart returns up to limit orders committed at or before cutoff whose workflow start
// was never recorded (workflow_started_at NULL), oldest first.
func (s *Store) OrdersAwaitingStart(ctx context.Context, cutoff time.Time, limit int) ([]Order, error) {
	var orders []Order
	err := s.conn(ctx).Where("workflow_started_at IS NULL AND created_at <= ?", cutoff).
		Order("created_at").Limit(limit).Find(&orders).Error
	return orders, err
}

// MarkOrdersStarted records that the workflows of the orders have been started, in one statement
// (workflow_started_at, set once: an order already marked keeps its first mark).
func (s *Store) MarkOrdersStarted(ctx context.Context, now time.Time, orderIDs ...string) error {
	return MarkOrdersStarted(s.conn(ctx), now, orderIDs...)
}

// RunsAwaitingStart returns up to limit pending job re-runs (run > 1) last updated at or before
// cutoff whose workflow start was never recorded (run_started_at NULL), oldest first.
func (s *Store) RunsAwaitingStart(ctx context.Context, cutoff time.Time, limit int) ([]Job, error) {
	var jobs []Job
	err := s.conn(ctx).
		Where("run > 1 AND run_started_at IS NULL AND status = ? AND updated_at <= ?", status.JobPending, cutoff).
		Order("updated_at").Limit(limit).Find(&jobs).Error
	return jobs, err
}

// MarkRunStarted records that the workflow of the job's run has been started (run_started_at, set
// once), unless the job has moved on to another run.
func (s *Store) MarkRunStarted(ctx context.Context, jobID string, run int, now time.Time) error {
	return s.conn(ctx).Model(&Job{}).
		Where("id = ? AND run = ? AND run_started_at IS NULL", jobID, run).
		Update("run_started_at", now.UTC()).Error
}
