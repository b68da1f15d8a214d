package plugin_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

var (
	productKeys       = []string{"created_at", "deleted_at", "display_name", "external_ref", "id", "image_count", "livemode", "packshot_count", "sku"}
	productDetailKeys = []string{"created_at", "deleted_at", "display_name", "external_ref", "id", "image_count", "images",
		"images_truncated", "livemode", "packshot_count", "packshots", "packshots_truncated", "sku"}
	packshotKeys = []string{"asset_id", "created_at", "external_ref", "id", "livemode", "product_id", "product_ref", "source_image_ref", "voting", "voting_at"}
)

// getOK sends a GET and returns the decoded 200 answer.
func (e *env) getOK(target, key string) map[string]any {
	e.t.Helper()
	rec := e.do(http.MethodGet, target, key, nil)
	require.Equal(e.t, http.StatusOK, rec.Code, "GET %s: %s", target, rec.Body.String())
	return decode(e.t, rec)
}

// storeImage stores a live image of the product directly.
func (e *env) storeImage(inst *models.Installation, productID, ref string, assetID string) models.ProductImage {
	e.t.Helper()
	if assetID == "" {
		assetID = e.readyAsset(inst).ID
	}
	img := models.ProductImage{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, ProductID: productID,
		AssetID: assetID, ExternalRef: ref, CreatedAt: time.Now().UTC()}
	require.NoError(e.t, e.db.Create(&img).Error)
	return img
}

// walk pages through a catalog listing (GET /products or /packshots) with the given query and
// returns every item; between pages it calls between (may be nil).
func (e *env) walk(path, field, query string, between func()) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	cursor := ""
	for range 1000 {
		target := p(path) + "?" + query
		if cursor != "" {
			target += "&cursor=" + url.QueryEscape(cursor)
		}
		page := e.getOK(target, e.key)
		require.Equal(e.t, []string{"next_cursor", field}, keysOf(page))
		items, ok := page[field].([]any)
		require.True(e.t, ok, "%v", page)
		for _, it := range items {
			out = append(out, it.(map[string]any))
		}
		if page["next_cursor"] == nil {
			return out
		}
		cursor = page["next_cursor"].(string)
		require.NotEmpty(e.t, cursor)
		if between != nil {
			between()
		}
	}
	e.t.Fatal("pagination does not end")
	return nil
}

func ids(items []map[string]any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it["id"].(string)
	}
	return out
}

