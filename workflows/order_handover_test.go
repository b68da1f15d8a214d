package workflows_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// readModel stands for the jobs' rows that WatchJobs reads: a test ends a job run there with
// endAt. The mocked WatchJobs answers the runs asked about that have ended; while none has, it
// fails retryably, so that Temporal runs it again after a backoff, as the real activity looks
// again after a wait.
type readModel struct {
	mu    sync.Mutex
	ended map[contract.JobRunRef]string
	asked [][]contract.JobRunRef
}

func mockReadModel(t *testing.T, env *testsuite.TestWorkflowEnvironment, orderID string) *readModel {
	m := &readModel{ended: map[contract.JobRunRef]string{}}
	env.OnActivity(a.WatchJobs, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.WatchJobsInput) ([]contract.JobRunEnd, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if in.OrderID != orderID {
				t.Errorf("WatchJobs asked about order %q, want %q", in.OrderID, orderID)
			}
			m.asked = append(m.asked, slices.Clone(in.Jobs))
			var out []contract.JobRunEnd
			for _, r := range in.Jobs {
				if st, ok := m.ended[r]; ok {
					out = append(out, contract.JobRunEnd{JobID: r.JobID, Run: r.Run, Status: st})
				}
			}
			if len(out) == 0 {
				return nil, errors.New("none of the jobs has ended yet")
			}
			return out, nil
		})
	return m
}

// endAt ends run 1 of jobID with st in the read model d after the test's start.
func (m *readModel) endAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, jobID, st string) {
	env.RegisterDelayedCallback(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.ended[contract.JobRunRef{JobID: jobID, Run: 1}] = st
	}, d)
}

func jobIDs(jobs []workflows.JobRef) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.JobID
	}
	return out
}

// TestOrderContinuesAsNewWithoutWaitingForALongJob (issue 23, item 9): a run that has launched
// ContinueAsNewAfter jobs continues as new without waiting for them, even while one is in a long
// retry or input wait, and hands the running ones over in Watching with their runs: every job it
// launched is either counted in the result it hands over or watched by the next run, never both.
func TestOrderContinuesAsNewWithoutWaitingForALongJob(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	l.finishAt(30*time.Minute, "a", status.JobCompleted) // in a long retry or input wait
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", Jobs: refs("a", "b", "c", "d", "e"), ContinueAsNewAfter: 3, Version: workflows.OrderVersion,
	})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the order did not continue as new: %v", err)
	}
	var next workflows.OrderInput
	if err := converterFor().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	// a ends only after 30 minutes: a run that waited for it would have counted it.
	if !slices.Contains(next.Watching, contract.JobRunRef{JobID: "a", Run: 1}) || len(next.Running) != 0 {
		t.Fatalf("handed over watching %v, running %v; want job a watched", next.Watching, next.Running)
	}
	launched := l.list()
	slices.Sort(launched)
	if !slices.Equal(launched, []string{"a", "b", "c"}) {
		t.Fatalf("launched %v", launched)
	}
	for i, r := range next.Watching {
		if !slices.Contains(launched, r.JobID) || r.Run != 1 || slices.Contains(next.Watching[:i], r) {
			t.Fatalf("handed over watching %v", next.Watching)
		}
	}
	if len(next.Watching)+next.Result.Completed != 3 || next.Result.Failed+next.Result.Cancelled+next.Result.Expired != 0 {
		t.Fatalf("handed over watching %v with result %+v: a launched job is lost or counted twice", next.Watching, next.Result)
	}
	if got := jobIDs(next.Jobs); !slices.Equal(got, []string{"d", "e"}) || next.Version != workflows.OrderVersion {
		t.Fatalf("handed over the queue %v, version %d", got, next.Version)
	}
}

