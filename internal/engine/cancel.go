package engine

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// Timing of a cancel. The order workflow decides with a validator that refuses the request once
// workflow time passes its AcceptBy, so CancelJob knows the outcome for certain by the decision
// horizon: AcceptBy, plus a workflow task that began before it and completes within
// orderTaskTimeout, plus the clock difference between this host and the Temporal server.
const (
	// cancelAcceptWindow is how long after the request the order workflow may accept the cancel.
	cancelAcceptWindow = 5 * time.Second
	// orderTaskTimeout is the workflow task timeout of order workflows (Temporal's default).
	orderTaskTimeout = 10 * time.Second
	// clockSkew bounds the difference between this host's clock and the Temporal server's.
	clockSkew = 5 * time.Second
	// cancelCompleteWait is how long an accepted cancel may take to be recorded before CancelJob
	// answers that it is accepted but not recorded yet.
	cancelCompleteWait = 5 * time.Second
	// retryCancelAfter is the Retry-After of a cancel that was not taken in time.
	retryCancelAfter = 5 * time.Second
)

// CancelRequest asks to cancel a job of an installation.
type CancelRequest struct {
	InstallationID string
	JobID          string
	// RequestID names the request in the Update's ID, for the Temporal UI and the logs.
	RequestID string
}

// CancelOutcome is an accepted cancel. Recorded says whether the job's cancellation is stored: then
// Job is the cancelled job. Otherwise the cancel is decided (the job will never start) but the
// worker has not recorded it yet, for example while it cannot reach the database; Job is the job as
// stored, pending, and becomes cancelled once it is recorded.
type CancelOutcome struct {
	Job      *models.Job
	Recorded bool
}

// CancelJob cancels a job that has not started. The order workflow alone knows whether a job has
// started, so the cancel is a workflow Update whose validator refuses started jobs: once accepted
// the job can never start, and once started it can no longer be cancelled.
//
// The outcome is always certain: accepted (recorded or not yet), refused with KindConflict
// (ReasonJobNotCancelable), or KindUnavailable when the workflow did not accept it by its AcceptBy,
// in which case it never will and the job stays as it is. A job of another installation is
// KindNotFound. The wait for the Update is bounded by its decision horizon, not by ctx's
// cancellation, so a caller's own timeout can never turn an accepted cancel into a refusal.
func (e *Engine) CancelJob(ctx context.Context, req CancelRequest) (CancelOutcome, error) {
	db := e.DB.WithContext(ctx)
	var j models.Job
	err := db.Where("id = ? AND installation_id = ?", req.JobID, req.InstallationID).Take(&j).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return CancelOutcome{}, refuse(KindNotFound, "", "", "No job with this ID.")
	}
	if err != nil {
		return CancelOutcome{}, err
	}
	if j.Status != models.JobPending {
		return CancelOutcome{}, notCancelable()
	}
	var order models.Order
	if err := db.Take(&order, "id = ?", j.OrderID).Error; err != nil {
		return CancelOutcome{}, err
	}
	if order.WorkflowStartedAt == nil {
		// The order's start is still pending in the outbox: start it now so it can take the update.
		var jobs []models.Job
		if err := db.Where("order_id = ?", order.ID).Order("position").Find(&jobs).Error; err != nil {
			return CancelOutcome{}, err
		}
		if err := e.Start(ctx, &order, jobs); err != nil {
			return CancelOutcome{}, unavailable("The job was not cancelled: the workflow engine cannot be reached. The job stays as it is; try again shortly.", retryCancelAfter, err)
		}
	}
	tctx := context.WithoutCancel(ctx)
	handle, err := e.requestCancel(tctx, order.ID, j.ID, req.RequestID)
	var appErr *temporal.ApplicationError
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeJobNotCancelable, errors.As(err, &notFound):
		// Refused by the validator, or the order workflow has already finished.
		return CancelOutcome{}, notCancelable()
	case err != nil:
		return CancelOutcome{}, unavailable("The job was not cancelled: the workflow engine did not take the request in time. The job stays as it is; try again shortly.", retryCancelAfter, err)
	}
	// Accepted: the job will never start. Wait a little for the cancel to be recorded.
	wctx, cancel := context.WithTimeout(tctx, cancelCompleteWait)
	defer cancel()
	var res workflows.CancelResult
	if err := handle.Get(wctx, &res); err != nil {
		return CancelOutcome{Job: &j}, nil
	}
	if fresh, err := models.GetJob(db, j.ID); err == nil {
		return CancelOutcome{Job: fresh, Recorded: true}, nil
	}
	// Recorded by the worker; this process cannot read it back right now.
	j.Status = res.Status
	return CancelOutcome{Job: &j, Recorded: true}, nil
}

func notCancelable() *Error {
	return refuse(KindConflict, ReasonJobNotCancelable, "",
		"The job has already started or finished; only a job that has not started can be cancelled.")
}

// requestCancel sends the cancel-job Update and waits until the order workflow has accepted or
// refused it, or until the decision horizon has passed without acceptance: then it returns an
// error, and the workflow will refuse the request whenever it sees it. Lost calls are sent again
// under the same update ID, which Temporal deduplicates.
func (e *Engine) requestCancel(ctx context.Context, orderID, jobID, requestID string) (client.WorkflowUpdateHandle, error) {
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
		handle, err := e.Temporal.UpdateWorkflow(hctx, opts)
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
