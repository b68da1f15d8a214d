package models

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"gorm.io/gorm"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one forward-only schema change, numbered by the prefix of its file name.
type Migration struct {
	Version int
	Name    string
	SQL     string // template text; rendered per dialect
}

// SchemaMigration is a row of schema_migrations: one applied migration.
type SchemaMigration struct {
	Version   int `gorm:"primaryKey;autoIncrement:false"`
	Name      string
	AppliedAt time.Time
}

// ErrSchemaMismatch reports a database whose schema version differs from the one this binary knows.
type ErrSchemaMismatch struct {
	Database, Binary int
}

func (e ErrSchemaMismatch) Error() string {
	if e.Database < e.Binary {
		return fmt.Sprintf("database schema is at version %d but this binary needs %d: run `shotflow migrate` first", e.Database, e.Binary)
	}
	return fmt.Sprintf("database schema is at version %d, newer than this binary knows (%d): deploy the newer binary", e.Database, e.Binary)
}

// Migrations returns every embedded migration in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		num, rest, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %q must be named NNNN_name.sql", e.Name())
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", other, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: strings.TrimSuffix(rest, ".sql"), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// LatestVersion is the schema version this binary expects.
func LatestVersion() int {
	ms, err := Migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Render turns a migration template into the SQL of one dialect ("postgres" or "sqlite").
func (m Migration) Render(dialect string) (string, error) {
	funcs := template.FuncMap{
		"ts":   func() string { return map[string]string{"postgres": "TIMESTAMPTZ", "sqlite": "DATETIME"}[dialect] },
		"json": func() string { return map[string]string{"postgres": "JSONB", "sqlite": "TEXT"}[dialect] },
	}
	if dialect != "postgres" && dialect != "sqlite" {
		return "", fmt.Errorf("unknown dialect %q", dialect)
	}
	t, err := template.New(m.Name).Funcs(funcs).Parse(m.SQL)
	if err != nil {
		return "", fmt.Errorf("migration %d: %w", m.Version, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, nil); err != nil {
		return "", fmt.Errorf("migration %d: %w", m.Version, err)
	}
	return buf.String(), nil
}

// Migrate applies every pending migration, each in its own transaction, and returns the versions
// it applied. On Postgres an advisory lock lets several processes call it at once safely.
func Migrate(db *gorm.DB) ([]int, error) {
	dialect := db.Dialector.Name()
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	var applied []int
	err = db.Connection(func(conn *gorm.DB) error {
		if dialect == "postgres" {
			if err := conn.Exec("SELECT pg_advisory_lock(727274)").Error; err != nil {
				return err
			}
			defer conn.Exec("SELECT pg_advisory_unlock(727274)")
		}
		if err := conn.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at ` + map[string]string{"postgres": "TIMESTAMPTZ", "sqlite": "DATETIME"}[dialect] + ` NOT NULL)`).Error; err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		current, err := currentVersion(conn)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.Version <= current {
				continue
			}
			sql, err := m.Render(dialect)
			if err != nil {
				return err
			}
			err = conn.Transaction(func(tx *gorm.DB) error {
				for _, stmt := range splitStatements(sql) {
					if err := tx.Exec(stmt).Error; err != nil {
						return fmt.Errorf("migration %04d_%s: %w\n%s", m.Version, m.Name, err, stmt)
					}
				}
				return tx.Create(&SchemaMigration{Version: m.Version, Name: m.Name, AppliedAt: time.Now().UTC()}).Error
			})
			if err != nil {
				return err
			}
			applied = append(applied, m.Version)
		}
		return nil
	})
	return applied, err
}

// CheckSchema returns ErrSchemaMismatch unless the database is exactly at LatestVersion.
func CheckSchema(db *gorm.DB) error {
	if !db.Migrator().HasTable("schema_migrations") {
		return ErrSchemaMismatch{Database: 0, Binary: LatestVersion()}
	}
	v, err := currentVersion(db)
	if err != nil {
		return err
	}
	if v != LatestVersion() {
		return ErrSchemaMismatch{Database: v, Binary: LatestVersion()}
	}
	return nil
}

func currentVersion(db *gorm.DB) (int, error) {
	var v *int
	if err := db.Raw("SELECT MAX(version) FROM schema_migrations").Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if v == nil {
		return 0, nil
	}
	return *v, nil
}

// splitStatements splits a migration on semicolons that end a line, dropping comments and blanks.
func splitStatements(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
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
