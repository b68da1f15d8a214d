package retention_test

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/retention"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// endedOrder writes an order of one job whose changes the triggers of migration 0020 number (the
// job starts and completes), ended endedAgo ago when ended, else left in progress; it returns the
// order's ID.
func endedOrder(t *testing.T, db *gorm.DB, accountID string, ended bool, endedAgo time.Duration) string {
	t.Helper()
	now := time.Now().UTC()
	order := models.Order{ID: models.NewID(), AccountID: accountID, API: models.APIExternal, JobType: jobtype.PhotoShoot,
		SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now}
	job := models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: accountID, JobType: jobtype.PhotoShoot, ProductRef: "p",
		AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: status.JobPending, Voting: models.VotingPending,
		CreatedAt: now, UpdatedAt: now}
	for _, err := range []error{
		db.Create(&order).Error, db.Create(&job).Error,
		db.Model(&job).Updates(map[string]any{"status": status.JobInProgress, "attempt_count": 1, "started_at": now}).Error,
		db.Model(&job).Updates(map[string]any{"status": status.JobCompleted, "completed_at": now}).Error,
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if ended {
		at := now.Add(-endedAgo)
		if err := db.Model(&order).Updates(map[string]any{"status": status.OrderCompleted, "jobs_completed": 1, "completed_at": at}).Error; err != nil {
			t.Fatal(err)
		}
	}
	return order.ID
}

func eventsOf(t *testing.T, db *gorm.DB, orderID string) int64 {
	t.Helper()
	var n int64
	if err := db.Model(&models.OrderEvent{}).Where("order_id = ?", orderID).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// The sweep deletes the change feed of orders that ended before ORDER_EVENTS_RETENTION, in batches,
// and keeps that of orders ended since and of orders in progress, however old.
func TestPurgeOrderEventsOfOrdersEndedBeforeTheRetention(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		acc, err := models.CreateAccount(db, "acme", 0)
		if err != nil {
			t.Fatal(err)
		}
		const period = 30 * 24 * time.Hour
		old1 := endedOrder(t, db, acc.ID, true, period+time.Hour)
		old2 := endedOrder(t, db, acc.ID, true, period+2*time.Hour)
		recent := endedOrder(t, db, acc.ID, true, period-time.Hour)
		running := endedOrder(t, db, acc.ID, false, 0)
		for _, id := range []string{old1, old2, recent} {
			if n := eventsOf(t, db, id); n != 3 { // job.started, job.completed, order.completed
				t.Fatalf("order %s has %d events before the sweep, want 3", id, n)
			}
		}
		p := &retention.Purger{Store: models.NewStore(db), Log: zap.NewNop(), Retention: 90 * 24 * time.Hour,
			OrderEventsRetention: period, BatchSize: 2}
		n, err := p.PurgeOrderEvents(t.Context())
		if err != nil || n != 6 {
			t.Fatalf("PurgeOrderEvents = %d, %v; want the 6 rows of the two old orders", n, err)
		}
		for id, want := range map[string]int64{old1: 0, old2: 0, recent: 3, running: 2} {
			if got := eventsOf(t, db, id); got != want {
				t.Errorf("order %s keeps %d events, want %d", id, got, want)
			}
		}
		if n, err := p.PurgeOrderEvents(t.Context()); err != nil || n != 0 {
			t.Fatalf("a second sweep = %d, %v", n, err)
		}
	})
}
