package testdb

import (
	"testing"

	"github.com/shotflow/shotflow/models"
)

// TestMigratedPostgresURLIsAtTheLatestSchema: a database copied from the template is fully
// migrated (CheckSchema accepts it, Migrate has nothing left to do) and is the test's own.
func TestMigratedPostgresURLIsAtTheLatestSchema(t *testing.T) {
	t.Parallel()
	a, b := MigratedPostgresURL(t), MigratedPostgresURL(t)
	if a == b {
		t.Fatal("two tests got the same database")
	}
	db, err := models.Open(a, models.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	if err := models.CheckSchema(db); err != nil {
		t.Fatalf("copied database: %v", err)
	}
	applied, err := models.Migrate(t.Context(), db)
	if err != nil || len(applied) != 0 {
		t.Fatalf("migrating a copied database applied %v, %v", applied, err)
	}
	MustExec(t, db, "INSERT INTO accounts (id, name, credit_balance, credits_reserved, created_at, updated_at) VALUES ('a', 'x', 0, 0, now(), now())")
	other := Open(t, b)
	var n int64
	if err := other.Table("accounts").Where("id = 'a'").Count(&n).Error; err != nil || n != 0 {
		t.Fatalf("the second copy sees the first's rows: %d, %v", n, err)
	}
}
