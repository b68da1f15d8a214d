package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Feed is the change feed of orders: it holds requests until an order changes (`Prefer: wait`,
// the event streams of GET /orders/{id}/events) and reads an order's events.
//
// Every change of a job and the end of its order is numbered per order in the database (the
// triggers of migration 0020 raise orders.event_seq and write order_events), whichever worker
// made it. A request that waits tells the feed the number it has seen; one goroutine per API
// process, running only while some request waits, reads the numbers of every order waited on in
// one query per FeedPollInterval and wakes the requests whose order has moved on. A waiting
// request holds no database connection and no goroutine of its own: only its channel in the
// feed's map.
type Feed struct {
	*core
	mu      sync.Mutex
	waiters map[string]map[*feedWaiter]struct{} // by order ID
	polling bool
	// failing is set while polls fail, so that an outage is logged once, not every interval.
	failing bool
	// stopping is closed by Stop: the process is stopping, and waits end at once.
	stopOnce sync.Once
	stopping chan struct{}
}

// feedWaiter is one waiting request: it has seen the order's events up to seen, and its channel
// (capacity 1) receives when there are more.
type feedWaiter struct {
	seen int64
	ch   chan struct{}
}

// DefaultFeedPollInterval is how often a process reads the event numbers of the orders its
// requests wait on, when Config.FeedPollInterval is zero.
const DefaultFeedPollInterval = 100 * time.Millisecond

// feedPollTimeout bounds one poll's query.
const feedPollTimeout = 5 * time.Second

// Wait returns true once the order has an event numbered above seen, and false when ctx ends
// first or the process stops. It does not check that the order exists or whose it is: the caller
// has read it.
func (f *Feed) Wait(ctx context.Context, orderID string, seen int64) bool {
	w := &feedWaiter{seen: seen, ch: make(chan struct{}, 1)}
	stopping := f.add(orderID, w)
	defer f.remove(orderID, w)
	select {
	case <-w.ch:
		return true
	case <-ctx.Done():
		return false
	case <-stopping:
		return false
	}
}

// Stop ends every wait, now and later: the process is stopping, so held requests answer the
// state of now and event streams tell their clients to reconnect (to another process).
func (f *Feed) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopOnce.Do(func() {
		if f.stopping == nil {
			f.stopping = make(chan struct{})
		}
		close(f.stopping)
	})
}

// Stopping is closed once Stop was called.
func (f *Feed) Stopping() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping == nil {
		f.stopping = make(chan struct{})
	}
	return f.stopping
}

// Waiting is how many requests wait in this process (a test's and a metric's view).
func (f *Feed) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, ws := range f.waiters {
		n += len(ws)
	}
	return n
}

// add registers w and returns the channel Stop closes.
func (f *Feed) add(orderID string, w *feedWaiter) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping == nil {
		f.stopping = make(chan struct{})
	}
	if f.waiters == nil {
		f.waiters = map[string]map[*feedWaiter]struct{}{}
	}
	ws := f.waiters[orderID]
	if ws == nil {
		ws = map[*feedWaiter]struct{}{}
		f.waiters[orderID] = ws
	}
	ws[w] = struct{}{}
	if !f.polling {
		f.polling = true
		go f.poll()
	}
	return f.stopping
}

func (f *Feed) remove(orderID string, w *feedWaiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ws := f.waiters[orderID]
	delete(ws, w)
	if len(ws) == 0 {
		delete(f.waiters, orderID)
	}
}

// poll reads the event numbers of the orders waited on every interval, and wakes the waiters
// whose order has moved on; it returns once nobody waits (the next Wait starts it again).
func (f *Feed) poll() {
	interval := f.cfg.FeedPollInterval
	if interval <= 0 {
		interval = DefaultFeedPollInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for range t.C {
		ids := f.watched()
		if ids == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), feedPollTimeout)
		seqs, err := f.store.OrderEventSeqs(ctx, ids)
		cancel()
		if f.logPoll(err) {
			continue
		}
		f.wake(seqs)
	}
}

// watched returns the orders waited on, or nil (and stops the poller) when there are none.
func (f *Feed) watched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.waiters) == 0 {
		f.polling = false
		return nil
	}
	ids := make([]string, 0, len(f.waiters))
	for id := range f.waiters {
		ids = append(ids, id)
	}
	return ids
}

// wake signals every waiter whose order's number passed what it has seen.
func (f *Feed) wake(seqs map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, seq := range seqs {
		for w := range f.waiters[id] {
			if seq > w.seen {
				w.seen = seq
				select {
				case w.ch <- struct{}{}:
				default:
				}
			}
		}
	}
}

// logPoll logs a failed poll once per outage (the waiters keep waiting: their deadlines end them)
// and reports whether the poll failed.
func (f *Feed) logPoll(err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil && !f.failing:
		f.failing = true
		f.cfg.Log.Warn("order feed: reading the orders waited on failed; waiting requests learn of changes once it answers", zap.Error(err))
	case err == nil && f.failing:
		f.failing = false
		f.cfg.Log.Info("order feed: reading the orders waited on works again")
	}
	return err != nil
}