func TestListProducts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(10000))
	otherInst, otherKey := e.otherInstallation()
	a := e.product(e.inst, "A")
	b := e.product(e.inst, "B")
	gone := e.product(e.inst, "GONE")
	e.product(otherInst, "THEIRS")
	e.storeImage(e.inst, a.ID, "a1", "")
	e.storeImage(e.inst, a.ID, "a2", "")
	e.packshot(e.inst, a.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	deletedShot := e.packshot(e.inst, b.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/packshots/"+deletedShot.ID), e.key, nil).Code)
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/products/GONE"), e.key, nil).Code)

	page := e.getOK(p("/products"), e.key)
	assert.Equal(t, []string{"next_cursor", "products"}, keysOf(page))
	assert.Nil(t, page["next_cursor"])
	items := page["products"].([]any)
	require.Len(t, items, 2)
	first := items[0].(map[string]any)
	assert.Equal(t, productKeys, keysOf(first))
	assert.Equal(t, a.ID, first["id"])
	assert.Equal(t, "A", first["external_ref"])
	assert.Equal(t, "Product A", first["display_name"])
	assert.EqualValues(t, 2, first["image_count"])
	assert.EqualValues(t, 1, first["packshot_count"])
	assert.Nil(t, first["deleted_at"])
	second := items[1].(map[string]any)
	assert.Equal(t, b.ID, second["id"])
	assert.EqualValues(t, 0, second["image_count"])
	assert.EqualValues(t, 0, second["packshot_count"], "a deleted packshot is not counted")

	// include_deleted=true adds the deleted product with its deleted_at; false is the default.
	all := e.walk("/products", "products", "include_deleted=true", nil)
	require.Equal(t, []string{a.ID, b.ID, gone.ID}, ids(all))
	assert.NotNil(t, all[2]["deleted_at"])
	assert.Equal(t, []string{a.ID, b.ID}, ids(e.walk("/products", "products", "include_deleted=false", nil)))
	msg := e.requireError(e.do(http.MethodGet, p("/products?include_deleted=maybe"), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "include_deleted")

	// The other installation sees only its own.
	theirs := e.getOK(p("/products?include_deleted=true"), otherKey)["products"].([]any)
	require.Len(t, theirs, 1)
	assert.Equal(t, "THEIRS", theirs[0].(map[string]any)["external_ref"])
}

func TestListProductsPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(10000))
	var want []string
	for i := range 55 {
		want = append(want, e.product(e.inst, fmt.Sprintf("P%02d", i)).ID)
	}
	// Default limit 50.
	page := e.getOK(p("/products"), e.key)
	require.Len(t, page["products"], plugin.DefaultCatalogPageLimit)
	require.NotNil(t, page["next_cursor"])
	rest := e.getOK(p("/products?cursor="+url.QueryEscape(page["next_cursor"].(string))), e.key)
	require.Len(t, rest["products"], 5)
	assert.Nil(t, rest["next_cursor"])
	// Every page size yields the same sequence; limit 200 is allowed, and a page that ends exactly
	// at the last product has no next cursor.
	for _, limit := range []int{1, 7, 55, 200} {
		assert.Equal(t, want, ids(e.walk("/products", "products", fmt.Sprintf("limit=%d", limit), nil)), "limit %d", limit)
	}

	for _, bad := range []string{"0", "201", "-1", "abc", "", "1.5"} {
		msg := e.requireError(e.do(http.MethodGet, p("/products?limit="+bad), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "limit", "limit=%q", bad)
	}
	packshotCursor := ""
	{
		pr := e.product(e.inst, "PS")
		e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
		e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
		packshotCursor = e.getOK(p("/packshots?limit=1"), e.key)["next_cursor"].(string)
	}
	for _, bad := range []string{"garbage!", base64.RawURLEncoding.EncodeToString([]byte(`{}`)),
		base64.RawURLEncoding.EncodeToString([]byte(`{"k":"products","t":"x","id":"y"}`)), packshotCursor} {
		msg := e.requireError(e.do(http.MethodGet, p("/products?cursor="+url.QueryEscape(bad)), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "cursor")
	}
}

func TestListProductsStableWhileInserting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(10000))
	before := map[string]bool{}
	for i := range 9 {
		before[e.product(e.inst, fmt.Sprintf("OLD-%d", i)).ID] = true
	}
	asset := e.readyAsset(e.inst)
	n := 0
	seen := map[string]int{}
	for _, it := range e.walk("/products", "products", "limit=2", func() {
		// Between pages the merchant registers new products through the API.
		n++
		res := e.registerImages(e.key, imageReg(fmt.Sprintf("img-%d", n), fmt.Sprintf("NEW-%d", n), asset.ID))
		require.Equal(t, "created", res[0]["status"])
	}) {
		seen[it["id"].(string)]++
	}
	for id, c := range seen {
		assert.Equal(t, 1, c, "product %s listed %d times", id, c)
	}
	for id := range before {
		assert.Equal(t, 1, seen[id], "product %s that existed before the walk was skipped", id)
	}
	// New products sort after the ones already seen, so the walk reached every one of them.
	assert.Equal(t, len(before)+n, len(seen))
}

