package models_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// A job that has not begun is cancelled in one transaction: the job, its reservation and its
// order's counters. One that has begun, has ended (cancelled included) or runs another run is left
// as it is.
func TestCancelJobNotBegun(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 10)
		require.NoError(t, err)
		order, jobs, err := newOrder(t, db, acc.ID, 3, 2)
		require.NoError(t, err)

		j, ok, err := s.CancelJobNotBegun(ctx, jobs[0].ID, 1, status.CancelRequested)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, status.JobCancelled, j.Status)
		require.NotNil(t, j.CompletedAt)
		require.NotNil(t, j.CancelReason)
		require.Equal(t, status.CancelRequested, *j.CancelReason)
		got, err := s.GetAccount(ctx, acc.ID)
		require.NoError(t, err)
		require.Equal(t, int64(2*2), got.CreditsReserved)
		require.Equal(t, int64(10-2*2), got.CreditBalance)
		var o models.Order
		require.NoError(t, db.Take(&o, "id = ?", order.ID).Error)
		require.Equal(t, 1, o.JobsCancelled)

		// Cancelled is final: a second cancel changes nothing, not even the ledger.
		_, ok, err = s.CancelJobNotBegun(ctx, jobs[0].ID, 1, status.CancelRequested)
		require.NoError(t, err)
		require.False(t, ok)
		// A job whose first attempt has begun cannot be cancelled, nor one of another run.
		require.NoError(t, s.BeginAttempt(ctx, jobs[1].ID, 1, 1))
		_, ok, err = s.CancelJobNotBegun(ctx, jobs[1].ID, 1, status.CancelRequested)
		require.NoError(t, err)
		require.False(t, ok)
		_, ok, err = s.CancelJobNotBegun(ctx, jobs[2].ID, 2, status.CancelRequested)
		require.NoError(t, err)
		require.False(t, ok)
		// A job waiting for a retry has begun too.
		require.NoError(t, s.BeginAttempt(ctx, jobs[2].ID, 1, 1))
		require.NoError(t, s.MarkRetryPending(ctx, jobs[2].ID, 1, "TRANSIENT_INFRA", "", ""))
		_, ok, err = s.CancelJobNotBegun(ctx, jobs[2].ID, 1, status.CancelRequested)
		require.NoError(t, err)
		require.False(t, ok)

		var releases int64
		require.NoError(t, db.Model(&models.LedgerEntry{}).Where("order_id = ? AND kind = ?", order.ID, models.LedgerRelease).Count(&releases).Error)
		require.Equal(t, int64(1), releases)
		require.NoError(t, db.Take(&o, "id = ?", order.ID).Error)
		require.Equal(t, 1, o.JobsCancelled)
	})
}

// A cancel racing the first attempt's BeginAttempt: exactly one of them changes the job. When the
// cancel wins, the attempt is refused with ErrJobNotRunnable and the job never runs; when the
// attempt wins, the cancel is refused and the job has begun.
func TestCancelJobNotBegunRacesBeginAttempt(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		const n = 40
		acc, err := models.CreateAccount(db, "acme", n)
		require.NoError(t, err)
		order, jobs, err := newOrder(t, db, acc.ID, n, 1)
		require.NoError(t, err)

		cancelled := make([]bool, n)
		began := make([]error, n)
		cancelErr := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range jobs {
			wg.Go(func() {
				<-start
				_, cancelled[i], cancelErr[i] = s.CancelJobNotBegun(ctx, jobs[i].ID, 1, status.CancelRequested)
			})
			wg.Go(func() {
				<-start
				began[i] = s.BeginAttempt(ctx, jobs[i].ID, 1, 1)
			})
		}
		close(start)
		wg.Wait()

		wins := 0
		for i := range jobs {
			require.NoError(t, cancelErr[i])
			j, err := s.GetJob(ctx, jobs[i].ID)
			require.NoError(t, err)
			if cancelled[i] {
				wins++
				require.ErrorIs(t, began[i], models.ErrJobNotRunnable, "job %d: cancelled, yet its attempt began", i)
				require.Equal(t, status.JobCancelled, j.Status)
				require.Nil(t, j.StartedAt)
				require.Zero(t, j.AttemptCount)
			} else {
				require.NoError(t, began[i], "job %d: neither the cancel nor the attempt won", i)
				require.Equal(t, status.JobInProgress, j.Status)
				require.NotNil(t, j.StartedAt)
			}
		}
		var o models.Order
		require.NoError(t, db.Take(&o, "id = ?", order.ID).Error)
		require.Equal(t, wins, o.JobsCancelled)
		var releases int64
		require.NoError(t, db.Model(&models.LedgerEntry{}).Where("order_id = ? AND kind = ?", order.ID, models.LedgerRelease).Count(&releases).Error)
		require.Equal(t, int64(wins), releases)
		t.Logf("%d of %d cancels won", wins, n)
	})
}

// A delivery marked due is listed until its start is recorded; others never are.
func TestDeliveriesAwaitingStart(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 1)
		require.NoError(t, err)
		order, jobs, err := newOrder(t, db, acc.ID, 2, 0)
		require.NoError(t, err)
		inst, err := models.CreateInstallation(db, testBox(t), models.NewInstallation{AccountID: acc.ID, Name: "shop", RateLimitPerMin: 60}, "whsec_x")
		require.NoError(t, err)
		now := time.Now().UTC()
		var ids []string
		for i, j := range jobs {
			d := &models.WebhookDelivery{ID: models.NewID(), AccountID: acc.ID, InstallationID: &inst.Installation.ID, OrderID: &order.ID,
				JobID: &j.ID, Run: 1, Event: "job.cancelled", Payload: models.JSON(`{}`), CallbackURL: "https://example.com"}
			if i == 0 {
				d.StartDueAt = &now // recorded with its start owed, as RecordEvents records it
			}
			_, err := models.CreateWebhookDelivery(db, d)
			require.NoError(t, err)
			ids = append(ids, d.ID)
		}

		due, err := s.DeliveriesAwaitingStart(ctx, now.Add(time.Second), 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		require.Equal(t, ids[0], due[0].ID)
		due, err = s.DeliveriesAwaitingStart(ctx, now.Add(-time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, due, "a delivery due after the cutoff is the API's to start")

		require.NoError(t, s.MarkDeliveriesStarted(ctx, ids...))
		due, err = s.DeliveriesAwaitingStart(ctx, now.Add(time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, due)
	})
}
