package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// launches records which job workflows an order launched, and when. A mocked job workflow that
// finishAt planned waits for the test's signalEnd; any other completes at once.
type launches struct {
	env     *testsuite.TestWorkflowEnvironment
	mu      sync.Mutex
	ids     []string
	when    map[string]time.Time
	planned map[string]bool
}

// signalEnd is the test-only signal that ends a mocked job workflow, with its status.
const signalEnd = "test-end"

func (l *launches) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids)
}

// mockJobs replaces JobWorkflow with a recorder that sends no signal: the order learns of each
// job's end from its child workflow's result, when finishAt says.
func mockJobs(env *testsuite.TestWorkflowEnvironment) *launches {
	l := &launches{env: env, when: map[string]time.Time{}, planned: map[string]bool{}}
	// Registered in JobWorkflow's place rather than mocked with OnWorkflow: the test environment
	// reports a mocked child started only once the mock has returned, and these children block.
	fake := func(ctx workflow.Context, in workflows.JobInput) (workflows.JobResult, error) {
		l.mu.Lock()
		l.ids = append(l.ids, in.JobID)
		l.when[in.JobID] = workflow.Now(ctx)
		planned := l.planned[in.JobID]
		l.mu.Unlock()
		res := workflows.JobResult{Status: status.JobCompleted}
		if planned {
			workflow.GetSignalChannel(ctx, signalEnd).Receive(ctx, &res.Status)
		}
		return res, nil
	}
	env.RegisterWorkflowWithOptions(fake, workflow.RegisterOptions{Name: "JobWorkflow", DisableAlreadyRegisteredCheck: true})
	return l
}

// finishAt makes the mocked workflow of jobID end with status d after the test's start; the order
// must have launched it by then.
func (l *launches) finishAt(d time.Duration, jobID, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.planned[jobID] = true
	l.env.RegisterDelayedCallback(func() {
		if err := l.env.SignalWorkflowByID(workflows.JobWorkflowID(jobID, 1), signalEnd, status); err != nil {
			panic(fmt.Sprintf("job %s cannot end: %v", jobID, err))
		}
	}, d)
}

// signalFinishedAt delivers job-finished for jobID after d, as a job of an older shape (one an
// earlier order run launched and handed over in OrderInput.Running) reports its end.
func signalFinishedAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, jobID, status string) {
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalJobFinished, workflows.JobFinished{JobID: jobID, Run: 1, Status: status})
	}, d)
}

func refs(ids ...string) []workflows.JobRef {
	out := make([]workflows.JobRef, len(ids))
	for i, id := range ids {
		out[i] = workflows.JobRef{JobID: id, Run: 1, ProductRef: "p"}
	}
	return out
}

func TestOrderWorkflowRunsJobsWithinItsConcurrencyWindow(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	l.finishAt(time.Minute, "a", status.JobCompleted)
	l.finishAt(2*time.Minute, "b", status.JobFailed)
	l.finishAt(3*time.Minute, "c", status.JobCompleted)
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", AccountID: "acc", JobType: jobtype.PhotoShoot, Jobs: refs("a", "b", "c"), MaxConcurrentJobs: 1,
	})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Completed != 2 || res.Failed != 1 {
		t.Fatalf("result = %+v", res)
	}
	if got := l.list(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("launched %v", got)
	}
	// With one slot, b starts only once a has reported back.
	if gap := l.when["b"].Sub(l.when["a"]); gap < time.Minute {
		t.Fatalf("b launched %v after a, before a finished", gap)
	}
}

