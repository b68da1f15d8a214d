package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// Timing of a cancel. The order workflow, or the job's own workflow, decides with a validator that
// refuses the request once workflow time passes its AcceptBy, so CancelJob knows the outcome for certain by the decision
// horizon: AcceptBy, plus a workflow task that began before it and completes within
// orderTaskTimeout, plus the clock difference between this host and the Temporal server.
const (
	// cancelAcceptWindow is how long after the request a workflow may accept the cancel.
	cancelAcceptWindow = 5 * time.Second
	// orderTaskTimeout is the workflow task timeout of order and job workflows (Temporal's default).
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
// Job is the cancelled job. Otherwise the cancel is decided (the job will never begin) but the
// worker has not recorded it yet, for example while it cannot reach the database; Job is the job as
// stored, pending, and becomes cancelled once it is recorded.
type CancelOutcome struct {
	Job      Job // a pending or cancelled job has no outputs
	Recorded bool
}

// CancelJob cancels a job that has not started: one that waits in its order, or that its order
// (or an operator's re-run) has launched but whose first attempt has not begun. Whoever holds the
// job decides, with a workflow Update whose validator refuses started jobs: the order workflow for
// a job it has not launched, else the job's own workflow (workflows.JobWorkflow), where accepting a
// cancel and beginning the first attempt exclude each other. Once accepted the job never begins an
// attempt, and once its first attempt has begun it can no longer be cancelled.
//
// The outcome is always certain: accepted (recorded or not yet), refused with KindConflict
// (ReasonJobNotCancelable), or KindUnavailable when no workflow accepted it by its AcceptBy, in
// which case none ever will and the job stays as it is. A job of another installation is
// KindNotFound. A job that is no longer pending when the request comes is running or finished
// (cancelled is final too) and refused, as the plugin API's contract says; a retried DELETE that
// carries the request's Idempotency-Key replays the first answer instead. A request that found
// the job pending and then lost the race to another cancel (or to its own, in a workflow task
// Temporal had to retry) gets the cancelled job it asked for. The wait for the Updates is bounded by one decision horizon, not by ctx's
// cancellation, so a caller's own timeout can never turn an accepted cancel into a refusal.
func (e *Jobs) CancelJob(ctx context.Context, req CancelRequest) (CancelOutcome, error) {
	j, err := e.FindJob(ctx, req.InstallationID, req.JobID)
	if err != nil {
		return CancelOutcome{}, err
	}
	if j.Status != status.JobPending {
		return CancelOutcome{}, notCancelable()
	}
	tctx := context.WithoutCancel(ctx)
	accepted, err := e.decideCancel(ctx, tctx, newCancelDeadline(), j, req.RequestID)
	if refusal, ok := As(err); ok && refusal.Reason == ReasonJobNotCancelable {
		// The refusal may have raced with a cancel that won (another request's, or this one's
		// in a workflow task Temporal had to retry): what the stored job says then decides.
		if fresh, rerr := e.store.GetJob(ctx, j.ID); rerr == nil {
			return cancelledMeanwhile(fresh)
		}
	}
	if err != nil {
		return CancelOutcome{}, err
	}
	// Accepted: the job will never begin an attempt.
	if !accepted.recorded {
		return CancelOutcome{Job: jobOf(j, nil)}, nil
	}
	if fresh, err := e.store.GetJob(ctx, j.ID); err == nil {
		return CancelOutcome{Job: jobOf(fresh, nil), Recorded: true}, nil
	}
	// Recorded by the worker; this process cannot read it back right now.
	j.Status = accepted.result.Status
	return CancelOutcome{Job: jobOf(j, nil), Recorded: true}, nil
}

// cancelledMeanwhile answers a cancel the workflow refused after the request found the job
// pending: a job cancelled meanwhile before its first attempt began is the outcome the request
// asked for, answered as a recorded cancel; any other job has started or ended, and the cancel is
// refused.
func cancelledMeanwhile(j *models.Job) (CancelOutcome, error) {
	if j.Status == status.JobCancelled && j.StartedAt == nil && j.AttemptCount == 0 {
		return CancelOutcome{Job: jobOf(j, nil), Recorded: true}, nil
	}
	return CancelOutcome{}, notCancelable()
}

func notCancelable() *Error {
	return refuse(KindConflict, ReasonJobNotCancelable, "",
		"The job has already started or finished; only a job that has not started can be cancelled.")
}

// notTakenInTime is the refusal of a cancel no workflow accepted by its decision horizon.
func notTakenInTime(cause error) *Error {
	return unavailable("The job was not cancelled: the workflow engine did not take the request in time. The job stays as it is; try again shortly.", retryCancelAfter, cause)
}

// cancelDeadline is the decision horizon of one cancel request, shared by every Update it sends:
// a workflow accepts none of them after AcceptBy, so by the horizon the outcome is certain.
type cancelDeadline struct {
	acceptBy time.Time
	horizon  time.Time
}

func newCancelDeadline() cancelDeadline {
	acceptBy := time.Now().Add(cancelAcceptWindow)
	return cancelDeadline{acceptBy: acceptBy, horizon: acceptBy.Add(orderTaskTimeout + clockSkew)}
}

// acceptedCancel is a cancel a workflow accepted: recorded says whether it was stored within
// cancelCompleteWait, and then result is the workflow's answer.
type acceptedCancel struct {
	result   workflows.CancelResult
	recorded bool
}

// decideCancel asks whoever holds the job to cancel it and returns the accepted cancel, or the
// refusal. A first run is held by its order until the order launches it; then, and for an
// operator's re-run (started on its own), the job's workflow decides.
func (e *Jobs) decideCancel(ctx, tctx context.Context, dl cancelDeadline, j *models.Job, requestID string) (acceptedCancel, error) {
	if j.Run <= 1 {
		accepted, err := e.cancelInOrder(ctx, tctx, dl, j, requestID)
		if !isRefusal(err, workflows.ErrTypeJobLaunched) {
			return accepted, err
		}
	}
	return e.cancelInJob(ctx, tctx, dl, j, requestID)
}

// cancelInOrder asks the job's order workflow, starting the order first if its start is still
// pending in the outbox. A launched job's refusal (workflows.ErrTypeJobLaunched) is returned as it
// is, for the caller to ask the job's workflow.
func (e *Jobs) cancelInOrder(ctx, tctx context.Context, dl cancelDeadline, j *models.Job, requestID string) (acceptedCancel, error) {
	order, err := e.store.GetOrder(ctx, j.OrderID)
	if err != nil {
		return acceptedCancel{}, err
	}
	if order.WorkflowStartedAt == nil {
		// The order's start is still pending in the outbox: start it now so it can take the update.
		jobs, err := e.store.OrderJobs(ctx, order.ID)
		if err != nil {
			return acceptedCancel{}, err
		}
		if err := e.app.Orders.Start(ctx, order, jobs); err != nil {
			return acceptedCancel{}, unavailable("The job was not cancelled: the workflow engine cannot be reached. The job stays as it is; try again shortly.", retryCancelAfter, err)
		}
	}
	accepted, err := e.askToCancel(tctx, dl, workflows.OrderWorkflowID(order.ID), j.ID, requestID)
	var notFound *serviceerror.NotFound
	switch {
	case err == nil, isRefusal(err, workflows.ErrTypeJobLaunched):
		return accepted, err
	case isRefusal(err, workflows.ErrTypeJobNotCancelable), errors.As(err, &notFound):
		// Refused, or the order workflow has already finished.
		return acceptedCancel{}, notCancelable()
	default:
		return acceptedCancel{}, notTakenInTime(err)
	}
}

// cancelInJob asks the job run's own workflow. That workflow may not exist yet (its order is
// starting it) or may have closed: then the stored job says whether it has started, and otherwise
// the request is sent again until the decision horizon.
func (e *Jobs) cancelInJob(ctx, tctx context.Context, dl cancelDeadline, j *models.Job, requestID string) (acceptedCancel, error) {
	for {
		accepted, err := e.askToCancel(tctx, dl, workflows.JobWorkflowID(j.ID, j.Run), j.ID, requestID)
		var notFound *serviceerror.NotFound
		switch {
		case err == nil:
			return accepted, nil
		case isRefusal(err, workflows.ErrTypeJobNotCancelable):
			awaitStartShown(ctx, e.store, j.ID)
			return acceptedCancel{}, notCancelable()
		case !errors.As(err, &notFound):
			return acceptedCancel{}, notTakenInTime(err)
		}
		if fresh, rerr := e.store.GetJob(ctx, j.ID); rerr == nil && (fresh.Status != status.JobPending || fresh.StartedAt != nil) {
			return acceptedCancel{}, notCancelable()
		}
		if !time.Now().Before(dl.horizon) {
			return acceptedCancel{}, notTakenInTime(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// askToCancel sends the cancel-job Update to a workflow and reads its answer. A refusal is the
// error, an ApplicationError of the refusal's type: Temporal answers a rejected Update as one
// completed with that failure, and a handler that finds nothing to cancel (on replay) completes
// the same way. Otherwise the cancel is accepted, and is recorded if its result arrives within
// cancelCompleteWait. Other errors are the Update not accepted by the decision horizon.
func (e *Jobs) askToCancel(ctx context.Context, dl cancelDeadline, workflowID, jobID, requestID string) (acceptedCancel, error) {
	handle, err := e.sendCancel(ctx, dl, workflowID, jobID, requestID)
	if err != nil {
		return acceptedCancel{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, cancelCompleteWait)
	defer cancel()
	var accepted acceptedCancel
	err = handle.Get(wctx, &accepted.result)
	switch {
	case isRefusal(err, workflows.ErrTypeJobNotCancelable, workflows.ErrTypeJobLaunched, workflows.ErrTypeCancelTooLate):
		return acceptedCancel{}, err
	case err != nil:
		// Accepted, but not recorded in time: the workflow records it once it can.
		return accepted, nil
	}
	accepted.recorded = true
	return accepted, nil
}

// isRefusal reports whether err is a workflow's refusal of a cancel of one of the types.
func isRefusal(err error, types ...string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && slices.Contains(types, appErr.Type())
}

// awaitStartShown waits, for at most cancelCompleteWait, until the stored job shows that it has
// started or ended. A job's workflow refuses a cancel as soon as it has decided to begin the first
// attempt, possibly before it has recorded started_at; this wait keeps the stored job consistent
// with the 409 a client gets, so that reading it right after shows started_at.
func awaitStartShown(ctx context.Context, store *models.Store, jobID string) {
	deadline := time.Now().Add(cancelCompleteWait)
	for {
		j, err := store.GetJob(ctx, jobID)
		if err != nil || j.StartedAt != nil || j.Status != status.JobPending || !time.Now().Before(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sendCancel sends the cancel-job Update to a workflow and waits until it has accepted or refused
// it (a refusal is the outcome the handle holds, not an error here), or until the decision horizon has passed without acceptance: then it returns an error, and
// the workflow will refuse the request whenever it sees it. Lost calls are sent again under the
// same update ID, which Temporal deduplicates.
func (e *Jobs) sendCancel(ctx context.Context, dl cancelDeadline, workflowID, jobID, requestID string) (client.WorkflowUpdateHandle, error) {
	opts := client.UpdateWorkflowOptions{
		UpdateID:     "cancel/" + jobID + "/" + requestID + "/" + models.NewID(),
		WorkflowID:   workflowID,
		UpdateName:   workflows.UpdateCancelJob,
		Args:         []any{jobID, workflows.CancelOptions{AcceptBy: dl.acceptBy}},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	}
	for {
		hctx, cancel := context.WithDeadline(ctx, dl.horizon)
		handle, err := e.cfg.Temporal.UpdateWorkflow(hctx, opts)
		cancel()
		var appErr *temporal.ApplicationError
		var notFound *serviceerror.NotFound
		if err == nil || errors.As(err, &appErr) || errors.As(err, &notFound) {
			return handle, err
		}
		if !time.Now().Before(dl.horizon) || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
