package models

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/libtnb/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shotflow/shotflow/models/ids"
)

// ErrNotFound is returned by stores for a record that does not exist or belongs to another tenant.
var ErrNotFound = errors.New("not found")

// ErrNoDatabase: OpenOptions.MustExist found no embedded database.
var ErrNoDatabase = errors.New("no database")

// OpenOptions tunes Open.
type OpenOptions struct {
	MaxOpenConns int
	Logger       logger.Interface // nil: silent
	// ConnectTimeout bounds opening a PostgreSQL connection (0: DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// StatementTimeout bounds each PostgreSQL statement (0: unbounded, as migrations need).
	StatementTimeout time.Duration
	// MustExist refuses to create an embedded (SQLite) database that is not there
	// (ErrNoDatabase): a tool run from the wrong directory, or with another DATA_DIR, would
	// otherwise make an empty one beside the service's and work on it.
	MustExist bool
}

// DefaultConnectTimeout bounds opening a PostgreSQL connection when OpenOptions names no timeout,
// so that even a command that is not an api or worker process never hangs on an unreachable server.
const DefaultConnectTimeout = 5 * time.Second

// Open connects to postgres://… or sqlite://path. SQLite gets WAL, a busy timeout, foreign keys,
// transactions that begin immediate and a single connection, so writers never fail with "database
// is locked" under concurrent use, from one process or several.
func Open(databaseURL string, opts OpenOptions) (*gorm.DB, error) {
	cfg := &gorm.Config{
		Logger:                                   opts.Logger,
		NowFunc:                                  func() time.Time { return time.Now().UTC() },
		DisableForeignKeyConstraintWhenMigrating: true,
		TranslateError:                           true,
		// gorm wraps every write made outside a transaction in one of its own: BEGIN and COMMIT,
		// two round trips, around what is here always one statement (no model saves associations,
		// has hooks or is created in batches outside a transaction). Writes that must be atomic
		// together run in db.Transaction.
		SkipDefaultTransaction: true,
	}
	if cfg.Logger == nil {
		cfg.Logger = logger.Discard
	}
	var dialector gorm.Dialector
	sqliteDB := strings.HasPrefix(databaseURL, "sqlite://")
	if sqliteDB {
		path := strings.TrimPrefix(databaseURL, "sqlite://")
		if _, err := os.Stat(path); opts.MustExist && path != ":memory:" && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s: start the service once (make run), or set DATA_DIR (or DATABASE_URL) to where it keeps its data", ErrNoDatabase, path)
		}
		if path != ":memory:" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, fmt.Errorf("create database directory: %w", err)
			}
		}
		// Transactions begin IMMEDIATE: a deferred one that reads first and then writes fails at
		// its first write with SQLITE_BUSY (or BUSY_SNAPSHOT, 517) when another process (shotflow
		// admin beside the service) wrote in between, and the busy timeout cannot cure that. An
		// immediate one waits, within the busy timeout, for the write lock at its start.
		//
		// _texttotime=0: the dialector asks the driver for _texttotime=1 unless the DSN says
		// otherwise, and with it the driver reads any text that looks like a time ("2026-01-02",
		// "2026-01-02 10:00") as a time.Time when its column has no declared type (an expression
		// such as COALESCE, an aggregate, a column of a UNION in FROM); a string then gets that
		// time back in RFC 3339, so a product named "2026-01-02" was listed as
		// "2026-01-02T00:00:00Z". Off, such a column comes back as the text it holds. A column
		// declared DATETIME is read as a time.Time either way, and times are written as before
		// (_time_format); a time read from a column without a declared type is scanned into
		// exprTime.
		dsn := path + "?_txlock=immediate&_texttotime=0&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
		dialector = sqlite.Open(dsn)
	} else {
		dsn, err := PostgresDSN(databaseURL, opts)
		if err != nil {
			return nil, err
		}
		dialector = postgres.Open(dsn)
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

// exprTime scans a time from a column SQLite declares no type for (an expression such as
// COALESCE(a, b) over two times, any column of a UNION read through FROM): with
// _texttotime=0 (Open) the driver gives its text, which exprTime reads in the layouts the driver
// reads a DATETIME column's text in (the first one is what it writes); PostgreSQL, and SQLite's
// declared columns, give a time.Time. NULL is the zero time. A time read so and bound again is
// written back as the same text.
type exprTime struct{ time.Time }

// sqliteTimeLayouts are the layouts of modernc.org/sqlite's parseTimeFormats, SQLite's own date
// and time formats, a trailing Z aside.
var sqliteTimeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// Value implements driver.Valuer (gorm takes a struct field for a column only with it): the time.
func (t exprTime) Value() (driver.Value, error) { return t.Time, nil }

// Scan implements sql.Scanner.
func (t *exprTime) Scan(src any) error {
	var text string
	switch v := src.(type) {
	case nil:
		t.Time = time.Time{}
		return nil
	case time.Time:
		t.Time = v
		return nil
	case string:
		text = v
	case []byte:
		text = string(v)
	default:
		return fmt.Errorf("exprTime: cannot scan %T", src)
	}
	trimmed := strings.TrimSuffix(text, "Z")
	for _, layout := range sqliteTimeLayouts {
		if parsed, err := time.Parse(layout, trimmed); err == nil {
			t.Time = parsed
			return nil
		}
	}
	return fmt.Errorf("exprTime: %q is not a time", text)
}

// PostgresDSN adds to a postgres:// URL the timeouts of opts that it does not set itself:
// connect_timeout (whole seconds, rounded up) and, when opts.StatementTimeout is set,
// statement_timeout (milliseconds), which the driver sends as a run-time parameter when it
// connects. A value the URL sets (including statement_timeout in its options parameter) wins.
func PostgresDSN(databaseURL string, opts OpenOptions) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL is not a URL: %w", err)
	}
	q := u.Query()
	if !q.Has("connect_timeout") {
		d := opts.ConnectTimeout
		if d <= 0 {
			d = DefaultConnectTimeout
		}
		q.Set("connect_timeout", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
	if opts.StatementTimeout > 0 && !q.Has("statement_timeout") && !strings.Contains(q.Get("options"), "statement_timeout") {
		q.Set("statement_timeout", strconv.FormatInt(max(1, opts.StatementTimeout.Milliseconds()), 10))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// NewID returns a new random UUID string for a primary key (ids.New).
func NewID() string { return ids.New() }

// IsUUID reports whether s is a UUID in the 8-4-4-4-12 form, in either case (ids.IsUUID).
func IsUUID(s string) bool { return ids.IsUUID(s) }

// CanonicalID is the form the store keeps IDs in (ids.Canonical): a UUID in lower case, anything
// else as it is.
func CanonicalID(s string) string { return ids.Canonical(s) }
