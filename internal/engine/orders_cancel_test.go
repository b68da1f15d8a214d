package engine_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// Cancelling an order cancels its jobs that have not started, releases their credits, records
// their events and tells the order, and counts the one that has begun; a repeat cancels nothing
// more; another account's order is not found; an ended order is a conflict.
func TestCancelAccountOrderCancelsTheJobsNotStarted(t *testing.T) {
	t.Parallel()
	f, jobs := cancelFixture(t, 3)
	up := newCancelTemporal(t, false)
	f.withEngine(func(cfg *engine.Config) { cfg.Temporal = up })
	require.NoError(t, models.BeginAttempt(f.db, jobs[0].ID, 1, 1))
	j0, err := models.GetJob(f.db, jobs[0].ID)
	require.NoError(t, err)

	out, err := f.eng.Orders.CancelAccountOrder(t.Context(), f.inst.AccountID, j0.OrderID, "r")
	require.NoError(t, err)
	assert.Equal(t, 2, out.Cancelled)
	assert.Equal(t, 1, out.AlreadyStarted)
	assert.Equal(t, status.OrderInProgress, out.Order.Order.Status, "the started job still runs")
	for i, j := range out.Order.Jobs {
		want := status.JobCancelled
		if i == 0 {
			want = status.JobInProgress
		}
		assert.Equal(t, want, j.Status, "job %d", i)
	}
	var released int64
	require.NoError(t, f.db.Model(&models.LedgerEntry{}).Where("order_id = ? AND kind = ?", j0.OrderID, models.LedgerRelease).Count(&released).Error)
	assert.Equal(t, int64(2), released)
	var cancelledEvents int64
	require.NoError(t, f.db.Model(&models.WebhookEvent{}).Where("order_id = ? AND type = ?", j0.OrderID, "job.cancelled").Count(&cancelledEvents).Error)
	assert.Equal(t, int64(2), cancelledEvents)
	assert.Len(t, up.starts, 2, "the two job.cancelled deliveries")
	assert.Equal(t, []string{workflows.OrderWorkflowID(j0.OrderID), workflows.OrderWorkflowID(j0.OrderID)}, up.signals)

	again, err := f.eng.Orders.CancelAccountOrder(t.Context(), f.inst.AccountID, j0.OrderID, "r2")
	require.NoError(t, err)
	assert.Zero(t, again.Cancelled)
	assert.Equal(t, 1, again.AlreadyStarted)

	other, err := models.CreateAccount(f.db, "other", 0)
	require.NoError(t, err)
	_, err = f.eng.Orders.CancelAccountOrder(t.Context(), other.ID, j0.OrderID, "r3")
	e, ok := engine.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, engine.KindNotFound, e.Kind)

	_, _, err = models.EndJobRun(f.db, j0.ID, 1, status.JobFailed, "CONTENT_POLICY", "", "")
	require.NoError(t, err)
	_, err = f.eng.Orders.CancelAccountOrder(t.Context(), f.inst.AccountID, j0.OrderID, "r4")
	e, ok = engine.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, engine.KindConflict, e.Kind, "the order has ended")
}
