package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// sqliteMigrationLock serialises the migrations of one SQLite file across processes, as
// PostgreSQL's advisory lock does for a server: goose's session lockers exist for PostgreSQL
// only, and without one two processes migrating a fresh file at once both apply 0001 and one
// fails ("table accounts already exists"). It holds an exclusive flock on <file>-migrate.lock, a
// file beside the database's own WAL and shared-memory files; the kernel drops the lock with the
// process, so a killed migrate never leaves the file locked. An in-memory database (no file) is
// one process's own and needs no lock.
type sqliteMigrationLock struct {
	f *os.File
}

// sqliteLockPoll and sqliteLockTimeout wait out a long migration elsewhere, as the PostgreSQL
// lock's one-second poll for up to ten minutes does.
const (
	sqliteLockPoll    = 50 * time.Millisecond
	sqliteLockTimeout = 10 * time.Minute
)

// SessionLock takes the lock of the database conn is open on, waiting for another process's.
func (l *sqliteMigrationLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	file, err := sqliteMainFile(ctx, conn)
	if err != nil || file == "" {
		return err
	}
	f, err := os.OpenFile(file+"-migrate.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open the migration lock: %w", err)
	}
	deadline := time.Now().Add(sqliteLockTimeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			l.f = f
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return fmt.Errorf("another process has held the migration lock of %s for %v", file, sqliteLockTimeout)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return ctx.Err()
		case <-time.After(sqliteLockPoll):
		}
	}
}

// SessionUnlock releases the lock SessionLock took.
func (l *sqliteMigrationLock) SessionUnlock(context.Context, *sql.Conn) error {
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return errors.Join(err, f.Close())
}

// sqliteMainFile is the file of the main database conn is open on, "" for an in-memory one.
func sqliteMainFile(ctx context.Context, conn *sql.Conn) (string, error) {
	rows, err := conn.QueryContext(ctx, "PRAGMA database_list")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int
		var name, file string
		if err := rows.Scan(&seq, &name, &file); err != nil {
			return "", err
		}
		if name == "main" {
			return file, nil
		}
	}
	return "", rows.Err()
}
