package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models/status"
)

// OrderHistory is everything support staff look at for one order.
type OrderHistory struct {
	Order      Order
	Jobs       []Job             // by position, then id
	Ledger     []LedgerEntry     // by created_at, job_id, run, kind
	Deliveries []WebhookDelivery // by created_at, then id
	Attempts   []WebhookAttempt  // the latest MaxKeptAttempts of each delivery, by started_at, then created_at
	Retries    []JobRetry        // by created_at, job_id, to_run
}

// OrderHistory loads an order of any account with its jobs, ledger entries, webhook deliveries and
// their attempts, and its retry audit rows, one query each (none for attempts when there are no
// deliveries); ErrNotFound when there is no such order.
func (s *Store) OrderHistory(ctx context.Context, orderID string) (*OrderHistory, error) {
	db := s.conn(ctx)
	var h OrderHistory
	if err := db.Take(&h.Order, "id = ?", orderID).Error; err != nil {
		return nil, orNotFound(err)
	}
	if err := db.Where("order_id = ?", orderID).Order("position, id").Find(&h.Jobs).Error; err != nil {
		return nil, err
	}
	if err := db.Where("order_id = ?", orderID).Order("created_at, job_id, run, kind").Find(&h.Ledger).Error; err != nil {
		return nil, err
	}
	if err := db.Where("order_id = ?", orderID).Order("created_at, id").Find(&h.Deliveries).Error; err != nil {
		return nil, err
	}
	if len(h.Deliveries) > 0 {
		ids := make([]string, len(h.Deliveries))
		for i, d := range h.Deliveries {
			ids[i] = d.ID
		}
		if err := db.Where("delivery_id IN ?", ids).Order("started_at, created_at").Find(&h.Attempts).Error; err != nil {
			return nil, err
		}
		h.Attempts = keepLatestAttempts(h.Attempts)
	}
	if err := db.Where("order_id = ?", orderID).Order("created_at, job_id, to_run").Find(&h.Retries).Error; err != nil {
		return nil, err
	}
	return &h, nil
}

// JobStatusFilter selects jobs of every account (JobsByStatus).
type JobStatusFilter struct {
	Status          string
	Category        string    // error_category; "" for any
	InstallationIDs []string  // the installations' jobs (a live one and its test twin); none for any
	Since           time.Time // updated at or after it; zero for any
	TestMode        *bool     // test-mode jobs (true) or live ones (false); nil for both
	Limit           int
}

// inMode restricts q to the rows whose test_mode is *testMode; nil leaves q as it is.
func inMode(q *gorm.DB, testMode *bool) *gorm.DB {
	if testMode == nil {
		return q
	}
	return q.Where("test_mode = ?", *testMode)
}

// JobsByStatus returns up to f.Limit jobs of every account matching f, most recently updated first.
func (s *Store) JobsByStatus(ctx context.Context, f JobStatusFilter) ([]Job, error) {
	q := s.conn(ctx).Where("status = ?", f.Status)
	if f.Category != "" {
		q = q.Where("error_category = ?", f.Category)
	}
	if len(f.InstallationIDs) > 0 {
		q = q.Where("installation_id IN ?", f.InstallationIDs)
	}
	if !f.Since.IsZero() {
		q = q.Where("updated_at >= ?", f.Since.UTC())
	}
	q = inMode(q, f.TestMode)
	var jobs []Job
	err := q.Order("updated_at DESC, id DESC").Limit(f.Limit).Find(&jobs).Error
	return jobs, err
}

// UpdatedJobCursor is a position in a listing of jobs ordered by (updated_at, id): that of the last job
// of a page.
type UpdatedJobCursor struct {
	UpdatedAt time.Time
	ID        string
}

// openJobs is the condition of the jobs that have not ended, written as the WHERE clause of the
// partial index jobs_open_updated (migration 0013) so that both databases read that index: SQLite
// uses a partial index only for a query whose WHERE clause contains the index's terms.
var openJobs = fmt.Sprintf("status IN ('%s', '%s', '%s')", status.JobPending, status.JobInProgress, status.JobRetryPending)

// StaleOpenJobs returns up to limit jobs that have not ended (pending, in progress or retry
// pending) and were last updated at or before cutoff, behind after (nil: from the start), least
// recently updated first (by updated_at, then id); testMode, when not nil, keeps the test-mode
// (true) or the live (false) jobs alone. A page reads about limit entries of the index
// jobs_open_updated however many open jobs come before after.
func (s *Store) StaleOpenJobs(ctx context.Context, cutoff time.Time, after *UpdatedJobCursor, testMode *bool, limit int) ([]Job, error) {
	q := inMode(s.conn(ctx).Where(openJobs).Where("updated_at <= ?", cutoff.UTC()), testMode)
	if after != nil {
		q = q.Where("(updated_at, id) > (?, ?)", after.UpdatedAt.UTC(), after.ID)
	}
	var jobs []Job
	err := q.Order("updated_at, id").Limit(limit).Find(&jobs).Error
	return jobs, err
}

