package workflows_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// localActivities records the names of the local activities a test workflow runs, in order.
func localActivities(env *testsuite.TestWorkflowEnvironment) func() []string {
	var mu sync.Mutex
	var names []string
	env.SetOnLocalActivityStartedListener(func(info *sdkactivity.Info, _ context.Context, _ []any) {
		mu.Lock()
		defer mu.Unlock()
		names = append(names, info.ActivityType.Name)
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(names)
	}
}

// onlyStatusUpserts lets the workflow upsert its job status to each of statuses once, and fails
// it on any other upsert (such as in_progress, which the lean shape no longer sets).
func onlyStatusUpserts(env *testsuite.TestWorkflowEnvironment, statuses ...string) {
	for _, status := range statuses {
		env.OnUpsertTypedSearchAttributes(mock.MatchedBy(func(sa temporal.SearchAttributes) bool {
			got, ok := sa.GetKeyword(workflows.SAJobStatus)
			return ok && got == status
		})).Return(nil).Once()
	}
}

func TestLeanJobCompletesWithOneFinishingLocalActivity(t *testing.T) {
	env := newJobEnv(t)
	names := localActivities(env)
	onlyStatusUpserts(env, status.JobCompleted)
	rec := contract.RecordWebhookResult{DeliveryID: "d1", Deliver: true, AccountID: "acc", InstallationID: "inst", OrderID: "o1"}
	env.OnActivity(a.BeginAttempt, mock.Anything, contract.AttemptInput{JobID: "j1", Run: 1, Attempt: 1}).Return(nil).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
	env.OnActivity(a.FinishJob, mock.Anything, contract.FinishJobInput{
		Complete: &contract.CompleteInput{JobID: "j1", Run: 1, Outputs: okResult.Outputs},
	}).Return(rec, nil).Once()
	var delivered []string
	env.OnWorkflow(workflows.WebhookDeliveryWorkflow, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in workflows.WebhookDeliveryInput) (workflows.WebhookDeliveryResult, error) {
			delivered = append(delivered, in.DeliveryID)
			return workflows.WebhookDeliveryResult{Delivered: true, Attempts: 1}, nil
		})

	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: workflows.JobShapeLean})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.JobCompleted || res.Attempts != 1 {
		t.Fatalf("result = %+v", res)
	}
	if got := names(); !slices.Equal(got, []string{"BeginAttempt", "FinishJob"}) {
		t.Fatalf("local activities = %v, want BeginAttempt then FinishJob", got)
	}
	if !slices.Equal(delivered, []string{"d1"}) {
		t.Fatalf("webhook deliveries started = %v, want [d1]", delivered)
	}
}

func TestLeanJobFailsWithOneFinishingLocalActivity(t *testing.T) {
	env := newJobEnv(t)
	names := localActivities(env)
	onlyStatusUpserts(env, status.JobFailed)
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError(errorcat.ContentPolicy, 0)).Once()
	env.OnActivity(a.FinishJob, mock.Anything, mock.MatchedBy(func(in contract.FinishJobInput) bool {
		return in.Complete == nil && in.End != nil && in.End.Status == status.JobFailed && in.End.Category == errorcat.ContentPolicy
	})).Return(contract.RecordWebhookResult{}, nil).Once()

	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: workflows.JobShapeLean})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.JobFailed || res.Category != errorcat.ContentPolicy {
		t.Fatalf("result = %+v", res)
	}
	if got := names(); !slices.Equal(got, []string{"BeginAttempt", "FinishJob"}) {
		t.Fatalf("local activities = %v, want BeginAttempt then FinishJob", got)
	}
}

func TestLeanJobStillShowsRetryPending(t *testing.T) {
	env := newJobEnv(t)
	onlyStatusUpserts(env, status.JobRetryPending, status.JobCompleted)
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Twice()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError(errorcat.RateLimit, 0)).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
	env.OnActivity(a.MarkRetryPending, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(a.FinishJob, mock.Anything, mock.Anything).Return(contract.RecordWebhookResult{}, nil).Once()

	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: workflows.JobShapeLean})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.JobCompleted || res.Attempts != 2 {
		t.Fatalf("result = %+v", res)
	}
}

