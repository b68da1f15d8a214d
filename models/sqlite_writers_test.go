package models_test

import (
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
)

// Two processes on the embedded database (the service and `shotflow admin`, each with its own
// connection) run transactions that read and then write. Under WAL a deferred transaction whose
// snapshot another process has written past fails at its first write with SQLITE_BUSY_SNAPSHOT
// ("database is locked (517)"), which no busy timeout cures; write transactions must start
// immediate, and then none fails.
func TestSQLiteWritersInSeveralProcessesNeverSeeALockedDatabase(t *testing.T) {
	t.Parallel()
	url := "sqlite://" + t.TempDir() + "/shotflow.db"
	var handles []*gorm.DB
	for range 2 {
		db, err := models.Open(url, models.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if sqlDB, err := db.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		handles = append(handles, db)
	}
	if err := handles[0].Exec("CREATE TABLE counter (n INTEGER NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	const perHandle = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*perHandle)
	for _, db := range handles {
		wg.Go(func() {
			for range perHandle {
				errs <- db.Transaction(func(tx *gorm.DB) error {
					var n int64
					if err := tx.Raw("SELECT COUNT(*) FROM counter").Scan(&n).Error; err != nil {
						return err
					}
					return tx.Exec("INSERT INTO counter (n) VALUES (?)", n).Error
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a read-then-write transaction failed: %v", err)
		}
	}
	var rows int64
	if err := handles[1].Raw("SELECT COUNT(*) FROM counter").Scan(&rows).Error; err != nil || rows != 2*perHandle {
		t.Fatalf("%d rows (%v), want %d", rows, err, 2*perHandle)
	}
}
