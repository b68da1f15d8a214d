package engine_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// A claim of an upload is left behind when the process that took it dies before it stored or
// released the bytes (an API restarted under a slow PUT whose drain ended first, a crash between a
// collection's claim and its copy). Once no request could still hold it (UploadTimeout and a
// margin after it was taken), it is taken again: the PUT sent again is received, the bytes that
// arrived in the store are collected, by their first use or by the sweep for the jobs that wait
// for them. A claim younger than that is a request still at work: a second PUT is refused.
func TestAnUploadClaimLeftByADeadProcessIsTakenAgain(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		d := apitest.NewDeps(t, db, apitest.Options{TaskQueue: "claims", Temporal: apitest.TemporalOptions{OnlyPrefix: "prepare-input/"}})
		cfg := d.EngineConfig
		cfg.UploadTimeout = 15 * time.Minute
		eng := engine.New(cfg)
		acc, inst := uploadTenant(t, db, d)

		good := testimage.GradientPNG(t, 64, 48)
		now := time.Now().UTC()
		declare := func() string {
			id, err := eng.Uploads.DeclareUpload(ctx, engine.UploadDeclaration{AccountID: acc.ID, InstallationID: inst.ID,
				Filename: "p.png", ContentType: "image/png", SizeBytes: int64(len(good)), ExpiresAt: now.Add(80 * time.Minute)})
			require.NoError(t, err)
			return id
		}
		// claimedAgo leaves the upload claimed by a process that died ago.
		claimedAgo := func(id string, ago time.Duration) {
			require.NoError(t, db.Model(&models.Asset{}).Where("id = ?", id).
				Updates(map[string]any{"status": status.AssetUploading, "updated_at": now.Add(-ago)}).Error)
		}
		assetStatus := func(id string) string {
			var a models.Asset
			require.NoError(t, db.Take(&a, "id = ?", id).Error)
			return a.Status
		}
		send := func(id string) error {
			_, err := eng.Uploads.ReceiveUpload(ctx, engine.UploadBytes{ID: id, ContentType: "image/png",
				ContentLength: int64(len(good)), Body: bytes.NewReader(good)})
			return err
		}

		// The API's PUT.
		abandoned := declare()
		claimedAgo(abandoned, 35*time.Minute)
		require.NoError(t, send(abandoned), "the PUT of an upload whose claim a dead process left")
		assert.Equal(t, status.AssetProcessing, assetStatus(abandoned))
		busy := declare()
		require.NoError(t, eng.Uploads.ClaimUpload(ctx, busy))
		e := wantKind(t, send(busy), engine.KindConflict, "a PUT while another one holds the upload")
		assert.Equal(t, engine.ReasonUploadNotAccepted, e.Reason)

		// Straight to the store: its first use, and the sweep.
		arrived := func(ago time.Duration) string {
			id := declare()
			require.NoError(t, d.Blobs.Put(ctx, engine.IncomingKey(acc.ID, id), good, "image/png"))
			claimedAgo(id, ago)
			return id
		}
		used, recent, awaited := arrived(35*time.Minute), arrived(time.Minute), arrived(35*time.Minute)
		require.NoError(t, eng.Uploads.CollectUpload(ctx, inst.ID, used, ""))
		assert.Equal(t, status.AssetProcessing, assetStatus(used), "collected by its first use")
		require.NoError(t, eng.Uploads.CollectUpload(ctx, inst.ID, recent, ""))
		assert.Equal(t, status.AssetUploading, assetStatus(recent), "a collection still at work is left to it")
		order := models.Order{ID: models.NewID(), AccountID: acc.ID, InstallationID: &inst.ID, API: models.APIPlugin,
			JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 2,
			WorkflowStartedAt: &now, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.Create(&order).Error)
		for i, id := range []string{recent, awaited} {
			j := models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: acc.ID, InstallationID: &inst.ID, Position: i,
				JobType: jobtype.PhotoShoot, ProductRef: "p", AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1,
				Run: 1, Status: status.JobPending, Voting: models.VotingPending, InputAssetID: &id, CreatedAt: now, UpdatedAt: now}
			require.NoError(t, db.Create(&j).Error)
		}
		n, err := eng.Uploads.CollectAwaitedUploads(ctx, 100)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "the sweep collects the upload a dead collection left, not the one at work")
		assert.Equal(t, status.AssetProcessing, assetStatus(awaited))
		assert.Equal(t, status.AssetUploading, assetStatus(recent))
		assert.ElementsMatch(t, []string{workflows.PrepareInputWorkflowID(abandoned), workflows.PrepareInputWorkflowID(used),
			workflows.PrepareInputWorkflowID(awaited)}, d.Temporal.Started("prepare-input/"))
	})
}
