package plugin_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// registerImages posts images and returns the per-item results.
func (e *env) registerImages(key string, items ...map[string]any) []map[string]any {
	e.t.Helper()
	rec := e.do(http.MethodPost, p("/images"), key, map[string]any{"images": items})
	require.Equal(e.t, http.StatusOK, rec.Code, rec.Body.String())
	top := decode(e.t, rec)
	require.Equal(e.t, []string{"results"}, keysOf(top), rec.Body.String())
	raw, ok := top["results"].([]any)
	require.True(e.t, ok, rec.Body.String())
	require.Len(e.t, raw, len(items))
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i] = r.(map[string]any)
		require.Equal(e.t, float64(i), out[i]["index"])
		if out[i]["status"] == "error" {
			assert.NotContains(e.t, out[i], "image")
		} else {
			assert.NotContains(e.t, out[i], "error")
			assert.Equal(e.t, []string{"image", "index", "status"}, keysOf(out[i]))
		}
	}
	return out
}

// imageReg is one image registration with a new product.
func imageReg(ref, productRef, assetID string) map[string]any {
	return map[string]any{"external_ref": ref, "product_ref": productRef, "asset_id": assetID,
		"product_metadata": map[string]any{"display_name": "Product " + productRef}}
}

var imageKeys = []string{"asset_id", "created_at", "external_ref", "height", "id", "livemode", "product_id", "product_ref", "status", "thumbnail_url", "width"}

func TestRegisterImagesCreatesProductAndIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := testimage.GradientPNG(t, 6, 5)
	assetID, u := e.createUpload(e.key, "mug.png", "image/png", len(data))

	// Registered while the upload is still awaited: allowed, status awaiting_upload.
	res := e.registerImages(e.key, map[string]any{
		"external_ref": "img-1", "product_ref": "MUG", "asset_id": assetID,
		"product_metadata": map[string]any{"display_name": "  Red mug ", "sku": "RM-1"},
	})
	require.Equal(t, "created", res[0]["status"], "%v", res[0])
	img := res[0]["image"].(map[string]any)
	assert.Equal(t, imageKeys, keysOf(img))
	assert.Equal(t, "img-1", img["external_ref"])
	assert.Equal(t, "MUG", img["product_ref"])
	assert.Equal(t, assetID, img["asset_id"])
	assert.Equal(t, plugin.ImageAwaitingUpload, img["status"])
	assert.EqualValues(t, 0, img["width"])
	_, err := time.Parse(time.RFC3339Nano, img["created_at"].(string))
	require.NoError(t, err)

	var product models.Product
	require.NoError(t, e.db.Take(&product, "external_ref = ?", "MUG").Error)
	assert.Equal(t, img["product_id"], product.ID)
	assert.Equal(t, "Red mug", product.DisplayName)
	assert.Equal(t, "RM-1", product.SKU)
	require.NotNil(t, product.InstallationID)
	assert.Equal(t, e.inst.ID, *product.InstallationID)
	var stored models.ProductImage
	require.NoError(t, e.db.Take(&stored, "id = ?", img["id"]).Error)
	assert.Equal(t, product.ID, stored.ProductID)
	assert.Equal(t, e.account.ID, stored.AccountID)
	require.NotNil(t, stored.InstallationID)
	assert.Equal(t, e.inst.ID, *stored.InstallationID)

	// The bytes arrive: the image is processing, then ready with its dimensions and a thumbnail.
	require.Equal(t, http.StatusOK, e.put(u, "image/png", data, int64(len(data))).Code)
	res = e.registerImages(e.key, map[string]any{"external_ref": "img-1", "product_ref": "MUG", "asset_id": assetID})
	assert.Equal(t, plugin.ImageProcessing, res[0]["image"].(map[string]any)["status"])
	assert.Empty(t, res[0]["image"].(map[string]any)["thumbnail_url"])
	e.prepare(assetID)

	// The same external_ref again: the existing row, nothing new, even with other fields.
	other := e.readyAsset(e.inst)
	res = e.registerImages(e.key, map[string]any{"external_ref": "img-1", "product_ref": "MUG", "asset_id": other.ID})
	require.Equal(t, "existing", res[0]["status"], "%v", res[0])
	again := res[0]["image"].(map[string]any)
	assert.Equal(t, img["id"], again["id"])
	assert.Equal(t, assetID, again["asset_id"])
	assert.Equal(t, plugin.ImageReady, again["status"])
	assert.EqualValues(t, 6, again["width"])
	assert.EqualValues(t, 5, again["height"])
	thumb := e.download(again["thumbnail_url"].(string))
	require.Equal(t, http.StatusOK, thumb.Code, thumb.Body.String())
	assert.Equal(t, "image/jpeg", thumb.Header().Get("Content-Type"))
	assert.EqualValues(t, 1, e.count(&models.ProductImage{}, "1 = 1"))

	// A second image of the now existing product needs no metadata; within one call a new
	// product is created once and a repeated external_ref answers existing.
	res = e.registerImages(e.key,
		map[string]any{"external_ref": "img-2", "product_ref": "MUG", "asset_id": other.ID},
		imageReg("img-3", "CUP", e.readyAsset(e.inst).ID),
		map[string]any{"external_ref": "img-4", "product_ref": "CUP", "asset_id": e.readyAsset(e.inst).ID},
		imageReg("img-3", "CUP", e.readyAsset(e.inst).ID),
	)
	assert.Equal(t, []any{"created", "created", "created", "existing"},
		[]any{res[0]["status"], res[1]["status"], res[2]["status"], res[3]["status"]})
	assert.Equal(t, product.ID, res[0]["image"].(map[string]any)["product_id"])
	assert.Equal(t, res[1]["image"].(map[string]any)["id"], res[3]["image"].(map[string]any)["id"])
	assert.EqualValues(t, 2, e.count(&models.Product{}, "1 = 1"))
	assert.EqualValues(t, 4, e.count(&models.ProductImage{}, "1 = 1"))
}

func TestRegisterImagesPerItemErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otherInst, _ := e.otherInstallation()
	sameAccountInst, _ := e.addInstallation(e.account.ID, 0)
	mine := e.readyAsset(e.inst)
	theirs := e.readyAsset(otherInst)
	sibling := e.readyAsset(sameAccountInst)
	e.product(e.inst, "EXISTING")
	expired, _ := e.createUpload(e.key, "old.png", "image/png", 100)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", expired).
		Update("upload_expires_at", time.Now().UTC().Add(-time.Minute)).Error)
	// An upload whose PUT is in progress is fine.
	uploading, _ := e.createUpload(e.key, "now.png", "image/png", 100)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", uploading).Update("status", status.AssetUploading).Error)
	output := e.readyAsset(e.inst)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", output.ID).Update("kind", models.AssetKindOutput).Error)

	item := func(ref, product, asset string) map[string]any {
		return map[string]any{"external_ref": ref, "product_ref": product, "asset_id": asset}
	}
	res := e.registerImages(e.key,
		item("i0", "EXISTING", models.NewID()), // 0 unknown asset
		item("i1", "EXISTING", theirs.ID),      // 1 other account
		item("i2", "EXISTING", sibling.ID),     // 2 other installation, same account
		item("i3", "EXISTING", "not-a-uuid"),   // 3 malformed ID
		item("i4", "NEW-1", mine.ID),           // 4 unknown product, no metadata
		map[string]any{"external_ref": "i5", "product_ref": "NEW-2", "asset_id": mine.ID, // 5 blank name
			"product_metadata": map[string]any{"display_name": "  ", "sku": "X"}},
		item("i6", "EXISTING", expired),   // 6 upload URL expired unused
		item("i7", "EXISTING", output.ID), // 7 not an upload
		item("i8", "EXISTING", mine.ID),   // 8 fine
		item("i9", "EXISTING", uploading), // 9 fine: still uploading
	)
	for _, i := range []int{0, 1, 2, 3} {
		msg := requireItemError(t, res[i], http.StatusNotFound, plugin.CodeNotFound)
		assert.Contains(t, msg, "asset_id", "item %d", i)
	}
	for _, i := range []int{4, 5} {
		msg := requireItemError(t, res[i], http.StatusNotFound, plugin.CodeNotFound)
		assert.Contains(t, msg, "product_ref", "item %d", i)
		assert.Contains(t, msg, "display_name", "item %d", i)
	}
	for _, i := range []int{6, 7} {
		msg := requireItemError(t, res[i], http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "asset_id", "item %d", i)
	}
	assert.Contains(t, requireItemError(t, res[6], http.StatusBadRequest, plugin.CodeInvalidInput), "expired")
	assert.Equal(t, "created", res[8]["status"], "%v", res[8])
	assert.Equal(t, "created", res[9]["status"], "%v", res[9])
	assert.Equal(t, plugin.ImageAwaitingUpload, res[9]["image"].(map[string]any)["status"])

	// Refused items created nothing.
	assert.Zero(t, e.count(&models.Product{}, "external_ref IN ?", []string{"NEW-1", "NEW-2"}))
	assert.EqualValues(t, 2, e.count(&models.ProductImage{}, "1 = 1"))
	assert.Zero(t, e.count(&models.Product{}, "installation_id <> ?", e.inst.ID))
}

func TestRegisterImagesBodyValidationAndBulkLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	asset := e.readyAsset(e.inst)
	tooMany := make([]map[string]any, plugin.MaxBulkItems+1)
	for i := range tooMany {
		tooMany[i] = imageReg("r", "P", asset.ID)
	}
	msg := e.requireError(e.do(http.MethodPost, p("/images"), e.key, map[string]any{"images": tooMany}),
		http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "images")

	cases := []struct {
		body  any
		field string
	}{
		{map[string]any{}, "images"},
		{map[string]any{"images": []any{}}, "images"},
		{map[string]any{"images": []any{map[string]any{"product_ref": "P", "asset_id": asset.ID}}}, "images[0].external_ref"},
		{map[string]any{"images": []any{imageReg("a", "P", asset.ID), map[string]any{"external_ref": "b", "asset_id": asset.ID}}}, "images[1].product_ref"},
		{map[string]any{"images": []any{map[string]any{"external_ref": "b", "product_ref": "P"}}}, "images[0].asset_id"},
		{map[string]any{"images": "x"}, "images must be an array, not a string"},
		{"{", "JSON"},
	}
	for _, c := range cases {
		msg := e.requireError(e.do(http.MethodPost, p("/images"), e.key, c.body), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, c.field)
	}
	assert.Zero(t, e.count(&models.ProductImage{}, "1 = 1"))
	assert.Zero(t, e.count(&models.Product{}, "1 = 1"))

	// Exactly 100 items is allowed.
	full := make([]map[string]any, plugin.MaxBulkItems)
	for i := range full {
		full[i] = imageReg("img-"+models.NewID(), "P", asset.ID)
	}
	for i, r := range e.registerImages(e.key, full...) {
		assert.Equal(t, "created", r["status"], "item %d", i)
	}
	assert.EqualValues(t, 1, e.count(&models.Product{}, "1 = 1"))
	assert.EqualValues(t, 100, e.count(&models.ProductImage{}, "1 = 1"))
}

func TestRegisterImagesPermission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	asset := e.readyAsset(e.inst)
	body := map[string]any{"images": []any{imageReg("a", "P", asset.ID)}}
	for _, scope := range []string{"plugin.catalog:read", "plugin.assets:write", "plugin.jobs:write"} {
		msg := e.requireError(e.do(http.MethodPost, p("/images"), e.issueKey(scope), body), http.StatusForbidden, plugin.CodeForbidden)
		assert.Contains(t, msg, plugin.PermCatalogWrite)
	}
	assert.Zero(t, e.count(&models.ProductImage{}, "1 = 1"))
	res := e.registerImages(e.issueKey("plugin.catalog:write"), imageReg("a", "P", asset.ID))
	assert.Equal(t, "created", res[0]["status"])
}

func TestRegisterImagesTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otherInst, otherKey := e.otherInstallation()
	mine := e.readyAsset(e.inst)
	theirs := e.readyAsset(otherInst)

	// The same references in two installations are two independent catalogs.
	a := e.registerImages(e.key, imageReg("img", "P", mine.ID))[0]
	b := e.registerImages(otherKey, imageReg("img", "P", theirs.ID))[0]
	require.Equal(t, "created", a["status"])
	require.Equal(t, "created", b["status"], "%v", b)
	assert.NotEqual(t, a["image"].(map[string]any)["id"], b["image"].(map[string]any)["id"])
	assert.NotEqual(t, a["image"].(map[string]any)["product_id"], b["image"].(map[string]any)["product_id"])

	// The other installation's product is unknown here: without metadata it is a 404 item.
	e.product(otherInst, "THEIRS")
	requireItemError(t, e.registerImages(e.key, map[string]any{"external_ref": "x", "product_ref": "THEIRS", "asset_id": mine.ID})[0],
		http.StatusNotFound, plugin.CodeNotFound)
}

func TestRegisterImageAgainAfterProductDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	asset := e.readyAsset(e.inst)
	first := e.registerImages(e.key, imageReg("img-1", "MUG", asset.ID))[0]["image"].(map[string]any)
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/products/MUG"), e.key, nil).Code)

	// Without metadata the reference names no live product.
	requireItemError(t, e.registerImages(e.key, map[string]any{"external_ref": "img-1", "product_ref": "MUG", "asset_id": asset.ID})[0],
		http.StatusNotFound, plugin.CodeNotFound)
	var old models.ProductImage
	require.NoError(t, e.db.Take(&old, "id = ?", first["id"]).Error)
	assert.Nil(t, old.DeletedAt, "a refused item must not retire the old image")

	// With metadata: a new product, and the image reference moves to it as a new row.
	res := e.registerImages(e.key, imageReg("img-1", "MUG", asset.ID))[0]
	require.Equal(t, "created", res["status"], "%v", res)
	img := res["image"].(map[string]any)
	assert.NotEqual(t, first["id"], img["id"])
	assert.NotEqual(t, first["product_id"], img["product_id"])
	require.NoError(t, e.db.Take(&old, "id = ?", first["id"]).Error)
	assert.NotNil(t, old.DeletedAt, "the image of the deleted product is retired")
	assert.Equal(t, first["product_id"], old.ProductID)

	// From now on it is existing.
	again := e.registerImages(e.key, imageReg("img-1", "MUG", asset.ID))[0]
	assert.Equal(t, "existing", again["status"])
	assert.Equal(t, img["id"], again["image"].(map[string]any)["id"])
}
