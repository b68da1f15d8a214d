package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// AwaitedUploads lists the uploads still awaiting their bytes that an open job (pending, in
// progress or waiting for a retry) names as its input, oldest first, each once however many jobs
// name it, up to the limit: not an upload no job names, nor one only ended jobs name, nor one that
// arrived (ClaimArrivedUpload takes it once), unless the process that claimed it died: a claim taken
// at or before the time given is listed and taken again.
func TestAwaitedUploads(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "Acme", 100)
		require.NoError(t, err)
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		upload := func(st string, minute int) models.Asset {
			id := models.NewID()
			at := base.Add(time.Duration(minute) * time.Minute)
			exp := at.Add(2 * time.Hour)
			a := models.Asset{ID: id, AccountID: acc.ID, Kind: models.AssetKindUpload, Status: st, ContentType: "image/png",
				SizeBytes: 10, BlobKey: "uploads/" + acc.ID + "/" + id, UploadExpiresAt: &exp, CreatedAt: at, UpdatedAt: at}
			require.NoError(t, db.Create(&a).Error)
			return a
		}
		second := upload(status.AssetAwaitingUpload, 2) // created before the first, listed after it
		first := upload(status.AssetAwaitingUpload, 1)
		third := upload(status.AssetAwaitingUpload, 3)
		unused := upload(status.AssetAwaitingUpload, 0)
		ended := upload(status.AssetAwaitingUpload, 0)
		arrived := upload(status.AssetProcessing, 0)

		inputs := []struct {
			asset  models.Asset
			status string
		}{
			{first, status.JobPending},
			{second, status.JobRetryPending}, {second, status.JobInProgress},
			{third, status.JobInProgress},
			{ended, status.JobCompleted}, {ended, status.JobFailed}, {ended, status.JobCancelled}, {ended, status.JobExpired},
			{arrived, status.JobPending},
		}
		order, jobs := orderOf(acc.ID, len(inputs), 1, base)
		for i, in := range inputs {
			jobs[i].InputAssetID, jobs[i].Status = &in.asset.ID, in.status
		}
		require.NoError(t, db.Create(order).Error)
		require.NoError(t, db.Create(&jobs).Error)

		now := time.Now().UTC()
		live := now.Add(-time.Minute) // claims taken before this were abandoned
		idsAbandonedBefore := func(abandonedBefore time.Time, limit int) []string {
			t.Helper()
			got, err := s.AwaitedUploads(ctx, abandonedBefore, limit)
			require.NoError(t, err)
			out := make([]string, len(got))
			for i, a := range got {
				out[i] = a.ID
				assert.Equal(t, a.AccountID, acc.ID)
			}
			return out
		}
		ids := func(limit int) []string {
			t.Helper()
			return idsAbandonedBefore(live, limit)
		}
		assert.Equal(t, []string{first.ID, second.ID, third.ID}, ids(10))
		assert.Equal(t, []string{first.ID, second.ID}, ids(2))
		assert.NotContains(t, ids(10), unused.ID)

		claimed, err := s.ClaimArrivedUpload(ctx, first.ID, now, live)
		require.NoError(t, err)
		assert.True(t, claimed)
		claimed, err = s.ClaimArrivedUpload(ctx, first.ID, now, live)
		require.NoError(t, err)
		assert.False(t, claimed, "an upload is claimed once")
		assert.Equal(t, []string{second.ID, third.ID}, ids(10))

		// The process that claimed it died: once its claim is older than any request, it is
		// listed and taken again, once.
		later := now.Add(time.Second)
		assert.Equal(t, []string{first.ID, second.ID, third.ID}, idsAbandonedBefore(later, 10))
		claimed, err = s.ClaimArrivedUpload(ctx, first.ID, later, later)
		require.NoError(t, err)
		assert.True(t, claimed, "an abandoned claim is taken again")
		claimed, err = s.ClaimArrivedUpload(ctx, first.ID, later, later.Add(-time.Millisecond))
		require.NoError(t, err)
		assert.False(t, claimed, "the new claim holds")
	})
}
