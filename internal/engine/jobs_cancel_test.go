package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/webhooks"
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

// cancelTemporal is a Temporal client that takes a cancel's signal to the order and the start of
// its webhook delivery, counting them, or, when down, fails both as an unreachable server does
// (after the caller's deadline). It has no UpdateWorkflow: a cancel that asked a workflow would
// panic.
type cancelTemporal struct {
	*mocks.Client
	signals, starts []string // order workflow IDs signalled; delivery workflow IDs started
	cancels         []string // delivery workflow IDs asked to cancel
	mu              sync.Mutex
}

func newCancelTemporal(t *testing.T, down bool) *cancelTemporal {
	c := &cancelTemporal{Client: &mocks.Client{}}
	unreachable := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	c.On("SignalWorkflow", mock.Anything, mock.Anything, "", workflows.SignalCancelJob, mock.Anything).Return(
		func(ctx context.Context, id, _, _ string, arg any) error {
			if down {
				return unreachable(ctx)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.signals = append(c.signals, id)
			return nil
		})
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
			if down {
				return nil, unreachable(ctx)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.starts = append(c.starts, o.ID)
			return &mocks.WorkflowRun{}, nil
		})
	c.On("CancelWorkflow", mock.Anything, mock.Anything, "").Return(
		func(ctx context.Context, id, _ string) error {
			if down {
				return unreachable(ctx)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.cancels = append(c.cancels, id)
			return nil
		})
	return c
}

// cancelFixture is a session of n jobs of an installation with a callback URL, whose order's
// workflow has started.
func cancelFixture(t *testing.T, n int) (*sessionFixture, []engine.SessionJob) {
	f := newSessionFixture(t, 100)
	now := time.Now().UTC()
	require.NoError(t, f.db.Create(&models.WebhookEndpoint{ID: models.NewID(), AccountID: f.inst.AccountID, InstallationID: &f.inst.ID,
		URL: "https://shop.example/hooks", Events: models.StringList(webhooks.DefaultPluginEvents), Status: models.EndpointEnabled,
		CreatedAt: now, UpdatedAt: now}).Error)
	session, err := f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", n)), nil)
	require.NoError(t, err)
	require.NoError(t, models.MarkOrdersStarted(f.db, time.Now(), session.OrderID))
	return f, session.Jobs
}

// deliveryOf is the delivery of the job.cancelled event of a job's first run to the fixture's
// endpoint, nil when none was recorded.
func deliveryOf(t *testing.T, f *sessionFixture, jobID string) *models.WebhookDelivery {
	var d models.WebhookDelivery
	err := f.db.Where("event_id = ?", models.WebhookDeliveryID(jobID, 1, webhooks.EventJobCancelled)).Take(&d).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	require.NoError(t, err)
	return &d
}

// A job that waits in its order is cancelled by the database alone, while Temporal cannot be
// reached at all (no workflow takes a task, no call goes through): the answer is the cancelled job,
// its reservation is released, and its job.cancelled delivery is recorded with its start owed.
// The outbox sweep starts that delivery once Temporal is back, exactly once.
func TestCancelAnswersWhileTemporalIsDown(t *testing.T) {
	t.Parallel()
	f, jobs := cancelFixture(t, 2)
	down := newCancelTemporal(t, true)
	f.withEngine(func(cfg *engine.Config) { cfg.Temporal = down })

	out, err := f.eng.Jobs.CancelJob(t.Context(), engine.CancelRequest{JobID: jobs[0].ID, InstallationID: f.inst.ID, RequestID: "r"})
	require.NoError(t, err)
	assert.Equal(t, status.JobCancelled, out.Job.Status)
	stored, err := models.GetJob(f.db, jobs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, status.JobCancelled, stored.Status)
	var released int64
	require.NoError(t, f.db.Model(&models.LedgerEntry{}).Where("job_id = ? AND kind = ?", jobs[0].ID, models.LedgerRelease).Count(&released).Error)
	assert.Equal(t, int64(1), released)
	d := deliveryOf(t, f, jobs[0].ID)
	require.NotNil(t, d, "the job.cancelled delivery is recorded with the cancel")
	require.NotNil(t, d.StartDueAt, "its start is owed")

	up := newCancelTemporal(t, false)
	f.withEngine(func(cfg *engine.Config) { cfg.Temporal = up })
	for range 2 {
		_, err := f.eng.Outbox.StartPendingDeliveries(t.Context(), 0, 100)
		require.NoError(t, err)
	}
	assert.Equal(t, []string{workflows.WebhookWorkflowID(d.ID)}, up.starts, "the sweep starts the delivery once")
	assert.Nil(t, deliveryOf(t, f, jobs[0].ID).StartDueAt)
	assert.Nil(t, deliveryOf(t, f, jobs[1].ID), "the other job is untouched")
}

// With Temporal up, a cancel starts the job.cancelled delivery itself and records the start, so the
// sweep has nothing to start, and tells the order with SignalCancelJob. A second cancel of the job
// is refused (cancelled is final) and sends nothing.
func TestCancelStartsItsWebhookOnceAndSignalsTheOrder(t *testing.T) {
	t.Parallel()
	f, jobs := cancelFixture(t, 1)
	up := newCancelTemporal(t, false)
	f.withEngine(func(cfg *engine.Config) { cfg.Temporal = up })

	_, err := f.eng.Jobs.CancelJob(t.Context(), engine.CancelRequest{JobID: jobs[0].ID, InstallationID: f.inst.ID, RequestID: "r"})
	require.NoError(t, err)
	_, err = f.eng.Jobs.CancelJob(t.Context(), engine.CancelRequest{JobID: jobs[0].ID, InstallationID: f.inst.ID, RequestID: "r2"})
	e, ok := engine.As(err)
	require.True(t, ok, "want a refusal, got %v", err)
	assert.Equal(t, engine.ReasonJobNotCancelable, e.Reason)
	n, err := f.eng.Outbox.StartPendingDeliveries(t.Context(), 0, 100)
	require.NoError(t, err)
	assert.Zero(t, n)

	d := deliveryOf(t, f, jobs[0].ID)
	require.NotNil(t, d)
	assert.Nil(t, d.StartDueAt)
	assert.Equal(t, []string{workflows.WebhookWorkflowID(d.ID)}, up.starts)
	j, err := models.GetJob(f.db, jobs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, []string{workflows.OrderWorkflowID(j.OrderID)}, up.signals)
}

// Cancels of one job racing each other: exactly one is answered with the cancelled job, the others
// are refused, and the job's reservation is released and its webhook recorded once.
func TestConcurrentCancelsOfOneJob(t *testing.T) {
	t.Parallel()
	f, jobs := cancelFixture(t, 1)
	up := newCancelTemporal(t, false)
	f.withEngine(func(cfg *engine.Config) { cfg.Temporal = up })
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = f.eng.Jobs.CancelJob(t.Context(), engine.CancelRequest{JobID: jobs[0].ID, InstallationID: f.inst.ID, RequestID: "r"})
		})
	}
	wg.Wait()
	granted := 0
	for _, err := range errs {
		if err == nil {
			granted++
			continue
		}
		e, ok := engine.As(err)
		require.True(t, ok, "want a refusal, got %v", err)
		assert.Equal(t, engine.ReasonJobNotCancelable, e.Reason)
	}
	assert.Equal(t, 1, granted)
	var released int64
	require.NoError(t, f.db.Model(&models.LedgerEntry{}).Where("job_id = ? AND kind = ?", jobs[0].ID, models.LedgerRelease).Count(&released).Error)
	assert.Equal(t, int64(1), released)
	assert.Len(t, up.starts, 1)
}
