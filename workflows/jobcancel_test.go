package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// cancelOutcome is what a client of one cancel-job Update saw.
type cancelOutcome struct {
	accepted  bool
	completed bool
	result    workflows.CancelResult
	err       error // the rejection, or the handler's error
}

// sendCancel sends UpdateCancelJob for jobID to the workflow under test and records its outcome.
func sendCancel(env *testsuite.TestWorkflowEnvironment, jobID string, opts workflows.CancelOptions) *cancelOutcome {
	o := &cancelOutcome{}
	env.UpdateWorkflow(workflows.UpdateCancelJob, "", &testsuite.TestUpdateCallback{
		OnAccept: func() { o.accepted = true },
		OnReject: func(err error) { o.err = err },
		OnComplete: func(res any, err error) {
			o.completed, o.err = true, err
			if r, ok := res.(workflows.CancelResult); ok {
				o.result = r
			}
		},
	}, jobID, opts)
	return o
}

// refusedAs reports whether the cancel was rejected with the error type typ.
func (o *cancelOutcome) refusedAs(typ string) bool {
	var appErr *temporal.ApplicationError
	return !o.accepted && errors.As(o.err, &appErr) && appErr.Type() == typ
}

// cancelledOK reports whether the cancel was accepted and completed with the cancelled job.
func (o *cancelOutcome) cancelledOK(jobID string) bool {
	return o.accepted && o.completed && o.err == nil &&
		o.result == workflows.CancelResult{JobID: jobID, Status: status.JobCancelled}
}

// jobCalls counts the job steps a JobWorkflow under test took.
type jobCalls struct {
	begun, generated, completed, cancelled int
	toldOrder                              []string // statuses of the job-finished signals sent
}

// mockJobSteps mocks every step of a job run: attempts succeed, and an EndJob must be a cancel.
// onBegin, if set, runs inside BeginAttempt (the first attempt being recorded).
func mockJobSteps(t *testing.T, env *testsuite.TestWorkflowEnvironment, onBegin func()) *jobCalls {
	c := &jobCalls{}
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(func(context.Context, contract.AttemptInput) error {
		c.begun++
		if onBegin != nil {
			onBegin()
		}
		return nil
	}).Maybe()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(func(context.Context, contract.AttemptInput) (contract.GenerateResult, error) {
		c.generated++
		return okResult, nil
	}).Maybe()
	env.OnActivity(a.CompleteJob, mock.Anything, mock.Anything).Return(func(context.Context, contract.CompleteInput) error {
		c.completed++
		return nil
	}).Maybe()
	env.OnActivity(a.EndJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.EndInput) error {
		if in.Status != status.JobCancelled || in.JobID != "j1" || in.Run != 1 {
			t.Errorf("EndJob(%+v): only a cancel of j1 may end it", in)
		}
		c.cancelled++
		return nil
	}).Maybe()
	env.OnSignalExternalWorkflow(mock.Anything, workflows.OrderWorkflowID("o1"), "", workflows.SignalJobFinished, mock.Anything).
		Return(func(_, _, _, _ string, arg any) error {
			c.toldOrder = append(c.toldOrder, arg.(workflows.JobFinished).Status)
			return nil
		}).Maybe()
	return c
}