// TestOrderWorkflowCancelsOnlyJobsThatHaveNotBeenLaunched: the order cancels a queued job, hands a
// cancel of a launched job to the job's own workflow (ErrTypeJobLaunched), and refuses one of a job
// it has ended or does not hold. A launched job that its own workflow cancelled counts as cancelled.
func TestOrderWorkflowCancelsOnlyJobsThatHaveNotBeenLaunched(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	// A queued job's cancel is recorded with its webhook in one transaction.
	env.OnActivity(a.FinishJob, mock.Anything, contract.FinishJobInput{End: &contract.EndInput{JobID: "c", Run: 1, Status: status.JobCancelled}}).
		Return(contract.RecordWebhookResult{}, nil).Once()
	// What a client sees is the update's outcome: the validator may accept two concurrent cancels
	// of one job, but only the first handler cancels it; the other ends not cancelable.
	var cancelled, refused, launched []string
	refuse := func(jobID string, err error) {
		var appErr *temporal.ApplicationError
		switch {
		case errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeJobNotCancelable:
			refused = append(refused, jobID)
		case errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeJobLaunched:
			launched = append(launched, jobID)
		default:
			t.Errorf("cancel %s failed with %v", jobID, err)
		}
	}
	cancel := func(jobID string) {
		env.UpdateWorkflow(workflows.UpdateCancelJob, "", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { refuse(jobID, err) },
			OnComplete: func(_ any, err error) {
				if err != nil {
					refuse(jobID, err)
					return
				}
				cancelled = append(cancelled, jobID)
			},
		}, jobID)
	}
	env.RegisterDelayedCallback(func() { cancel("c"); cancel("a"); cancel("zzz") }, 30*time.Second)
	env.RegisterDelayedCallback(func() { cancel("c") }, 40*time.Second) // already cancelled
	l.finishAt(time.Minute, "a", status.JobCompleted)
	env.RegisterDelayedCallback(func() { cancel("a") }, 90*time.Second) // finished
	l.finishAt(2*time.Minute, "b", status.JobCancelled)                 // cancelled by its own workflow
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", AccountID: "acc", Jobs: refs("a", "b", "c"), MaxConcurrentJobs: 1,
	})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	slices.Sort(refused)
	if !slices.Equal(cancelled, []string{"c"}) || !slices.Equal(refused, []string{"a", "c", "zzz"}) || !slices.Equal(launched, []string{"a"}) {
		t.Fatalf("cancelled %v, refused %v, handed to the job's workflow %v", cancelled, refused, launched)
	}
	if got := l.list(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("launched %v: a cancelled job must never start", got)
	}
	if res.Cancelled != 2 || res.Completed != 1 || res.Failed != 0 {
		t.Fatalf("result = %+v", res)
	}
}

func TestOrderWorkflowExpiresJobsThatNeverStarted(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	start := env.Now()
	var expiredAt time.Time
	env.OnActivity(a.FinishJob, mock.Anything, contract.FinishJobInput{End: &contract.EndInput{JobID: "b", Run: 1, Status: status.JobExpired}}).
		Return(func(context.Context, contract.FinishJobInput) (contract.RecordWebhookResult, error) {
			expiredAt = env.Now()
			return contract.RecordWebhookResult{}, nil
		}).Once()
	jobs := refs("a", "b")
	for i := range jobs {
		jobs[i].ExpiresAt = start.Add(90 * time.Second)
	}
	l.finishAt(5*time.Minute, "a", status.JobCompleted)
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{OrderID: "o1", Jobs: jobs, MaxConcurrentJobs: 1})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Expired != 1 || res.Completed != 1 || !slices.Equal(l.list(), []string{"a"}) {
		t.Fatalf("result = %+v, launched %v", res, l.list())
	}
	// On time, while a still holds the only slot, not when it frees.
	if at := expiredAt.Sub(start); at < 90*time.Second || at >= 5*time.Minute {
		t.Fatalf("b expired %v after the start, want at its deadline (90s)", at)
	}
}

