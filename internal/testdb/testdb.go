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
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/secrets"
	"github.com/shotflow/shotflow/models"
)

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
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatalf("testdb: PostgreSQL is not reachable at %s (start it, or set TEST_DATABASE_URL): %v", AdminURL(), err)
	}
	defer admin.Close(context.Background())
	name := "shotflow_test_" + strings.ToLower(hex.EncodeToString([]byte(secrets.Token(6))))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
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
	}{{"postgres", PostgresURL}, {"sqlite", SQLiteURL}} {
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
