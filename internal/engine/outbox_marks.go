package engine

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// startMarkDelay is how long the acceptance path gathers the workflow starts it records, so that
// busy clients cost the database one write per interval instead of one per order.
const startMarkDelay = 20 * time.Millisecond

// startMarks records, in batches, that the API has started orders' workflows
// (orders.workflow_started_at). The mark only tells the outbox Sweeper that a start is done: a
// mark that is late or lost (the process stops before it is written) makes the Sweeper start the
// order again after OUTBOX_START_AFTER, which Temporal rejects as a duplicate, and mark it then.
// So the acceptance path is one transaction and one workflow start per order, and the marks of
// all orders accepted within startMarkDelay are one UPDATE.
type startMarks struct {
	mu        sync.Mutex
	pending   []string
	scheduled bool
	flushing  sync.WaitGroup
}

// markStarted queues the mark of the order's workflow start; the first mark of an interval
// schedules the write of every mark queued in it.
func (e *Outbox) markStarted(orderID string) {
	m := &e.marks
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = append(m.pending, orderID)
	if m.scheduled {
		return
	}
	m.scheduled = true
	m.flushing.Add(1)
	time.AfterFunc(startMarkDelay, func() {
		defer m.flushing.Done()
		e.writeStartMarks()
	})
}

// writeStartMarks writes the queued marks in one UPDATE. A failure is logged: the Sweeper marks
// those orders when it finds them.
func (e *Outbox) writeStartMarks() {
	m := &e.marks
	m.mu.Lock()
	ids := m.pending
	m.pending, m.scheduled = nil, false
	m.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := e.store.MarkOrdersStarted(ctx, time.Now(), ids...)
	if err != nil {
		e.logger().Warn("order workflow starts not marked; the sweeper will mark them",
			zap.Int("orders", len(ids)), zap.Error(err))
	}
}

// FlushStartMarks writes the queued marks of workflow starts now and waits for any write in
// progress; a process calls it before it stops, so the Sweeper need not start those orders again.
func (e *Outbox) FlushStartMarks() {
	e.writeStartMarks()
	e.marks.flushing.Wait()
}
