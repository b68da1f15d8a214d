package models_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// EndedJobRuns reports the runs of the order's jobs that have ended: terminal on that run with
// the row's status, or moved on to a later run (then failed). A job of another order is never
// read: it is reported failed, whatever its row says.
func TestEndedJobRuns(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 0)
		require.NoError(t, err)
		order, jobs := orderOf(acc.ID, 5, 0, time.Now().UTC())
		for i, st := range []string{status.JobCompleted, status.JobInProgress, status.JobPending, status.JobCancelled, status.JobRetryPending} {
			jobs[i].Status = st
		}
		jobs[2].Run = 2 // run 1 failed and was run again
		require.NoError(t, db.Create(order).Error)
		require.NoError(t, db.Create(&jobs).Error)
		otherOrder, other := orderOf(acc.ID, 1, 0, time.Now().UTC())
		other[0].Status = status.JobCompleted
		require.NoError(t, db.Create(otherOrder).Error)
		require.NoError(t, db.Create(&other).Error)

		runs := []models.JobRun{
			{JobID: jobs[0].ID, Run: 1}, {JobID: jobs[1].ID, Run: 1}, {JobID: jobs[2].ID, Run: 1},
			{JobID: jobs[3].ID, Run: 1}, {JobID: jobs[4].ID, Run: 1}, {JobID: other[0].ID, Run: 1},
			{JobID: jobs[2].ID, Run: 2},
		}
		got, err := s.EndedJobRuns(ctx, order.ID, runs)
		require.NoError(t, err)
		require.Equal(t, []models.JobRunEnd{
			{JobID: jobs[0].ID, Run: 1, Status: status.JobCompleted},
			{JobID: jobs[2].ID, Run: 1, Status: status.JobFailed},
			{JobID: jobs[3].ID, Run: 1, Status: status.JobCancelled},
			{JobID: other[0].ID, Run: 1, Status: status.JobFailed},
		}, got)

		none, err := s.EndedJobRuns(ctx, order.ID, []models.JobRun{{JobID: jobs[1].ID, Run: 1}})
		require.NoError(t, err)
		require.Empty(t, none)
	})
}
