package models

import (
	"context"
	"errors"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// GetJob loads a job by ID; ErrNotFound when there is none.
func (s *Store) GetJob(ctx context.Context, id string) (*Job, error) {
	return GetJob(s.conn(ctx), id)
}

// GetOrder loads an order by ID; ErrNotFound when there is none.
func (s *Store) GetOrder(ctx context.Context, id string) (*Order, error) {
	var o Order
	err := s.conn(ctx).Take(&o, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// JobOutputs returns the generated files of the jobs' current runs by job ID, in position order.
func (s *Store) JobOutputs(ctx context.Context, jobIDs ...string) (map[string][]Asset, error) {
	return JobOutputs(s.conn(ctx), jobIDs...)
}

// BeginAttempt moves a job to in_progress for attempt number attempt of its current run, in one
// statement; ErrJobNotRunnable when the job has ended or runs another run.
func (s *Store) BeginAttempt(ctx context.Context, jobID string, run, attempt int) error {
	return BeginAttempt(s.conn(ctx), jobID, run, attempt)
}

// MarkRetryPending records a failed attempt of a job run that will be retried: the job shows
// retry_pending with the attempt's error category, hint and detail. A run that has ended, or is not
// the job's current one, is left as it is.
func (s *Store) MarkRetryPending(ctx context.Context, jobID string, run int, category, hint, detail string) error {
	return s.conn(ctx).Model(&Job{}).
		Where("id = ? AND run = ? AND status IN ?", jobID, run, []string{status.JobPending, status.JobInProgress, status.JobRetryPending}).
		Updates(map[string]any{
			"status":         status.JobRetryPending,
			"error_category": category,
			"error_hint":     hint,
			"error_detail":   detail,
			"updated_at":     time.Now().UTC(),
		}).Error
}

// CompleteJob marks a job run completed with its outputs and settles its credits and order in one
// transaction (a savepoint when the store is in one); false when the run was already terminal.
func (s *Store) CompleteJob(ctx context.Context, jobID string, run int, outputs []Asset) (bool, error) {
	return CompleteJob(s.conn(ctx), jobID, run, outputs)
}

// EndJob moves a job run to a terminal status other than completed and releases its credits in one
// transaction (a savepoint when the store is in one); false when the run was already terminal.
func (s *Store) EndJob(ctx context.Context, jobID string, run int, to, category, hint, detail string) (bool, error) {
	return EndJob(s.conn(ctx), jobID, run, to, category, hint, detail)
}

// OpenJobsReading returns the unfinished jobs (pending, in progress or retry pending) that read the
// asset, with their ID, run and inputs only: the asset's account's single-input jobs by the
// input_asset_id index, its reels by their list of inputs. ErrNotFound when the asset does not
// exist.
func (s *Store) OpenJobsReading(ctx context.Context, assetID string) ([]Job, error) {
	db := s.conn(ctx)
	var asset Asset
	err := db.Select("id", "account_id").Take(&asset, "id = ?", assetID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	open := []string{status.JobPending, status.JobInProgress, status.JobRetryPending}
	var jobs []Job
	err = db.Select("id", "run", "input_asset_id", "input_asset_ids").
		Where("account_id = ? AND status IN ? AND (input_asset_id = ? OR job_type = ?)", asset.AccountID, open, assetID, jobtype.Reel).
		Find(&jobs).Error
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(jobs, func(j Job) bool { return !slices.Contains(j.Inputs(), assetID) }), nil
}

// AccountJob loads a job of the account and the job type; ErrNotFound when there is none.
func (s *Store) AccountJob(ctx context.Context, accountID, jobID, jobType string) (*Job, error) {
	var j Job
	if err := s.conn(ctx).Where("id = ? AND account_id = ? AND job_type = ?", jobID, accountID, jobType).Take(&j).Error; err != nil {
		return nil, orNotFound(err)
	}
	return &j, nil
}

// JobProduct loads the product a job is for, deleted or not; ErrNotFound when the job has none.
func (s *Store) JobProduct(ctx context.Context, j *Job) (*Product, error) {
	if j.ProductID == nil {
		return nil, ErrNotFound
	}
	var p Product
	if err := s.conn(ctx).Where("id = ?", *j.ProductID).Take(&p).Error; err != nil {
		return nil, orNotFound(err)
	}
	return &p, nil
}
