package workflows_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// downUntil fails like a database that cannot be reached until the test clock passes until.
func downUntil(now func() time.Time, until time.Time) func() error {
	return func() error {
		if now().Before(until) {
			return errors.New("failed to connect to `host=127.0.0.1 user=postgres`: dial error: connection refused")
		}
		return nil
	}
}

func unavailable(dependency string) error {
	return temporal.NewNonRetryableApplicationError(dependency+" unavailable", contract.ErrTypeDependencyUnavailable, nil, dependency)
}

// waitingOn records the values the workflow gives ShotflowWaitingOn, "" for an unset. (The SDK
// hides unset keys from the upsert it hands the mock; the only upsert that sets nothing is the
// one that unsets ShotflowWaitingOn.)
func waitingOn(env *testsuite.TestWorkflowEnvironment, seen *[]string) {
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		attrs := args.Get(0).(temporal.SearchAttributes)
		if v, ok := attrs.GetKeyword(workflows.SAWaitingOn); ok {
			*seen = append(*seen, v)
		} else if attrs.Size() == 0 {
			*seen = append(*seen, "")
		}
	}).Return(nil).Maybe()
}

// TestJobWorkflowWaitsOutADatabaseOutage: every database step of a job (the attempt's start, the
// generate activity's reads, the settlement) meets a database that is away for far longer than
// any timeout, and the job still completes with one attempt, showing the wait in ShotflowWaitingOn.
func TestJobWorkflowWaitsOutADatabaseOutage(t *testing.T) {
	t.Parallel()
	env := newJobEnv(t)
	var seen []string
	waitingOn(env, &seen)
	start := env.Now()
	// BeginAttempt: the database is away for 25 minutes from the start.
	beginDown := downUntil(env.Now, start.Add(25*time.Minute))
	env.OnActivity(a.BeginAttempt, mock.Anything, contract.AttemptInput{JobID: "j1", Run: 1, Attempt: 1}).
		Return(func(context.Context, contract.AttemptInput) error { return beginDown() })
	// Generate: the blob store then the database are away for a while; neither is an attempt.
	calls := 0
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(func(context.Context, contract.AttemptInput) (contract.GenerateResult, error) {
		calls++
		switch {
		case calls <= 3:
			return contract.GenerateResult{}, unavailable(contract.DependencyBlobStore)
		case env.Now().Before(start.Add(50 * time.Minute)):
			return contract.GenerateResult{}, unavailable(contract.DependencyDatabase)
		}
		return okResult, nil
	})
	// CompleteJob: away again for an hour.
	completeDown := downUntil(env.Now, start.Add(110*time.Minute))
	completed := 0
	env.OnActivity(a.CompleteJob, mock.Anything, mock.Anything).Return(func(context.Context, contract.CompleteInput) error {
		if err := completeDown(); err != nil {
			return err
		}
		completed++
		return nil
	})

	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1"})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatalf("the job workflow failed on an outage: %v", err)
	}
	if res.Status != status.JobCompleted || res.Attempts != 1 || completed != 1 {
		t.Fatalf("result = %+v, CompleteJob succeeded %d times", res, completed)
	}
	if env.Now().Before(start.Add(110 * time.Minute)) {
		t.Fatalf("the job ended at %v, before the database came back", env.Now().Sub(start))
	}
	want := []string{"database", "", "blob store", "database", "", "database", ""}
	if len(seen) != len(want) {
		t.Fatalf("ShotflowWaitingOn went %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("ShotflowWaitingOn went %q, want %q", seen, want)
		}
	}
}

// TestJobWorkflowFailsAJobWhileTheDatabaseIsAway: settling a failed job waits for the database too.
func TestJobWorkflowSettlesAFailureAfterAnOutage(t *testing.T) {
	t.Parallel()
	env := newJobEnv(t)
	start := env.Now()
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError("CONTENT_POLICY", 0)).Once()
	endDown := downUntil(env.Now, start.Add(40*time.Minute))
	env.OnActivity(a.EndJob, mock.Anything, mock.Anything).Return(func(context.Context, contract.EndInput) error { return endDown() })
	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1"})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatalf("the job workflow failed on an outage: %v", err)
	}
	if res.Status != status.JobFailed || env.Now().Before(start.Add(40*time.Minute)) {
		t.Fatalf("result = %+v after %v", res, env.Now().Sub(start))
	}
}

