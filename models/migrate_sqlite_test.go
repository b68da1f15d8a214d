package models_test

import (
	"slices"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// TestMigrateConcurrentlyOnSQLite: several processes (here handles, each with its own connection
// pool, as separate processes have) that migrate one fresh embedded database at once apply each
// migration once between them, and none fails: goose's session lock is PostgreSQL's advisory lock,
// so SQLite takes a lock file beside the database instead.
func TestMigrateConcurrentlyOnSQLite(t *testing.T) {
	t.Parallel()
	url := testdb.SQLiteURL(t)
	const processes = 4
	dbs := make([]*gorm.DB, processes)
	for i := range dbs {
		db, err := models.Open(url, models.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if sqlDB, err := db.DB(); err == nil {
				sqlDB.Close()
			}
		})
		dbs[i] = db
	}
	applied := make([][]int, processes)
	errs := make([]error, processes)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range dbs {
		wg.Go(func() {
			<-start
			applied[i], errs[i] = models.Migrate(t.Context(), dbs[i])
		})
	}
	close(start)
	wg.Wait()
	var all []int
	for i := range dbs {
		if errs[i] != nil {
			t.Errorf("process %d: %v", i, errs[i])
		}
		all = append(all, applied[i]...)
	}
	slices.Sort(all)
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