// OrderWorkflowStartedAt returns when the order's workflow start was recorded, nil when it is still
// owed to the outbox; ErrNotFound when there is no such order.
func (s *Store) OrderWorkflowStartedAt(ctx context.Context, orderID string) (*time.Time, error) {
	var order Order
	if err := s.conn(ctx).Select("id", "workflow_started_at").Take(&order, "id = ?", orderID).Error; err != nil {
		return nil, orNotFound(err)
	}
	return order.WorkflowStartedAt, nil
}

// RunReleased reports whether the reservation of the job's run has been released (a release
// entry in the ledger).
func (s *Store) RunReleased(ctx context.Context, jobID string, run int) (bool, error) {
	var released int64
	err := s.conn(ctx).Model(&LedgerEntry{}).
		Where("job_id = ? AND run = ? AND kind = ?", jobID, run, LedgerRelease).
		Count(&released).Error
	return released > 0, err
}

// BeginNextRun moves j, a job that ended on its run j.Run with status j.Status (as it was read), to
// a new pending run (j.Run+1) with its attempts, errors and times cleared, its start deadline
// (Cancel-After) included: an operator's re-run is not bound by the client's deadline; false when
// the job is no longer on that run in that status. The fashion model or scenery an idea job
// produces, which its ended run left FAILED, is in progress again, so that the new run's end
// settles it.
func (s *Store) BeginNextRun(ctx context.Context, j *Job, now time.Time) (bool, error) {
	db := s.conn(ctx)
	res := db.Model(&Job{}).Where("id = ? AND run = ? AND status = ?", j.ID, j.Run, j.Status).Updates(map[string]any{
		"run": j.Run + 1, "status": status.JobPending, "attempt_count": 0,
		"error_category": nil, "error_hint": nil, "error_detail": "",
		"started_at": nil, "completed_at": nil, "run_started_at": nil, "start_deadline": nil, "cancel_reason": nil,
		"updated_at": now,
	})
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	return true, reopenReferenceItem(db, j, now)
}

// reopenReferenceItem puts the fashion model or scenery of an idea job run again back in progress
// (finishReferenceItem settles only one in progress). Other jobs are left alone.
func reopenReferenceItem(tx *gorm.DB, j *Job, now time.Time) error {
	kind, ok := referenceKindOf(j)
	if !ok {
		return nil
	}
	return tx.Table(kind.Table()).Where("id = ? AND account_id = ? AND status = ?", *j.RecordID, j.AccountID, RefStatusFailed).
		Updates(map[string]any{"status": RefStatusInProgress, "thumbnail_asset_id": nil, "updated_at": now.UTC()}).Error
}

// ReserveForJobs reserves the jobs' credits on the account for the order (see the package
// function ReserveForJobs) and returns the total; ErrInsufficientCredits when the balance is short.
func (s *Store) ReserveForJobs(ctx context.Context, accountID, orderID string, jobs []Job) (int64, error) {
	return ReserveForJobs(s.conn(ctx), accountID, orderID, jobs)
}

// ReopenOrderForRerun moves an order back in progress for a new run of one of its jobs that had
// ended with status ended (failed or expired): the job leaves the order's count of that status and
// the run's reservation is added to credits_reserved. false when the order does not count a job
// as ended.
func (s *Store) ReopenOrderForRerun(ctx context.Context, orderID, ended string, reserved int64, now time.Time) (bool, error) {
	counter := map[string]string{status.JobFailed: "jobs_failed", status.JobExpired: "jobs_expired"}[ended]
	if counter == "" {
		return false, fmt.Errorf("reopen order %s: a job that is %s is not run again", orderID, ended)
	}
	res := s.conn(ctx).Exec(`UPDATE orders SET credits_reserved = credits_reserved + ?, `+counter+` = `+counter+` - 1,
			status = ?, completed_at = NULL, updated_at = ? WHERE id = ? AND `+counter+` > 0`,
		reserved, status.OrderInProgress, now, orderID)
	return res.RowsAffected > 0, res.Error
}

// CreateJobRetry inserts an audit row of a job run again or settled by support.
func (s *Store) CreateJobRetry(ctx context.Context, audit *JobRetry) error {
	return s.conn(ctx).Create(audit).Error
}
