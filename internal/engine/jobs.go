package engine

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// Reasons of the job use cases.
const (
	ReasonJobNotCompleted = "job_not_completed"
	ReasonOutputsPurged   = "outputs_purged"
)

// FindJob returns a job of the installation; KindNotFound when it does not exist or belongs to
// another installation.
func (e *Jobs) FindJob(ctx context.Context, installationID, jobID string) (*models.Job, error) {
	var j models.Job
	err := e.cfg.DB.WithContext(ctx).Where("id = ? AND installation_id = ?", jobID, installationID).Take(&j).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, refuse(KindNotFound, "", "", "No job with this ID.")
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// Job is a job as the façades show it: the stored state jobview renders and the job's output
// files in order (purged ones included; jobview leaves them out).
type Job struct {
	jobview.Record
	Outputs []jobview.File
}

// jobOf is the view of a stored job with its output assets.
func jobOf(j *models.Job, outputs []models.Asset) Job {
	return Job{Record: jobview.RecordOf(j), Outputs: jobview.FilesOf(outputs)}
}

// RefreshOutputs returns a completed job of the installation with its output files, for fresh
// download URLs: KindConflict (ReasonJobNotCompleted) before the job completed, and
// ReasonOutputsPurged once retention removed its files (a job's files are purged together, so one
// purged file is enough: the answer never silently lists fewer files than the job made).
func (e *Jobs) RefreshOutputs(ctx context.Context, installationID, jobID string) (Job, error) {
	j, err := e.FindJob(ctx, installationID, jobID)
	if err != nil {
		return Job{}, err
	}
	if j.Status != status.JobCompleted {
		return Job{}, refuse(KindConflict, ReasonJobNotCompleted, "", "The job is %s; download URLs exist only for a completed job.", j.Status)
	}
	outs, err := models.JobOutputs(e.cfg.DB.WithContext(ctx), j.ID)
	if err != nil {
		return Job{}, err
	}
	assets := outs[j.ID]
	if len(assets) == 0 || anyPurged(assets) {
		return Job{}, refuse(KindConflict, ReasonOutputsPurged, "", "The job's files were removed by the retention policy; they can no longer be downloaded.")
	}
	return jobOf(j, assets), nil
}

func anyPurged(assets []models.Asset) bool {
	for _, a := range assets {
		if a.PurgedAt != nil {
			return true
		}
	}
	return false
}

// errCandidatePurged refuses to approve a packshot whose file retention has removed.
var errCandidatePurged = errors.New("packshot candidate file purged")

// RateJob records a rating (voting.Accepted or voting.Rejected) of a completed job of
// the installation (voting, voting_at; a later rating overwrites an earlier one). For a packshot job
// the same transaction decides the job's packshot candidate: accepted, it is the product's newest
// approved packshot and the one photo sessions use; rejected, photo sessions never use it. A
// photo_shoot rating is feedback only. KindConflict (ReasonJobNotCompleted) before the job
// completed; ReasonOutputsPurged when accepting a packshot whose file retention removed.
func (e *Jobs) RateJob(ctx context.Context, installationID, jobID, voting string) error {
	j, err := e.FindJob(ctx, installationID, jobID)
	if err != nil {
		return err
	}
	if j.Status != status.JobCompleted {
		return refuse(KindConflict, ReasonJobNotCompleted, "", "The job is %s; only a completed job can be accepted or rejected.", j.Status)
	}
	err = e.cfg.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return applyRating(tx, j, voting, time.Now().UTC())
	})
	if errors.Is(err, errCandidatePurged) {
		return refuse(KindConflict, ReasonOutputsPurged, "", "The job's packshot file was removed by the retention policy, so it cannot become the product's approved packshot.")
	}
	return err
}

