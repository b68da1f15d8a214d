package workflows_test

import (
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// signalCancelAt delivers SignalCancelJob for jobID after d, as engine.Jobs.CancelJob does once
// the job's cancel is committed in the database.
func signalCancelAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, jobID string) {
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalCancelJob, workflows.JobCancelled{JobID: jobID, Run: 1})
	}, d)
}

// An order told that a queued job was cancelled drops it without launching it and without
// recording anything (no activity: the database holds the cancel already), and counts it. A
// signal for a job it has launched changes nothing: that job's own workflow ends not runnable,
// which the order does not count.
func TestOrderDropsAJobCancelledInTheDatabase(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	l.finishAt(time.Minute, "a", status.JobCompleted)
	l.finishAt(2*time.Minute, "b", "not_runnable")
	signalCancelAt(env, 30*time.Second, "c")
	signalCancelAt(env, 90*time.Second, "b") // launched at 1 min, ends not runnable at 2 min
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", AccountID: "acc", JobType: jobtype.PhotoShoot, Jobs: refs("a", "b", "c", "d"),
		MaxConcurrentJobs: 1, Version: workflows.OrderVersion,
	})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Fatalf("launched %v: a job cancelled while queued must never be launched", got)
	}
	if res != (workflows.OrderResult{Completed: 2, Cancelled: 1}) {
		t.Fatalf("result = %+v", res)
	}
}

// A job of an older shape (an order run of lean-jobs version 1) reports its end with
// SignalJobFinished, which a job cancelled in the database never sends, as it ends not runnable:
// the order stops waiting for it when told of the cancel, and ends.
func TestOrderOfAnOlderShapeStopsWaitingForACancelledJob(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env) // sends no job-finished signal
	signalCancelAt(env, 30*time.Second, "a")
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", AccountID: "acc", JobType: jobtype.PhotoShoot, Jobs: refs("a"), Version: 1,
	})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the order still waits for a job cancelled before its first attempt")
	}
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); !slices.Equal(got, []string{"a"}) || res != (workflows.OrderResult{Cancelled: 1}) {
		t.Fatalf("launched %v, result %+v", got, res)
	}
}

// An order run that received SignalCancelJob on a worker that did not act on it (recorded without
// the cancel-signal version marker) launched the job: replayed, it ignores the signal again.
func TestOrderIgnoresACancelSignalOfAnOlderWorker(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env) // registers first: the environment takes no registration after a mock
	env.OnGetVersion("cancel-signal", workflow.DefaultVersion, workflow.Version(1)).Return(workflow.DefaultVersion)
	l.finishAt(time.Minute, "a", status.JobCompleted)
	signalCancelAt(env, 30*time.Second, "b")
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", AccountID: "acc", JobType: jobtype.PhotoShoot, Jobs: refs("a", "b"),
		MaxConcurrentJobs: 1, Version: workflows.OrderVersion,
	})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if got := l.list(); !slices.Equal(got, []string{"a", "b"}) || res != (workflows.OrderResult{Completed: 2}) {
		t.Fatalf("launched %v, result %+v", got, res)
	}
}
