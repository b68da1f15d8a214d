package models_test

import (
	"slices"
	"testing"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// TestMigrateConcurrentlyOnSQLite: several processes (here handles, each with its own connection
// pool, as separate processes have) that migrate one fresh embedded database at once apply each
// migration once between them, and none fails: goose's session lock is PostgreSQL's advisory lock,
// so SQLite takes a lock file beside the database instead.
func TestMigrateConcurrentlyOnSQLite(t *testing.T) {
	t.Parallel()
	dbs := openHandles(t, testdb.SQLiteURL(t), 4)
	all, errs := migrateAtOnce(t, dbs)
	for i, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
	var want []int
	for v := 1; v <= models.LatestVersion(); v++ {
		want = append(want, v)
	}
	if !slices.Equal(all, want) {
		t.Errorf("the processes applied %v between them, want %v: each migration once", all, want)
	}
	if err := models.CheckSchema(dbs[0]); err != nil {
		t.Errorf("CheckSchema after the concurrent migrations: %v", err)
	}
}
