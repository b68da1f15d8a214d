package e2e_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// catalogUpload asks for a presigned upload of a PNG and returns the asset ID and a function that
// PUTs the bytes.
func catalogUpload(t *testing.T, api *client, filename string, data []byte) (string, func()) {
	t.Helper()
	up := presign(t, api, filename, "image/png", data)
	return up.AssetID, func() { putUpload(t, up.UploadURL, "image/png", data) }
}

// TestCatalogEndToEnd registers a source image and a packshot derived from it, reads the product
// back, deletes the packshot, and sees a photo session for the product refused.
func TestCatalogEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	photo := packshotPNG(t)

	// 1. The source photo is registered while its upload is still awaited, creating the product.
	photoID, putPhoto := catalogUpload(t, api, "lamp-photo.png", photo)
	var images struct{ Results []plugin.ImageBulkResult }
	expect(t, api.do(http.MethodPost, "/images", map[string]any{"images": []map[string]any{{
		"external_ref": "lamp-photo-1", "product_ref": "lamp-1", "asset_id": photoID,
		"product_metadata": map[string]any{"display_name": "Desk lamp", "sku": "DL-1"},
	}}}, &images), http.StatusOK)
	if len(images.Results) != 1 || images.Results[0].Status != "created" || images.Results[0].Image == nil ||
		images.Results[0].Image.Status != plugin.ImageAwaitingUpload || images.Results[0].Image.ProductRef != "lamp-1" {
		t.Fatalf("POST /images = %+v", images)
	}
	image := images.Results[0].Image
	putPhoto()

	// 2. A packshot of the product, linked to the source image.
	packshotID, putPackshot := catalogUpload(t, api, "lamp-packshot.png", packshotPNG(t))
	putPackshot()
	var shots struct{ Results []plugin.BulkResult }
	expect(t, api.do(http.MethodPost, "/packshots", map[string]any{"packshots": []map[string]any{{
		"asset_id": packshotID, "product_ref": "lamp-1", "external_ref": "lamp-ps-1", "source_image_ref": "lamp-photo-1",
	}}}, &shots), http.StatusOK)
	if len(shots.Results) != 1 || shots.Results[0].Status != "created" || shots.Results[0].Packshot.Voting != models.VotingAccepted ||
		shots.Results[0].Packshot.ProductID != image.ProductID {
		t.Fatalf("POST /packshots = %+v", shots)
	}
	packshot := shots.Results[0].Packshot

	// 3. The product shows both, the image, once prepared, ready with its dimensions (the 300×400
	// photo upscaled to INPUT_MIN_LONG_EDGE) and a thumbnail.
	var product plugin.ProductDetail
	testenv.Eventually(t, 30*time.Second, "the photo to be prepared", func() bool {
		expect(t, api.do(http.MethodGet, "/products/lamp-1", nil, &product), http.StatusOK)
		return len(product.Images) == 1 && product.Images[0].Status == plugin.ImageReady
	})
	if product.ID != image.ProductID || product.DisplayName != "Desk lamp" || product.SKU != "DL-1" ||
		product.ImageCount != 1 || product.PackshotCount != 1 || product.ImagesTruncated || product.PackshotsTruncated ||
		len(product.Images) != 1 || len(product.Packshots) != 1 {
		t.Fatalf("GET /products/lamp-1 = %+v", product)
	}
	if img := product.Images[0]; img.ID != image.ID || img.Status != plugin.ImageReady || img.Width != 768 || img.Height != 1024 || img.AssetID != photoID || img.ThumbnailURL == "" {
		t.Fatalf("embedded image = %+v", img)
	}
	if ps := product.Packshots[0]; ps.ID != packshot.ID || ps.SourceImageRef != "lamp-photo-1" || ps.Voting != models.VotingAccepted || ps.VotingAt == nil {
		t.Fatalf("embedded packshot = %+v", ps)
	}
	var byID plugin.ProductDetail
	expect(t, api.do(http.MethodGet, "/products/"+product.ID, nil, &byID), http.StatusOK)
	if byID.ExternalRef != "lamp-1" {
		t.Fatalf("GET /products/{id} = %+v", byID)
	}
	var list plugin.ProductsPage
	expect(t, api.do(http.MethodGet, "/products", nil, &list), http.StatusOK)
	if len(list.Products) != 1 || list.Products[0].ID != product.ID || list.NextCursor != nil {
		t.Fatalf("GET /products = %+v", list)
	}
	var listed plugin.PackshotsPage
	expect(t, api.do(http.MethodGet, "/packshots?product_ref=lamp-1", nil, &listed), http.StatusOK)
	if len(listed.Packshots) != 1 || listed.Packshots[0].ID != packshot.ID {
		t.Fatalf("GET /packshots = %+v", listed)
	}

	// 4. The packshot leaves the catalog; its file stays.
	resp := api.do(http.MethodDelete, "/packshots/lamp-ps-1", nil, nil)
	expect(t, resp, http.StatusNoContent)
	expect(t, api.do(http.MethodDelete, "/packshots/lamp-ps-1", nil, nil), http.StatusNotFound)
	expect(t, api.do(http.MethodGet, "/products/lamp-1", nil, &product), http.StatusOK)
	if len(product.Packshots) != 0 || product.PackshotCount != 0 || len(product.Images) != 1 {
		t.Fatalf("after deleting the packshot: %+v", product)
	}
	var asset models.Asset
	if err := env.DB.Take(&asset, "id = ?", packshotID).Error; err != nil || (asset.Status != status.AssetReady && asset.Status != status.AssetProcessing) || asset.PurgedAt != nil {
		t.Fatalf("packshot file after delete = %+v, %v", asset, err)
	}

	// 5. A photo session for the product has no approved packshot any more: 422, nothing charged.
	resp = api.do(http.MethodPost, "/jobs", map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1", "style": "studio"},
		"subjects":       []map[string]any{{"product_ref": "lamp-1", "images_count": 1, "ai_model": "local/studio-v1"}},
	}, nil)
	expect(t, resp, http.StatusUnprocessableEntity)
	var envelope plugin.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&envelope); err != nil || envelope.Error.Code != plugin.CodePackshotNotApproved {
		t.Fatalf("session after the packshot was deleted: %+v (%v)", envelope, err)
	}
	me := credits(t, api)
	if me.Credits.Available != 10 || me.Credits.Reserved != 0 {
		t.Fatalf("credits after the refused session = %+v", me.Credits)
	}
	var orders int64
	if err := env.DB.Model(&models.Order{}).Where("account_id = ?", tenant.AccountID).Count(&orders).Error; err != nil || orders != 0 {
		t.Fatalf("orders after the refused session: %d (%v)", orders, err)
	}
}
