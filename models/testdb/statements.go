package testdb

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"gorm.io/gorm"
)

// Round trips: RecordStatements lists the statements a database sees while a test runs some code,
// BEGIN, COMMIT and ROLLBACK included (a gorm logger sees neither), so that a regression that
// brings a query or a transaction back fails a test that names every statement. It counts what
// gorm sends through database/sql, not the driver's own traffic (pgx preparing a statement the
// first time a connection sees it).

// RecordStatements sends every statement of db through a recorder until the returned function is
// called, which restores db's connection pool and returns the statements seen, in order, each on
// one line. The caller must not use db from other goroutines meanwhile for anything it does not
// want recorded.
func RecordStatements(db *gorm.DB) func() []string {
	log := &statementLog{}
	pool := db.Statement.ConnPool
	recording := recordingPool{pool: pool, log: log}
	db.Config.ConnPool, db.Statement.ConnPool = recording, recording
	return func() []string {
		db.Config.ConnPool, db.Statement.ConnPool = pool, pool
		return log.statements()
	}
}

// statementLog is the statements seen, in order.
type statementLog struct {
	mu   sync.Mutex
	list []string
}

func (l *statementLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, strings.Join(strings.Fields(s), " "))
}

func (l *statementLog) statements() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.list...)
}

// recordingPool is a gorm.ConnPool (and gorm.TxBeginner) that logs what it sends.
type recordingPool struct {
	pool gorm.ConnPool
	log  *statementLog
}

func (p recordingPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	p.log.add("PREPARE " + query)
	return p.pool.PrepareContext(ctx, query)
}

func (p recordingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.log.add(query)
	return p.pool.ExecContext(ctx, query, args...)
}

func (p recordingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.log.add(query)
	return p.pool.QueryContext(ctx, query, args...)
}

func (p recordingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	p.log.add(query)
	return p.pool.QueryRowContext(ctx, query, args...)
}

func (p recordingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	beginner, ok := p.pool.(gorm.TxBeginner)
	if !ok {
		return nil, gorm.ErrInvalidTransaction
	}
	p.log.add("BEGIN")
	tx, err := beginner.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	// A pointer: gorm checks the committer with reflect.Value.IsNil.
	return &recordingTx{recordingPool: recordingPool{pool: tx, log: p.log}, tx: tx}, nil
}

// recordingTx is the transaction of a recordingPool.
type recordingTx struct {
	recordingPool
	tx *sql.Tx
}

func (t *recordingTx) Commit() error {
	t.log.add("COMMIT")
	return t.tx.Commit()
}

func (t *recordingTx) Rollback() error {
	t.log.add("ROLLBACK")
	return t.tx.Rollback()
}
