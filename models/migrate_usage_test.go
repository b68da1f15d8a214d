package models_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// 0023's backfill notes how each run of the release entries written before it ended, from its
// job: the current run's status (failed, expired, cancelled), and failed for an earlier run that
// support re-ran; other entries keep their notes. The rows are written as before 0023 (release
// entries without a note), then the migration's UPDATE runs over them, as it did at the upgrade.
func TestMigrationNotesHowReleasedRunsEnded(t *testing.T) {
	t.Parallel()
	backfill := migrationStatement(t, "0023_usage.sql", "UPDATE credit_ledger")
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
		testdb.MustExec(t, db, "INSERT INTO accounts (id, name, created_at, updated_at) VALUES ('acc', 'Old', ?, ?)", t0, t0)
		testdb.MustExec(t, db, `INSERT INTO orders (id, account_id, api, job_type, session_config, status, jobs_total, created_at, updated_at)
				VALUES ('order-1', 'acc', 'external', 'photo_shoot', '{}', 'completed', 4, ?, ?)`, t0, t0)
		jobs := []struct {
			id, status string
			run        int
		}{{"job-failed", "failed", 1}, {"job-expired", "expired", 1}, {"job-cancelled", "cancelled", 1}, {"job-rerun", "completed", 2}}
		for i, j := range jobs {
			testdb.MustExec(t, db, `INSERT INTO jobs (id, order_id, account_id, job_type, position, ai_model, aspect_ratio, credit_cost, run, status, created_at, updated_at)
				VALUES (?, 'order-1', 'acc', 'photo_shoot', ?, 'local/studio-v1', '1:1', 1, ?, ?, ?, ?)`, j.id, i, j.run, j.status, t0, t0)
			testdb.MustExec(t, db, `INSERT INTO credit_ledger (id, account_id, order_id, job_id, run, kind, balance_delta, reserved_delta, note, created_at)
				VALUES (?, 'acc', 'order-1', ?, 1, 'release', 1, -1, '', ?)`, j.id+"-release", j.id, t0)
		}
		testdb.MustExec(t, db, `INSERT INTO credit_ledger (id, account_id, order_id, job_id, run, kind, balance_delta, reserved_delta, note, created_at)
				VALUES ('rerun-consume', 'acc', 'order-1', 'job-rerun', 2, 'consume', 0, -1, '', ?)`, t0)

		testdb.MustExec(t, db, backfill)
		want := map[string]string{"job-failed-release": "failed", "job-expired-release": "expired",
			"job-cancelled-release": "cancelled", "job-rerun-release": "failed", "rerun-consume": ""}
		var entries []models.LedgerEntry
		if err := db.Find(&entries).Error; err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(want) {
			t.Fatalf("%d entries", len(entries))
		}
		for _, e := range entries {
			if e.Note != want[e.ID] {
				t.Errorf("%s: note %q, want %q", e.ID, e.Note, want[e.ID])
			}
		}
	})
}
