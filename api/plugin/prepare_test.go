package plugin_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// invalidAsset stores an upload that its preparation found unusable.
func (e *env) invalidAsset() models.Asset {
	e.t.Helper()
	a := e.readyAsset(e.inst)
	require.NoError(e.t, e.db.Model(&a).Updates(map[string]any{
		"status": status.AssetInvalid, "problem": "the file is text/plain; charset=utf-8, not the declared image/png",
	}).Error)
	return e.asset(a.ID)
}

// An upload found unusable is refused wherever it would become an input, naming the problem.
func TestUnusableUploadsAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bad := e.invalidAsset()

	res := e.registerPackshots(e.key, map[string]any{"asset_id": bad.ID, "product_ref": "mug",
		"product_metadata": map[string]any{"display_name": "Mug"}})
	require.Equal(t, "error", res[0]["status"], "%v", res[0])
	msg := res[0]["error"].(map[string]any)["message_i18n"].(map[string]any)["en"].(string)
	assert.Contains(t, msg, bad.Problem)
	assert.EqualValues(t, 0, e.count(&models.Packshot{}, "asset_id = ?", bad.ID))

	images := e.registerImages(e.key, map[string]any{"asset_id": bad.ID, "external_ref": "mug-1", "product_ref": "mug",
		"product_metadata": map[string]any{"display_name": "Mug"}})
	require.Equal(t, "error", images[0]["status"], "%v", images[0])

	e.product(e.inst, "mug")
	msg = e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, map[string]any{
		"job_type": "packshot", "session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects": []map[string]any{{"product_ref": "mug", "images_count": 1, "ai_model": "local/studio-v1",
			"auto_register_packshot": true, "packshot_asset_id": bad.ID}},
	}), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "packshot_asset_id")
	assert.Contains(t, msg, bad.Problem)
	e.noOrders()
}

// A thumbnail URL is signed for its own path, and an upload without a thumbnail has none.
func TestThumbnailDownloads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.readyAsset(e.inst)
	expires := time.Now().Add(time.Hour)
	e.requireError(e.download(e.signer.URL(http.MethodGet, jobview.ThumbnailPath(a.ID), expires)), http.StatusNotFound, plugin.CodeNotFound)

	// A download URL's signature does not open the thumbnail.
	fileURL, err := url.Parse(e.signer.URL(http.MethodGet, jobview.FilePath(a.ID), expires))
	require.NoError(t, err)
	e.requireError(e.download(jobview.ThumbnailPath(a.ID)+"?"+fileURL.RawQuery), http.StatusForbidden, plugin.CodeForbidden)
}

// POST /packshots accepts an upload still being prepared ("a job waits for it") and approves it
// at once. When its preparation then finds it unusable (PrepareAsset marks it invalid), no job can
// read the product's approved packshot: a photo session is refused 422 packshot_not_approved,
// saying why, and creates nothing (it was accepted and charged, and each job could only fail
// INPUT_MISSING).
func TestPhotoSessionFromAnUnusableApprovedPackshotIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	upload := e.readyAsset(e.inst)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", upload.ID).Update("status", status.AssetProcessing).Error)
	res := e.registerPackshots(e.key, map[string]any{"asset_id": upload.ID, "product_ref": "mug",
		"product_metadata": map[string]any{"display_name": "Mug"}})
	require.Equal(t, "created", res[0]["status"], "%v", res[0])
	require.Equal(t, "accepted", res[0]["packshot"].(map[string]any)["voting"])
	// Its preparation finds the file unusable (activities.PrepareAsset).
	problem := "the file is text/plain; charset=utf-8, not the declared image/png"
	require.NoError(t, models.NewStore(e.db).MarkAssetInvalid(context.Background(), upload.ID, problem))

	rec := e.do(http.MethodPost, p("/jobs"), e.key, session(subject("mug")))
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code, rec.Body.String())
	e.requireErrorDetails(rec, http.StatusUnprocessableEntity, plugin.CodePackshotNotApproved)
	require.Contains(t, rec.Body.String(), "the approved packshot of mug cannot be used (the file is text/plain")
	e.noOrders()
}
