package plugin

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shotflow/shotflow/models"
)

// RefreshURLResponse is the answer of POST /jobs/{id}/refresh-url: the job's outputs with freshly
// signed download URLs.
type RefreshURLResponse struct {
	JobID   string   `json:"job_id"`
	Outputs []Output `json:"outputs"`
}

// refreshURL answers POST /jobs/{id}/refresh-url: signed download URLs valid for at least
// DOWNLOAD_URL_TTL from now; 409 job_not_completed before the job completed, 410 outputs_purged
// once retention removed its files (a job's files are purged together, so one purged file is
// enough: the answer never silently lists fewer files than the job made).
func (h *Handler) refreshURL(c *gin.Context) {
	j, ok := h.findJob(c)
	if !ok {
		return
	}
	if j.Status != models.JobCompleted {
		h.Fail(c, http.StatusConflict, CodeJobNotCompleted, "The job is "+j.Status+"; download URLs exist only for a completed job.")
		return
	}
	outs, err := models.JobOutputs(h.DB.WithContext(c.Request.Context()), j.ID)
	if err != nil {
		h.internal(c, err)
		return
	}
	assets := outs[j.ID]
	if len(assets) == 0 || anyPurged(assets) {
		h.Fail(c, http.StatusGone, CodeOutputsPurged, "The job's files were removed by the retention policy; they can no longer be downloaded.")
		return
	}
	c.PureJSON(http.StatusOK, RefreshURLResponse{JobID: j.ID, Outputs: h.outputs(assets)})
}

func anyPurged(assets []models.Asset) bool {
	for _, a := range assets {
		if a.PurgedAt != nil {
			return true
		}
	}
	return false
}

func (h *Handler) acceptJob(c *gin.Context) { h.rateJob(c, models.VotingAccepted) }
func (h *Handler) rejectJob(c *gin.Context) { h.rateJob(c, models.VotingRejected) }

// errCandidatePurged refuses to approve a packshot whose file retention has removed.
var errCandidatePurged = errors.New("packshot candidate file purged")

// rateJob answers POST /jobs/{id}/accept and /reject with 204: it records the rating on the job
// (voting, voting_at; a later rating overwrites an earlier one). For a packshot job the same
// transaction decides the job's packshot candidate: accepted, it is the product's newest approved
// packshot and the one photo sessions use; rejected, photo sessions never use it. A photo_shoot
// rating is feedback only. 409 job_not_completed before the job completed.
func (h *Handler) rateJob(c *gin.Context, voting string) {
	j, ok := h.findJob(c)
	if !ok {
		return
	}
	if j.Status != models.JobCompleted {
		h.Fail(c, http.StatusConflict, CodeJobNotCompleted, "The job is "+j.Status+"; only a completed job can be accepted or rejected.")
		return
	}
	err := h.DB.WithContext(c.Request.Context()).Transaction(func(tx *gorm.DB) error {
		return applyRating(tx, j, voting, time.Now().UTC())
	})
	if errors.Is(err, errCandidatePurged) {
		h.Fail(c, http.StatusGone, CodeOutputsPurged, "The job's packshot file was removed by the retention policy, so it cannot become the product's approved packshot.")
		return
	}
	if err != nil {
		h.internal(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// applyRating records a rating (models.VotingAccepted or models.VotingRejected) of a completed job in
// tx, and for a packshot job applies it to the job's packshot candidate, creating the candidate
// first if the job completed before candidates existed. A candidate deleted from the catalog
// (DELETE /packshots) stays deleted. Accepting a candidate whose file was purged fails with
// errCandidatePurged; the candidate's asset row is locked first, as the retention sweep does, so
// a file is never purged under a packshot being accepted.
func applyRating(tx *gorm.DB, j *models.Job, voting string, now time.Time) error {
	res := tx.Model(&models.Job{}).Where("id = ? AND status = ?", j.ID, models.JobCompleted).
		Updates(map[string]any{"voting": voting, "voting_at": now, "updated_at": now})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return gorm.ErrRecordNotFound
	}
	if j.JobType != models.JobTypePackshot {
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
