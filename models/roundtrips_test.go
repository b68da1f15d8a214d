package models_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