func TestGetProduct(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otherInst, _ := e.otherInstallation()
	pr := e.product(e.inst, "MUG")
	oldImg := e.storeImage(e.inst, pr.ID, "img-old", "")
	pendingUpload, _ := e.createUpload(e.key, "n.png", "image/png", 10)
	newImg := e.storeImage(e.inst, pr.ID, "img-new", pendingUpload)
	shot := e.registerPackshots(e.key, map[string]any{"asset_id": e.readyAsset(e.inst).ID, "product_ref": "MUG",
		"external_ref": "ps-1", "source_image_ref": "img-old"})[0]["packshot"].(map[string]any)
	candidate := e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingPending)
	theirs := e.product(otherInst, "THEIRS")

	for _, key := range []string{pr.ID, "MUG"} {
		got := e.getOK(p("/products/"+url.PathEscape(key)), e.key)
		assert.Equal(t, productDetailKeys, keysOf(got))
		assert.Equal(t, pr.ID, got["id"])
		assert.Equal(t, "MUG", got["external_ref"])
		assert.EqualValues(t, 2, got["image_count"])
		assert.EqualValues(t, 2, got["packshot_count"])
		assert.Equal(t, false, got["images_truncated"])
		assert.Equal(t, false, got["packshots_truncated"])

		images := got["images"].([]any)
		require.Len(t, images, 2)
		i0, i1 := images[0].(map[string]any), images[1].(map[string]any)
		assert.Equal(t, imageKeys, keysOf(i0))
		assert.Equal(t, newImg.ID, i0["id"], "newest first")
		assert.Equal(t, plugin.ImageAwaitingUpload, i0["status"])
		assert.Equal(t, pendingUpload, i0["asset_id"])
		assert.Equal(t, oldImg.ID, i1["id"])
		assert.Equal(t, "img-old", i1["external_ref"])
		assert.Equal(t, plugin.ImageReady, i1["status"])
		assert.EqualValues(t, 4, i1["width"])
		assert.EqualValues(t, 4, i1["height"])
		assert.Equal(t, "MUG", i1["product_ref"])

		packshots := got["packshots"].([]any)
		require.Len(t, packshots, 2)
		s0, s1 := packshots[0].(map[string]any), packshots[1].(map[string]any)
		assert.Equal(t, packshotKeys, keysOf(s0))
		assert.Equal(t, candidate.ID, s0["id"], "newest first")
		assert.Equal(t, models.VotingPending, s0["voting"])
		assert.Equal(t, shot["id"], s1["id"])
		assert.Equal(t, "ps-1", s1["external_ref"])
		assert.Equal(t, "img-old", s1["source_image_ref"])
		assert.Equal(t, models.VotingAccepted, s1["voting"])
		assert.Equal(t, shot["voting_at"], s1["voting_at"])
	}

	// Unknown, another installation's (by ID and by reference), and deleted products are 404.
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/products/"+e.product(e.inst, "GONE").ID), e.key, nil).Code)
	for _, key := range []string{models.NewID(), "nope", theirs.ID, "THEIRS", "GONE"} {
		e.requireError(e.do(http.MethodGet, p("/products/"+key), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	}
}

func TestGetProductTruncatesEmbeddedLists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pr := e.product(e.inst, "BIG")
	var lastShot models.Packshot
	for i := range plugin.MaxEmbeddedCatalogItems {
		e.storeImage(e.inst, pr.ID, fmt.Sprintf("img-%d", i), "")
		lastShot = e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	}
	got := e.getOK(p("/products/BIG"), e.key)
	assert.Len(t, got["images"], 100)
	assert.Len(t, got["packshots"], 100)
	assert.Equal(t, false, got["images_truncated"])
	assert.Equal(t, false, got["packshots_truncated"])

	newest := e.storeImage(e.inst, pr.ID, "img-100", "")
	e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	got = e.getOK(p("/products/BIG"), e.key)
	assert.Len(t, got["images"], 100)
	assert.Len(t, got["packshots"], 100)
	assert.Equal(t, true, got["images_truncated"])
	assert.Equal(t, true, got["packshots_truncated"])
	assert.EqualValues(t, 101, got["image_count"])
	assert.EqualValues(t, 101, got["packshot_count"])
	assert.Equal(t, newest.ID, got["images"].([]any)[0].(map[string]any)["id"])

	// One packshot fewer: complete again.
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/packshots/"+lastShot.ID), e.key, nil).Code)
	got = e.getOK(p("/products/BIG"), e.key)
	assert.Len(t, got["packshots"], 100)
	assert.Equal(t, false, got["packshots_truncated"])
	assert.EqualValues(t, 100, got["packshot_count"])
}

