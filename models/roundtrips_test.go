package models_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// Writes that are one statement go to PostgreSQL as that statement alone: gorm wraps every write
// outside a transaction in one of its own (BEGIN, the statement, COMMIT) unless told not to.

// The start marks of the orders accepted within 20 ms (internal/engine's startMarks) are one
// UPDATE.
func TestStartMarksAreOneStatement(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	stop := testdb.RecordStatements(db)
	require.NoError(t, models.MarkOrdersStarted(db, time.Now(), models.NewID(), models.NewID()))
	statements := stop()
	require.Len(t, statements, 1, strings.Join(statements, "\n"))
	require.True(t, strings.HasPrefix(statements[0], `UPDATE "orders"`), statements[0])
}

// A job's attempt begins with one UPDATE, which refuses a job that has ended.
func TestBeginAttemptIsOneStatement(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	acc, err := models.CreateAccount(db, "acme", 100)
	require.NoError(t, err)
	order, jobs := orderOf(acc.ID, 2, 4, time.Now().UTC())
	require.NoError(t, models.PlaceOrder(db, order, jobs, nil))

	stop := testdb.RecordStatements(db)
	require.NoError(t, models.BeginAttempt(db, jobs[0].ID, 1, 1))
	statements := stop()
	require.Len(t, statements, 1, strings.Join(statements, "\n"))
	require.True(t, strings.HasPrefix(statements[0], `UPDATE "jobs"`), statements[0])

	got, err := models.GetJob(db, jobs[0].ID)
	require.NoError(t, err)
	require.Equal(t, status.JobInProgress, got.Status)
	require.Equal(t, 1, got.AttemptCount)
	require.NotNil(t, got.StartedAt)

	require.NoError(t, db.Model(&models.Job{}).Where("id = ?", jobs[1].ID).Update("status", status.JobCompleted).Error)
	require.True(t, errors.Is(models.BeginAttempt(db, jobs[1].ID, 1, 1), models.ErrJobNotRunnable))
	require.True(t, errors.Is(models.BeginAttempt(db, jobs[0].ID, 2, 1), models.ErrJobNotRunnable), "another run")
}

// errorLog is a gorm logger that keeps the database errors of the statements it traces.
type errorLog struct {
	mu     sync.Mutex
	errors []string
}

func (l *errorLog) LogMode(logger.LogLevel) logger.Interface { return l }
func (l *errorLog) Info(context.Context, string, ...any)     {}
func (l *errorLog) Warn(context.Context, string, ...any)     {}
func (l *errorLog) Error(context.Context, string, ...any)    {}
func (l *errorLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), err error) {
	if err == nil || errors.Is(err, gorm.ErrRecordNotFound) {
		return
	}
	sql, _ := fc()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, err.Error()+": "+sql)
}

// A refused order (a short balance) is an answer, not a database error: the one statement of
// PlaceOrder reserves only when the balance covers the order and writes the order only when it
// reserved, so PostgreSQL logs no ERROR for a 402. It is still one statement alone, and inside a
// transaction it leaves the transaction usable.
func TestRefusedOrderRaisesNoDatabaseError(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	acc, err := models.CreateAccount(db, "acme", 11)
	require.NoError(t, err)
	errs := &errorLog{}
	logged := db.Session(&gorm.Session{Logger: errs})

	order, jobs := orderOf(acc.ID, 3, 4, time.Now().UTC())
	stop := testdb.RecordStatements(db)
	err = models.PlaceOrder(logged, order, jobs, nil)
	statements := stop()
	require.ErrorIs(t, err, models.ErrInsufficientCredits)
	require.Len(t, statements, 1, strings.Join(statements, "\n"))
	require.Empty(t, errs.errors)

	order, jobs = orderOf(acc.ID, 3, 4, time.Now().UTC())
	require.NoError(t, logged.Transaction(func(tx *gorm.DB) error {
		require.ErrorIs(t, models.CreateOrder(tx, order, jobs), models.ErrInsufficientCredits)
		var n int64 // the transaction goes on: PostgreSQL did not abort it
		return tx.Model(&models.Order{}).Where("account_id = ?", acc.ID).Count(&n).Error
	}))
	require.Empty(t, errs.errors)
	assertNoOrder(t, db, acc.ID, 11)

	order, jobs = orderOf(models.NewID(), 3, 4, time.Now().UTC())
	require.ErrorIs(t, models.PlaceOrder(logged, order, jobs, nil), models.ErrNotFound, "an unknown account")
	require.Empty(t, errs.errors)
}