// applyRating records a rating of a completed job in tx, and for a packshot job applies it to the
// job's packshot candidate, creating the candidate first if the job completed before candidates
// existed. A candidate deleted from the catalog (DELETE /packshots) stays deleted. Accepting a
// candidate whose file was purged fails with errCandidatePurged; the candidate's asset row is
// locked first, as the retention sweep does, so a file is never purged under a packshot being
// accepted.
func applyRating(tx *gorm.DB, j *models.Job, voting string, now time.Time) error {
	res := tx.Model(&models.Job{}).Where("id = ? AND status = ?", j.ID, status.JobCompleted).
		Updates(map[string]any{"voting": voting, "voting_at": now, "updated_at": now})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return gorm.ErrRecordNotFound
	}
	if j.JobType != jobtype.Packshot {
		return nil
	}
	candidate, err := models.EnsurePackshotCandidate(tx, j)
	if err != nil || candidate == nil || candidate.DeletedAt != nil {
		return err
	}
	if voting == models.VotingAccepted {
		var file models.Asset
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&file, "id = ?", candidate.AssetID).Error; err != nil {
			return err
		}
		if file.PurgedAt != nil {
			return errCandidatePurged
		}
	}
	return tx.Model(&models.Packshot{}).Where("id = ? AND deleted_at IS NULL", candidate.ID).
		Updates(map[string]any{"voting": voting, "voting_at": now}).Error
}

// JobWithOutputs returns a job of the installation with its output files; KindNotFound for
// another installation's.
func (e *Jobs) JobWithOutputs(ctx context.Context, installationID, jobID string) (Job, error) {
	j, err := e.FindJob(ctx, installationID, jobID)
	if err != nil {
		return Job{}, err
	}
	outs, err := models.JobOutputs(e.cfg.DB.WithContext(ctx), j.ID)
	if err != nil {
		return Job{}, err
	}
	return jobOf(j, outs[j.ID]), nil
}

// Order is an order as the façades show it.
type Order struct {
	ID            string
	Status        string
	JobType       string
	SessionConfig []byte // the session's configuration, a JSON document; nil when it has none
	JobsTotal     int
	JobsCompleted int
	JobsFailed    int
	JobsCancelled int
	JobsExpired   int
	// The credits the order reserved, then consumed or released as its jobs ended.
	CreditsReserved int64
	CreditsConsumed int64
	CreditsReleased int64
	SourceOrderID   *string // the order a clone was made from
	CreatedAt       time.Time
	UpdatedAt       time.Time
	CompletedAt     *time.Time
}

// orderOf is the view of a stored order.
func orderOf(o *models.Order) Order {
	var cfg []byte
	if len(o.SessionConfig) > 0 {
		cfg = []byte(o.SessionConfig)
	}
	return Order{
		ID: o.ID, Status: o.Status, JobType: o.JobType, SessionConfig: cfg, JobsTotal: o.JobsTotal,
		JobsCompleted: o.JobsCompleted, JobsFailed: o.JobsFailed, JobsCancelled: o.JobsCancelled, JobsExpired: o.JobsExpired,
		CreditsReserved: o.CreditsReserved, CreditsConsumed: o.CreditsConsumed, CreditsReleased: o.CreditsReleased,
		SourceOrderID: o.SourceOrderID, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, CompletedAt: o.CompletedAt,
	}
}

// OrderDetail is an order with its jobs in order of position, each with its output files.
type OrderDetail struct {
	Order Order
	Jobs  []Job
}

// FindOrder returns an order of the installation with its jobs and their outputs; KindNotFound when
// it does not exist or belongs to another installation.
func (e *Jobs) FindOrder(ctx context.Context, installationID, orderID string) (OrderDetail, error) {
	o, err := installationOrder(ctx, e.store, installationID, orderID)
	if err != nil {
		return OrderDetail{}, err
	}
	jobs, err := e.store.OrderJobs(ctx, o.ID)
	if err != nil {
		return OrderDetail{}, err
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	outs, err := e.store.JobOutputs(ctx, ids...)
	if err != nil {
		return OrderDetail{}, err
	}
	d := OrderDetail{Order: orderOf(o), Jobs: make([]Job, len(jobs))}
	for i := range jobs {
		d.Jobs[i] = jobOf(&jobs[i], outs[jobs[i].ID])
	}
	return d, nil
}

// installationOrder returns an order of the installation; KindNotFound when it does not exist or
// belongs to another installation.
func installationOrder(ctx context.Context, store *models.Store, installationID, orderID string) (*models.Order, error) {
	o, err := store.InstallationOrder(ctx, installationID, orderID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, refuse(KindNotFound, "", "", "No order with this ID.")
	}
	return o, err
}
