package plugin_test

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
)

// Round trips: the statements the database sees while it accepts a session. A regression that
// brings a query back (one per subject, a second read of the key) fails these tests, which list
// every statement. They count what gorm sends through database/sql, BEGIN, COMMIT and ROLLBACK
// included; the driver's own traffic (pgx preparing a statement the first time a connection sees
// it) is not counted. docs/benchmarks.md ("Database round trips of an accepted session") keeps
// the history.

// statementLog records every statement sent through a gorm.DB's connection pool, BEGIN, COMMIT
// and ROLLBACK included (a gorm logger sees neither), in order.
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

// countingPool is a gorm.ConnPool (and gorm.ConnPoolBeginner) that logs what it sends.
type countingPool struct {
	pool gorm.ConnPool
	log  *statementLog
}

func (p countingPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	p.log.add("PREPARE " + query)
	return p.pool.PrepareContext(ctx, query)
}

func (p countingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.log.add(query)
	return p.pool.ExecContext(ctx, query, args...)
}

func (p countingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.log.add(query)
	return p.pool.QueryContext(ctx, query, args...)
}

func (p countingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	p.log.add(query)
	return p.pool.QueryRowContext(ctx, query, args...)
}

func (p countingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
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
	return &countingTx{countingPool: countingPool{pool: tx, log: p.log}, tx: tx}, nil
}

// countingTx is the transaction of a countingPool.
type countingTx struct {
	countingPool
	tx *sql.Tx
}

func (t *countingTx) Commit() error {
	t.log.add("COMMIT")
	return t.tx.Commit()
}

func (t *countingTx) Rollback() error {
	t.log.add("ROLLBACK")
	return t.tx.Rollback()
}

// recordStatements sends every statement of e.db through a countingPool until the returned
// function is called, which restores the pool and returns the statements seen.
func (e *env) recordStatements() func() []string {
	e.t.Helper()
	log := &statementLog{}
	pool := e.db.Statement.ConnPool
	counting := countingPool{pool: pool, log: log}
	e.db.Config.ConnPool, e.db.Statement.ConnPool = counting, counting
	return func() []string {
		e.db.Config.ConnPool, e.db.Statement.ConnPool = pool, pool
		return log.statements()
	}
}

// sessionStatements are the statements of one accepted POST /jobs of the given subjects, sent
// with the headers (name, value, ...).
func (e *env) sessionStatements(headers []string, subjects ...map[string]any) []string {
	e.t.Helper()
	stop := e.recordStatements()
	rec := e.do(http.MethodPost, p("/jobs"), e.key, session(subjects...), headers...)
	statements := stop()
	require.Equal(e.t, http.StatusCreated, rec.Code, rec.Body.String())
	return statements
}

// acceptedSessionStatements is what accepting one session costs PostgreSQL, whatever its number
// of subjects and images: the key with its installation (1), the subjects' products with their
// approved packshots (1), then one statement in autocommit that inserts the order, its jobs and
// their ledger entries and reserves the credits (models.PlaceOrder).
const acceptedSessionStatements = 3

// keyedSessionStatements is what a session sent with an Idempotency-Key costs: the key with its
// installation, the Idempotency-Key's claim, the products; then the order's transaction, which
// records the key's answer with the order: BEGIN, the order's statement, the answer, COMMIT.
const keyedSessionStatements = 7

func TestAcceptedSessionRoundTrips(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		refs    []string
		headers []string
		want    int
	}{
		{"one subject", []string{"p1"}, nil, acceptedSessionStatements},
		{"three subjects", []string{"p1", "p2", "p3"}, nil, acceptedSessionStatements},
		{"three subjects, Idempotency-Key", []string{"p1", "p2", "p3"}, []string{"Idempotency-Key", "roundtrips-1"}, keyedSessionStatements},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, onPostgres()).committing()
			subjects := make([]map[string]any, len(tc.refs))
			for i, ref := range tc.refs {
				e.approved(ref)
				subjects[i] = subject(ref) // 2 images each
			}
			statements := e.sessionStatements(tc.headers, subjects...)
			require.Equal(t, tc.want, len(statements),
				"statements of one accepted session of %d subjects:\n%s", len(tc.refs), strings.Join(statements, "\n"))
			require.Equal(t, int64(2*len(tc.refs)), e.count(&models.Job{}, "1 = 1"))
		})
	}
}

// The start marks of the orders accepted within 20 ms (internal/engine's startMarks) are one
// UPDATE, without the BEGIN and COMMIT gorm would wrap around it.
func TestStartMarksAreOneStatement(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onPostgres())
	stop := e.recordStatements()
	require.NoError(t, models.MarkOrdersStarted(e.db, time.Now(), models.NewID(), models.NewID()))
	statements := stop()
	require.Len(t, statements, 1, strings.Join(statements, "\n"))
	require.True(t, strings.HasPrefix(statements[0], `UPDATE "orders"`), statements[0])
}
