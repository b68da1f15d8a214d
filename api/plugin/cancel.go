package plugin

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// cancelJob cancels a job that has not started. The order workflow alone knows whether a job has
// started, so the cancel is a workflow Update whose validator refuses started jobs: once accepted
// the job can never start, and once started it can no longer be cancelled.
func (h *Handler) cancelJob(c *gin.Context) {
	j, ok := h.findJob(c)
	if !ok {
		return
	}
	if j.Status != models.JobPending {
		h.Fail(c, http.StatusConflict, CodeJobNotCancelable, "The job has already started or finished; only a job that has not started can be cancelled.")
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 30*time.Second)
	defer cancel()
	db := h.DB.WithContext(ctx)
	var order models.Order
	if err := db.Take(&order, "id = ?", j.OrderID).Error; err != nil {
		h.internal(c, err)
		return
	}
	if order.WorkflowStartedAt == nil {
		// The order's start is still pending in the outbox: start it now so it can take the update.
		var jobs []models.Job
		if err := db.Where("order_id = ?", order.ID).Order("position").Find(&jobs).Error; err != nil {
			h.internal(c, err)
			return
		}
		if err := h.Intake.Start(ctx, &order, jobs); err != nil {
			_ = c.Error(err)
			h.Fail(c, http.StatusServiceUnavailable, CodeUnavailable, "The job could not be cancelled right now; try again shortly.")
			return
		}
	}
	handle, err := h.Intake.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflows.OrderWorkflowID(order.ID),
		UpdateName:   workflows.UpdateCancelJob,
		Args:         []any{j.ID},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		var res workflows.CancelResult
		err = handle.Get(ctx, &res)
	}
	var appErr *temporal.ApplicationError
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeJobNotCancelable, errors.As(err, &notFound):
		// Refused by the validator, or the order workflow has already finished.
		h.Fail(c, http.StatusConflict, CodeJobNotCancelable, "The job has already started or finished; only a job that has not started can be cancelled.")
		return
	case err != nil:
		_ = c.Error(err)
		h.Fail(c, http.StatusServiceUnavailable, CodeUnavailable, "The job could not be cancelled right now; try again shortly.")
		return
	}
	j, err = models.GetJob(db, j.ID)
	if err != nil {
		h.internal(c, err)
		return
	}
	outs, err := models.JobOutputs(db, j.ID)
	if err != nil {
		h.internal(c, err)
		return
	}
	c.PureJSON(http.StatusOK, h.jobResponse(j, outs[j.ID]))
}
