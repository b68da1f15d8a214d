package engine

import (
	"context"
	"errors"
	"time"

	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/models"
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
	j, err := e.store.InstallationJob(ctx, installationID, jobID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, refuse(KindNotFound, "", "", "No job with this ID.")
	}
	return j, err
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
	outs, err := e.store.JobOutputs(ctx, j.ID)
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
	err = e.store.RateJob(ctx, j, voting, time.Now().UTC())
	if errors.Is(err, models.ErrPackshotPurged) {
		return refuse(KindConflict, ReasonOutputsPurged, "", "The job's packshot file was removed by the retention policy, so it cannot become the product's approved packshot.")
	}
	return err
}

// JobWithOutputs returns a job of the installation with its output files; KindNotFound for
// another installation's.
func (e *Jobs) JobWithOutputs(ctx context.Context, installationID, jobID string) (Job, error) {
	j, err := e.FindJob(ctx, installationID, jobID)
	if err != nil {
		return Job{}, err
	}
	outs, err := e.store.JobOutputs(ctx, j.ID)
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
	// EventSeq numbers the order's latest event (Feed): a request that waits for the order to
	// change waits for a higher one.
	EventSeq int64
	TestMode bool // created by a test key
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
		EventSeq: o.EventSeq, TestMode: o.TestMode,
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
