package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// A cancel of a job that is no longer pending is decided by the stored job alone (no workflow is
// asked) and refused, whether it began an attempt, ended otherwise or was cancelled already
// (cancelled is final: the contract answers 409 job_not_cancelable); another installation's job
// is not found.
func TestCancelOfAnEndedJob(t *testing.T) {
	t.Parallel()
	f := newSessionFixture(t, 100)
	session, err := f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", 3)), nil)
	require.NoError(t, err)
	jobs := session.Jobs
	now := time.Now().UTC()
	set := func(j engine.SessionJob, updates map[string]any) {
		require.NoError(t, f.db.Model(&models.Job{}).Where("id = ?", j.ID).Updates(updates).Error)
	}
	set(jobs[0], map[string]any{"status": status.JobCancelled})
	set(jobs[1], map[string]any{"status": status.JobCancelled, "started_at": now, "attempt_count": 1})
	set(jobs[2], map[string]any{"status": status.JobCompleted, "started_at": now, "attempt_count": 1})
	cancel := func(j engine.SessionJob, installation string) (engine.CancelOutcome, error) {
		return f.eng.Jobs.CancelJob(t.Context(), engine.CancelRequest{JobID: j.ID, InstallationID: installation, RequestID: "r"})
	}

	for _, j := range jobs {
		_, err := cancel(j, f.inst.ID)
		e, ok := engine.As(err)
		require.True(t, ok, "job %s: want a refusal, got %v", j.ID, err)
		assert.Equal(t, engine.ReasonJobNotCancelable, e.Reason)
	}
	_, err = cancel(jobs[0], models.NewID())
	e, ok := engine.As(err)
	require.True(t, ok, "want not found, got %v", err)
	assert.Equal(t, engine.KindNotFound, e.Kind)
}

// A cancel the workflow refuses is answered from the stored job read after the refusal: when
// another cancel won the race (the job is cancelled and never began an attempt) the request gets
// the cancelled job; when the job began its first attempt the refusal stands.
func TestCancelRefusedAfterAnotherCancelWon(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		stored  map[string]any // what the job is by the time the workflow refuses
		granted bool
	}{
		{"another cancel won", map[string]any{"status": status.JobCancelled}, true},
		{"first attempt began", map[string]any{"status": status.JobInProgress, "started_at": time.Now().UTC(), "attempt_count": 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newSessionFixture(t, 100)
			session, err := f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", 1)), nil)
			require.NoError(t, err)
			jobs := session.Jobs
			require.NoError(t, models.MarkOrdersStarted(f.db, time.Now(), session.OrderID))
			refused := &mocks.WorkflowUpdateHandle{}
			refused.On("Get", mock.Anything, mock.Anything).
				Return(temporal.NewApplicationError("refused", workflows.ErrTypeJobNotCancelable))
			c := &mocks.Client{}
			c.On("UpdateWorkflow", mock.Anything, mock.Anything).Run(func(mock.Arguments) {
				require.NoError(t, f.db.Model(&models.Job{}).Where("id = ?", jobs[0].ID).Updates(tc.stored).Error)
			}).Return(refused, nil)
			f.withEngine(func(cfg *engine.Config) { cfg.Temporal = c })

			out, err := f.eng.Jobs.CancelJob(t.Context(), engine.CancelRequest{JobID: jobs[0].ID, InstallationID: f.inst.ID, RequestID: "r"})
			if !tc.granted {
				e, ok := engine.As(err)
				require.True(t, ok, "want a refusal, got %v", err)
				assert.Equal(t, engine.ReasonJobNotCancelable, e.Reason)
				return
			}
			require.NoError(t, err)
			assert.True(t, out.Recorded)
			assert.Equal(t, status.JobCancelled, out.Job.Status)
		})
	}
}
