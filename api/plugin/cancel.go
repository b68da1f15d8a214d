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

// Timing of a cancel. The order workflow decides with a validator that refuses the request once
// workflow time passes its AcceptBy, so the handler knows the outcome for certain by the decision
// horizon: AcceptBy, plus a workflow task that began before it and completes within
// orderTaskTimeout, plus the clock difference between this host and the Temporal server.
const (
	// cancelAcceptWindow is how long after the request the order workflow may accept the cancel.
	cancelAcceptWindow = 5 * time.Second
	// orderTaskTimeout is the workflow task timeout of order workflows (Temporal's default).
	orderTaskTimeout = 10 * time.Second
	// clockSkew bounds the difference between this host's clock and the Temporal server's.
	clockSkew = 5 * time.Second
	// cancelCompleteWait is how long an accepted cancel may take to be recorded before the
	// answer is 202 instead of 200.
	cancelCompleteWait = 5 * time.Second
)

// cancelJob cancels a job that has not started. The order workflow alone knows whether a job has
// started, so the cancel is a workflow Update whose validator refuses started jobs: once accepted
// the job can never start, and once started it can no longer be cancelled.
//
// The answer always says what happens: 200 with the cancelled job; 202 with the job as stored when
// the cancel is accepted (the job will never start) but not yet recorded, for example while the
// worker cannot reach the database; 409 when refused; 503 when the workflow did not accept it by
// its AcceptBy, in which case it never will and the job stays as it is.
func (h *Handler) cancelJob(c *gin.Context) {
	j, ok := h.findJob(c)
	if !ok {
		return
	}
	if j.Status != models.JobPending {
		h.notCancelable(c)
		return
	}
	ctx := c.Request.Context()
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
			h.unavailableWith(c, err, "The job was not cancelled: the workflow engine cannot be reached. The job stays as it is; try again shortly.")
			return
		}
	}
	// Once sent, the cancel's outcome must be learnt before answering, even past the request's own
	// timeout: the waits below are bounded by the decision horizon instead (at most about 25 s).
	tctx := context.WithoutCancel(ctx)
	handle, err := h.requestCancel(tctx, order.ID, j.ID, c.GetString("request_id"))
	var appErr *temporal.ApplicationError
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeJobNotCancelable, errors.As(err, &notFound):
		// Refused by the validator, or the order workflow has already finished.
		h.notCancelable(c)
		return
	case err != nil:
		h.unavailableWith(c, err, "The job was not cancelled: the workflow engine did not take the request in time. The job stays as it is; try again shortly.")
		return
	}
	// Accepted: the job will never start. Wait a little for the cancel to be recorded.
	wctx, cancel := context.WithTimeout(tctx, cancelCompleteWait)
	defer cancel()
	var res workflows.CancelResult
	if err := handle.Get(wctx, &res); err != nil {
		_ = c.Error(err)
		h.answerJob(c, http.StatusAccepted, j)
		return
	}
	if fresh, err := models.GetJob(db, j.ID); err == nil {
		j = fresh
	} else {
		// Recorded by the worker; this process cannot read it back right now.
		_ = c.Error(err)
		j.Status = res.Status
	}
	h.answerJob(c, http.StatusOK, j)
}

// requestCancel sends the cancel-job Update and waits until the order workflow has accepted or
// refused it, or until the decision horizon has passed without acceptance: then it returns an
// error, and the workflow will refuse the request whenever it sees it. Lost calls are sent again
// under the same update ID, which Temporal deduplicates.
func (h *Handler) requestCancel(ctx context.Context, orderID, jobID, requestID string) (client.WorkflowUpdateHandle, error) {
	acceptBy := time.Now().Add(cancelAcceptWindow)
	horizon := acceptBy.Add(orderTaskTimeout + clockSkew)
	opts := client.UpdateWorkflowOptions{
		UpdateID:     "cancel/" + jobID + "/" + requestID + "/" + models.NewID(),
		WorkflowID:   workflows.OrderWorkflowID(orderID),
		UpdateName:   workflows.UpdateCancelJob,
		Args:         []any{jobID, workflows.CancelOptions{AcceptBy: acceptBy}},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	}
	for {
		hctx, cancel := context.WithDeadline(ctx, horizon)
		handle, err := h.Intake.Temporal.UpdateWorkflow(hctx, opts)
		cancel()
		var appErr *temporal.ApplicationError
		var notFound *serviceerror.NotFound
		if err == nil || errors.As(err, &appErr) || errors.As(err, &notFound) {
			return handle, err
		}
		if !time.Now().Before(horizon) || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// answerJob answers with a job that has no outputs (pending or cancelled).
func (h *Handler) answerJob(c *gin.Context, status int, j *models.Job) {
	c.PureJSON(status, h.jobResponse(j, nil))
}

func (h *Handler) notCancelable(c *gin.Context) {
	h.Fail(c, http.StatusConflict, CodeJobNotCancelable, "The job has already started or finished; only a job that has not started can be cancelled.")
}

// unavailableWith answers 503 (with Retry-After) for a dependency that did not answer in time.
func (h *Handler) unavailableWith(c *gin.Context, err error, message string) {
	_ = c.Error(err)
	h.Fail(c, http.StatusServiceUnavailable, CodeUnavailable, message)
}
