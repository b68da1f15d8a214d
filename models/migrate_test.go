package models_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/pressly/goose/v3/database"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// Several processes migrating one PostgreSQL database at once (each with its own connection pool,
// as `shotflow migrate` run from several places) all succeed, and every migration runs once: they
// take turns on goose's session lock. The same holds for a database the hand-written runner left
// at the version before the newest, whose versions are adopted once.
func TestMigrateConcurrentlyOnPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("several processes migrating at once; skipped by -short")
	}
	latest := models.LatestVersion()
	for _, c := range []struct {
		name         string
		versionTable bool // goose's version table exists, nothing applied
		legacyAt     int  // the hand-written runner migrated the database to this version
		wantFirst    int  // the first version the processes apply between them
	}{
		{name: "fresh", wantFirst: 1},
		// Creating the version table, goose retries a second later in the processes that lost
		// the race, which staggers them; with the table there, they reach the migrations together.
		{name: "version table", versionTable: true, wantFirst: 1},
		{name: "hand-written runner's", legacyAt: handWrittenRunnerLast, wantFirst: handWrittenRunnerLast + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dbs := openHandles(t, testdb.PostgresURL(t), 4)
			if c.versionTable {
				store, err := database.NewStore(database.DialectPostgres, models.VersionTable)
				if err != nil {
					t.Fatal(err)
				}
				sqlDB, _ := dbs[0].DB()
				if err := store.CreateVersionTable(t.Context(), sqlDB); err != nil {
					t.Fatal(err)
				}
				if err := store.Insert(t.Context(), sqlDB, database.InsertRequest{Version: 0}); err != nil {
					t.Fatal(err)
				}
			}
			if c.legacyAt > 0 {
				legacyMigrate(t, dbs[0], c.legacyAt)
			}
			all, errs := migrateAtOnce(t, dbs)
			for i, err := range errs {
				if err != nil {
					t.Errorf("process %d: %v", i, err)
				}
			}
			var want []int
			for v := c.wantFirst; v <= latest; v++ {
				want = append(want, v)
			}
			if !slices.Equal(all, want) {
				t.Errorf("the processes applied %v between them, want %v: each pending migration once", all, want)
			}
			var twice []int
			if err := dbs[0].Raw("SELECT version_id FROM " + models.VersionTable + " GROUP BY version_id HAVING COUNT(*) > 1").Scan(&twice).Error; err != nil {
				t.Fatal(err)
			}
			var rows int64
			dbs[0].Table(models.VersionTable).Count(&rows)
			if len(twice) > 0 || rows != int64(latest)+1 {
				t.Errorf("%s has %d rows, versions recorded twice: %v; want versions 0..%d once each", models.VersionTable, rows, twice, latest)
			}
			if err := models.CheckSchema(dbs[0]); err != nil {
				t.Errorf("CheckSchema after the concurrent migrations: %v", err)
			}
		})
	}
}

// Every index on jobs costs each job's INSERT and each change of its status. 0012 dropped the one
// no query read (account_id, status); the account's jobs are read by type.
func TestJobsCarryNoIndexThatNoQueryReads(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		m := db.Migrator()
		if m.HasIndex(&models.Job{}, "jobs_account_status") {
			t.Error("jobs_account_status is back: which query reads it?")
		}
		for _, name := range []string{"jobs_account_type", "jobs_status_updated", "jobs_installation_created", "jobs_order", "jobs_open_updated", "jobs_pending_start_deadline"} {
			if !m.HasIndex(&models.Job{}, name) {
				t.Errorf("index %s is missing", name)
			}
		}
	})
}

// openHandles opens n handles on the database at url, each with its own connection pool, as n
// processes would.
func openHandles(t *testing.T, url string, n int) []*gorm.DB {
	t.Helper()
	dbs := make([]*gorm.DB, n)
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
	return dbs
}

// migrateAtOnce runs Migrate on every handle at the same moment and returns the versions they
// applied between them, sorted, and each handle's error.
func migrateAtOnce(t *testing.T, dbs []*gorm.DB) ([]int, []error) {
	t.Helper()
	applied := make([][]int, len(dbs))
	errs := make([]error, len(dbs))
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
		all = append(all, applied[i]...)
	}
	slices.Sort(all)
	return all, errs
}

// unmigratedDialects runs fn on a new, unmigrated database of each dialect, in parallel.
func unmigratedDialects(t *testing.T, fn func(t *testing.T, db *gorm.DB)) {
	for _, d := range []struct {
		name string
		url  func(testing.TB) string
	}{{"postgres", testdb.PostgresURL}, {"sqlite", testdb.SQLiteURL}} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(t, openHandles(t, d.url(t), 1)[0])
		})
	}
}
