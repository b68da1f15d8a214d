package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models/status"
)

// startGate decides, inside a JobWorkflow, between beginning the job's first attempt and accepting
// a cancel of the job (UpdateCancelJob sent to the job's own workflow once its order has launched
// it). Both decisions are taken by code that does not yield between reading and setting the
// gate's state, and a workflow runs one coroutine at a time, so exactly one of them happens: a
// cancel accepted before the first attempt is decided means that attempt never begins, and once it
// is decided every cancel is refused.
type startGate struct {
	in JobInput
	// begun: the first attempt has been decided (BeginAttempt scheduled or done).
	begun bool
	// accepted: a cancel has been accepted; the first attempt will never begin.
	accepted bool
	// recorded: the accepted cancel is stored (the job is cancelled, its reservation released).
	recorded bool
	// delivery is the webhook FinishJob recorded with the cancel (JobShapeQuiet).
	delivery *contract.RecordWebhookResult
}

// register installs the job's cancel-job Update handler. It must run before the first attempt is
// decided, so that a cancel delivered with the workflow's first task is handled first.
func (g *startGate) register(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateCancelJob, g.cancel,
		workflow.UpdateHandlerOptions{Validator: g.validate})
}

// validate refuses a cancel that arrives after its AcceptBy, one for another job, and any once the
// first attempt has been decided or the cancel has been recorded. A second request for a cancel
// already accepted but not yet recorded is let through: it answers when that one is recorded.
func (g *startGate) validate(ctx workflow.Context, jobID string, opts CancelOptions) error {
	if !opts.AcceptBy.IsZero() && workflow.Now(ctx).After(opts.AcceptBy) {
		return cancelTooLate()
	}
	if jobID != g.in.JobID || g.begun || g.recorded {
		return notCancelable()
	}
	return nil
}

// cancel is the handler of an accepted cancel. It runs straight after validate without yielding,
// so the gate is still closed to the first attempt when it marks the cancel accepted; then it
// records the cancellation, waiting out any database outage.
func (g *startGate) cancel(ctx workflow.Context, jobID string, _ CancelOptions) (CancelResult, error) {
	done := CancelResult{JobID: jobID, Status: status.JobCancelled}
	if jobID != g.in.JobID || g.begun {
		// Only reachable on replay, where validators do not run: the history says it was refused.
		return CancelResult{}, notCancelable()
	}
	if g.accepted {
		return done, workflow.Await(ctx, func() bool { return g.recorded })
	}
	g.accepted = true
	if err := g.record(ctx); err != nil {
		return CancelResult{}, err
	}
	g.recorded = true
	return done, nil
}

// record stores the accepted cancel: with its webhook in one FinishJob transaction in
// JobShapeQuiet, with EndJob alone (the webhook follows in JobWorkflow) in older shapes.
func (g *startGate) record(ctx workflow.Context) error {
	end := contract.EndInput{JobID: g.in.JobID, Run: g.in.Run, Status: status.JobCancelled}
	if g.in.Shape < JobShapeQuiet {
		return project(ctx, contract.EndJob, nil, end)
	}
	var rec contract.RecordWebhookResult
	if err := project(ctx, contract.FinishJob, &rec, contract.FinishJobInput{End: &end}); err != nil {
		return err
	}
	g.delivery = &rec
	return nil
}

// begin decides the first attempt: it reports false when a cancel was accepted first, and
// otherwise closes the gate to every later cancel.
func (g *startGate) begin() bool {
	if g.accepted {
		return false
	}
	g.begun = true
	return true
}

// awaitCancelled waits until the accepted cancel is recorded and every cancel-job handler has
// answered, then starts the job's webhook: the delivery FinishJob recorded with the cancel
// (JobShapeQuiet), or one NotifyJobEnded records now (older shapes). It is the job run's result.
func (g *startGate) awaitCancelled(ctx workflow.Context) (JobResult, error) {
	res := JobResult{Status: status.JobCancelled}
	if err := workflow.Await(ctx, func() bool { return g.recorded && workflow.AllHandlersFinished(ctx) }); err != nil {
		return res, err
	}
	if g.delivery != nil {
		webhookNotStarted(ctx, g.in.JobID, startDelivery(ctx, *g.delivery))
	} else {
		webhookNotStarted(ctx, g.in.JobID, NotifyJobEnded(ctx, g.in.JobID, g.in.Run))
	}
	return res, nil
}

func cancelTooLate() error {
	return temporal.NewApplicationError("the cancel request arrived after its deadline; the job was left as it is", ErrTypeCancelTooLate)
}
