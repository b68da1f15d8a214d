package models_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/internal/testsupport/faultproxy"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

func TestPostgresDSNAddsTimeoutsTheURLLacks(t *testing.T) {
	t.Parallel()
	const base = "postgres://app:pw@db.internal:5432/shotflow?sslmode=disable"
	for _, tc := range []struct {
		name, url string
		opts      models.OpenOptions
		want      map[string]string // query parameters; "" means absent
	}{
		{"defaults", base, models.OpenOptions{},
			map[string]string{"connect_timeout": "5", "statement_timeout": "", "sslmode": "disable"}},
		{"configured", base, models.OpenOptions{ConnectTimeout: 1500 * time.Millisecond, StatementTimeout: 30 * time.Second},
			map[string]string{"connect_timeout": "2", "statement_timeout": "30000"}},
		{"the URL's values win", base + "&connect_timeout=1&statement_timeout=0",
			models.OpenOptions{ConnectTimeout: 9 * time.Second, StatementTimeout: time.Second},
			map[string]string{"connect_timeout": "1", "statement_timeout": "0"}},
		{"statement_timeout in options wins", base + "&options=-c%20statement_timeout%3D5s",
			models.OpenOptions{StatementTimeout: time.Second},
			map[string]string{"statement_timeout": "", "options": "-c statement_timeout=5s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, err := models.PostgresDSN(tc.url, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			if u.User.String() != "app:pw" || u.Host != "db.internal:5432" || u.Path != "/shotflow" {
				t.Errorf("DSN %s lost the URL's user, host or database", dsn)
			}
			for k, want := range tc.want {
				if got := u.Query().Get(k); got != want {
					t.Errorf("%s = %q, want %q (DSN %s)", k, got, want, dsn)
				}
			}
		})
	}
}

// On PostgreSQL the statement timeout is in force on every connection, and a statement past it
// fails as an unavailable dependency; a URL that sets its own keeps it.
func TestOpenBoundsPostgresStatements(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresURL(t)
	open := func(u string, opts models.OpenOptions) *gorm.DB {
		t.Helper()
		db, err := models.Open(u, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if sqlDB, err := db.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		return db
	}
	show := func(db *gorm.DB) string {
		t.Helper()
		var v string
		if err := db.Raw("SHOW statement_timeout").Scan(&v).Error; err != nil {
			t.Fatal(err)
		}
		return v
	}
	db := open(dbURL, models.OpenOptions{StatementTimeout: 300 * time.Millisecond})
	if got := show(db); got != "300ms" {
		t.Errorf("statement_timeout = %q, want 300ms", got)
	}
	// The server cancels the statement (57014, query_canceled) rather than letting it sleep: the
	// error says so, however slowly a loaded machine gets there.
	err := db.Exec("SELECT pg_sleep(5)").Error
	if err == nil || !unavailable.Is(err) {
		t.Errorf("a statement past the timeout: %v, want an unavailable dependency", err)
	}
	var server interface{ SQLState() string }
	if !errors.As(err, &server) || server.SQLState() != "57014" {
		t.Errorf("a statement past the timeout: %v, want the server's cancellation (57014)", err)
	}
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	own := open(dbURL+sep+"statement_timeout=0", models.OpenOptions{StatementTimeout: time.Second})
	if got := show(own); got != "0" {
		t.Errorf("statement_timeout with the URL's own = %q, want 0", got)
	}
}

// A server that never answers (packets dropped) fails Open within its connect timeout.
func TestOpenGivesUpOnAnUnreachablePostgres(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	if err := proxy.SetMode(faultproxy.Blackhole); err != nil {
		t.Fatal(err)
	}
	u.Host = proxy.Addr()
	start := time.Now()
	_, err = models.Open(u.String(), models.OpenOptions{ConnectTimeout: time.Second})
	if err == nil || !unavailable.Is(err) {
		t.Fatalf("Open through a black hole: %v, want an unavailable dependency", err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("Open took %v despite a 1 s connect timeout", took)
	}
}