// TestOrderLaunchesNewJobsInTheQuietShape: a new order run launches JobShapeQuiet jobs and learns
// of their ends from their child workflows' results alone: no job signals it, and a job workflow
// that fails (or is terminated) counts as a failed job instead of holding the order open.
func TestOrderLaunchesNewJobsInTheQuietShape(t *testing.T) {
	env := newEnv(t)
	var mu sync.Mutex
	var shapes []int
	env.OnWorkflow(workflows.JobWorkflow, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in workflows.JobInput) (workflows.JobResult, error) {
			mu.Lock()
			defer mu.Unlock()
			shapes = append(shapes, in.Shape)
			switch in.JobID {
			case "b":
				return workflows.JobResult{Status: status.JobCancelled}, nil // cancelled by its own workflow
			case "c":
				return workflows.JobResult{}, errors.New("job workflow failed")
			}
			return workflows.JobResult{Status: status.JobCompleted, Attempts: 1}, nil
		})
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{OrderID: "o1", Jobs: refs("a", "b", "c", "d")})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	want := []int{workflows.JobShapeQuiet, workflows.JobShapeQuiet, workflows.JobShapeQuiet, workflows.JobShapeQuiet}
	if res != (workflows.OrderResult{Completed: 2, Cancelled: 1, Failed: 1}) || !slices.Equal(shapes, want) {
		t.Fatalf("result = %+v, shapes %v", res, shapes)
	}
}

// signalsToOrder counts the job-finished signals a JobWorkflow under test sends.
func signalsToOrder(env *testsuite.TestWorkflowEnvironment) *int {
	n := new(int)
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", workflows.SignalJobFinished, mock.Anything).
		Return(func(_, _, _, _ string, _ any) error {
			*n++
			return nil
		}).Maybe()
	return n
}

func TestQuietJobCompletesWithoutSignallingItsOrder(t *testing.T) {
	for _, tc := range []struct {
		shape       int
		wantSignals int
	}{{workflows.JobShapeLean, 1}, {workflows.JobShapeQuiet, 0}} {
		env := newEnv(t)
		signals := signalsToOrder(env)
		names := localActivities(env)
		onlyStatusUpserts(env, status.JobCompleted)
		env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Once()
		env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
		env.OnActivity(a.FinishJob, mock.Anything, mock.Anything).Return(contract.RecordWebhookResult{}, nil).Once()
		env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: tc.shape})
		var res workflows.JobResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		if res.Status != status.JobCompleted || *signals != tc.wantSignals || !slices.Equal(names(), []string{"BeginAttempt", "FinishJob"}) {
			t.Fatalf("shape %d: result %+v, %d signals to the order (want %d), local activities %v",
				tc.shape, res, *signals, tc.wantSignals, names())
		}
	}
}

// TestQuietJobRecordsItsCancelWithItsWebhook: a JobShapeQuiet job cancelled before its first attempt
// records the cancel and its webhook in one FinishJob, starts the delivery, and signals no one.
func TestQuietJobRecordsItsCancelWithItsWebhook(t *testing.T) {
	env := newEnv(t)
	signals := signalsToOrder(env)
	names := localActivities(env)
	calls := mockJobSteps(t, env, nil)
	rec := contract.RecordWebhookResult{DeliveryID: "d1", Deliver: true, AccountID: "acc", InstallationID: "inst", OrderID: "o1"}
	env.OnActivity(a.FinishJob, mock.Anything, contract.FinishJobInput{
		End: &contract.EndInput{JobID: "j1", Run: 1, Status: status.JobCancelled},
	}).Return(rec, nil).Once()
	var delivered []string
	env.OnWorkflow(workflows.WebhookDeliveryWorkflow, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in workflows.WebhookDeliveryInput) (workflows.WebhookDeliveryResult, error) {
			delivered = append(delivered, in.DeliveryID)
			return workflows.WebhookDeliveryResult{Delivered: true, Attempts: 1}, nil
		})
	var cancel *cancelOutcome
	env.RegisterDelayedCallback(func() { cancel = sendCancel(env, "j1", workflows.CancelOptions{}) }, 0)
	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: workflows.JobShapeQuiet})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if !cancel.cancelledOK("j1") || res.Status != status.JobCancelled || calls.begun != 0 || calls.cancelled != 0 {
		t.Fatalf("cancel %+v, result %+v, calls %+v", cancel, res, calls)
	}
	if got := names(); !slices.Equal(got, []string{"FinishJob"}) || *signals != 0 || !slices.Equal(delivered, []string{"d1"}) {
		t.Fatalf("local activities %v, %d signals to the order, deliveries %v", got, *signals, delivered)
	}
}
