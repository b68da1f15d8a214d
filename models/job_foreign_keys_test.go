package models_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// A job belongs to its order's account: a job whose account differs from its order's is refused
// by the database (jobs (order_id, account_id) references orders (id, account_id), 0014), on both
// dialects; a job of its order's account goes in.
func TestJobOfAnotherAccountThanItsOrderIsRefused(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		mine, err := models.CreateAccount(db, "mine", 100)
		require.NoError(t, err)
		theirs, err := models.CreateAccount(db, "theirs", 100)
		require.NoError(t, err)
		order, jobs := orderOf(mine.ID, 1, 4, time.Now().UTC())
		require.NoError(t, models.PlaceOrder(db, order, jobs, nil))

		_, more := orderOf(mine.ID, 2, 4, time.Now().UTC())
		for i := range more {
			more[i].OrderID, more[i].Position = order.ID, i+1
		}
		more[1].AccountID = theirs.ID
		require.Error(t, db.Create(&more[1]).Error, "a job of another account than its order's")
		require.NoError(t, db.Create(&more[0]).Error, "a job of its order's account")

		var foreign int64
		require.NoError(t, db.Model(&models.Job{}).Where("account_id = ?", theirs.ID).Count(&foreign).Error)
		require.Zero(t, foreign)
	})
}

// Inserting a plugin session's five jobs checks one foreign key of each job for its order and its
// account together, and its product's: 10 checks, where the separate keys of its order, account
// and installation made 20 (issue 23, item 20; docs/benchmarks.md).
func TestJobInsertChecksItsOrderOnce(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	f := newCatalogFixture(t, db)
	product := f.product(f.inst, "mug", f.base)
	order, jobs := orderOf(f.inst.AccountID, 5, 0, time.Now().UTC())
	order.InstallationID = &f.inst.ID
	require.NoError(t, models.PlaceOrder(db, order, nil, nil))
	for i := range jobs {
		jobs[i].OrderID, jobs[i].InstallationID, jobs[i].ProductID = order.ID, &f.inst.ID, &product.ID
	}
	insert := db.Session(&gorm.Session{DryRun: true}).Create(&jobs).Statement
	require.NoError(t, insert.Error)

	sqlDB, err := db.DB()
	require.NoError(t, err)
	ctx := context.Background()
	tx, err := sqlDB.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback() //nolint:errcheck // the plan is all the test wants
	rows, err := tx.QueryContext(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+insert.SQL.String(), insert.Vars...)
	require.NoError(t, err)
	defer rows.Close()
	trigger := regexp.MustCompile(`^Trigger for constraint (\S+): calls=(\d+)`)
	var checks []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		if m := trigger.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			checks = append(checks, m[1]+"="+m[2])
		}
	}
	require.NoError(t, rows.Err())
	slices.Sort(checks)
	require.Equal(t, []string{"jobs_order_account_fkey=5", "jobs_product_id_fkey=5"}, checks)
}

// 0014 rebuilds SQLite's jobs table: a database with jobs, and rows of other tables that
// reference them, keeps them all, on both dialects.
func TestMigration0014KeepsTheJobsAndWhatReferencesThem(t *testing.T) {
	t.Parallel()
	unmigratedDialects(t, func(t *testing.T, db *gorm.DB) {
		legacyMigrate(t, db, 13)
		now := time.Now().UTC()
		testdb.MustExec(t, db, "INSERT INTO accounts (id, name, created_at, updated_at) VALUES ('acc-1', 'Before 0014', ?, ?)", now, now)
		testdb.MustExec(t, db, `INSERT INTO orders (id, account_id, api, job_type, session_config, status, jobs_total, created_at, updated_at)
				VALUES ('order-1', 'acc-1', 'external', 'photo_shoot', '{}', 'in_progress', 1, ?, ?)`, now, now)
		testdb.MustExec(t, db, `INSERT INTO jobs (id, order_id, account_id, job_type, position, ai_model, aspect_ratio, credit_cost, status, prompt, created_at, updated_at)
				VALUES ('job-1', 'order-1', 'acc-1', 'photo_shoot', 0, 'local/studio-v1', '1:1', 4, 'failed', 'warm', ?, ?)`, now, now)
		testdb.MustExec(t, db, `INSERT INTO job_retries (id, job_id, order_id, account_id, from_run, to_run, actor, created_at)
				VALUES ('retry-1', 'job-1', 'order-1', 'acc-1', 1, 2, 'support', ?)`, now)

		_, err := models.Migrate(t.Context(), db)
		require.NoError(t, err)
		job, err := models.GetJob(db, "job-1")
		require.NoError(t, err)
		require.Equal(t, "order-1", job.OrderID)
		require.Equal(t, "warm", job.Prompt)
		require.EqualValues(t, 4, job.CreditCost)
		require.WithinDuration(t, now, job.CreatedAt, time.Millisecond)
		var retries int64
		require.NoError(t, db.Table("job_retries").Where("job_id = ?", "job-1").Count(&retries).Error)
		require.EqualValues(t, 1, retries)
		// The references to jobs still hold.
		require.Error(t, db.Exec(`INSERT INTO job_retries (id, job_id, order_id, account_id, from_run, to_run, actor, created_at)
				VALUES ('retry-2', 'no-such-job', 'order-1', 'acc-1', 1, 2, 'support', ?)`, now).Error)
	})
}
