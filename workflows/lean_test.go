package workflows_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/internal/errorcat"
	"github.com/shotflow/shotflow/models"
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
	onlyStatusUpserts(env, models.JobCompleted)
	rec := activities.RecordWebhookResult{DeliveryID: "d1", Deliver: true, AccountID: "acc", InstallationID: "inst", OrderID: "o1"}
	env.OnActivity(a.BeginAttempt, mock.Anything, activities.AttemptInput{JobID: "j1", Run: 1, Attempt: 1}).Return(nil).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
	env.OnActivity(a.FinishJob, mock.Anything, activities.FinishJobInput{
		Complete: &activities.CompleteInput{JobID: "j1", Run: 1, Outputs: okResult.Outputs},
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
	if res.Status != models.JobCompleted || res.Attempts != 1 {
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
	onlyStatusUpserts(env, models.JobFailed)
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(activities.GenerateResult{}, categoryError(errorcat.ContentPolicy, 0)).Once()
	env.OnActivity(a.FinishJob, mock.Anything, mock.MatchedBy(func(in activities.FinishJobInput) bool {
		return in.Complete == nil && in.End != nil && in.End.Status == models.JobFailed && in.End.Category == errorcat.ContentPolicy
	})).Return(activities.RecordWebhookResult{}, nil).Once()

	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: workflows.JobShapeLean})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != models.JobFailed || res.Category != errorcat.ContentPolicy {
		t.Fatalf("result = %+v", res)
	}
	if got := names(); !slices.Equal(got, []string{"BeginAttempt", "FinishJob"}) {
		t.Fatalf("local activities = %v, want BeginAttempt then FinishJob", got)
	}
}

func TestLeanJobStillShowsRetryPending(t *testing.T) {
	env := newJobEnv(t)
	onlyStatusUpserts(env, models.JobRetryPending, models.JobCompleted)
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Twice()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(activities.GenerateResult{}, categoryError(errorcat.RateLimit, 0)).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
	env.OnActivity(a.MarkRetryPending, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(a.FinishJob, mock.Anything, mock.Anything).Return(activities.RecordWebhookResult{}, nil).Once()

	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: workflows.JobShapeLean})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != models.JobCompleted || res.Attempts != 2 {
		t.Fatalf("result = %+v", res)
	}
}

func TestOrderLaunchesNewJobsInTheLeanShape(t *testing.T) {
	env := newEnv(t)
	var mu sync.Mutex
	var shapes []int
	env.OnWorkflow(workflows.JobWorkflow, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in workflows.JobInput) (workflows.JobResult, error) {
			mu.Lock()
			shapes = append(shapes, in.Shape)
			mu.Unlock()
			err := workflow.SignalExternalWorkflow(ctx, workflows.OrderWorkflowID(in.OrderID), "", workflows.SignalJobFinished,
				workflows.JobFinished{JobID: in.JobID, Run: in.Run, Status: models.JobCompleted}).Get(ctx, nil)
			return workflows.JobResult{Status: models.JobCompleted}, err
		})
	env.OnSignalExternalWorkflow(mock.Anything, workflows.OrderWorkflowID("o1"), "", workflows.SignalJobFinished, mock.Anything).
		Return(func(_, _, _, _ string, arg any) error {
			env.SignalWorkflow(workflows.SignalJobFinished, arg)
			return nil
		})
	env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{OrderID: "o1", Jobs: refs("a", "b")})
	var res workflows.OrderResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Completed != 2 || !slices.Equal(shapes, []int{workflows.JobShapeLean, workflows.JobShapeLean}) {
		t.Fatalf("result = %+v, shapes %v", res, shapes)
	}
}
