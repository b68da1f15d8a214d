package models_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// handWrittenRunnerLast is the last migration the hand-written runner ever applied: goose replaced
// it when migrations/ ended at 0010, so no database it left is past that version (and later
// migrations may use what only the goose runner renders, such as the dialect function).
const handWrittenRunnerLast = 10

// legacyAppliedAt is when legacyMigrate says each migration was applied.
var legacyAppliedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// legacyMigrate leaves db as the hand-written runner before goose left a database at version upTo.
// Test data, not product code: a copy of how that runner rendered, split, ran and recorded each
// migration of migrations/.
func legacyMigrate(t *testing.T, db *gorm.DB, upTo int) {
	t.Helper()
	dialect := db.Dialector.Name()
	types := map[string]map[string]string{
		"postgres": {"ts": "TIMESTAMPTZ", "json": "JSONB"},
		"sqlite":   {"ts": "DATETIME", "json": "TEXT"},
	}[dialect]
	testdb.MustExec(t, db, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at `+types["ts"]+` NOT NULL)`)
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		num, rest, _ := strings.Cut(e.Name(), "_")
		version, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if version > upTo {
			continue
		}
		text, err := os.ReadFile("migrations/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := template.New(e.Name()).Funcs(template.FuncMap{
			"ts":      func() string { return types["ts"] },
			"json":    func() string { return types["json"] },
			"dialect": func() string { return dialect }, // 0014 and later
		}).Parse(string(text))
		if err != nil {
			t.Fatal(err)
		}
		var sql bytes.Buffer
		if err := tmpl.Execute(&sql, nil); err != nil {
			t.Fatal(err)
		}
		err = db.Transaction(func(tx *gorm.DB) error {
			for _, stmt := range legacySplit(sql.String()) {
				if err := tx.Exec(stmt).Error; err != nil {
					return fmt.Errorf("%s: %w\n%s", e.Name(), err, stmt)
				}
			}
			return tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				version, strings.TrimSuffix(rest, ".sql"), legacyAppliedAt).Error
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// legacySplit splits a migration as the hand-written runner did: at every line ending in `;`,
// dropping comment lines and blank lines.
func legacySplit(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line + "\n")
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// schemaOf describes every table of db but the migration records, as the database itself reports
// it: columns (type, nullability, default), constraints or foreign keys, and indexes, sorted.
func schemaOf(t *testing.T, db *gorm.DB) map[string][]string {
	t.Helper()
	queries := []string{ // each takes the table name
		`SELECT 'column ' || column_name || ' ' || data_type || ' null=' || is_nullable || ' default=' || COALESCE(column_default, '')
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?`,
		`SELECT 'constraint ' || conname || ': ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = ?::regclass`,
		`SELECT 'index ' || indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ?`,
	}
	if db.Dialector.Name() == "sqlite" {
		queries = []string{
			`SELECT 'column ' || name || ' ' || type || ' notnull=' || "notnull" || ' default=' || COALESCE(dflt_value, '') || ' pk=' || pk
				FROM pragma_table_info(?)`,
			`SELECT 'foreign key ' || "from" || ' references ' || "table" || '(' || COALESCE("to", '') || ')' FROM pragma_foreign_key_list(?)`,
			`SELECT 'index ' || name || ': ' || COALESCE(sql, '') FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`,
		}
	}
	tables, err := db.Migrator().GetTables()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, table := range tables {
		if table == models.VersionTable || table == "schema_migrations" || strings.HasPrefix(table, "sqlite_") {
			continue
		}
		var desc []string
		for _, q := range queries {
			var rows []string
			if err := db.Raw(q, table).Scan(&rows).Error; err != nil {
				t.Fatalf("describe %s: %v", table, err)
			}
			desc = append(desc, rows...)
		}
		slices.Sort(desc)
		out[table] = desc
	}
	return out
}

