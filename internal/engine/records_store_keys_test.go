package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// With the store's download URLs (FILE_URLS=store), the files of the views that are assets carry
// their key in the store and their type, for a URL of the store: a preset's cover and gallery,
// a video record's video and its input's thumbnail (Preview: the thumbnail's key, a JPEG). A
// purged file and a seeded reference image carry none (the API's routes answer for them), and
// with the API's URLs no view carries one.
func TestViewsCarryStoreKeysWithStoreURLs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, store := range []bool{true, false} {
		db := testdb.Open(t, testdb.SQLiteURL(t))
		require.NoError(t, models.SeedReference(db))
		d := apitest.NewDeps(t, db, apitest.Options{StoreFiles: store, PublicBase: "https://cdn.example.com"})
		acc, err := models.CreateAccount(db, "team", 100)
		require.NoError(t, err)
		key := func(k string) string {
			if store {
				return k
			}
			return ""
		}
		typ := func(t string) string { return key(t) }

		preset, err := d.Engine.Records.CreateAccountPreset(ctx, acc.ID, engine.NewPreset{
			Fields: engine.PresetFields{Name: ptr("Mine"), QuantityGuidelines: ptr("q"), QualityGuidelines: ptr("q")},
			Cover:  ptrTo(pngFile(t, "cover")), Gallery: []engine.ImageFile{pngFile(t, "gallery")}})
		require.NoError(t, err)
		listed, err := d.Engine.Records.ListAccountPresets(ctx, acc.ID, 0)
		require.NoError(t, err)
		for _, p := range []engine.Preset{preset, own(t, listed, preset.ID)} {
			for _, img := range []engine.PresetImage{*p.Cover, p.Gallery[0]} {
				var a models.Asset
				require.NoError(t, db.Take(&a, "id = ?", img.File.AssetID).Error)
				assert.Equal(t, key(a.BlobKey), img.File.StoreKey)
				assert.Equal(t, typ("image/png"), img.File.ContentType)
			}
		}
		for _, p := range listed {
			if p.System && p.Cover != nil {
				assert.Empty(t, p.Cover.File.StoreKey, "a seeded image is served by the API")
			}
		}

		// A completed video job: its output is the video, its input's preview the thumbnail.
		now := time.Now().UTC()
		input := models.Asset{ID: models.NewID(), AccountID: acc.ID, Kind: models.AssetKindUpload, Status: status.AssetReady,
			ContentType: "image/png", BlobKey: "uploads/in", ThumbnailBlobKey: "thumbnails/in.jpg", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.Create(&input).Error)
		order := models.Order{ID: models.NewID(), AccountID: acc.ID, API: models.APIExternal, JobType: jobtype.Video,
			SessionConfig: models.JSON(`{}`), Status: status.OrderCompleted, JobsTotal: 2, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.Create(&order).Error)
		var videos []string
		for i := range 2 {
			j := models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: acc.ID, Position: i, JobType: jobtype.Video,
				ProductRef: "p", AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: status.JobCompleted,
				Voting: models.VotingPending, InputAssetID: &input.ID, CreatedAt: now.Add(time.Duration(i) * time.Second), UpdatedAt: now, CompletedAt: &now}
			require.NoError(t, db.Create(&j).Error)
			out := models.Asset{ID: models.NewID(), AccountID: acc.ID, Kind: models.AssetKindOutput, Status: status.AssetReady,
				ContentType: "video/mp4", BlobKey: "outputs/" + j.ID + ".mp4", JobID: &j.ID, CreatedAt: now, UpdatedAt: now}
			require.NoError(t, db.Create(&out).Error)
			videos = append(videos, j.ID)
		}
		// The first job's video is purged: its record lists no video.
		require.NoError(t, db.Model(&models.Asset{}).Where("job_id = ?", videos[0]).Update("purged_at", now).Error)
		recs, more, err := d.Engine.Records.ListAccountVideos(ctx, acc.ID, engine.RecordPage{})
		require.NoError(t, err)
		require.Len(t, recs, 2)
		require.False(t, more)
		byID := map[string]engine.Record{recs[0].ID: recs[0], recs[1].ID: recs[1]}
		kept := byID[videos[1]]
		assert.Equal(t, key("outputs/"+videos[1]+".mp4"), kept.Video.StoreKey)
		assert.Equal(t, typ("video/mp4"), kept.Video.ContentType)
		assert.True(t, kept.Thumbnail.Preview)
		assert.Equal(t, key("thumbnails/in.jpg"), kept.Thumbnail.StoreKey)
		assert.Equal(t, typ("image/jpeg"), kept.Thumbnail.ContentType)
		assert.Empty(t, byID[videos[0]].Video.AssetID)
		assert.Empty(t, byID[videos[0]].Video.StoreKey)

		// A purged preset image keeps the API's URL (whose route answers 410).
		require.NoError(t, db.Model(&models.Asset{}).Where("id = ?", preset.Cover.File.AssetID).Update("purged_at", now).Error)
		listed, err = d.Engine.Records.ListAccountPresets(ctx, acc.ID, 0)
		require.NoError(t, err)
		assert.Empty(t, own(t, listed, preset.ID).Cover.File.StoreKey)
	}
}

// own is the preset id among presets.
func own(t *testing.T, presets []engine.Preset, id string) engine.Preset {
	t.Helper()
	for _, p := range presets {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("preset %s is not listed", id)
	return engine.Preset{}
}

func ptrTo[T any](v T) *T { return &v }
