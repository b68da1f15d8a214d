package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// cancelNotifyTimeout bounds each call to Temporal a cancel makes after it is committed (the
// webhook delivery's start, the signal to the order): neither is needed for the answer, and
// whatever does not go through in time is made up for (the outbox sweep starts the delivery; the
// job's own workflow finds the job cancelled).
const cancelNotifyTimeout = 2 * time.Second

// CancelRequest asks to cancel a job of an installation.
type CancelRequest struct {
	InstallationID string
	JobID          string
	// RequestID names the request in the logs.
	RequestID string
}

// CancelOutcome is a cancel that took place: Job is the cancelled job.
type CancelOutcome struct {
	Job Job // a cancelled job has no outputs
}

// CancelJob cancels a job that has not started: one that waits in its order, or that its order
// (or an operator's re-run) has launched but whose first attempt has not begun.
//
// The database decides, before anything else happens: in one transaction the job is ended
// cancelled (cancel reason status.CancelRequested) on condition that it is pending with no attempt begun (models.CancelJobNotBegun, whose
// UPDATE excludes BeginAttempt's: of the two, exactly one changes the job), its reservation is
// released, its order's counters move and its job.cancelled webhook delivery is recorded with its
// start owed (the outbox). Once that is committed the cancel is final and answered at once; no
// workflow is waited for, so a cancel works while the order workflow is busy launching or Temporal
// cannot be reached. Then, each bounded by cancelNotifyTimeout and neither needed for the answer,
// the delivery's workflow is started (else the outbox sweep starts it), and the order workflow is
// told with workflows.SignalCancelJob so that it drops the job from its queue. A job the order
// launches all the same, or a launched run, finds the job cancelled when it tries to begin its
// first attempt (ErrJobNotRunnable) and ends without running or charging anything.
//
// A job of another installation is KindNotFound. A job that has begun or ended (cancelled is
// final too) is refused with KindConflict (ReasonJobNotCancelable), as the plugin API's contract
// says; a retried DELETE that carries the request's Idempotency-Key replays the first answer
// instead.
func (e *Jobs) CancelJob(ctx context.Context, req CancelRequest) (CancelOutcome, error) {
	j, err := e.FindJob(ctx, req.InstallationID, req.JobID)
	if err != nil {
		return CancelOutcome{}, err
	}
	if j.Status != status.JobPending || j.StartedAt != nil {
		return CancelOutcome{}, notCancelable()
	}
	cancelled, owed, err := e.cancelNotBegun(ctx, j.ID, j.Run, status.CancelRequested)
	if err != nil {
		return CancelOutcome{}, err
	}
	if cancelled == nil {
		// It began or ended between the read and the UPDATE.
		return CancelOutcome{}, notCancelable()
	}
	e.announceCancels(ctx, []*models.Job{cancelled}, owed, req.RequestID)
	return CancelOutcome{Job: jobOf(cancelled, nil)}, nil
}

// cancelNotBegun ends run of the job cancelled for reason in one transaction, on condition that it
// has not begun (models.CancelJobNotBegun; for status.CancelDeadline, and that its deadline has
// passed), with its events and their deliveries recorded, their starts owed; cancelled is nil when
// the job had begun or ended.
func (e *Jobs) cancelNotBegun(ctx context.Context, jobID string, run int, reason string) (cancelled *models.Job, owed []models.WebhookDelivery, err error) {
	err = e.store.Tx(ctx, func(tx *models.Store) error {
		var ok bool
		var err error
		if cancelled, ok, err = tx.CancelJobNotBegun(ctx, jobID, run, reason); err != nil || !ok {
			return err
		}
		// Its deliveries are recorded with their starts owed: the outbox of the starts below.
		owed, err = e.recorder().RecordJobEnd(ctx, tx, cancelled, run)
		return err
	})
	return cancelled, owed, err
}

// announceCancels follows committed cancels: it counts them, starts their deliveries and tells
// their orders, all at once, so that the answer waits at most cancelNotifyTimeout for Temporal.
// The cancels are committed: a client that hangs up must not stop what follows.
func (e *Jobs) announceCancels(ctx context.Context, cancelled []*models.Job, owed []models.WebhookDelivery, requestID string) {
	nctx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	if len(owed) > 0 {
		wg.Go(func() { e.app.Outbox.StartOwedDeliveries(nctx, owed) })
	}
	for _, j := range cancelled {
		e.cfg.Metrics.JobFinished(status.JobCancelled, "", j.TestMode)
		wg.Go(func() { e.tellOrder(nctx, j, requestID) })
	}
	wg.Wait()
}

// tellOrder signals the job's order workflow that the job is cancelled, so that it drops the job
// from its queue instead of launching it. A first run only: an operator's re-run is no order's to
// launch. It is fire-and-forget: an order that has closed or was never started needs nothing, and
// one the signal does not reach launches the job, which then ends not runnable.
func (e *Jobs) tellOrder(ctx context.Context, j *models.Job, requestID string) {
	if j.Run > 1 {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, cancelNotifyTimeout)
	defer cancel()
	err := e.cfg.Temporal.SignalWorkflow(sctx, workflows.OrderWorkflowID(j.OrderID), "", workflows.SignalCancelJob,
		workflows.JobCancelled{JobID: j.ID, Run: j.Run})
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		e.cfg.Log.Info("order workflow not told of a cancel; the job ends not runnable if launched",
			zap.String("order_id", j.OrderID), zap.String("job_id", j.ID), zap.String("request_id", requestID), zap.Error(err))
	}
}

func notCancelable() *Error {
	return refuse(KindConflict, ReasonJobNotCancelable, "",
		"The job has already started or finished; only a job that has not started can be cancelled.")
}