// A database the hand-written runner migrated to the version before the newest upgrades in
// place: goose adopts the versions it recorded instead of running them again, applies the newest
// one, keeps the data, and needs nothing on later runs.
func TestMigrateAdoptsTheHandWrittenRunnersDatabase(t *testing.T) {
	t.Parallel()
	unmigratedDialects(t, func(t *testing.T, db *gorm.DB) {
		latest := models.LatestVersion()
		legacyMigrate(t, db, handWrittenRunnerLast)
		now := time.Now().UTC()
		testdb.MustExec(t, db, "INSERT INTO accounts (id, name, created_at, updated_at) VALUES ('acc-1', 'Before goose', ?, ?)", now, now)

		// api and worker name the version the old runner recorded and ask for `shotflow migrate`.
		var mismatch models.ErrSchemaMismatch
		if err := models.CheckSchema(db); !errors.As(err, &mismatch) || mismatch.Database != handWrittenRunnerLast || mismatch.Binary != latest {
			t.Fatalf("CheckSchema before the upgrade = %v, want a mismatch at %d of %d", err, handWrittenRunnerLast, latest)
		}

		applied, err := models.Migrate(t.Context(), db)
		if err != nil {
			t.Fatalf("migrate the old runner's database: %v", err)
		}
		var pending []int
		for v := handWrittenRunnerLast + 1; v <= latest; v++ {
			pending = append(pending, v)
		}
		if !reflect.DeepEqual(applied, pending) {
			t.Fatalf("migrate applied %v, want only %v: the versions already applied must be adopted, not run again", applied, pending)
		}
		if err := models.CheckSchema(db); err != nil {
			t.Fatalf("CheckSchema after the upgrade: %v", err)
		}
		var versions []int
		if err := db.Raw("SELECT version_id FROM " + models.VersionTable + " ORDER BY version_id").Scan(&versions).Error; err != nil {
			t.Fatal(err)
		}
		for v := 0; v <= latest; v++ {
			if n := slices.Index(versions, v); n < 0 || slices.Index(versions[n+1:], v) >= 0 {
				t.Fatalf("%s holds versions %v, want each of 0..%d once", models.VersionTable, versions, latest)
			}
		}
		var adoptedAt time.Time
		if err := db.Raw("SELECT tstamp FROM "+models.VersionTable+" WHERE version_id = ?", 1).Scan(&adoptedAt).Error; err != nil {
			t.Fatal(err)
		}
		if d := adoptedAt.Sub(legacyAppliedAt).Abs(); d > 24*time.Hour {
			t.Errorf("version 1 is recorded as applied at %v, want when the old runner applied it (%v)", adoptedAt, legacyAppliedAt)
		}
		if db.Migrator().HasTable("schema_migrations") {
			t.Error("schema_migrations is still there after the upgrade")
		}
		var name string
		if err := db.Raw("SELECT name FROM accounts WHERE id = 'acc-1'").Scan(&name).Error; err != nil || name != "Before goose" {
			t.Errorf("the account written before the upgrade reads %q, %v", name, err)
		}

		// The upgraded schema is the one a fresh database gets.
		if got, want := schemaOf(t, db), schemaOf(t, testdb.Open(t, freshURL(t, db))); !reflect.DeepEqual(got, want) {
			for table := range want {
				if !reflect.DeepEqual(got[table], want[table]) {
					t.Errorf("table %s after the upgrade:\n%s\nfresh:\n%s", table, strings.Join(got[table], "\n"), strings.Join(want[table], "\n"))
				}
			}
			t.Fatalf("the upgraded schema differs from a fresh one (tables %d, fresh %d)", len(got), len(want))
		}

		// Later runs have nothing to do.
		if applied, err := models.Migrate(t.Context(), db); err != nil || len(applied) != 0 {
			t.Fatalf("migrate after the upgrade applied %v, err %v; want nothing", applied, err)
		}
		if err := models.CheckSchema(db); err != nil {
			t.Fatalf("CheckSchema after a second run: %v", err)
		}
	})
}

// freshURL is the URL of a new database of db's dialect.
func freshURL(t *testing.T, db *gorm.DB) string {
	if db.Dialector.Name() == "postgres" {
		return testdb.PostgresURL(t)
	}
	return testdb.SQLiteURL(t)
}
