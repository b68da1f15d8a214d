package plugin

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
)

// cancelJob cancels a job whose first attempt has not begun, queued or launched (engine.CancelJob).
// The answer always says what happens: 200 with the cancelled job; 202 with the job as stored when
// the cancel is accepted (the job will never start) but not recorded yet, for example while the
// worker cannot reach the database; 409 when refused (the job has started, and reads so); 503 when
// no workflow took it in time, in which case none ever will and the job stays as it is.
func (h *Handler) cancelJob(c *gin.Context) {
	out, err := h.Engine.Jobs.CancelJob(c.Request.Context(), engine.CancelRequest{
		InstallationID: caller(c).Installation.ID, JobID: c.Param("id"), RequestID: reqctx.RequestID(c),
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	status := http.StatusOK
	if !out.Recorded {
		status = http.StatusAccepted
	}
	// A pending or cancelled job has no outputs.
	c.PureJSON(status, h.jobResponse(out.Job))
}
