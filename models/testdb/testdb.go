// Package testdb gives tests their own migrated databases: a fresh PostgreSQL database per test
// (dropped afterwards) and a fresh SQLite file.
package testdb

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
)

// DB is a direct connection to a test database, for a test's own setup and checks: test kits
// outside the store hand it to tests without linking gorm themselves.
type DB = gorm.DB

// AdminURL is the PostgreSQL server tests create their databases on (TEST_DATABASE_URL).
func AdminURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// PostgresURL creates an empty database for the test and returns its URL; it is dropped at cleanup.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return createDatabase(t, "")
}

// LinguisticCollation is the ICU locale of LinguisticPostgresURL's databases.
const LinguisticCollation = "en-US"

// LinguisticPostgresURL creates an empty database for the test whose default collation is a
// linguistic one (ICU's en-US), as a server initialised with an en_US locale (the Compose image's)
// gives every database, where a server initialised with C (the tests' usual one) gives byte order:
// "a_" < "A-" < "b" < "B" there, "A-" < "B" < "a_" < "b" in C. It returns its URL (dropped at
// cleanup), and skips the test on a server built without ICU.
func LinguisticPostgresURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := connectAdmin(ctx, t)
	defer admin.Close(context.Background())
	var icu bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collprovider = 'i')").Scan(&icu); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	if !icu {
		t.Skip("testdb: this PostgreSQL server has no ICU collations")
	}
	return createDatabase(t, "template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE '"+LinguisticCollation+"' LOCALE 'C.UTF-8'")
}

// connectAdmin connects to the server's administrative database, or fails the test saying how to
// reach one.
func connectAdmin(ctx context.Context, t testing.TB) *pgx.Conn {
	t.Helper()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatalf("testdb: PostgreSQL is not reachable at %s (start it, or set TEST_DATABASE_URL): %v", AdminURL(), err)
	}
	return admin
}

// createDatabase creates a database for the test, a copy of template unless it is "" (which may
// be followed by further options of CREATE DATABASE), and returns its URL; it is dropped at
// cleanup.
func createDatabase(t testing.TB, template string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := connectAdmin(ctx, t)
	defer admin.Close(context.Background())
	name := "shotflow_test_" + strings.ToLower(hex.EncodeToString([]byte(secrets.Token(6))))
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + template
	}
	if _, err := admin.Exec(ctx, create); err != nil {
		t.Fatalf("testdb: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Logf("testdb: drop %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("testdb: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// MigratedPostgresURL creates a database for the test with every migration applied and returns
// its URL; it is dropped at cleanup. It is a copy of a template database migrated once per schema
// (see template), which is much cheaper than migrating each test's database.
func MigratedPostgresURL(t testing.TB) string {
	t.Helper()
	tpl, err := template()
	if err != nil {
		t.Fatalf("testdb: migrated template database: %v", err)
	}
	return createDatabase(t, tpl)
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// templateLock is the advisory lock under which test processes build the template database.
const templateLock = 727275

// template returns the name of the migrated template database of this schema, building it if no
// test process has yet: several packages' test binaries run at once, so the build happens under an
// advisory lock, into a temporary name that is renamed when complete. A template is named by the
// digest of the migrations, so checkouts with other migrations each use their own.
func template() (string, error) {
	templateOnce.Do(func() { templateName, templateErr = buildTemplate() })
	return templateName, templateErr
}

func buildTemplate() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return "", fmt.Errorf("PostgreSQL is not reachable at %s (start it, or set TEST_DATABASE_URL): %w", AdminURL(), err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLock) //nolint:errcheck // the session ends right after
	name := "shotflow_tpl_" + models.MigrationsDigest()[:16]
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// A build that died half-way left this behind; under the lock nobody else is building it.
	building := name + "_building"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	u, err := url.Parse(AdminURL())
	if err != nil {
		return "", err
	}
	u.Path = "/" + building
	db, err := models.Open(u.String(), models.OpenOptions{})
	if err != nil {
		return "", err
	}
	_, err = models.Migrate(ctx, db)
	if sqlDB, derr := db.DB(); derr == nil {
		sqlDB.Close()
	}
	if err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	// No connection may reach a template while it is copied; autovacuum skips databases that
	// allow none.
	for _, stmt := range []string{
		"ALTER DATABASE " + building + " RENAME TO " + name,
		"ALTER DATABASE " + name + " WITH IS_TEMPLATE true ALLOW_CONNECTIONS false",
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			return "", err
		}
	}
	return name, nil
}

// SQLiteURL returns the URL of a new SQLite file in the test's temporary directory.
func SQLiteURL(t testing.TB) string {
	return "sqlite://" + t.TempDir() + "/shotflow.db"
}

// Open opens and migrates the database at url, closing it at cleanup.
func Open(t testing.TB, databaseURL string) *gorm.DB {
	t.Helper()
	db, err := models.Open(databaseURL, models.OpenOptions{})
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	if _, err := models.Migrate(t.Context(), db); err != nil {
		t.Fatalf("testdb: migrate: %v", err)
	}
	return db
}

// Dialects runs fn once against a fresh migrated PostgreSQL database and once against SQLite.
func Dialects(t *testing.T, fn func(t *testing.T, db *gorm.DB)) {
	for _, d := range []struct {
		name string
		url  func(testing.TB) string
	}{{"postgres", MigratedPostgresURL}, {"sqlite", SQLiteURL}} {
		t.Run(d.name, func(t *testing.T) {
			fn(t, Open(t, d.url(t)))
		})
	}
}

// MustExec runs a statement and fails the test on error.
func MustExec(t testing.TB, db *gorm.DB, sql string, args ...any) {
	t.Helper()
	if err := db.Exec(sql, args...).Error; err != nil {
		t.Fatalf("testdb: %s: %v", fmt.Sprint(sql), err)
	}
}