// TestOrderWorkflowContinuesAsNewForLargeOrders: a run launches DefaultContinueAsNewAfter jobs,
// waits until every job it launched has ended (their results reach only this run), and continues
// as new with the rest of the queue. Jobs an earlier run handed over in Running report with the
// job-finished signal: those still running are handed over again.
func TestOrderWorkflowContinuesAsNewForLargeOrders(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	start := env.Now()
	ids := make([]string, 600)
	for i := range ids {
		ids[i] = fmt.Sprintf("job-%03d", i)
	}
	l.finishAt(10*time.Minute, "job-007", status.JobFailed) // the last of this run to end
	signalFinishedAt(env, time.Minute, "old-1", status.JobCompleted)
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", Jobs: refs(ids...), Running: []string{"old-1", "old-2"}, MaxConcurrentJobs: 1000,
	})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("a 600-job order did not continue as new: %v", err)
	}
	if waited := env.Now().Sub(start); waited < 10*time.Minute {
		t.Fatalf("continued as new %v after the start, before job-007 ended", waited)
	}
	var next workflows.OrderInput
	if err := converterFor().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(next.Running, []string{"old-2"}) || len(next.Jobs) != 350 || next.Jobs[0].JobID != "job-250" {
		t.Fatalf("continued with running %v and %d queued", next.Running, len(next.Jobs))
	}
	if next.Result.Completed != 250 || next.Result.Failed != 1 || len(l.list()) != 250 {
		t.Fatalf("handed over result %+v after %d launches", next.Result, len(l.list()))
	}
}

func TestJobWorkflowWaitsForItsInput(t *testing.T) {
	t.Parallel()
	t.Run("woken by the input-ready signal", func(t *testing.T) {
		env := newJobEnv(t)
		env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Twice()
		env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError(errorcat.InputNotReady, 0)).Once()
		env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
		env.OnActivity(a.MarkRetryPending, mock.Anything, mock.MatchedBy(func(in contract.RetryPendingInput) bool {
			return in.Category == errorcat.InputNotReady
		})).Return(nil).Once()
		env.OnActivity(a.CompleteJob, mock.Anything, mock.Anything).Return(nil).Once()
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalInputReady, nil) }, 10*time.Minute)
		start := env.Now()
		env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1"})
		var res workflows.JobResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		if res.Status != status.JobCompleted || env.Now().Sub(start) < 10*time.Minute || env.Now().Sub(start) > 11*time.Minute {
			t.Fatalf("result %+v after %v", res, env.Now().Sub(start))
		}
	})
	t.Run("its wait is left out of the retry window", func(t *testing.T) {
		// 29 minutes waiting for the input, then three transient failures: counted from the
		// first attempt, the third one's 2-minute wait would pass the 30-minute window.
		env := newJobEnv(t)
		env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Times(5)
		env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError(errorcat.InputNotReady, 0)).Once()
		env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError(errorcat.TransientInfra, 0)).Times(3)
		env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
		env.OnActivity(a.MarkRetryPending, mock.Anything, mock.Anything).Return(nil).Times(4)
		env.OnActivity(a.CompleteJob, mock.Anything, mock.Anything).Return(nil).Maybe()
		env.OnActivity(a.EndJob, mock.Anything, mock.Anything).Return(nil).Maybe() // the job failing is the defect
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalInputReady, nil) }, 29*time.Minute)
		env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1"})
		var res workflows.JobResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		if res.Status != status.JobCompleted || res.Attempts != 5 {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("fails at the deadline", func(t *testing.T) {
		env := newJobEnv(t)
		env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Once()
		env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError(errorcat.InputNotReady, 0)).Once()
		env.OnActivity(a.MarkRetryPending, mock.Anything, mock.Anything).Return(nil).Once()
		env.OnActivity(a.EndJob, mock.Anything, mock.MatchedBy(func(in contract.EndInput) bool {
			return in.Status == status.JobFailed && in.Category == errorcat.InputNotReady
		})).Return(nil).Once()
		start := env.Now()
		env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1",
			Options: workflows.JobOptions{InputWait: 45 * time.Minute}})
		var res workflows.JobResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		if res.Status != status.JobFailed || res.Category != errorcat.InputNotReady || env.Now().Sub(start) < 45*time.Minute {
			t.Fatalf("result %+v after %v", res, env.Now().Sub(start))
		}
	})
}

