package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// resendAfterCheck is the store of a client that sends its direct upload again, other bytes under
// the same still-valid URL, right after the collection checked the first ones (ReadPrefix).
type resendAfterCheck struct {
	engine.Blobs
	once   sync.Once
	key    string
	resend func()
}

func (r *resendAfterCheck) ReadPrefix(ctx context.Context, key string, n int64, etag string) ([]byte, error) {
	head, err := r.Blobs.ReadPrefix(ctx, key, n, etag)
	if key == r.key {
		r.once.Do(r.resend)
	}
	return head, err
}

// A collection copies the version of a direct upload it checked, or nothing: bytes a client sent
// again between the check and the copy are not collected unchecked (they would have gone to the
// preparation, which refuses them: the upload invalid for good); the upload stays awaiting, and
// the next look checks and collects the bytes that are there. On a real S3 server.
func TestAnUploadSentAgainDuringItsCollectionIsCheckedAgain(t *testing.T) {
	t.Parallel()
	srv := s3server.Start(t)
	srv.Setenv(t)
	ctx := context.Background()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	d := apitest.NewDeps(t, db, apitest.Options{TaskQueue: "resent", BlobURL: srv.URL(),
		Temporal: apitest.TemporalOptions{OnlyPrefix: "prepare-input/"}})
	acc, inst := uploadTenant(t, db, d)

	checked := testimage.GradientPNG(t, 64, 48)
	other := make([]byte, len(checked)) // the same length (the URL binds it), no image at all
	now := time.Now().UTC()
	exp := now.Add(2 * time.Hour)
	id := models.NewID()
	a := models.Asset{ID: id, AccountID: acc.ID, InstallationID: &inst.ID, Kind: models.AssetKindUpload,
		Status: status.AssetAwaitingUpload, ContentType: "image/png", SizeBytes: int64(len(checked)),
		BlobKey: "uploads/" + acc.ID + "/" + id, UploadExpiresAt: &exp, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Create(&a).Error)
	incoming := engine.IncomingKey(acc.ID, id)
	require.NoError(t, d.Blobs.Put(ctx, incoming, checked, "image/png"))

	cfg := d.EngineConfig
	cfg.Blobs = &resendAfterCheck{Blobs: d.Blobs, key: incoming, resend: func() {
		require.NoError(t, d.Blobs.Put(ctx, incoming, other, "image/png"))
	}}
	eng := engine.New(cfg)

	err := eng.Uploads.CollectUpload(ctx, inst.ID, id, "asset_id")
	var refused *engine.Error
	if err != nil && !assert.ErrorAs(t, err, &refused) {
		t.FailNow()
	}
	var got models.Asset
	require.NoError(t, db.Take(&got, "id = ?", id).Error)
	assert.Equal(t, status.AssetAwaitingUpload, got.Status, "the upload collected bytes sent after its check")
	assert.Empty(t, d.Temporal.Started("prepare-input/"), "a preparation started for bytes sent after the check")
	if _, err := d.Blobs.Stat(ctx, a.BlobKey); err == nil {
		t.Error("the bytes sent after the check were copied to the upload's key")
	}

	// The next look checks what is there now, and refuses it.
	err = eng.Uploads.CollectUpload(ctx, inst.ID, id, "asset_id")
	require.ErrorAs(t, err, &refused, "the bytes sent again are checked, and they are no PNG")
}
