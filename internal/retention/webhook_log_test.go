package retention_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/retention"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

const logPeriod = 30 * 24 * time.Hour

// logFixture is an account with one endpoint of its own, over a database.
type logFixture struct {
	t   *testing.T
	db  *gorm.DB
	acc *models.Account
	ep  models.WebhookEndpoint
	now time.Time
}

func newLogFixture(t *testing.T, db *gorm.DB) *logFixture {
	t.Helper()
	acc, err := models.CreateAccount(db, "acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	f := &logFixture{t: t, db: db, acc: acc, now: now}
	f.ep = models.WebhookEndpoint{ID: models.NewID(), AccountID: acc.ID, URL: "https://hooks.example/in",
		Events: models.StringList{"record.done"}, Status: models.EndpointEnabled, CreatedAt: now.Add(-3 * logPeriod), UpdatedAt: now}
	if err := db.Create(&f.ep).Error; err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *logFixture) purger() *retention.Purger {
	return &retention.Purger{Store: models.NewStore(f.db), Log: zap.NewNop(), Retention: 90 * 24 * time.Hour, WebhookLogRetention: logPeriod}
}

// event stores an event created age ago.
func (f *logFixture) event(age time.Duration) models.WebhookEvent {
	f.t.Helper()
	at := f.now.Add(-age)
	ev := models.WebhookEvent{ID: models.NewID(), AccountID: f.acc.ID, Type: "record.done", Payload: models.JSON(`{"event":"record.done"}`), CreatedAt: at}
	if err := f.db.Create(&ev).Error; err != nil {
		f.t.Fatal(err)
	}
	return ev
}

// delivery stores a delivery of ev in the status, created with its event, with attempts attempts;
// owed marks its start as owed (start_due_at).
func (f *logFixture) delivery(ev models.WebhookEvent, status string, attempts int, owed bool) models.WebhookDelivery {
	f.t.Helper()
	d := models.WebhookDelivery{ID: models.NewID(), EventID: ev.ID, EndpointID: &f.ep.ID, AccountID: f.acc.ID, Run: 1,
		Event: ev.Type, CallbackURL: f.ep.URL, Status: status, CreatedAt: ev.CreatedAt, UpdatedAt: ev.CreatedAt}
	if owed {
		due := f.now
		d.StartDueAt = &due
	}
	if err := f.db.Create(&d).Error; err != nil {
		f.t.Fatal(err)
	}
	for i := range attempts {
		code := 500
		a := models.WebhookAttempt{ID: models.NewID(), DeliveryID: d.ID, Attempt: i + 1, StartedAt: ev.CreatedAt.Add(time.Duration(i) * time.Minute),
			StatusCode: &code, CreatedAt: ev.CreatedAt}
		if err := f.db.Create(&a).Error; err != nil {
			f.t.Fatal(err)
		}
	}
	return d
}

func (f *logFixture) exists(model any, id string) bool {
	f.t.Helper()
	var n int64
	if err := f.db.Model(model).Where("id = ?", id).Count(&n).Error; err != nil {
		f.t.Fatal(err)
	}
	return n == 1
}

func (f *logFixture) attempts(deliveryID string) int64 {
	f.t.Helper()
	var n int64
	if err := f.db.Model(&models.WebhookAttempt{}).Where("delivery_id = ?", deliveryID).Count(&n).Error; err != nil {
		f.t.Fatal(err)
	}
	return n
}

func TestPurgeWebhookLogDeletesEndedDeliveriesAndTheirEvents(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newLogFixture(t, db)
		old := logPeriod + time.Hour

		delivered := f.event(old)
		dDelivered := f.delivery(delivered, models.WebhookDelivered, 2, false)
		failed := f.event(2 * logPeriod)
		dFailed := f.delivery(failed, models.WebhookFailed, 8, false)
		held := f.event(old)
		dHeld := f.delivery(held, models.WebhookHeld, 0, false)
		unsubscribed := f.event(old) // no endpoint subscribed: an event without deliveries

		pending := f.event(old)
		dPending := f.delivery(pending, models.WebhookPending, 0, false)
		delivering := f.event(old)
		dDelivering := f.delivery(delivering, models.WebhookDelivering, 3, false)
		owed := f.event(old) // recovered: its start is owed, its status not yet pending
		dOwed := f.delivery(owed, models.WebhookFailed, 8, true)
		young := f.event(logPeriod - time.Hour)
		dYoung := f.delivery(young, models.WebhookDelivered, 1, false)
		youngAlone := f.event(logPeriod - time.Hour)
		// An event with one ended delivery and one its workflow still attempts: the ended one goes,
		// the event stays with the other.
		mixed := f.event(old)
		dMixedDone := f.delivery(mixed, models.WebhookDelivered, 1, false)
		other := models.WebhookEndpoint{ID: models.NewID(), AccountID: f.acc.ID, URL: "https://other.example/in",
			Events: models.StringList{"record.done"}, Status: models.EndpointEnabled, CreatedAt: f.now, UpdatedAt: f.now}
		if err := db.Create(&other).Error; err != nil {
			t.Fatal(err)
		}
		dMixedLive := models.WebhookDelivery{ID: models.NewID(), EventID: mixed.ID, EndpointID: &other.ID, AccountID: f.acc.ID, Run: 1,
			Event: mixed.Type, CallbackURL: other.URL, Status: models.WebhookDelivering, CreatedAt: mixed.CreatedAt, UpdatedAt: mixed.CreatedAt}
		if err := db.Create(&dMixedLive).Error; err != nil {
			t.Fatal(err)
		}

		p := f.purger()
		p.Metrics = metrics.New()
		defer p.Metrics.Close()
		got, err := p.PurgeWebhookLog(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := (models.PurgedWebhookLog{Deliveries: 4, Attempts: 11, Events: 4}); got != want {
			t.Errorf("PurgeWebhookLog = %+v, want %+v", got, want)
		}
		for _, d := range []models.WebhookDelivery{dDelivered, dFailed, dHeld, dMixedDone} {
			if f.exists(&models.WebhookDelivery{}, d.ID) || f.attempts(d.ID) != 0 {
				t.Errorf("ended %s delivery past retention: still there (or its attempts are)", d.Status)
			}
		}
		for _, ev := range []models.WebhookEvent{delivered, failed, held, unsubscribed} {
			if f.exists(&models.WebhookEvent{}, ev.ID) {
				t.Errorf("event %s past retention without deliveries left was kept", ev.ID)
			}
		}
		for why, d := range map[string]models.WebhookDelivery{"pending": dPending, "delivering": dDelivering,
			"owed a start": dOwed, "within retention": dYoung, "of another endpoint, delivering": dMixedLive} {
			if !f.exists(&models.WebhookDelivery{}, d.ID) {
				t.Errorf("delivery %s was deleted", why)
			}
		}
		if f.attempts(dDelivering.ID) != 3 || f.attempts(dOwed.ID) != 8 || f.attempts(dYoung.ID) != 1 {
			t.Error("the attempts of a kept delivery were deleted")
		}
		for why, ev := range map[string]models.WebhookEvent{"with a pending delivery": pending, "with a delivering one": delivering,
			"with one owed a start": owed, "within retention": young, "within retention, without deliveries": youngAlone,
			"with one delivery left": mixed} {
			if !f.exists(&models.WebhookEvent{}, ev.ID) {
				t.Errorf("event %s was deleted", why)
			}
		}

		scrape := metricstest.Serve(t, p.Metrics.WorkerHandler())
		for kind, want := range map[string]float64{metrics.RetentionDelivery: 4, metrics.RetentionAttempt: 11, metrics.RetentionEvent: 4} {
			if v := scrape.Value(metrics.RetentionWebhookDeleted, map[string]string{"kind": kind}); v != want {
				t.Errorf("%s{kind=%q} = %v, want %v", metrics.RetentionWebhookDeleted, kind, v, want)
			}
		}

		// A second sweep finds nothing more; once the last delivery of an event ends and ages out,
		// the event goes with it.
		if again, err := p.PurgeWebhookLog(context.Background()); err != nil || again != (models.PurgedWebhookLog{}) {
			t.Fatalf("second PurgeWebhookLog = %+v, %v; want nothing deleted", again, err)
		}
		if err := db.Model(&models.WebhookDelivery{}).Where("id = ?", dMixedLive.ID).Update("status", models.WebhookFailed).Error; err != nil {
			t.Fatal(err)
		}
		if n, err := p.PurgeWebhookLog(context.Background()); err != nil || n != (models.PurgedWebhookLog{Deliveries: 1, Events: 1}) {
			t.Fatalf("PurgeWebhookLog after the last delivery ended = %+v, %v; want 1 delivery and its event", n, err)
		}
		if f.exists(&models.WebhookEvent{}, mixed.ID) {
			t.Error("the event whose last delivery was deleted is still there")
		}
	})
}