// TestOrderRunTakesOverTheRunningJobsOfTheRunBefore (issue 23, item 9): a job handed over in
// Watching keeps its concurrency slot, the run launches the rest of the queue meanwhile, learns of
// the job's end from the read model (WatchJobs), counts it, and completes only after it ended.
func TestOrderRunTakesOverTheRunningJobsOfTheRunBefore(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	rm := mockReadModel(t, env, "o1")
	start := env.Now()
	rm.endAt(env, 30*time.Minute, "a", status.JobFailed)
	l.finishAt(5*time.Minute, "d", status.JobCompleted)
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", Jobs: refs("d", "e"), Watching: []contract.JobRunRef{{JobID: "a", Run: 1}},
		MaxConcurrentJobs: 2, ContinueAsNewAfter: 3, Version: workflows.OrderVersion,
		Result: workflows.OrderResult{Completed: 2},
	})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res != (workflows.OrderResult{Completed: 4, Failed: 1}) {
		t.Fatalf("result %+v, want the two handed-over completions, d, e and a's failure", res)
	}
	if ended := env.Now().Sub(start); ended < 30*time.Minute {
		t.Fatalf("the order completed %v after the start, before job a ended", ended)
	}
	if got := l.list(); !slices.Equal(got, []string{"d", "e"}) {
		t.Fatalf("launched %v", got)
	}
	// a holds one of the two slots: e waits for d, not for a.
	if gap := l.when["e"].Sub(l.when["d"]); gap < 5*time.Minute || l.when["e"].Sub(start) >= 30*time.Minute {
		t.Fatalf("e launched %v after d and %v after the start", gap, l.when["e"].Sub(start))
	}
	for _, asked := range rm.asked {
		if !slices.Equal(asked, []contract.JobRunRef{{JobID: "a", Run: 1}}) {
			t.Fatalf("WatchJobs asked about %v", asked)
		}
	}
}

// earlierRunThenOrder starts job b's workflow, as a run of the order that a workflow reset undid
// did, then runs the order as its child.
func earlierRunThenOrder(ctx workflow.Context, in workflows.OrderInput) (workflows.OrderResult, error) {
	bctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: workflows.JobWorkflowID("b", 1), ParentClosePolicy: enums.PARENT_CLOSE_POLICY_ABANDON,
	})
	b := workflow.ExecuteChildWorkflow(bctx, "JobWorkflow", workflows.JobInput{JobID: "b", Run: 1, OrderID: in.OrderID, Shape: workflows.JobShapeQuiet})
	if err := b.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		return workflows.OrderResult{}, err
	}
	octx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: workflows.OrderWorkflowID(in.OrderID)})
	var res workflows.OrderResult
	err := workflow.ExecuteChildWorkflow(octx, workflows.OrderWorkflow, in).Get(ctx, &res)
	return res, err
}

// TestOrderCountsAJobAnEarlierRunStarted (issue 23, item 10): when the workflow of a queued job
// already exists (an earlier run started it before a reset), the order still counts the job as
// running, learns of its end from the read model and completes only after it.
func TestOrderCountsAJobAnEarlierRunStarted(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	rm := mockReadModel(t, env, "o1")
	env.RegisterWorkflow(earlierRunThenOrder)
	start := env.Now()
	l.finishAt(20*time.Minute, "b", status.JobFailed)
	rm.endAt(env, 20*time.Minute, "b", status.JobFailed)
	env.ExecuteWorkflow(earlierRunThenOrder, workflows.OrderInput{
		OrderID: "o1", Jobs: refs("a", "b", "c"), Version: workflows.OrderVersion,
	})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res != (workflows.OrderResult{Completed: 2, Failed: 1}) {
		t.Fatalf("result %+v, want a and c completed and b failed", res)
	}
	if ended := env.Now().Sub(start); ended < 20*time.Minute {
		t.Fatalf("the order completed %v after the start, before job b ended", ended)
	}
	if got := l.list(); len(got) != 3 || got[0] != "b" || !slices.Contains(got, "a") || !slices.Contains(got, "c") {
		t.Fatalf("job workflows started: %v", got)
	}
	if len(rm.asked) == 0 || !slices.Equal(rm.asked[0], []contract.JobRunRef{{JobID: "b", Run: 1}}) {
		t.Fatalf("WatchJobs asked about %v", rm.asked)
	}
}

// A run with nothing left to launch does not continue as new, however many jobs it launched: it
// waits for the ends of the running ones, handed-over ones included, and completes.
func TestOrderRunWithNothingLeftToLaunchDoesNotContinueAsNew(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	rm := mockReadModel(t, env, "o1")
	rm.endAt(env, 30*time.Minute, "a", status.JobCompleted)
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", Jobs: refs("d"), Watching: []contract.JobRunRef{{JobID: "a", Run: 1}},
		ContinueAsNewAfter: 1, Version: workflows.OrderVersion,
	})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatalf("the last run of the order: %v", err)
	}
	if res != (workflows.OrderResult{Completed: 2}) || !slices.Equal(l.list(), []string{"d"}) {
		t.Fatalf("result %+v after launching %v", res, l.list())
	}
}
