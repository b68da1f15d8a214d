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
)

// registerPackshots posts packshots and returns the per-item results.
func (e *env) registerPackshots(key string, items ...map[string]any) []map[string]any {
	e.t.Helper()
	rec := e.do(http.MethodPost, p("/packshots"), key, map[string]any{"packshots": items})
	require.Equal(e.t, http.StatusOK, rec.Code, rec.Body.String())
	raw, ok := decode(e.t, rec)["results"].([]any)
	require.True(e.t, ok, rec.Body.String())
	require.Len(e.t, raw, len(items))
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i] = r.(map[string]any)
		require.Equal(e.t, float64(i), out[i]["index"])
	}
	return out
}

// requireItemError checks a per-item error of a bulk call.
func requireItemError(t testing.TB, res map[string]any, status int, code string) string {
	t.Helper()
	require.Equal(t, "error", res["status"], "%v", res)
	assert.NotContains(t, res, "packshot")
	errObj, ok := res["error"].(map[string]any)
	require.True(t, ok, "%v", res)
	assert.Equal(t, code, errObj["code"])
	assert.Equal(t, status >= 500 || status == http.StatusTooManyRequests, errObj["retryable"])
	assert.Equal(t, docsURL+"/plugin-api/errors/"+code, errObj["doc_url"])
	msg, _ := errObj["message_i18n"].(map[string]any)["en"].(string)
	assert.NotEmpty(t, msg)
	return msg
}

func TestRegisterPackshotOfUploadedAsset(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := testimage.GradientPNG(t, 6, 6)
	assetID, u := e.createUpload(e.key, "shoe.png", "image/png", len(data))
	require.Equal(t, http.StatusOK, e.put(u, "image/png", data, int64(len(data))).Code)

	before := time.Now().Add(-time.Second)
	res := e.registerPackshots(e.key, map[string]any{
		"asset_id": assetID, "product_ref": "SHOE-1", "external_ref": "ps-1", "source_image_ref": "img-1",
		"product_metadata": map[string]any{"display_name": "  Red shoe  ", "sku": "RS-1"},
	})
	require.Equal(t, "created", res[0]["status"], "%v", res[0])
	assert.NotContains(t, res[0], "error")
	ps := res[0]["packshot"].(map[string]any)
	assert.Equal(t, assetID, ps["asset_id"])
	assert.Equal(t, "SHOE-1", ps["product_ref"])
	assert.Equal(t, "ps-1", ps["external_ref"])
	assert.Equal(t, "img-1", ps["source_image_ref"])
	assert.Equal(t, models.VotingAccepted, ps["voting"])
	votingAt, err := time.Parse(time.RFC3339Nano, ps["voting_at"].(string))
	require.NoError(t, err)
	assert.True(t, votingAt.After(before), "voting_at %v", votingAt)

	var product models.Product
	require.NoError(t, e.db.Take(&product, "external_ref = ?", "SHOE-1").Error)
	assert.Equal(t, ps["product_id"], product.ID)
	assert.Equal(t, "Red shoe", product.DisplayName)
	assert.Equal(t, "RS-1", product.SKU)
	require.NotNil(t, product.InstallationID)
	assert.Equal(t, e.inst.ID, *product.InstallationID)

	var stored models.Packshot
	require.NoError(t, e.db.Take(&stored, "id = ?", ps["id"]).Error)
	assert.Equal(t, models.VotingAccepted, stored.Voting)
	assert.Equal(t, product.ID, stored.ProductID)
	assert.Equal(t, assetID, stored.AssetID)

	// Same external_ref again: the existing row, nothing new.
	res = e.registerPackshots(e.key, map[string]any{"asset_id": assetID, "product_ref": "SHOE-1", "external_ref": "ps-1"})
	assert.Equal(t, "existing", res[0]["status"])
	assert.Equal(t, ps["id"], res[0]["packshot"].(map[string]any)["id"])
	assert.Equal(t, "SHOE-1", res[0]["packshot"].(map[string]any)["product_ref"])
	assert.EqualValues(t, 1, e.count(&models.Packshot{}, "1 = 1"))

	// A second packshot of the now existing product needs no metadata.
	other := e.readyAsset(e.inst)
	res = e.registerPackshots(e.key, map[string]any{"asset_id": other.ID, "product_ref": "SHOE-1"})
	require.Equal(t, "created", res[0]["status"], "%v", res[0])
	assert.Equal(t, product.ID, res[0]["packshot"].(map[string]any)["product_id"])
	assert.EqualValues(t, 1, e.count(&models.Product{}, "1 = 1"))
	assert.EqualValues(t, 2, e.count(&models.Packshot{}, "product_id = ? AND voting = ?", product.ID, models.VotingAccepted))
}

func TestRegisterPackshotsPerItemErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otherInst, _ := e.otherInstallation()
	sameAccountInst, _ := e.addInstallation(e.account.ID, 0)
	mine := e.readyAsset(e.inst)
	theirs := e.readyAsset(otherInst)
	sibling := e.readyAsset(sameAccountInst)
	e.product(e.inst, "EXISTING")

	res := e.registerPackshots(e.key,
		map[string]any{"asset_id": models.NewID(), "product_ref": "EXISTING"},                                                  // 0 unknown asset
		map[string]any{"asset_id": theirs.ID, "product_ref": "EXISTING"},                                                       // 1 other account
		map[string]any{"asset_id": sibling.ID, "product_ref": "EXISTING"},                                                      // 2 other installation, same account
		map[string]any{"asset_id": mine.ID, "product_ref": "NEW-1"},                                                            // 3 unknown product, no metadata
		map[string]any{"asset_id": mine.ID, "product_ref": "NEW-2", "product_metadata": map[string]any{"display_name": "   "}}, // 4 blank name
		map[string]any{"asset_id": mine.ID, "product_ref": "EXISTING"},                                                         // 5 fine
		map[string]any{"asset_id": "not-a-uuid", "product_ref": "EXISTING"},                                                    // 6 malformed ID
	)
	for _, i := range []int{0, 1, 2, 6} {
		msg := requireItemError(t, res[i], http.StatusNotFound, plugin.CodeNotFound)
		assert.Contains(t, msg, "asset_id", "item %d", i)
	}
	for _, i := range []int{3, 4} {
		msg := requireItemError(t, res[i], http.StatusNotFound, plugin.CodeNotFound)
		assert.Contains(t, msg, "display_name", "item %d", i)
	}
	assert.Equal(t, "created", res[5]["status"], "%v", res[5])

	// Refused items create nothing: no product NEW-1/NEW-2, one packshot, and the other
	// installations' catalogs are untouched.
	assert.Zero(t, e.count(&models.Product{}, "external_ref IN ?", []string{"NEW-1", "NEW-2"}))
	assert.EqualValues(t, 1, e.count(&models.Packshot{}, "1 = 1"))
	assert.Zero(t, e.count(&models.Product{}, "installation_id <> ?", e.inst.ID))
}

func TestRegisterPackshotsRefusesExpiredUpload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, _ := e.createUpload(e.key, "a.png", "image/png", 100)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", id).
		Update("upload_expires_at", time.Now().UTC().Add(-time.Minute)).Error)
	res := e.registerPackshots(e.key, map[string]any{
		"asset_id": id, "product_ref": "P", "product_metadata": map[string]any{"display_name": "P"},
	})
	msg := requireItemError(t, res[0], http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "asset_id")
	assert.Zero(t, e.count(&models.Product{}, "1 = 1"))
}

func TestRegisterPackshotsBodyValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	asset := e.readyAsset(e.inst)
	item := map[string]any{"asset_id": asset.ID, "product_ref": "P", "product_metadata": map[string]any{"display_name": "P"}}

	tooMany := make([]map[string]any, plugin.MaxBulkItems+1)
	for i := range tooMany {
		tooMany[i] = item
	}
	msg := e.requireError(e.do(http.MethodPost, p("/packshots"), e.key, map[string]any{"packshots": tooMany}),
		http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "packshots")

	cases := []struct {
		body  any
		field string
	}{
		{map[string]any{}, "packshots"},
		{map[string]any{"packshots": []any{}}, "packshots"},
		{map[string]any{"packshots": []any{map[string]any{"product_ref": "P"}}}, "packshots[0].asset_id"},
		{map[string]any{"packshots": []any{item, map[string]any{"asset_id": asset.ID}}}, "packshots[1].product_ref"},
		{"{", "JSON"},
	}
	for _, c := range cases {
		msg := e.requireError(e.do(http.MethodPost, p("/packshots"), e.key, c.body), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, c.field)
	}
	assert.Zero(t, e.count(&models.Packshot{}, "1 = 1"))
	assert.Zero(t, e.count(&models.Product{}, "1 = 1"))

	// Exactly 100 items is allowed; the first creates the product, the others reuse it.
	full := make([]map[string]any, plugin.MaxBulkItems)
	for i := range full {
		full[i] = item
	}
	res := e.registerPackshots(e.key, full...)
	for i, r := range res {
		assert.Equal(t, "created", r["status"], "item %d", i)
	}
	assert.EqualValues(t, 1, e.count(&models.Product{}, "1 = 1"))
	assert.EqualValues(t, 100, e.count(&models.Packshot{}, "1 = 1"))
}

// A deleted product's packshot keeps its external_ref only while nobody needs it: registering the
// product again with the same packshot body creates the product and a new approved packshot (the
// reference is freed, as an image's is), which a photo session can start from at once; until the
// product was deleted, the same body answered existing.
func TestPackshotRefOfADeletedProductIsRegisteredAgain(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]envOption{"sqlite": nil, "postgres": {onPostgres()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, opts...).committing()
			item := func(asset string) map[string]any {
				return map[string]any{"asset_id": asset, "product_ref": "mug", "external_ref": "mug-packshot",
					"product_metadata": map[string]any{"display_name": "Mug"}}
			}
			a1 := e.readyAsset(e.inst)
			first := e.registerPackshots(e.key, item(a1.ID))
			require.Equal(t, "created", first[0]["status"], "%v", first[0])
			again := e.registerPackshots(e.key, item(a1.ID))
			require.Equal(t, "existing", again[0]["status"], "%v", again[0])
			require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/products/mug"), e.key, nil).Code)

			reborn := e.registerPackshots(e.key, item(a1.ID))
			require.Equal(t, "created", reborn[0]["status"], "%v", reborn[0])
			require.Equal(t, http.StatusOK, e.do(http.MethodGet, p("/products/mug"), e.key, nil).Code)
			rec := e.do(http.MethodPost, p("/jobs"), e.key, session(subject("mug")))
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		})
	}
}

// The source of a packshot is an image of its own product: a source_image_ref naming another
// product's image is refused for that item (400 naming it), creating nothing, since the other
// product's photo would otherwise lead its photo shoots to this product's packshot. An image of
// the product itself, or a ref no image has, is kept as given.
func TestRegisterPackshotSourceImageOfItsOwnProduct(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	photo := e.readyAsset(e.inst)
	e.registerImages(e.key, imageReg("img-mug", "MUG", photo.ID), imageReg("img-cup", "CUP", photo.ID))
	cut := e.readyAsset(e.inst)
	res := e.registerPackshots(e.key,
		map[string]any{"asset_id": cut.ID, "product_ref": "MUG", "source_image_ref": "img-cup"},   // 0 another product's image
		map[string]any{"asset_id": cut.ID, "product_ref": "MUG", "source_image_ref": "img-mug"},   // 1 its own
		map[string]any{"asset_id": cut.ID, "product_ref": "CUP", "source_image_ref": "img-other"}, // 2 no such image
	)
	msg := requireItemError(t, res[0], http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "source_image_ref img-cup is an image of another product")
	for _, i := range []int{1, 2} {
		require.Equal(t, "created", res[i]["status"], "%v", res[i])
	}
	var mug models.Packshot
	require.NoError(t, e.db.Take(&mug, "id = ?", res[1]["packshot"].(map[string]any)["id"]).Error)
	var img models.ProductImage
	require.NoError(t, e.db.Take(&img, "external_ref = ?", "img-mug").Error)
	require.NotNil(t, mug.SourceImageID)
	assert.Equal(t, img.ID, *mug.SourceImageID)
	assert.EqualValues(t, 2, e.count(&models.Packshot{}, "1 = 1"), "the refused item created nothing")
}
