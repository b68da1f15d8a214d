package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

// The ways switchTemporal answers a workflow start.
const (
	temporalHangs       int32 = iota // until the start's context ends
	temporalUnavailable              // serviceerror.Unavailable at once
	temporalAnswers                  // the workflow is started
)

// switchTemporal is a Temporal client whose workflow starts answer as mode says, counted in calls.
type switchTemporal struct {
	client.Client
	mode, calls *atomic.Int32
}

func (s switchTemporal) ExecuteWorkflow(ctx context.Context, _ client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	s.calls.Add(1)
	switch s.mode.Load() {
	case temporalHangs:
		<-ctx.Done()
		return nil, ctx.Err()
	case temporalUnavailable:
		return nil, serviceerror.NewUnavailable("frontend down (unit test)")
	}
	return nil, nil
}

// While Temporal is unavailable, the requests of a process stop waiting on it: the first session
// whose start hangs waits StartTimeout, the next ones are accepted at once and left to the outbox
// sweep, one request tries again after each pause, and once Temporal answers that probe every
// request starts its own workflow again. Nothing is lost meanwhile: every session is committed.
func TestRequestsLeaveStartsToTheSweepWhileTemporalIsUnavailable(t *testing.T) {
	t.Parallel()
	f := newSessionFixture(t, 1000)
	var mode, calls atomic.Int32
	const timeout = 2 * time.Second
	f.withEngine(func(c *engine.Config) {
		c.Temporal, c.StartTimeout = switchTemporal{mode: &mode, calls: &calls}, timeout
	})
	submit := func() time.Duration {
		t.Helper()
		began := time.Now()
		_, err := f.eng.Sessions.SubmitSession(t.Context(), f.request("", shoot("ok", 1)), nil)
		require.NoError(t, err)
		return time.Since(began)
	}
	unstarted := func() int64 {
		f.eng.Outbox.FlushStartMarks()
		var n int64
		require.NoError(t, f.db.Model(&models.Order{}).Where("workflow_started_at IS NULL").Count(&n).Error)
		return n
	}

	mode.Store(temporalHangs)
	assert.GreaterOrEqual(t, submit(), timeout, "the first start waits out StartTimeout")
	for range 5 {
		assert.Less(t, submit(), timeout, "a start is deferred, not waited on, while Temporal is unavailable")
	}
	assert.Equal(t, int32(1), calls.Load(), "only the first session tried its start")
	assert.Equal(t, int64(6), unstarted(), "every session is committed, its start left to the sweep")

	// After the pause one request probes; Temporal still fails it at once, and the gate stays shut.
	mode.Store(temporalUnavailable)
	require.Eventually(t, func() bool { submit(); return calls.Load() == 2 }, 10*time.Second, 100*time.Millisecond)
	submit()
	assert.Equal(t, int32(2), calls.Load(), "a failed probe shuts the gate for another pause")

	// Temporal is back: the next probe starts its workflow, and every request after it does too.
	mode.Store(temporalAnswers)
	require.Eventually(t, func() bool { submit(); return calls.Load() == 3 }, 10*time.Second, 100*time.Millisecond)
	before := unstarted()
	for range 3 {
		submit()
	}
	assert.Equal(t, int32(6), calls.Load(), "every request starts its own workflow again")
	assert.Equal(t, before, unstarted(), "the sessions accepted once Temporal answered are all started")
}

// A start that Temporal answers with an error of its own (not an outage) is left to the sweep
// without shutting the gate: the next request tries its start.
func TestAStartRefusedForAnotherReasonDoesNotDeferTheNext(t *testing.T) {
	t.Parallel()
	f := newSessionFixture(t, 1000)
	var calls atomic.Int32
	f.withEngine(func(c *engine.Config) { c.Temporal = refusingTemporal{calls: &calls} })
	for range 3 {
		_, err := f.eng.Sessions.SubmitSession(t.Context(), f.request("", shoot("ok", 1)), nil)
		require.NoError(t, err)
	}
	assert.Equal(t, int32(3), calls.Load())
}

// refusingTemporal refuses every workflow start with an answer that is not an outage.
type refusingTemporal struct {
	client.Client
	calls *atomic.Int32
}

func (r refusingTemporal) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	r.calls.Add(1)
	return nil, serviceerror.NewInvalidArgument("refused (unit test)")
}

// refusingOne is a Temporal client that refuses the start of one workflow ID for a reason of its
// own (not an outage) and starts every other, counting them.
type refusingOne struct {
	client.Client
	refused string
	started *atomic.Int32
}

func (r refusingOne) ExecuteWorkflow(_ context.Context, opts client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	if opts.ID == r.refused {
		return nil, serviceerror.NewInvalidArgument("payload too large (unit test)")
	}
	r.started.Add(1)
	return nil, nil
}

// An order whose start Temporal refuses for a reason of its own holds up none behind it: the
// outbox sweep logs it, starts the others and marks them started, and tries it again next time.
// An outage still stops the sweep at once (TestRequestsLeaveStartsToTheSweepWhileTemporalIsUnavailable's
// switchTemporal is an outage).
func TestTheSweepGoesOnPastAnOrderTemporalRefuses(t *testing.T) {
	t.Parallel()
	f := newSessionFixture(t, 1000)
	var orders []string
	for range 3 {
		s, err := f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", 1)), nil)
		require.NoError(t, err)
		orders = append(orders, s.OrderID)
	}
	var started atomic.Int32
	f.withEngine(func(c *engine.Config) {
		c.Temporal = refusingOne{refused: "order/" + orders[0], started: &started}
	})
	n, err := f.eng.Outbox.StartPending(t.Context(), 0, 100)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, int32(2), started.Load())
	var unstarted []string
	require.NoError(t, f.db.Model(&models.Order{}).Where("workflow_started_at IS NULL").Pluck("id", &unstarted).Error)
	assert.Equal(t, []string{orders[0]}, unstarted, "only the refused order is left for the next sweep")

	var mode, calls atomic.Int32
	f.withEngine(func(c *engine.Config) { c.Temporal = switchTemporal{mode: &mode, calls: &calls} })
	mode.Store(temporalUnavailable)
	_, err = f.eng.Outbox.StartPending(t.Context(), 0, 100)
	require.Error(t, err, "an outage stops the sweep")
}
