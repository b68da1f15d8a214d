package models_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// 0028's backfill marks the deliveries recorded before it for a test twin's account (an
// installation's twin sits on one) test mode, and leaves a live account's live. The rows are
// written as before 0028 (every delivery test_mode FALSE, the column's default), then the
// migration's UPDATE runs over them, as it did at the upgrade.
func TestMigrationMarksTheDeliveriesOfTestTwins(t *testing.T) {
	t.Parallel()
	backfill := migrationStatement(t, "0028_webhook_delivery_test_mode.sql", "UPDATE webhook_deliveries")
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
		for _, acc := range []struct {
			id   string
			test bool
		}{{"live", false}, {"twin", true}} {
			testdb.MustExec(t, db, "INSERT INTO accounts (id, name, test_mode, created_at, updated_at) VALUES (?, 'Acme', ?, ?, ?)", acc.id, acc.test, t0, t0)
			testdb.MustExec(t, db, `INSERT INTO webhook_deliveries (id, event_id, account_id, run, event, callback_url, status, attempts, created_at, updated_at)
				VALUES (?, ?, ?, 0, 'webhook.test', 'https://hooks.example', 'delivered', 1, ?, ?)`, "dlv-"+acc.id, "ev-"+acc.id, acc.id, t0, t0)
		}

		testdb.MustExec(t, db, backfill)
		for id, want := range map[string]bool{"dlv-live": false, "dlv-twin": true} {
			d, err := models.GetWebhookDelivery(db, id)
			if err != nil {
				t.Fatal(err)
			}
			if d.TestMode != want {
				t.Errorf("%s: test_mode %v, want %v", id, d.TestMode, want)
			}
		}
	})
}
