package workflows_test

import (
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// timedOutJob runs a job whose first attempt heartbeats 10 seconds in (its heartbeat recording
// that time, contract.Generate) and then times out after took; the next attempt completes. old
// makes the run one from before late timeouts were taken for Temporal's outages.
func timedOutJob(t *testing.T, took time.Duration, old bool) workflows.JobResult {
	t.Helper()
	oldChange := ""
	if old {
		oldChange = "late-timeout-is-temporal-outage"
	}
	return jobFailingOnce(t, took, func(start time.Time) error {
		return temporal.NewHeartbeatTimeoutError(start.Add(10*time.Second), 0)
	}, oldChange)
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
