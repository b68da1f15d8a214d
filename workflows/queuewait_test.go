package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// attemptError is a failed generate attempt as the Generate activity reports it: its category,
// the provider's Retry-After and, when began is set, when the attempt began running
// (contract.Generate).
func attemptError(c errorcat.Category, retryAfter time.Duration, began time.Time) error {
	details := []any{retryAfter.Seconds()}
	if !began.IsZero() {
		details = append(details, began)
	}
	return temporal.NewNonRetryableApplicationError("provider said no", string(c), nil, details...)
}

// jobFailingOnce runs a job whose first generate attempt fails after took with the error failure
// gives for the time the run started; the next attempt completes. oldChange, when set, is a
// version marker the run does not have: a run from before that change.
func jobFailingOnce(t *testing.T, took time.Duration, failure func(start time.Time) error, oldChange string) workflows.JobResult {
	t.Helper()
	env := newEnv(t)
	if oldChange != "" {
		env.OnGetVersion(oldChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).After(took).Return(contract.GenerateResult{}, failure(env.Now())).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Maybe()
	env.OnActivity(a.MarkRetryPending, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(a.FinishJob, mock.Anything, mock.Anything).Return(func(context.Context, contract.FinishJobInput) (contract.RecordWebhookResult, error) {
		return contract.RecordWebhookResult{}, nil
	})
	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1", Shape: workflows.JobShapeQuiet})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// queuedJob runs a job whose first attempt waits 40 minutes in its provider's task queue (a burst
// of jobs ahead of it, PROVIDER_CONCURRENCY and PROVIDER_RATE_LIMITS), then runs for 10 seconds
// and fails with TRANSIENT_INFRA; the second attempt completes. reported says whether the attempt
// reports when it began; old makes the run one from before the retry window started at the first
// attempt (no version marker in its history).
func queuedJob(t *testing.T, reported, old bool) workflows.JobResult {
	t.Helper()
	oldChange := ""
	if old {
		oldChange = "retry-window-starts-at-first-attempt"
	}
	return jobFailingOnce(t, 40*time.Minute+10*time.Second, func(start time.Time) error {
		began := start.Add(40 * time.Minute)
		if !reported {
			began = time.Time{}
		}
		return attemptError(errorcat.TransientInfra, 0, began)
	}, oldChange)
}

// The retry window runs from the first attempt (docs/job-states.md), which begins when a worker
// takes it from its provider's queue, not when the job's workflow asked for it: a job whose first
// attempt waited 40 minutes there and failed with a retryable category is retried. An attempt that
// does not report when it began (one that timed out) leaves the window starting at the request,
// and a run from before the change keeps deciding as its history did: it failed after one attempt.
func TestAProviderQueueWaitUsesNoneOfTheRetryWindow(t *testing.T) {
	t.Parallel()
	if res := queuedJob(t, true, false); res.Status != status.JobCompleted || res.Attempts != 2 {
		t.Errorf("queued 40 minutes: %+v, want completed on attempt 2", res)
	}
	if res := queuedJob(t, false, false); res.Status != status.JobFailed || res.Attempts != 1 {
		t.Errorf("queued 40 minutes, start not reported: %+v, want failed after 1 attempt", res)
	}
	if res := queuedJob(t, true, true); res.Status != status.JobFailed || res.Attempts != 1 {
		t.Errorf("queued 40 minutes, a run from before the change: %+v, want failed after 1 attempt", res)
	}
}