func TestDeleteProduct(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(10000))
	otherInst, otherKey := e.otherInstallation()
	asset := e.readyAsset(e.inst)
	res := e.registerPackshots(e.key, map[string]any{"asset_id": asset.ID, "product_ref": "MUG",
		"product_metadata": map[string]any{"display_name": "Mug"}})
	oldID := res[0]["packshot"].(map[string]any)["product_id"].(string)
	img := e.registerImages(e.key, map[string]any{"external_ref": "img-1", "product_ref": "MUG", "asset_id": asset.ID})[0]
	require.Equal(t, "created", img["status"])
	theirs := e.product(otherInst, "MUG")

	// Another installation cannot delete it, by ID or by reference (its own MUG is a different product).
	e.requireError(e.do(http.MethodDelete, p("/products/"+oldID), otherKey, nil), http.StatusNotFound, plugin.CodeNotFound)
	// A key without plugin.catalog:write is refused.
	e.requireError(e.do(http.MethodDelete, p("/products/MUG"), e.issueKey("plugin.catalog:read"), nil), http.StatusForbidden, plugin.CodeForbidden)
	e.getOK(p("/products/MUG"), e.key)

	rec := e.do(http.MethodDelete, p("/products/MUG"), e.key, nil)
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	assert.Empty(t, rec.Body.String())
	for _, key := range []string{"MUG", oldID} {
		e.requireError(e.do(http.MethodDelete, p("/products/"+key), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
		e.requireError(e.do(http.MethodGet, p("/products/"+key), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	}
	// Soft: the row, its images and packshots stay; the other installation's MUG is untouched.
	var stored models.Product
	require.NoError(t, e.db.Take(&stored, "id = ?", oldID).Error)
	assert.NotNil(t, stored.DeletedAt)
	assert.EqualValues(t, 1, e.count(&models.Packshot{}, "product_id = ? AND deleted_at IS NULL", oldID))
	assert.EqualValues(t, 1, e.count(&models.ProductImage{}, "product_id = ? AND deleted_at IS NULL", oldID))
	e.getOK(p("/products/"+theirs.ID), otherKey)
	assert.Empty(t, e.getOK(p("/products"), e.key)["products"])
	assert.Empty(t, e.getOK(p("/packshots"), e.key)["packshots"], "packshots of deleted products are not listed")

	// The reference is registered again as a new product.
	res = e.registerPackshots(e.key, map[string]any{"asset_id": asset.ID, "product_ref": "MUG",
		"product_metadata": map[string]any{"display_name": "Mug v2"}})
	require.Equal(t, "created", res[0]["status"], "%v", res[0])
	newID := res[0]["packshot"].(map[string]any)["product_id"].(string)
	assert.NotEqual(t, oldID, newID)
	got := e.getOK(p("/products/MUG"), e.key)
	assert.Equal(t, newID, got["id"])
	assert.Equal(t, "Mug v2", got["display_name"])
	assert.EqualValues(t, 1, got["packshot_count"])
	assert.EqualValues(t, 0, got["image_count"], "the old product's images stay with it")
	listed := e.getOK(p("/products"), e.key)["products"].([]any)
	require.Len(t, listed, 1)
	assert.Equal(t, newID, listed[0].(map[string]any)["id"])
	assert.Len(t, e.walk("/products", "products", "include_deleted=true", nil), 2)
}

func TestListPackshots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(10000))
	otherInst, otherKey := e.otherInstallation()
	a := e.product(e.inst, "A")
	b := e.product(e.inst, "B")
	var want []string
	for i := range 5 {
		pid := a.ID
		if i%2 == 1 {
			pid = b.ID
		}
		voting := []string{models.VotingAccepted, models.VotingPending, models.VotingRejected}[i%3]
		want = append(want, e.packshot(e.inst, pid, e.readyAsset(e.inst).ID, voting).ID)
	}
	deleted := e.packshot(e.inst, a.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/packshots/"+deleted.ID), e.key, nil).Code)
	op := e.product(otherInst, "A")
	theirs := e.packshot(otherInst, op.ID, e.readyAsset(otherInst).ID, models.VotingAccepted)

	page := e.getOK(p("/packshots"), e.key)
	assert.Nil(t, page["next_cursor"])
	items := page["packshots"].([]any)
	require.Len(t, items, 5)
	first := items[0].(map[string]any)
	assert.Equal(t, packshotKeys, keysOf(first))
	assert.Equal(t, want[0], first["id"])
	assert.Equal(t, "A", first["product_ref"])
	assert.Equal(t, a.ID, first["product_id"])
	assert.Equal(t, models.VotingAccepted, first["voting"])
	_, err := time.Parse(time.RFC3339Nano, first["voting_at"].(string))
	require.NoError(t, err)
	assert.Equal(t, models.VotingPending, items[1].(map[string]any)["voting"])
	assert.Equal(t, models.VotingRejected, items[2].(map[string]any)["voting"])

	for _, limit := range []int{1, 2, 5} {
		assert.Equal(t, want, ids(e.walk("/packshots", "packshots", fmt.Sprintf("limit=%d", limit), nil)), "limit %d", limit)
	}
	assert.Equal(t, []string{want[1], want[3]}, ids(e.walk("/packshots", "packshots", "product_ref=B&limit=1", nil)))
	assert.Equal(t, []string{want[0], want[2], want[4]}, ids(e.walk("/packshots", "packshots", "product_ref=A", nil)))
	assert.Empty(t, e.walk("/packshots", "packshots", "product_ref=nope", nil))

	// The other installation sees only its own.
	theirsPage := e.getOK(p("/packshots?product_ref=A"), otherKey)["packshots"].([]any)
	require.Len(t, theirsPage, 1)
	assert.Equal(t, theirs.ID, theirsPage[0].(map[string]any)["id"])

	for _, q := range []string{"limit=0", "limit=201", "limit=x", "cursor=%21%21"} {
		e.requireError(e.do(http.MethodGet, p("/packshots?"+q), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
	}
	productsCursor := e.getOK(p("/products?limit=1"), e.key)["next_cursor"].(string)
	msg := e.requireError(e.do(http.MethodGet, p("/packshots?cursor="+url.QueryEscape(productsCursor)), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "cursor")
}

func TestListPackshotsStableWhileInserting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(10000))
	pr := e.product(e.inst, "P")
	before := map[string]bool{}
	for range 7 {
		before[e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingAccepted).ID] = true
	}
	added := 0
	seen := map[string]int{}
	for _, it := range e.walk("/packshots", "packshots", "limit=2", func() {
		added++
		res := e.registerPackshots(e.key, map[string]any{"asset_id": e.readyAsset(e.inst).ID, "product_ref": "P"})
		require.Equal(t, "created", res[0]["status"])
	}) {
		seen[it["id"].(string)]++
	}
	for id, c := range seen {
		assert.Equal(t, 1, c, "packshot %s listed %d times", id, c)
	}
	for id := range before {
		assert.Equal(t, 1, seen[id], "packshot %s skipped", id)
	}
	assert.Equal(t, len(before)+added, len(seen))
}

func TestDeletePackshotIsNeverUsedBySessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otherInst, otherKey := e.otherInstallation()
	asset := e.readyAsset(e.inst)
	shot := e.registerPackshots(e.key, map[string]any{"asset_id": asset.ID, "product_ref": "MUG", "external_ref": "ps-1",
		"product_metadata": map[string]any{"display_name": "Mug"}})[0]["packshot"].(map[string]any)
	op := e.product(otherInst, "MUG")
	theirs := e.packshot(otherInst, op.ID, e.readyAsset(otherInst).ID, models.VotingAccepted)

	// Another installation's packshot is 404, by ID and by reference; a read-only key is 403.
	e.requireError(e.do(http.MethodDelete, p("/packshots/"+theirs.ID), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	e.requireError(e.do(http.MethodDelete, p("/packshots/ps-1"), otherKey, nil), http.StatusNotFound, plugin.CodeNotFound)
	e.requireError(e.do(http.MethodDelete, p("/packshots/ps-1"), e.issueKey("plugin.catalog:read"), nil), http.StatusForbidden, plugin.CodeForbidden)
	e.requireError(e.do(http.MethodDelete, p("/packshots/"+models.NewID()), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)

	rec := e.do(http.MethodDelete, p("/packshots/ps-1"), e.key, nil)
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	assert.Empty(t, rec.Body.String())
	for _, key := range []string{"ps-1", shot["id"].(string)} {
		e.requireError(e.do(http.MethodDelete, p("/packshots/"+key), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	}
	// The file stays: the asset is untouched; the row is soft-deleted.
	assert.Equal(t, status.AssetReady, e.asset(asset.ID).Status)
	var stored models.Packshot
	require.NoError(t, e.db.Take(&stored, "id = ?", shot["id"]).Error)
	assert.NotNil(t, stored.DeletedAt)
	assert.Empty(t, e.getOK(p("/packshots"), e.key)["packshots"])
	got := e.getOK(p("/products/MUG"), e.key)
	assert.Empty(t, got["packshots"])
	assert.EqualValues(t, 0, got["packshot_count"])
	assert.Len(t, e.getOK(p("/packshots"), otherKey)["packshots"], 1, "the other installation's packshot stays")

	// A photo session for the product no longer finds an approved packshot, neither the latest
	// one nor the deleted one named explicitly.
	s := subject("MUG")
	_, details := e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, session(s)),
		http.StatusUnprocessableEntity, plugin.CodePackshotNotApproved)
	assert.Equal(t, []any{"MUG"}, details["product_refs"])
	s["packshot_asset_id"] = asset.ID
	e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, session(s)),
		http.StatusUnprocessableEntity, plugin.CodePackshotNotApproved)
	e.noOrders()
}

func TestCatalogRoutesPermissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(10000))
	pr := e.product(e.inst, "P")
	ps := e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	reads := []string{"/products", "/products/P", "/products/" + pr.ID, "/packshots", "/packshots?product_ref=P"}
	writes := []struct{ method, path string }{
		{http.MethodDelete, "/products/P"}, {http.MethodDelete, "/packshots/" + ps.ID}, {http.MethodPost, "/images"},
	}
	readKey, writeKey := e.issueKey("plugin.catalog:read"), e.issueKey("plugin.catalog:write")
	for _, key := range []string{writeKey, e.issueKey("plugin.jobs:read", "plugin.presets:read"), e.issueKey()} {
		for _, path := range reads {
			msg := e.requireError(e.do(http.MethodGet, p(path), key, nil), http.StatusForbidden, plugin.CodeForbidden)
			assert.Contains(t, msg, plugin.PermCatalogRead)
		}
	}
	for _, key := range []string{readKey, e.issueKey("plugin.jobs:write", "plugin.assets:write")} {
		for _, w := range writes {
			msg := e.requireError(e.do(w.method, p(w.path), key, map[string]any{}), http.StatusForbidden, plugin.CodeForbidden)
			assert.Contains(t, msg, plugin.PermCatalogWrite)
		}
	}
	// Nothing was deleted by the refused calls; the right scopes are enough.
	for _, path := range reads {
		e.getOK(p(path), readKey)
		e.getOK(p(path), e.issueKey(plugin.PermCatalogRead))
	}
	assert.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/packshots/"+ps.ID), writeKey, nil).Code)
	assert.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/products/P"), writeKey, nil).Code)
	// Without a key: 401.
	for _, path := range reads {
		e.requireError(e.do(http.MethodGet, p(path), "", nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
	}
}

// A crafted catalog cursor is refused with 400 before it reaches the database, also on PostgreSQL,
// which refuses a NUL byte in text (a 500 before): only a next_cursor's content is taken, a
// product's or packshot's UUID, and a cursor longer than any next_cursor is refused unread.
func TestCraftedCatalogCursorsAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onPostgres())
	e.approved("mug")
	craft := func(kind, id string) string {
		b, err := json.Marshal(map[string]any{"k": kind, "t": "2026-01-01T00:00:00Z", "id": id})
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	for _, kind := range []string{"products", "packshots"} {
		for _, bad := range []string{craft(kind, "a\x00b"), craft(kind, "not-a-uuid"), craft(kind, strings.Repeat("a", 600))} {
			rec := e.do(http.MethodGet, p("/"+kind+"?cursor="+url.QueryEscape(bad)), e.key, nil)
			msg := e.requireError(rec, http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Contains(t, msg, "cursor", kind)
		}
		// A well-formed cursor at a UUID works as a position.
		rec := e.do(http.MethodGet, p("/"+kind+"?cursor="+url.QueryEscape(craft(kind, models.NewID()))), e.key, nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	}
}