// Batches of one transaction each work through a backlog larger than a batch.
func TestPurgeWebhookLogWorksThroughEveryBatch(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newLogFixture(t, db)
		var deliveries []models.WebhookDelivery
		for i := range 7 {
			ev := f.event(logPeriod + time.Duration(i+1)*time.Hour)
			if i%3 == 0 {
				f.delivery(ev, models.WebhookPending, 0, false) // kept, in the middle of the backlog
				continue
			}
			deliveries = append(deliveries, f.delivery(ev, models.WebhookDelivered, 1, false))
		}
		for range 3 {
			f.event(logPeriod + time.Hour) // events without deliveries
		}
		p := f.purger()
		p.BatchSize = 2
		got, err := p.PurgeWebhookLog(context.Background())
		if want := (models.PurgedWebhookLog{Deliveries: 4, Attempts: 4, Events: 7}); err != nil || got != want {
			t.Fatalf("PurgeWebhookLog in batches of 2 = %+v, %v; want %+v", got, err, want)
		}
		for _, d := range deliveries {
			if f.exists(&models.WebhookDelivery{}, d.ID) {
				t.Errorf("delivery %s of a later batch was kept", d.ID)
			}
		}
		var left int64
		if err := db.Model(&models.WebhookEvent{}).Count(&left).Error; err != nil || left != 3 {
			t.Errorf("%d events left (%v), want the 3 with a pending delivery", left, err)
		}
	})
}

func TestPurgeWebhookLogNeedsAPeriod(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newLogFixture(t, db)
		ev := f.event(2 * logPeriod)
		p := f.purger()
		p.WebhookLogRetention = 0
		if _, err := p.PurgeWebhookLog(context.Background()); err == nil {
			t.Fatal("PurgeWebhookLog without a period: no error")
		}
		if !f.exists(&models.WebhookEvent{}, ev.ID) {
			t.Fatal("PurgeWebhookLog without a period deleted an event")
		}
	})
}

// Run sweeps the webhook log with the files, at once.
func TestRunSweepsTheWebhookLog(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newLogFixture(t, db)
		blobs := newFixture(t, db).blobs
		ev := f.event(2 * logPeriod)
		d := f.delivery(ev, models.WebhookFailed, 2, false)
		p := f.purger()
		p.Blobs = blobs
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.Run(ctx, time.Hour)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for f.exists(&models.WebhookEvent{}, ev.ID) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		<-done
		if f.exists(&models.WebhookEvent{}, ev.ID) || f.exists(&models.WebhookDelivery{}, d.ID) {
			t.Fatal("Run did not delete the webhook log past retention")
		}
	})
}
