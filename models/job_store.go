package models

import (
	"context"
	"errors"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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

// BeginAttemptOf is BeginAttempt returning the job as its UPDATE left it.
func (s *Store) BeginAttemptOf(ctx context.Context, jobID string, run, attempt int) (*Job, error) {
	return BeginAttemptOf(s.conn(ctx), jobID, run, attempt)
}

// MarkRetryPending records a failed attempt of a job run that will be retried: the job shows
// retry_pending with the attempt's error category, hint and detail. A run that has ended, or is not
// the job's current one, is left as it is.
func (s *Store) MarkRetryPending(ctx context.Context, jobID string, run int, category, hint, detail string) error {
	_, err := s.MarkRetryPendingOf(ctx, jobID, run, category, hint, detail)
	return err
}

// MarkRetryPendingOf is MarkRetryPending returning the job as its UPDATE left it (one statement),
// or nil when the run had ended or was superseded and nothing changed.
func (s *Store) MarkRetryPendingOf(ctx context.Context, jobID string, run int, category, hint, detail string) (*Job, error) {
	var j Job
	res := s.conn(ctx).Model(&j).Clauses(clause.Returning{}).
		Where("id = ? AND run = ? AND status IN ?", jobID, run, []string{status.JobPending, status.JobInProgress, status.JobRetryPending}).
		Updates(map[string]any{
			"status":         status.JobRetryPending,
			"error_category": category,
			"error_hint":     hint,
			"error_detail":   detail,
			"updated_at":     time.Now().UTC(),
		})
	if res.Error != nil || res.RowsAffected == 0 {
		return nil, res.Error
	}
	return &j, nil
}

// CompleteJob marks a job run completed with its outputs and settles its credits and order in one
// transaction (a savepoint when the store is in one); false when the run was already terminal. It
// returns the job as the call left it, read once (see CompleteJobRun); the outputs' account,
// installation and job are filled in from it. The account's update is the transaction's last
// statement: on the store of a Tx, the Tx sends it just before its COMMIT.
func (s *Store) CompleteJob(ctx context.Context, jobID string, run int, outputs []Asset) (*Job, bool, error) {
	return completeJobRun(s.conn(ctx), jobID, run, outputs, s.owed)
}

// EndJob moves a job run to a terminal status other than completed and releases its credits in one
// transaction (a savepoint when the store is in one); false when the run was already terminal. It
// returns the job as the call left it, read once (see EndJobRun). The account's update comes last,
// as CompleteJob's.
func (s *Store) EndJob(ctx context.Context, jobID string, run int, to, category, hint, detail string) (*Job, bool, error) {
	return endJobRun(s.conn(ctx), jobID, run, to, category, hint, detail, s.owed)
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

// InstallationJob loads a job of the installation; ErrNotFound when it does not exist or belongs to
// another installation.
func (s *Store) InstallationJob(ctx context.Context, installationID, jobID string) (*Job, error) {
	var j Job
	if err := s.conn(ctx).Where("id = ? AND installation_id = ?", jobID, installationID).Take(&j).Error; err != nil {
		return nil, orNotFound(err)
	}
	return &j, nil
}

// JobCursor is a position in the (created_at DESC, id DESC) order of an installation's jobs.
type JobCursor struct {
	CreatedAt time.Time
	ID        string
}

// InstallationJobFilter selects a page of an installation's jobs (InstallationJobs).
type InstallationJobFilter struct {
	Status        string     // "": any
	CreatedAfter  *time.Time // inclusive
	CreatedBefore *time.Time // exclusive
	After         *JobCursor // start after this job
	Limit         int
}

// InstallationJobs returns up to f.Limit jobs of the installation matching f, newest first by
// (created_at, id), walking the index jobs_installation_created (installation_id, created_at, id).
func (s *Store) InstallationJobs(ctx context.Context, installationID string, f InstallationJobFilter) ([]Job, error) {
	q := s.conn(ctx).Where("installation_id = ?", installationID)
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	q = createdBetween(q, f.CreatedAfter, f.CreatedBefore)
	if f.After != nil {
		at := f.After.CreatedAt.UTC()
		q = q.Where("(created_at < ? OR (created_at = ? AND id < ?))", at, at, f.After.ID)
	}
	var jobs []Job
	err := q.Order("created_at DESC, id DESC").Limit(f.Limit).Find(&jobs).Error
	return jobs, err
}

// ErrPackshotPurged refuses to accept a packshot candidate whose file retention has removed.
var ErrPackshotPurged = errors.New("packshot candidate file purged")

// RateJob records a rating (voting, voting_at) of a completed job in one transaction (a savepoint
// when the store is in one); for a packshot job it applies the rating to the job's packshot
// candidate, creating the candidate first if the job completed before candidates existed
// (EnsurePackshotCandidate). A candidate deleted from the catalog stays deleted. Accepting a
// candidate whose file was purged fails with ErrPackshotPurged: the candidate's asset row is locked
// first, as the retention sweep does, so a file is never purged under a packshot being accepted.
// ErrNotFound when the job is no longer completed.
func (s *Store) RateJob(ctx context.Context, j *Job, voting string, now time.Time) error {
	return s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&Job{}).Where("id = ? AND status = ?", j.ID, status.JobCompleted).
			Updates(map[string]any{"voting": voting, "voting_at": now, "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		if j.JobType != jobtype.Packshot {
			return nil
		}
		candidate, err := EnsurePackshotCandidate(tx, j)
		if err != nil || candidate == nil || candidate.DeletedAt != nil {
			return err
		}
		if voting == VotingAccepted {
			var file Asset
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&file, "id = ?", candidate.AssetID).Error; err != nil {
				return err
			}
			if file.PurgedAt != nil {
				return ErrPackshotPurged
			}
		}
		return tx.Model(&Packshot{}).Where("id = ? AND deleted_at IS NULL", candidate.ID).
			Updates(map[string]any{"voting": voting, "voting_at": now}).Error
	})
}
