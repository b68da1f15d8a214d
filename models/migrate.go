package models

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"testing/fstest"
	"text/template"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"gorm.io/gorm"
)

// The schema is the goose migrations in migrations/, named NNNN_name.sql, forward-only: each file
// has an Up section and no Down section. A file is a text/template rendered per dialect before
// goose reads it ({{ts}}: a timestamp with zone, {{json}}: a JSON document, {{dialect}}: "postgres"
// or "sqlite", for the rare change SQLite makes another way, such as a table rebuild;
// {{concurrently}}: an index built without holding its table's writes), so both
// dialects run the same file and cannot drift apart. goose splits a section at every line that ends in `;`
// outside a comment; a statement with `;` inside (a function, a trigger) goes between
// `-- +goose StatementBegin` and `-- +goose StatementEnd`.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// VersionTable is the table goose records the applied migrations in: one row per version, and a
// row for version 0 written when goose created it.
const VersionTable = goose.DefaultTablename

// migrationLockID is the PostgreSQL advisory lock that serialises migrations. It is the key the
// hand-written runner before goose took, so an old and a new `shotflow migrate` take turns too.
const migrationLockID = 727274

// ErrSchemaMismatch reports a database whose schema version differs from the one this binary knows.
type ErrSchemaMismatch struct {
	Database, Binary int
}

// Error says which side is behind and what to do about it.
func (e ErrSchemaMismatch) Error() string {
	if e.Database < e.Binary {
		return fmt.Sprintf("database schema is at version %d but this binary needs %d: run `shotflow migrate` first", e.Database, e.Binary)
	}
	return fmt.Sprintf("database schema is at version %d, newer than this binary knows (%d): deploy the newer binary", e.Database, e.Binary)
}

// LatestVersion is the schema version this binary expects: that of its newest migration.
func LatestVersion() int {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return 0
	}
	latest := 0
	for _, e := range entries {
		if v, err := goose.NumericComponent(e.Name()); err == nil && int(v) > latest {
			latest = int(v)
		}
	}
	return latest
}

// MigrationsDigest is a SHA-256 of every migration file, in hex: it changes whenever the schema
// the migrations build does (test suites key their migrated template databases by it).
func MigrationsDigest() string {
	h := sha256.New()
	_ = fs.WalkDir(migrationFS, "migrations", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := migrationFS.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(data))
		h.Write(data)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// Migrate applies every pending migration, each in its own transaction, and returns the versions
// it applied. It never rolls back: a database newer than this binary is refused with
// ErrSchemaMismatch. Several processes may call it at once: a lock (PostgreSQL's advisory lock, a
// lock file beside an SQLite database) lets one migrate at a time.
func Migrate(ctx context.Context, db *gorm.DB) ([]int, error) {
	dialect := db.Dialector.Name()
	files, err := migrationFiles(migrationFS, dialect)
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithLogger(goose.NopLogger()), goose.WithDisableGlobalRegistry(true)}
	var locker lock.SessionLocker = &sqliteMigrationLock{}
	// adoptLocker is held while the hand-written runner's versions are adopted. Not on SQLite: a
	// handle has one connection, which the lock's session would pin while the adoption's
	// transaction waits for it; that transaction begins immediate, so it runs alone anyway and
	// re-checks inside whether another process adopted first.
	var adoptLocker lock.SessionLocker
	gooseDialect := goose.DialectSQLite3
	if dialect == "postgres" {
		gooseDialect = goose.DialectPostgres
		// Poll the lock every second for up to 10 minutes: a long migration elsewhere is waited out.
		if locker, err = lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 600)); err != nil {
			return nil, err
		}
		adoptLocker = locker
	}
	opts = append(opts, goose.WithSessionLocker(locker))
	provider, err := goose.NewProvider(gooseDialect, sqlDB, files, opts...)
	if err != nil {
		return nil, err
	}
	db = db.WithContext(ctx)
	if err := adoptLegacyVersions(ctx, db, adoptLocker); err != nil {
		return nil, fmt.Errorf("adopt the versions of schema_migrations: %w", err)
	}
	if v, err := schemaVersion(db); err != nil {
		return nil, err
	} else if v > LatestVersion() {
		return nil, ErrSchemaMismatch{Database: v, Binary: LatestVersion()}
	}
	results, err := provider.Up(ctx)
	var partial *goose.PartialError
	if errors.As(err, &partial) {
		results = partial.Applied
		err = fmt.Errorf("migration %s: %w", partial.Failed.Source.Path, partial.Err)
	}
	applied := make([]int, 0, len(results))
	for _, r := range results {
		applied = append(applied, int(r.Source.Version))
	}
	return applied, err
}

// CheckSchema returns ErrSchemaMismatch unless the database is exactly at LatestVersion. It only
// reads: a database nobody migrated yet is left as it is.
func CheckSchema(db *gorm.DB) error {
	v, err := schemaVersion(db)
	if err != nil {
		return err
	}
	if v != LatestVersion() {
		return ErrSchemaMismatch{Database: v, Binary: LatestVersion()}
	}
	return nil
}

// schemaVersion is the newest version applied to the database: goose's record, else that of the
// hand-written runner before goose (a database `shotflow migrate` has not upgraded yet), else 0.
func schemaVersion(db *gorm.DB) (int, error) {
	query := "SELECT MAX(version_id) FROM " + VersionTable
	if !db.Migrator().HasTable(VersionTable) {
		if !db.Migrator().HasTable(legacyVersionTable) {
			return 0, nil
		}
		query = "SELECT MAX(version) FROM " + legacyVersionTable
	}
	var v *int
	if err := db.Raw(query).Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if v == nil {
		return 0, nil
	}
	return *v, nil
}

// downSection finds a goose Down annotation, however it is spaced or capitalised.
var downSection = regexp.MustCompile(`(?im)^--\s*\+goose\s+down\s*$`)

// migrationFiles renders the migration templates of src (the folder migrations) for a dialect
// ("postgres" or "sqlite") into the files goose reads. fstest.MapFS is the standard library's
// in-memory fs.FS; nothing of package testing comes with it.
func migrationFiles(src fs.FS, dialect string) (fs.FS, error) {
	types := map[string]map[string]string{
		"postgres": {"ts": "TIMESTAMPTZ", "json": "JSONB"},
		"sqlite":   {"ts": "DATETIME", "json": "TEXT"},
	}[dialect]
	if types == nil {
		return nil, fmt.Errorf("unknown dialect %q", dialect)
	}
	funcs := template.FuncMap{
		"ts":      func() string { return types["ts"] },
		"json":    func() string { return types["json"] },
		"dialect": func() string { return dialect },
		// concurrently builds or drops an index without holding the table's writes on PostgreSQL,
		// in a migration marked `-- +goose NO TRANSACTION` (PostgreSQL refuses it in a
		// transaction); SQLite has no such option.
		"concurrently": func() string {
			if dialect == "postgres" {
				return "CONCURRENTLY"
			}
			return ""
		},
	}
	entries, err := fs.ReadDir(src, "migrations")
	if err != nil {
		return nil, err
	}
	out := fstest.MapFS{}
	for _, e := range entries {
		text, err := fs.ReadFile(src, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		if downSection.Match(text) {
			return nil, fmt.Errorf("migration %s has a Down section: migrations only go forward", e.Name())
		}
		t, err := template.New(e.Name()).Funcs(funcs).Parse(string(text))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, nil); err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		out[e.Name()] = &fstest.MapFile{Data: buf.Bytes(), Mode: 0o444}
	}
	return out, nil
}
