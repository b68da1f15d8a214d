package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
	"gorm.io/gorm"
)

// legacyVersionTable is where the hand-written runner before goose recorded the applied
// migrations (version, name, applied_at): the same versions and files goose now runs.
const legacyVersionTable = "schema_migrations"

// adoptLegacyVersions hands a database the hand-written runner migrated over to goose: it records
// the versions of schema_migrations in VersionTable (keeping when each was applied), so goose does
// not run them again, and drops schema_migrations, in one transaction. A binary from before goose
// then finds no version it knows and refuses to start, as it must on a schema newer than it.
// Nothing happens when there is no schema_migrations, or when goose already records versions.
// locker (nil on SQLite) is held meanwhile, so processes migrating at once adopt only once.
func adoptLegacyVersions(ctx context.Context, db *gorm.DB, locker lock.SessionLocker) (err error) {
	if !db.Migrator().HasTable(legacyVersionTable) {
		return nil
	}
	dialect := database.DialectSQLite3
	if db.Dialector.Name() == "postgres" {
		dialect = database.DialectPostgres
	}
	if locker != nil {
		sqlDB, err := db.DB()
		if err != nil {
			return err
		}
		conn, err := sqlDB.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if err := locker.SessionLock(ctx, conn); err != nil {
			return err
		}
		defer func() {
			err = errors.Join(err, locker.SessionUnlock(context.WithoutCancel(ctx), conn))
		}()
	}
	store, err := database.NewStore(dialect, VersionTable)
	if err != nil {
		return err
	}
	return db.Transaction(func(tx *gorm.DB) error {
		if !tx.Migrator().HasTable(legacyVersionTable) {
			return nil // adopted by another process while this one waited for the lock
		}
		conn := tx.Statement.ConnPool
		if tx.Migrator().HasTable(VersionTable) {
			var latest sql.NullInt64
			if err := tx.Raw("SELECT MAX(version_id) FROM " + VersionTable).Scan(&latest).Error; err != nil {
				return err
			}
			if latest.Int64 > 0 {
				return nil // goose runs this database already
			}
		} else {
			if err := store.CreateVersionTable(ctx, conn); err != nil {
				return err
			}
			if err := store.Insert(ctx, conn, database.InsertRequest{Version: 0}); err != nil {
				return err
			}
		}
		copied := tx.Exec("INSERT INTO " + VersionTable + " (version_id, is_applied, tstamp) SELECT version, TRUE, applied_at FROM " +
			legacyVersionTable + " ORDER BY version")
		if copied.Error != nil {
			return fmt.Errorf("copy versions: %w", copied.Error)
		}
		return tx.Exec("DROP TABLE " + legacyVersionTable).Error
	})
}
