package plugin

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
)

// cancelJob cancels a job whose first attempt has not begun, queued or launched (engine.CancelJob).
// The database decides at once: 200 with the cancelled job, or 409 when the job has started or
// ended (and reads so). No workflow is waited for.
func (h *Handler) cancelJob(c *gin.Context) {
	out, err := h.Engine.Jobs.CancelJob(c.Request.Context(), engine.CancelRequest{
		InstallationID: caller(c).Installation.ID, JobID: c.Param("id"), RequestID: reqctx.RequestID(c),
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	// A cancelled job has no outputs.
	c.PureJSON(http.StatusOK, h.jobResponse(out.Job))
}
