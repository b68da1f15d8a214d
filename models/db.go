package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/google/uuid"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// ErrNotFound is returned by stores for a record that does not exist or belongs to another tenant.
var ErrNotFound = errors.New("not found")

// OpenOptions tunes Open.
type OpenOptions struct {
	MaxOpenConns int
	Logger       logger.Interface // nil: silent
}

// Open connects to postgres://… or sqlite://path. SQLite gets WAL, a busy timeout, foreign keys and a
// single connection, so writers never fail with "database is locked" under concurrent use.
func Open(databaseURL string, opts OpenOptions) (*gorm.DB, error) {
	cfg := &gorm.Config{
		Logger:                                   opts.Logger,
		NowFunc:                                  func() time.Time { return time.Now().UTC() },
		DisableForeignKeyConstraintWhenMigrating: true,
		TranslateError:                           true,
	}
	if cfg.Logger == nil {
		cfg.Logger = logger.Discard
	}
	var dialector gorm.Dialector
	sqliteDB := strings.HasPrefix(databaseURL, "sqlite://")
	if sqliteDB {
		path := strings.TrimPrefix(databaseURL, "sqlite://")
		if path != ":memory:" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, fmt.Errorf("create database directory: %w", err)
			}
		}
		dsn := path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
		dialector = sqlite.Open(dsn)
	} else {
		dialector = postgres.Open(databaseURL)
	}
	db, err := gorm.Open(dialector, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	if sqliteDB {
		sqlDB.SetMaxOpenConns(1)
	} else {
		n := opts.MaxOpenConns
		if n <= 0 {
			n = 20
		}
		sqlDB.SetMaxOpenConns(n)
		sqlDB.SetMaxIdleConns(n)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	}
	if err := sqlDB.Ping(); err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return db, nil
}

// NewID returns a new random UUID string for a primary key.
func NewID() string { return uuid.NewString() }

// IsUUID reports whether s is a canonical UUID.
func IsUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}
