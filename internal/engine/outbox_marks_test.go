package engine_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models"
)

// The acceptance path records its workflow starts in batches: every accepted order is marked
// started, concurrent acceptances share UPDATEs, and FlushStartMarks writes what is queued at once.
func TestAcceptedOrdersAreMarkedStartedInBatches(t *testing.T) {
	t.Parallel()
	f := newSessionFixture(t, 1000)
	temporal := apitest.NewTemporal(t, apitest.TemporalOptions{OnlyPrefix: "order/"})
	f.withEngine(func(c *engine.Config) { c.Temporal, c.TaskQueue = temporal.Client, "marks" })
	var marks atomic.Int32
	require.NoError(t, f.db.Callback().Update().Before("gorm:update").Register("count_start_marks", func(tx *gorm.DB) {
		if strings.Contains(tx.Statement.Table, "orders") {
			if _, ok := tx.Statement.Dest.(map[string]any)["workflow_started_at"]; ok {
				marks.Add(1)
			}
		}
	}))

	const orders = 20
	var wg sync.WaitGroup
	for range orders {
		wg.Go(func() {
			_, err := f.eng.Sessions.SubmitSession(t.Context(), f.request("", shoot("ok", 1)), nil)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	f.eng.Outbox.FlushStartMarks()
	var unmarked int64
	require.NoError(t, f.db.Model(&models.Order{}).Where("workflow_started_at IS NULL").Count(&unmarked).Error)
	assert.Zero(t, unmarked, "every accepted order is marked started")
	assert.Len(t, temporal.Started("order/"), orders)
	assert.Positive(t, marks.Load(), "the marks are UPDATEs of orders")
	assert.Less(t, int(marks.Load()), orders, "concurrent acceptances share their marks' UPDATEs")

	// A single acceptance is marked within the batching interval, without a flush.
	_, err := f.eng.Sessions.SubmitSession(t.Context(), f.request("", shoot("ok", 1)), nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var n int64
		return f.db.Model(&models.Order{}).Where("workflow_started_at IS NULL").Count(&n).Error == nil && n == 0
	}, 5*time.Second, 10*time.Millisecond)
}
