package plugin

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/models/voting"
)

// RefreshURLResponse is the answer of POST /jobs/{id}/refresh-url: the job's outputs with freshly
// signed download URLs.
type RefreshURLResponse struct {
	JobID   string   `json:"job_id"`
	Outputs []Output `json:"outputs"`
	// Livemode is the job's: false for a test key's job.
	Livemode bool `json:"livemode"`
}

// refreshURL answers POST /jobs/{id}/refresh-url: signed download URLs valid for at least
// DOWNLOAD_URL_TTL from now (engine.RefreshOutputs); 409 job_not_completed before the job completed,
// 410 outputs_purged once retention removed its files.
func (h *Handler) refreshURL(c *gin.Context) {
	j, err := h.Engine.Jobs.RefreshOutputs(c.Request.Context(), caller(c).Installation.ID, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, RefreshURLResponse{JobID: j.ID, Outputs: h.outputs(j.Outputs), Livemode: !j.TestMode})
}

func (h *Handler) acceptJob(c *gin.Context) { h.rateJob(c, voting.Accepted) }
func (h *Handler) rejectJob(c *gin.Context) { h.rateJob(c, voting.Rejected) }

// rateJob answers POST /jobs/{id}/accept and /reject with 204 (engine.RateJob); 409
// job_not_completed before the job completed, 410 outputs_purged for a packshot whose file is gone.
func (h *Handler) rateJob(c *gin.Context, voting string) {
	if err := h.Engine.Jobs.RateJob(c.Request.Context(), caller(c).Installation.ID, c.Param("id"), voting); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