func runJobUnderTest(t *testing.T, env *testsuite.TestWorkflowEnvironment) workflows.JobResult {
	t.Helper()
	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1"})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestJobWorkflowCancelledBeforeItsFirstAttemptNeverGenerates: a cancel that reaches a launched job
// before its first attempt begins (delivered with the workflow's first task) is accepted; the job
// never begins an attempt, its cancellation releases the reservation once, and its order is told
// it ended cancelled. A second request for the same cancel completes with it.
func TestJobWorkflowCancelledBeforeItsFirstAttemptNeverGenerates(t *testing.T) {
	env := newEnv(t)
	calls := mockJobSteps(t, env, nil)
	var first, second *cancelOutcome
	env.RegisterDelayedCallback(func() {
		opts := workflows.CancelOptions{AcceptBy: env.Now().Add(5 * time.Second)}
		first = sendCancel(env, "j1", opts)
		second = sendCancel(env, "j1", opts)
	}, 0)
	res := runJobUnderTest(t, env)

	if !first.cancelledOK("j1") || !second.cancelledOK("j1") {
		t.Fatalf("cancels before the first attempt: %+v, %+v", first, second)
	}
	if res.Status != status.JobCancelled || res.Attempts != 0 {
		t.Fatalf("result = %+v", res)
	}
	if calls.begun != 0 || calls.generated != 0 || calls.completed != 0 || calls.cancelled != 1 {
		t.Fatalf("a cancelled job ran: %+v", calls)
	}
	if len(calls.toldOrder) != 1 || calls.toldOrder[0] != status.JobCancelled {
		t.Fatalf("the order was told %v", calls.toldOrder)
	}
}

// TestJobWorkflowRefusesCancelsOnceItsFirstAttemptHasBegun: a cancel that arrives while the first
// attempt is being recorded (the begin decided first), or later while the job waits for a retry,
// is refused; the job runs to its end and nothing cancels it.
func TestJobWorkflowRefusesCancelsOnceItsFirstAttemptHasBegun(t *testing.T) {
	env := newEnv(t)
	var duringBegin, duringRetry *cancelOutcome
	var begunWhenRefused int
	// The first attempt fails RATE_LIMIT: the job then sleeps a minute before its second one.
	env.OnActivity(a.Generate, mock.Anything, contract.AttemptInput{JobID: "j1", Run: 1, Attempt: 1}).
		Return(contract.GenerateResult{}, categoryError(errorcat.RateLimit, time.Minute)).Once()
	env.OnActivity(a.MarkRetryPending, mock.Anything, mock.Anything).Return(nil).Once()
	calls := mockJobSteps(t, env, func() {
		if duringBegin == nil {
			duringBegin = sendCancel(env, "j1", workflows.CancelOptions{})
		}
	})
	env.RegisterDelayedCallback(func() {
		begunWhenRefused = calls.begun
		duringRetry = sendCancel(env, "j1", workflows.CancelOptions{AcceptBy: env.Now().Add(5 * time.Second)})
	}, 30*time.Second)
	res := runJobUnderTest(t, env)

	if duringBegin == nil || !duringBegin.refusedAs(workflows.ErrTypeJobNotCancelable) {
		t.Fatalf("a cancel during the first attempt's begin: %+v", duringBegin)
	}
	if !duringRetry.refusedAs(workflows.ErrTypeJobNotCancelable) || begunWhenRefused != 1 {
		t.Fatalf("a cancel while waiting for a retry: %+v after %d begun attempts", duringRetry, begunWhenRefused)
	}
	if res.Status != status.JobCompleted || res.Attempts != 2 || calls.cancelled != 0 || calls.completed != 1 {
		t.Fatalf("result = %+v, calls %+v", res, calls)
	}
}

// TestJobWorkflowRefusesALateOrMisdirectedCancel: a cancel past its AcceptBy is refused as too late,
// one naming another job as not cancelable; the job runs.
func TestJobWorkflowRefusesALateOrMisdirectedCancel(t *testing.T) {
	env := newEnv(t)
	calls := mockJobSteps(t, env, nil)
	var late, other *cancelOutcome
	env.RegisterDelayedCallback(func() {
		late = sendCancel(env, "j1", workflows.CancelOptions{AcceptBy: env.Now().Add(-time.Second)})
		other = sendCancel(env, "j2", workflows.CancelOptions{})
	}, 0)
	res := runJobUnderTest(t, env)

	if !late.refusedAs(workflows.ErrTypeCancelTooLate) || !other.refusedAs(workflows.ErrTypeJobNotCancelable) {
		t.Fatalf("late %+v, other job %+v", late, other)
	}
	if res.Status != status.JobCompleted || calls.cancelled != 0 || calls.generated != 1 {
		t.Fatalf("result = %+v, calls %+v", res, calls)
	}
}