// OrderScope names whose order a feed request reads: an installation's (the plugin API) or an
// account's (the external API, InstallationID empty).
type OrderScope struct{ AccountID, InstallationID string }

// order reads the scope's order; KindNotFound for another tenant's.
func (s OrderScope) order(ctx context.Context, store *models.Store, orderID string) (*models.Order, error) {
	if s.InstallationID != "" {
		return installationOrder(ctx, store, s.InstallationID, orderID)
	}
	o, err := store.AccountOrder(ctx, s.AccountID, orderID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, refuse(KindNotFound, "", "", "No order with this ID.")
	}
	return o, err
}

// OrderEvent is one event of an order's stream: Seq is its id, Type its name, and Job the job it
// is about as the job is now, with its output files (nil for order.completed, and for a job the
// order no longer has).
type OrderEvent struct {
	Seq  int64
	Type string
	Job  *Job
	// Record is the job's record as the external lists show it, for an account's order (the
	// external API's scope); nil otherwise.
	Record *RecordItem
}

// RecordItem is a record of the external API as its lists show it, with its kind (the record.*
// webhooks carry the same).
type RecordItem = webhooks.RecordItem

// OrderEventPage is a page of an order's events: Order is the order as it was read before them
// (Order.EventSeq is the number of its latest event, Ended whether it has ended), Events its
// events after the asked number, at most the asked count.
type OrderEventPage struct {
	Order  Order
	Ended  bool
	Events []OrderEvent
}

// OrderEvents returns the events of the scope's order numbered after `after`, at most limit of
// them, each job with its current state and files; KindNotFound for another tenant's order.
func (f *Feed) OrderEvents(ctx context.Context, scope OrderScope, orderID string, after int64, limit int) (OrderEventPage, error) {
	o, err := scope.order(ctx, f.store, orderID)
	if err != nil {
		return OrderEventPage{}, err
	}
	page := OrderEventPage{Order: orderOf(o), Ended: o.Status != status.OrderInProgress}
	if after >= o.EventSeq {
		return page, nil
	}
	events, err := f.store.OrderEventsAfter(ctx, o.ID, after, o.EventSeq, limit)
	if err != nil {
		return page, err
	}
	if page.Ended && len(events) < limit && (len(events) == 0 || events[len(events)-1].Seq < o.EventSeq) {
		// The retention sweep deleted the ended order's log (or its tail): the stream answers its
		// end, numbered as its latest event, so that a client stops there as after any end.
		events = append(events, models.OrderEvent{OrderID: o.ID, Seq: o.EventSeq, Type: models.OrderEventOrderCompleted})
	}
	if len(events) == 0 {
		return page, nil
	}
	var ids []string
	for _, e := range events {
		if e.JobID != nil {
			ids = append(ids, *e.JobID)
		}
	}
	jobs := map[string]*models.Job{}
	outs := map[string][]models.Asset{}
	if len(ids) > 0 {
		if jobs, err = f.store.OrderJobsByID(ctx, o.ID, ids); err != nil {
			return page, err
		}
		if outs, err = f.store.JobOutputs(ctx, ids...); err != nil {
			return page, err
		}
	}
	records, err := f.recordsOf(ctx, scope, jobs, outs)
	if err != nil {
		return page, err
	}
	page.Events = make([]OrderEvent, 0, len(events))
	for _, e := range events {
		ev := OrderEvent{Seq: e.Seq, Type: e.Type}
		if e.JobID != nil {
			if j, ok := jobs[*e.JobID]; ok { // always, as jobs are never deleted
				view := jobOf(j, outs[j.ID])
				ev.Job = &view
				ev.Record = records[j.ID]
			}
		}
		page.Events = append(page.Events, ev)
	}
	return page, nil
}

// recordsOf renders the jobs' records as the external lists show them, for an account's scope
// (none for an installation's): their names read as the lists read them, in one query;
// thumbnails are signed for DownloadTTL.
func (f *Feed) recordsOf(ctx context.Context, scope OrderScope, jobs map[string]*models.Job, outs map[string][]models.Asset) (map[string]*RecordItem, error) {
	if scope.InstallationID != "" || len(jobs) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(jobs))
	for id := range jobs {
		ids = append(ids, id)
	}
	names, err := f.store.RecordNamesOfJobs(ctx, ids)
	if err != nil {
		return nil, err
	}
	expires := time.Now().Add(f.cfg.DownloadTTL).UTC()
	out := make(map[string]*RecordItem, len(jobs))
	for id, j := range jobs {
		rec := webhooks.RecordItemOf(j, names[id], outs[id], f.fileURLs(), expires)
		out[id] = &rec
	}
	return out, nil
}

// Order returns the scope's order as it is now (Order.EventSeq numbers its latest event);
// KindNotFound for another tenant's order.
func (f *Feed) Order(ctx context.Context, scope OrderScope, orderID string) (Order, error) {
	o, err := scope.order(ctx, f.store, orderID)
	if err != nil {
		return Order{}, err
	}
	return orderOf(o), nil
}
