package models_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// indexesOf0031 are the indexes migration 0031 builds.
var indexesOf0031 = []string{"fashion_models_account_approved_page", "sceneries_account_approved_page",
	"packshots_account_approved_page", "jobs_account_shoots_approved_page", "jobs_packshot_shoots"}

// Migration 0031 builds its indexes CONCURRENTLY on PostgreSQL, outside a transaction: while it
// builds them (here, while it waits for a transaction that wrote a job and has not ended), the
// tables take writes, where a plain CREATE INDEX in the migration's transaction queued every write
// to jobs behind it until the build was done. The indexes come out valid, one left invalid by an
// earlier build replaced, and the version recorded.
func TestMigration0031BuildsItsIndexesWhileTheTablesTakeWrites(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	ctx := context.Background()
	for _, index := range indexesOf0031 {
		testdb.MustExec(t, db, "DROP INDEX "+index)
	}
	testdb.MustExec(t, db, "DELETE FROM "+models.VersionTable+" WHERE version_id = 31")
	// What a build killed midway leaves: an invalid index under one of the names, which the
	// migration replaces.
	testdb.MustExec(t, db, "CREATE INDEX jobs_packshot_shoots ON jobs (id)")
	testdb.MustExec(t, db, "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'jobs_packshot_shoots'::regclass")
	f := newCandidateFixture(t, db)

	// A transaction that wrote a job and has not ended: every index build waits for it.
	open := db.Begin()
	defer open.Rollback()
	f.job(t, open, jobtype.Packshot, true)

	migrated := make(chan error, 1)
	go func() {
		_, err := models.Migrate(ctx, db)
		migrated <- err
	}()
	waitForLockWait(t, db)

	// Meanwhile another job is written and committed, within 3 s.
	write := db.Begin()
	defer write.Rollback()
	testdb.MustExec(t, write, "SET LOCAL lock_timeout = '3s'")
	now := time.Now().UTC()
	j := models.Job{ID: models.NewID(), OrderID: f.order.ID, AccountID: f.acc.ID, InstallationID: &f.inst.ID,
		JobType: jobtype.PhotoShoot, ProductRef: "mug", AIModel: "local/studio-v1", AspectRatio: "1:1", Run: 1,
		Status: status.JobPending, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
	if err := write.Create(&j).Error; err != nil {
		t.Errorf("a job written while 0031 builds its indexes: %v", err)
	} else if err := write.Commit().Error; err != nil {
		t.Errorf("commit a job written while 0031 builds its indexes: %v", err)
	}

	if err := open.Commit().Error; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-migrated:
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the migration did not end after the open transaction did")
	}
	var valid int64
	if err := db.Raw(`SELECT COUNT(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname IN ? AND i.indisvalid AND i.indisready`, indexesOf0031).Scan(&valid).Error; err != nil {
		t.Fatal(err)
	}
	if valid != int64(len(indexesOf0031)) {
		t.Errorf("%d of 0031's %d indexes are valid", valid, len(indexesOf0031))
	}
	var def string
	if err := db.Raw("SELECT indexdef FROM pg_indexes WHERE indexname = 'jobs_packshot_shoots'").Scan(&def).Error; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "packshot_id") {
		t.Errorf("the index an earlier build left is still there: %s", def)
	}
	if err := models.CheckSchema(db); err != nil {
		t.Errorf("after 0031: %v", err)
	}
}
