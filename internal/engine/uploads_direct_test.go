package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// uploadTenant stores an account with 100 credits and an installation of it, the tenant of the
// uploads tests.
func uploadTenant(t *testing.T, db *gorm.DB, d *apitest.Deps) (*models.Account, models.Installation) {
	t.Helper()
	acc, err := models.CreateAccount(db, "Acme", 100)
	require.NoError(t, err)
	created, err := models.CreateInstallation(db, d.Box, models.NewInstallation{AccountID: acc.ID, Name: "shop"}, "whsec")
	require.NoError(t, err)
	return acc, created.Installation
}

// The outbox sweep collects the uploads sent straight to the store that open jobs wait for and
// nobody used yet (CollectAwaitedUploads): an upload whose good bytes arrived is copied to its key,
// moved to processing and its preparation started, once; one whose bytes are not what it declared
// is refused, its bytes deleted, and it keeps awaiting; one not sent yet, and one no open job waits
// for, are left. Each sweep counts what it collected as upload_collection.
func TestSweepCollectsAwaitedUploads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	d := apitest.NewDeps(t, db, apitest.Options{TaskQueue: "collect", Temporal: apitest.TemporalOptions{OnlyPrefix: "prepare-input/"}})
	cfg := d.EngineConfig
	cfg.Metrics = metrics.New()
	defer cfg.Metrics.Close()
	eng := engine.New(cfg)
	acc, inst := uploadTenant(t, db, d)

	good := testimage.GradientPNG(t, 64, 48)
	now := time.Now().UTC()
	upload := func(minute int) models.Asset {
		id := models.NewID()
		at := now.Add(time.Duration(minute-10) * time.Minute)
		exp := at.Add(2 * time.Hour)
		a := models.Asset{ID: id, AccountID: acc.ID, InstallationID: &inst.ID, Kind: models.AssetKindUpload,
			Status: status.AssetAwaitingUpload, ContentType: "image/png", SizeBytes: int64(len(good)),
			BlobKey: "uploads/" + acc.ID + "/" + id, UploadExpiresAt: &exp, CreatedAt: at, UpdatedAt: at}
		require.NoError(t, db.Create(&a).Error)
		return a
	}
	arrived, wrong, notSent, unused := upload(1), upload(2), upload(3), upload(4)
	put := func(a models.Asset, data []byte) {
		require.NoError(t, d.Blobs.Put(ctx, engine.IncomingKey(a.AccountID, a.ID), data, "image/png"))
	}
	put(arrived, good)
	put(wrong, good[:len(good)-5]) // fewer bytes than declared
	put(unused, good)
	order := models.Order{ID: models.NewID(), AccountID: acc.ID, InstallationID: &inst.ID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 3,
		WorkflowStartedAt: &now, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Create(&order).Error)
	for i, a := range []models.Asset{arrived, wrong, notSent} {
		j := models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: acc.ID, InstallationID: &inst.ID, Position: i,
			JobType: jobtype.PhotoShoot, ProductRef: "p", AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1,
			Run: 1, Status: status.JobPending, Voting: models.VotingPending, InputAssetID: &a.ID, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.Create(&j).Error)
	}
	assetStatus := func(a models.Asset) string {
		var got models.Asset
		require.NoError(t, db.Take(&got, "id = ?", a.ID).Error)
		return got.Status
	}
	incoming := func(a models.Asset) bool {
		_, err := d.Blobs.Stat(ctx, engine.IncomingKey(a.AccountID, a.ID))
		if err != nil {
			require.ErrorIs(t, err, blobstore.ErrNotFound)
		}
		return err == nil
	}

	n, err := eng.Uploads.CollectAwaitedUploads(ctx, 100)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one upload collected")
	assert.Equal(t, status.AssetProcessing, assetStatus(arrived))
	stored, err := d.Blobs.Get(ctx, arrived.BlobKey)
	require.NoError(t, err)
	assert.Equal(t, good, stored)
	assert.False(t, incoming(arrived), "the collected bytes are no longer incoming")
	assert.Equal(t, []string{workflows.PrepareInputWorkflowID(arrived.ID)}, d.Temporal.Started("prepare-input/"))
	assert.Equal(t, status.AssetAwaitingUpload, assetStatus(wrong))
	assert.False(t, incoming(wrong), "refused bytes are deleted")
	assert.Equal(t, status.AssetAwaitingUpload, assetStatus(notSent))
	assert.Equal(t, status.AssetAwaitingUpload, assetStatus(unused))
	assert.True(t, incoming(unused), "an upload no open job waits for is collected when used, not by the sweep")

	n, err = eng.Uploads.CollectAwaitedUploads(ctx, 100)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing new arrived")
	assert.Len(t, d.Temporal.Started("prepare-input/"), 1, "a collected upload is prepared once")

	// The sweep of a worker collects what arrives later, and counts it.
	put(notSent, good)
	sweepCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		eng.Outbox.Sweep(sweepCtx, time.Hour, time.Hour)
	}()
	require.Eventually(t, func() bool { return len(d.Temporal.Started("prepare-input/")) == 2 }, 10*time.Second, 10*time.Millisecond)
	stop()
	<-done
	assert.Equal(t, status.AssetProcessing, assetStatus(notSent))
	scraped := metricstest.Serve(t, cfg.Metrics.WorkerHandler())
	assert.Equal(t, 1.0, scraped.Value(metrics.OutboxStarted, map[string]string{"kind": metrics.OutboxUploadCollection}))
}
