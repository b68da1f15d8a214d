package engine

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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

// RefreshOutputs returns a completed job of the installation with its output files, for fresh
// download URLs: KindConflict (ReasonJobNotCompleted) before the job completed, and
// ReasonOutputsPurged once retention removed its files (a job's files are purged together, so one
// purged file is enough: the answer never silently lists fewer files than the job made).
func (e *Jobs) RefreshOutputs(ctx context.Context, installationID, jobID string) (*models.Job, []models.Asset, error) {
	j, err := e.FindJob(ctx, installationID, jobID)
	if err != nil {
		return nil, nil, err
	}
	if j.Status != status.JobCompleted {
		return nil, nil, refuse(KindConflict, ReasonJobNotCompleted, "", "The job is %s; download URLs exist only for a completed job.", j.Status)
	}
	outs, err := models.JobOutputs(e.cfg.DB.WithContext(ctx), j.ID)
	if err != nil {
		return nil, nil, err
	}
	assets := outs[j.ID]
	if len(assets) == 0 || anyPurged(assets) {
		return nil, nil, refuse(KindConflict, ReasonOutputsPurged, "", "The job's files were removed by the retention policy; they can no longer be downloaded.")
	}
	return j, assets, nil
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

// RateJob records a rating (models.VotingAccepted or models.VotingRejected) of a completed job of
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
func (e *Jobs) JobWithOutputs(ctx context.Context, installationID, jobID string) (*models.Job, []models.Asset, error) {
	j, err := e.FindJob(ctx, installationID, jobID)
	if err != nil {
		return nil, nil, err
	}
	outs, err := models.JobOutputs(e.cfg.DB.WithContext(ctx), j.ID)
	if err != nil {
		return nil, nil, err
	}
	return j, outs[j.ID], nil
}

// OrderDetail is an order with its jobs in order of position and their output files by job ID.
type OrderDetail struct {
	Order   *models.Order
	Jobs    []models.Job
	Outputs map[string][]models.Asset
}

// FindOrder returns an order of the installation with its jobs and their outputs; KindNotFound when
// it does not exist or belongs to another installation.
func (e *Jobs) FindOrder(ctx context.Context, installationID, orderID string) (OrderDetail, error) {
	db := e.cfg.DB.WithContext(ctx)
	o, err := installationOrder(db, installationID, orderID)
	if err != nil {
		return OrderDetail{}, err
	}
	jobs, err := models.OrderJobs(db, o.ID)
	if err != nil {
		return OrderDetail{}, err
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	outs, err := models.JobOutputs(db, ids...)
	if err != nil {
		return OrderDetail{}, err
	}
	return OrderDetail{Order: o, Jobs: jobs, Outputs: outs}, nil
}

// installationOrder returns an order of the installation; KindNotFound when it does not exist or
// belongs to another installation.
func installationOrder(db *gorm.DB, installationID, orderID string) (*models.Order, error) {
	var o models.Order
	err := db.Where("id = ? AND installation_id = ?", orderID, installationID).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, refuse(KindNotFound, "", "", "No order with this ID.")
	}
	if err != nil {
		return nil, err
	}
	return &o, nil
}