// TestOrderHandsACancelDuringItsJobsLaunchToTheJob: a cancel that reaches the order while it is
// starting the job's workflow is not the order's to refuse: it answers ErrTypeJobLaunched, so the
// caller asks the job's own workflow, which can still take it before the first attempt.
func TestOrderHandsACancelDuringItsJobsLaunchToTheJob(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	var during *cancelOutcome
	// The test environment reports a mocked child started only once the mock has returned: the
	// cancel sent from inside it reaches the order while the launch is under way.
	env.OnWorkflow(workflows.JobWorkflow, mock.Anything, mock.Anything).Return(
		func(workflow.Context, workflows.JobInput) (workflows.JobResult, error) {
			during = sendCancel(env, "a", workflows.CancelOptions{})
			return workflows.JobResult{Status: status.JobCompleted, Attempts: 1}, nil
		}).Once()
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{OrderID: "o1", Jobs: refs("a")})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if during == nil || !during.refusedAs(workflows.ErrTypeJobLaunched) || res != (workflows.OrderResult{Completed: 1}) {
		t.Fatalf("cancel during the launch %+v, result %+v", during, res)
	}
}

// launchOrder runs an order of jobs a, b and c with room for all three while a's workflow, as it
// starts, asks to cancel c: it reports what became of that cancel.
func launchOrder(t *testing.T, env *testsuite.TestWorkflowEnvironment, version int) *cancelOutcome {
	t.Helper()
	var during *cancelOutcome
	// A cancel the order takes is recorded with FinishJob.
	env.OnActivity((*activities.Activities).FinishJob, mock.Anything, mock.Anything).Return(contract.RecordWebhookResult{}, nil).Maybe()
	env.OnWorkflow(workflows.JobWorkflow, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in workflows.JobInput) (workflows.JobResult, error) {
			if in.JobID == "a" {
				// The test environment reports a child started once its mock returns: this runs
				// while the order waits for a's start.
				during = sendCancel(env, "c", workflows.CancelOptions{})
			}
			return workflows.JobResult{Status: status.JobCompleted, Attempts: 1}, nil
		})
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{OrderID: "o1", Jobs: refs("a", "b", "c"), MaxConcurrentJobs: 3, Version: version})
	if err := env.GetWorkflowResult(new(workflows.OrderResult)); err != nil {
		t.Fatal(err)
	}
	if during == nil {
		t.Fatal("job a never ran")
	}
	return during
}

// An order initiates every job a slot is free for before it waits for any start, so Temporal
// reports their starts together instead of one workflow task per job: when a's start is under way,
// c has been launched already and its cancel goes to c's own workflow.
func TestOrderLaunchesEveryJobASlotIsFreeForAtOnce(t *testing.T) {
	t.Parallel()
	if during := launchOrder(t, newEnv(t), 0); !during.refusedAs(workflows.ErrTypeJobLaunched) {
		t.Fatalf("cancel of c while a starts: %+v, want JOB_LAUNCHED", during)
	}
}

// Order runs recorded before batched launches (lean-jobs version 2) replay one launch at a time:
// while a starts, c is still queued and its cancel is the order's.
func TestOrderRunsOfTheQuietVersionLaunchOneJobAtATime(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.OnGetVersion("lean-jobs", workflow.DefaultVersion, workflow.Version(3)).Return(workflow.Version(2))
	if during := launchOrder(t, env, 0); !during.cancelledOK("c") {
		t.Fatalf("cancel of c while a starts: %+v, want it cancelled by the order", during)
	}
}

// An order started with OrderInput.Version follows it, not workflow.GetVersion (whose marker and
// search attribute upsert it does without): here the mock would answer the one-at-a-time version.
func TestOrderFollowsTheVersionOfItsInput(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.OnGetVersion("lean-jobs", workflow.DefaultVersion, workflow.Version(3)).Return(workflow.Version(2)).Maybe()
	if during := launchOrder(t, env, workflows.OrderVersion); !during.refusedAs(workflows.ErrTypeJobLaunched) {
		t.Fatalf("cancel of c while a starts: %+v, want JOB_LAUNCHED", during)
	}
}

// A worker refuses an order of a version newer than its own, as workflow.GetVersion would: the
// workflow task fails, and the order waits for a worker that knows the version.
func TestOrderOfANewerVersionWaitsForANewerWorker(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{OrderID: "o1", Jobs: refs("a"), Version: workflows.OrderVersion + 1})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "newer than this worker") {
		t.Fatalf("order of a newer version: %v", err)
	}
}
