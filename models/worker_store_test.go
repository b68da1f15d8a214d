package models_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// upload stores an upload of the account in the status.
func upload(t *testing.T, db *gorm.DB, accountID, st string) models.Asset {
	t.Helper()
	now := time.Now().UTC()
	a := models.Asset{ID: models.NewID(), AccountID: accountID, Kind: models.AssetKindUpload, Status: st,
		ContentType: "image/png", BlobKey: "uploads/" + models.NewID(), CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Create(&a).Error)
	return a
}

// The jobs an upload wakes are the unfinished ones of its account that read it: single-input jobs
// by their input, reels by their list of inputs.
func TestOpenJobsReading(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 0)
		require.NoError(t, err)
		other, err := models.CreateAccount(db, "other", 0)
		require.NoError(t, err)
		a, b := upload(t, db, acc.ID, status.AssetProcessing), upload(t, db, acc.ID, status.AssetReady)

		single := func(accountID, input, st string) string {
			order, jobs := orderOf(accountID, 1, 0, time.Now().UTC())
			jobs[0].InputAssetIDs, jobs[0].InputAssetID, jobs[0].Status = nil, &input, st
			require.NoError(t, db.Create(order).Error)
			require.NoError(t, db.Create(&jobs).Error)
			return jobs[0].ID
		}
		reel := func(st string, inputs ...string) string {
			order, jobs := orderOf(acc.ID, 1, 0, time.Now().UTC())
			order.JobType, jobs[0].JobType, jobs[0].Status = jobtype.Reel, jobtype.Reel, st
			jobs[0].SetInputs(inputs)
			require.NoError(t, db.Create(order).Error)
			require.NoError(t, db.Create(&jobs).Error)
			return jobs[0].ID
		}
		want := []string{
			single(acc.ID, a.ID, status.JobPending),
			single(acc.ID, a.ID, status.JobRetryPending),
			reel(status.JobInProgress, b.ID, a.ID),
		}
		single(acc.ID, a.ID, status.JobCompleted)
		single(acc.ID, b.ID, status.JobPending)
		single(other.ID, a.ID, status.JobPending)
		reel(status.JobPending, b.ID)

		jobs, err := s.OpenJobsReading(ctx, a.ID)
		require.NoError(t, err)
		var got []string
		for _, j := range jobs {
			require.Equal(t, 1, j.Run)
			got = append(got, j.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		require.Equal(t, want, got)

		_, err = s.OpenJobsReading(ctx, models.NewID())
		require.ErrorIs(t, err, models.ErrNotFound)
	})
}

// Preparation marks an upload ready or invalid only while it is in processing, so a repeated
// execution changes nothing.
func TestMarkAssetReadyOrInvalid(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 0)
		require.NoError(t, err)
		plain, upscaled, broken := upload(t, db, acc.ID, status.AssetProcessing), upload(t, db, acc.ID, status.AssetProcessing),
			upload(t, db, acc.ID, status.AssetProcessing)

		require.NoError(t, s.MarkAssetReady(ctx, plain.ID, models.PreparedAsset{Width: 3, Height: 4, ThumbnailBlobKey: "p.thumb.jpg"}))
		require.NoError(t, s.MarkAssetReady(ctx, upscaled.ID, models.PreparedAsset{Width: 5, Height: 6, ThumbnailBlobKey: "u.thumb.jpg", PreparedBlobKey: "u.prepared.png"}))
		require.NoError(t, s.MarkAssetInvalid(ctx, broken.ID, "not an image"))
		// Repeated or late marks leave the asset as it is.
		require.NoError(t, s.MarkAssetInvalid(ctx, plain.ID, "late"))
		require.NoError(t, s.MarkAssetReady(ctx, broken.ID, models.PreparedAsset{Width: 1, Height: 1, ThumbnailBlobKey: "b.thumb.jpg"}))

		got, err := s.GetAsset(ctx, plain.ID)
		require.NoError(t, err)
		require.Equal(t, []any{status.AssetReady, 3, 4, "p.thumb.jpg", "", ""},
			[]any{got.Status, got.Width, got.Height, got.ThumbnailBlobKey, got.PreparedBlobKey, got.Problem})
		got, err = s.GetAsset(ctx, upscaled.ID)
		require.NoError(t, err)
		require.Equal(t, []any{status.AssetReady, 5, 6, "u.thumb.jpg", "u.prepared.png"},
			[]any{got.Status, got.Width, got.Height, got.ThumbnailBlobKey, got.PreparedBlobKey})
		got, err = s.GetAsset(ctx, broken.ID)
		require.NoError(t, err)
		require.Equal(t, []any{status.AssetInvalid, "not an image", ""}, []any{got.Status, got.Problem, got.ThumbnailBlobKey})
	})
}

// A failed attempt shows its job retry_pending with the attempt's error, unless the run has ended
// or is not the job's current one; GetOrder finds an order or answers ErrNotFound.
func TestMarkRetryPendingAndGetOrder(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 0)
		require.NoError(t, err)
		order, jobs := orderOf(acc.ID, 2, 0, time.Now().UTC())
		jobs[1].Status = status.JobFailed
		require.NoError(t, db.Create(order).Error)
		require.NoError(t, db.Create(&jobs).Error)

		require.NoError(t, s.MarkRetryPending(ctx, jobs[0].ID, 2, "TIMEOUT", "hint", "another run"))
		require.NoError(t, s.MarkRetryPending(ctx, jobs[1].ID, 1, "TIMEOUT", "hint", "ended"))
		for _, j := range jobs {
			got, err := s.GetJob(ctx, j.ID)
			require.NoError(t, err)
			require.Equal(t, j.Status, got.Status)
			require.Nil(t, got.ErrorCategory)
		}
		require.NoError(t, s.MarkRetryPending(ctx, jobs[0].ID, 1, "TIMEOUT", "try later", "took too long"))
		got, err := s.GetJob(ctx, jobs[0].ID)
		require.NoError(t, err)
		require.Equal(t, status.JobRetryPending, got.Status)
		require.Equal(t, []string{"TIMEOUT", "try later", "took too long"}, []string{*got.ErrorCategory, *got.ErrorHint, got.ErrorDetail})

		o, err := s.GetOrder(ctx, order.ID)
		require.NoError(t, err)
		require.Equal(t, order.CorrelationID, o.CorrelationID)
		_, err = s.GetOrder(ctx, models.NewID())
		require.ErrorIs(t, err, models.ErrNotFound)
	})
}