// TestQuietJobSettlesAfterAnOutage: the FinishJob that ends a job of the shape new orders launch
// waits for the database like the older shape's settlement (the tests above run JobShapeOriginal).
func TestQuietJobSettlesAfterAnOutage(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	start := env.Now()
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
	finishDown := downUntil(env.Now, start.Add(time.Hour))
	finished := 0
	env.OnActivity(a.FinishJob, mock.Anything, mock.Anything).Return(func(context.Context, contract.FinishJobInput) (contract.RecordWebhookResult, error) {
		if err := finishDown(); err != nil {
			return contract.RecordWebhookResult{}, err
		}
		finished++
		return contract.RecordWebhookResult{}, nil
	})
	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: workflows.JobShapeQuiet})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatalf("the job workflow failed on an outage: %v", err)
	}
	if res.Status != status.JobCompleted || finished != 1 || env.Now().Before(start.Add(time.Hour)) {
		t.Fatalf("result = %+v, FinishJob succeeded %d times, after %v", res, finished, env.Now().Sub(start))
	}
}

// TestWebhookDeliveryWaitsOutADatabaseOutage: an attempt that cannot read its delivery is made
// once the database is back, and it is still the first attempt.
func TestWebhookDeliveryWaitsOutADatabaseOutage(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	start := env.Now()
	var attempts []int
	env.OnActivity(a.DeliverWebhook, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.DeliverInput) (contract.DeliverResult, error) {
		if env.Now().Before(start.Add(3 * time.Hour)) {
			return contract.DeliverResult{}, unavailable(contract.DependencyDatabase)
		}
		attempts = append(attempts, in.Attempt)
		return contract.DeliverResult{Delivered: true, StatusCode: 200}, nil
	})
	env.ExecuteWorkflow(workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: "d1"})
	var res workflows.WebhookDeliveryResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if !res.Delivered || res.Attempts != 1 || len(attempts) != 1 || attempts[0] != 1 {
		t.Fatalf("result = %+v, attempts made %v", res, attempts)
	}
}

// TestOrderCancelAcceptedDuringAnOutageCompletesWhenTheDatabaseReturns: a cancel accepted while the
// database is away is decided (the job is never launched) and completes once the database is back;
// a second request for the same cancel completes with it. A request that reaches the workflow after
// its AcceptBy is refused and leaves the job runnable.
func TestOrderCancelAcceptedDuringAnOutageCompletesWhenTheDatabaseReturns(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	start := env.Now()
	endDown := downUntil(env.Now, start.Add(30*time.Minute))
	ended := 0
	env.OnActivity(a.FinishJob, mock.Anything, contract.FinishJobInput{End: &contract.EndInput{JobID: "b", Run: 1, Status: status.JobCancelled}}).
		Return(func(context.Context, contract.FinishJobInput) (contract.RecordWebhookResult, error) {
			if err := endDown(); err != nil {
				return contract.RecordWebhookResult{}, err
			}
			ended++
			return contract.RecordWebhookResult{}, nil
		})
	type outcome struct {
		accepted  bool
		completed time.Time
		err       error
	}
	outcomes := map[string]*outcome{}
	cancel := func(name, jobID string, opts workflows.CancelOptions) {
		o := &outcome{}
		outcomes[name] = o
		env.UpdateWorkflow(workflows.UpdateCancelJob, name, &testsuite.TestUpdateCallback{
			OnAccept: func() { o.accepted = true },
			OnReject: func(err error) { o.err = err },
			OnComplete: func(_ any, err error) {
				o.completed, o.err = env.Now(), err
			},
		}, jobID, opts)
	}
	env.RegisterDelayedCallback(func() {
		cancel("first", "b", workflows.CancelOptions{AcceptBy: env.Now().Add(10 * time.Second)})
		cancel("late", "c", workflows.CancelOptions{AcceptBy: env.Now().Add(-time.Second)})
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() { cancel("again", "b", workflows.CancelOptions{}) }, 5*time.Minute)
	l.finishAt(time.Hour, "a", status.JobCompleted)
	l.finishAt(time.Hour+time.Minute, "c", status.JobCompleted)
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: "o1", AccountID: "acc", JobType: jobtype.PhotoShoot, Jobs: refs("a", "b", "c"), MaxConcurrentJobs: 1,
	})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatalf("the order failed on an outage: %v", err)
	}
	for _, name := range []string{"first", "again"} {
		o := outcomes[name]
		if !o.accepted || o.err != nil || o.completed.Before(start.Add(30*time.Minute)) {
			t.Errorf("cancel %s: accepted %v, completed after %v, error %v", name, o.accepted, o.completed.Sub(start), o.err)
		}
	}
	var appErr *temporal.ApplicationError
	if late := outcomes["late"]; late.accepted || !errors.As(late.err, &appErr) || appErr.Type() != workflows.ErrTypeCancelTooLate {
		t.Errorf("a cancel past its AcceptBy: accepted %v, error %v", late.accepted, late.err)
	}
	if ended != 1 || res.Cancelled != 1 || res.Completed != 2 {
		t.Fatalf("FinishJob succeeded %d times; result %+v", ended, res)
	}
	if got := l.list(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("launched %v; the cancelled job must never launch", got)
	}
}

