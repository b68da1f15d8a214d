package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// timedOutJob runs a job whose first attempt heartbeats 10 seconds in (its heartbeat recording
// that time, contract.Generate) and then times out after took; the next attempt completes. old
// makes the run one from before late timeouts were taken for Temporal's outages.
func timedOutJob(t *testing.T, took time.Duration, old bool) workflows.JobResult {
	t.Helper()
	env := newEnv(t)
	start := env.Now()
	if old {
		env.OnGetVersion("late-timeout-is-temporal-outage", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).After(took).
		Return(contract.GenerateResult{}, temporal.NewHeartbeatTimeoutError(start.Add(10*time.Second), 0)).Once()
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

// Temporal down during an attempt (docs/job-states.md, "During an outage"): the attempt comes back,
// once Temporal is, as a heartbeat timeout long past the last heartbeat's due time. That is no
// failed attempt and uses none of the retry window: the same attempt runs again. Here Temporal
// was away for 45 minutes, longer than the whole window, and the job completes on attempt 1. A
// timeout in time (a worker that died: 30 s after its heartbeat) is an attempt, as before, and a run
// from before the change keeps deciding as its history did: the 45 minutes ended the job.
func TestAnAttemptCutShortByATemporalOutageIsNoAttempt(t *testing.T) {
	t.Parallel()
	if res := timedOutJob(t, 45*time.Minute, false); res.Status != status.JobCompleted || res.Attempts != 1 {
		t.Errorf("Temporal away 45 minutes during the attempt: %+v, want completed on attempt 1", res)
	}
	if res := timedOutJob(t, 40*time.Second, false); res.Status != status.JobCompleted || res.Attempts != 2 {
		t.Errorf("a heartbeat timeout in time: %+v, want a failed attempt, completed on attempt 2", res)
	}
	if res := timedOutJob(t, 45*time.Minute, true); res.Status != status.JobFailed || res.Attempts != 1 {
		t.Errorf("Temporal away 45 minutes, a run from before the change: %+v, want failed after 1 attempt", res)
	}
}
