package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

// A cancel of a job that is no longer pending is decided by the stored job alone (no workflow is
// asked): one cancelled before its first attempt is the outcome asked for (200, idempotent); one
// that began an attempt or ended otherwise is refused; another installation's job is not found.
func TestCancelOfAnEndedJob(t *testing.T) {
	t.Parallel()
	f := newSessionFixture(t, 100)
	order, jobs, err := f.eng.CommitSession(t.Context(), f.request("", shoot("ok", 3)), nil)
	require.NoError(t, err)
	now := time.Now().UTC()
	set := func(j models.Job, updates map[string]any) {
		require.NoError(t, f.db.Model(&models.Job{}).Where("id = ?", j.ID).Updates(updates).Error)
	}
	set(jobs[0], map[string]any{"status": models.JobCancelled})
	set(jobs[1], map[string]any{"status": models.JobCancelled, "started_at": now, "attempt_count": 1})
	set(jobs[2], map[string]any{"status": models.JobCompleted, "started_at": now, "attempt_count": 1})
	cancel := func(j models.Job, installation string) (engine.CancelOutcome, error) {
		return f.eng.CancelJob(t.Context(), engine.CancelRequest{JobID: j.ID, InstallationID: installation, RequestID: "r"})
	}

	out, err := cancel(jobs[0], f.inst.ID)
	require.NoError(t, err)
	assert.True(t, out.Recorded)
	assert.Equal(t, models.JobCancelled, out.Job.Status)
	assert.Equal(t, order.ID, out.Job.OrderID)
	for _, j := range jobs[1:] {
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