// TestOrderStaysOpenUntilACancelDuringAnOutageIsRecorded: the order's last running job ends while
// the cancel of its last queued job waits out a database outage. The order closes only once that
// cancel is recorded: the cancel completes and is counted, never cut off by the order's end.
func TestOrderStaysOpenUntilACancelDuringAnOutageIsRecorded(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	l := mockJobs(env)
	start := env.Now()
	endDown := downUntil(env.Now, start.Add(30*time.Minute))
	env.OnActivity(a.FinishJob, mock.Anything, contract.FinishJobInput{End: &contract.EndInput{JobID: "b", Run: 1, Status: status.JobCancelled}}).
		Return(func(context.Context, contract.FinishJobInput) (contract.RecordWebhookResult, error) {
			return contract.RecordWebhookResult{}, endDown()
		})
	var cancel *cancelOutcome
	env.RegisterDelayedCallback(func() { cancel = sendCancel(env, "b", workflows.CancelOptions{}) }, 10*time.Second)
	l.finishAt(5*time.Minute, "a", status.JobCompleted)
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{OrderID: "o1", Jobs: refs("a", "b"), MaxConcurrentJobs: 1})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if !cancel.cancelledOK("b") || res != (workflows.OrderResult{Completed: 1, Cancelled: 1}) {
		t.Fatalf("cancel %+v, result %+v", cancel, res)
	}
	if closed := env.Now().Sub(start); closed < 30*time.Minute {
		t.Fatalf("the order closed %v after its start, before the cancel was recorded", closed)
	}
	if got := l.list(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("launched %v", got)
	}
}

// retryWindowJob runs a job whose database is away for the first 35 minutes (BeginAttempt waits,
// or Generate reports DEPENDENCY_UNAVAILABLE while it is), then whose first provider attempt fails
// with TRANSIENT_INFRA and whose second completes; old, when set, makes the run one from before
// the retry window left outages out (no version marker in its history).
func retryWindowJob(t *testing.T, inGenerate, old bool) workflows.JobResult {
	t.Helper()
	env := newEnv(t)
	start := env.Now()
	if old {
		env.OnGetVersion("retry-window-excludes-outages", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	down := downUntil(env.Now, start.Add(35*time.Minute))
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(func(context.Context, contract.AttemptInput) error {
		if inGenerate {
			return nil
		}
		return down()
	})
	gens := 0
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(func(context.Context, contract.AttemptInput) (contract.GenerateResult, error) {
		if inGenerate && env.Now().Before(start.Add(35*time.Minute)) {
			return contract.GenerateResult{}, unavailable(contract.DependencyDatabase)
		}
		gens++
		if gens == 1 {
			return contract.GenerateResult{}, categoryError(errorcat.TransientInfra, 0)
		}
		return okResult, nil
	})
	env.OnActivity(a.MarkRetryPending, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(a.FinishJob, mock.Anything, mock.Anything).Return(contract.RecordWebhookResult{}, nil)
	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: workflows.JobShapeQuiet})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// An outage is no attempt and uses none of the 30-minute retry window (docs/job-states.md): after
// the database was away for 35 minutes, before the first attempt or inside it, a first attempt
// that fails with a retryable category is retried, and the job completes. A run from before the
// change (no version marker) keeps deciding as its history did: the outage counted, and the job
// failed after its one attempt.
func TestAnOutageUsesNoneOfTheRetryWindow(t *testing.T) {
	t.Parallel()
	for _, inGenerate := range []bool{false, true} {
		if res := retryWindowJob(t, inGenerate, false); res.Status != status.JobCompleted || res.Attempts != 2 {
			t.Errorf("outage in Generate %v: %+v, want completed on attempt 2", inGenerate, res)
		}
		if res := retryWindowJob(t, inGenerate, true); res.Status != status.JobFailed || res.Attempts != 1 {
			t.Errorf("outage in Generate %v, a run from before the change: %+v, want failed after 1 attempt", inGenerate, res)
		}
	}
}
