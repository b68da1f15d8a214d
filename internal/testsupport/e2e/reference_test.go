package e2e_test

import (
	"bytes"
	"context"
	"image/jpeg"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/status"
)

type refEntry struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Thumbnail string `json:"thumbnail"`
	Source    string `json:"source"`
}

// fetchImage downloads a signed image URL without a key and decodes it as JPEG or PNG.
func fetchImage(t *testing.T, rawURL string) (w, h int, contentType string) {
	t.Helper()
	anon := &client{t: t}
	resp := anon.do(http.MethodGet, rawURL, nil, nil)
	expect(t, resp, http.StatusOK)
	data, _ := io.ReadAll(resp.Body)
	contentType = resp.Header.Get("Content-Type")
	if contentType == "image/jpeg" {
		img, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", rawURL, err)
		}
		return img.Bounds().Dx(), img.Bounds().Dy(), contentType
	}
	return 0, 0, contentType
}

// TestReferenceDataEndToEnd reads the reference data over HTTP from a real process: the app seeds
// the marketplace and the system presets when it opens, their images are drawn on first
// download, an account's own items are its alone, and the prices agree with the AI models.
func TestReferenceDataEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{NoWorker: true})
	tenant := env.NewTenant(t, 10)
	other := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	otherAPI := &client{t: t, base: env.BaseURL + plugin.Base, key: other.PluginKey}
	seed, err := models.LoadReferenceSeed()
	if err != nil {
		t.Fatal(err)
	}

	// The tenant's own scenery, generated earlier: an image asset of its account.
	ctx := context.Background()
	now := time.Now().UTC()
	asset := models.Asset{ID: models.NewID(), AccountID: tenant.AccountID, Kind: models.AssetKindOutput, Status: status.AssetReady,
		Filename: "scenery.png", ContentType: "image/png", SizeBytes: int64(len(packshotPNG(t))), BlobKey: "outputs/" + models.NewID(),
		Width: 300, Height: 400, CreatedAt: now, UpdatedAt: now}
	if err := env.App.Blobs.Put(ctx, asset.BlobKey, packshotPNG(t), "image/png"); err != nil {
		t.Fatal(err)
	}
	if err := env.DB.Create(&asset).Error; err != nil {
		t.Fatal(err)
	}
	own := models.ReferenceItem{AccountID: &tenant.AccountID, Name: "My studio", Status: models.RefStatusDone, ThumbnailAssetID: &asset.ID}
	if err := models.CreateReferenceItem(env.DB, models.KindScenery, &own); err != nil {
		t.Fatal(err)
	}
	archived := models.ReferenceItem{AccountID: &tenant.AccountID, Name: "Old studio", Status: models.RefStatusArchived, ThumbnailAssetID: &asset.ID}
	if err := models.CreateReferenceItem(env.DB, models.KindScenery, &archived); err != nil {
		t.Fatal(err)
	}

	// Sceneries: the tenant's own first, then the seeded marketplace, every image downloadable.
	var sceneries struct{ Sceneries []refEntry }
	resp := api.do(http.MethodGet, "/sceneries", nil, &sceneries)
	expect(t, resp, http.StatusOK)
	if cc, vary := resp.Header.Get("Cache-Control"), resp.Header.Get("Vary"); cc != "private, max-age=60" || vary != "X-Api-Key" {
		t.Errorf("GET /sceneries: Cache-Control %q, Vary %q", cc, vary)
	}
	if len(sceneries.Sceneries) != 1+len(seed.Sceneries) || sceneries.Sceneries[0].ID != own.ID || sceneries.Sceneries[0].Source != plugin.SourceAccount {
		t.Fatalf("GET /sceneries = %+v", sceneries.Sceneries)
	}
	for _, s := range sceneries.Sceneries[1:] {
		if s.Source != plugin.SourceMarketplace || s.ID == archived.ID {
			t.Errorf("scenery %+v", s)
		}
	}
	if _, _, ct := fetchImage(t, sceneries.Sceneries[0].Thumbnail); ct != "image/png" {
		t.Errorf("own scenery image is %s", ct)
	}
	if w, h, _ := fetchImage(t, sceneries.Sceneries[1].Thumbnail); w != 1024 || h != 768 {
		t.Errorf("marketplace scenery image is %dx%d, want 1024x768", w, h)
	}

	// The other tenant sees the marketplace only.
	var theirs struct{ Sceneries []refEntry }
	expect(t, otherAPI.do(http.MethodGet, "/sceneries", nil, &theirs), http.StatusOK)
	if len(theirs.Sceneries) != len(seed.Sceneries) {
		t.Errorf("the other tenant lists %d sceneries, want the %d of the marketplace", len(theirs.Sceneries), len(seed.Sceneries))
	}
	for _, s := range theirs.Sceneries {
		if s.ID == own.ID || s.Source != plugin.SourceMarketplace {
			t.Errorf("the other tenant lists %+v", s)
		}
	}

	// Fashion models: the marketplace, drawn figures.
	var fashion struct{ Models []refEntry }
	expect(t, api.do(http.MethodGet, "/models", nil, &fashion), http.StatusOK)
	if len(fashion.Models) != len(seed.FashionModels) {
		t.Fatalf("GET /models = %+v", fashion.Models)
	}
	if w, h, _ := fetchImage(t, fashion.Models[0].Thumbnail); w != 512 || h != 640 {
		t.Errorf("model image is %dx%d", w, h)
	}

	// Presets: the system presets with their covers and galleries.
	var presets struct {
		Presets []struct {
			ID             string   `json:"id"`
			Slug           string   `json:"slug"`
			Thumbnail      string   `json:"thumbnail"`
			ExampleGallery []string `json:"example_gallery"`
			Scenery        *string  `json:"scenery"`
			IsFree         bool     `json:"is_free"`
			CreditCost     int64    `json:"credit_cost"`
		}
	}
	expect(t, api.do(http.MethodGet, "/presets", nil, &presets), http.StatusOK)
	if len(presets.Presets) != len(seed.Presets) {
		t.Fatalf("GET /presets = %+v", presets.Presets)
	}
	for i, p := range presets.Presets {
		if p.ID != seed.Presets[i].ID || p.Thumbnail == "" || len(p.ExampleGallery) != len(seed.Presets[i].Gallery) || p.IsFree != (p.CreditCost == 0) {
			t.Errorf("preset %d = %+v", i, p)
		}
	}
	if w, h, _ := fetchImage(t, presets.Presets[0].ExampleGallery[0]); w != 512 || h != 640 {
		t.Errorf("preset gallery image is %dx%d", w, h)
	}
	// Every preset route permission works over HTTP too.
	jobsOnly, err := models.IssueKey(env.DB, models.KeyKindPlugin, tenant.AccountID, &tenant.InstallationID, "jobs", []string{"plugin.jobs:read"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	limited := &client{t: t, base: env.BaseURL + plugin.Base, key: jobsOnly.Secret}
	expect(t, limited.do(http.MethodGet, "/presets", nil, nil), http.StatusOK)
	expect(t, limited.do(http.MethodGet, "/pricing", nil, nil), http.StatusForbidden)

	// Pricing agrees with the AI models.
	var pricing struct{ Prices []catalog.Price }
	resp = api.do(http.MethodGet, "/pricing", nil, &pricing)
	expect(t, resp, http.StatusOK)
	if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=300" {
		t.Errorf("GET /pricing: Cache-Control %q", cc)
	}
	var ai struct {
		AIModels []catalog.AIModel `json:"ai_models"`
	}
	expect(t, api.do(http.MethodGet, "/ai-models", nil, &ai), http.StatusOK)
	for _, m := range ai.AIModels {
		_, name, _ := strings.Cut(m.ID, "/")
		for _, jt := range m.JobTypes {
			cost, found := int64(-1), false
			for _, want := range []string{name, catalog.PriceAnyModel} {
				for _, p := range pricing.Prices {
					if !found && p.JobType == jt && p.Provider == m.Provider && p.Model == want {
						cost, found = p.CreditCost, true
					}
				}
			}
			if !found || cost != m.BaseCreditCost {
				t.Errorf("%s (%s): base_credit_cost %d, pricing %d (found %v)", m.ID, jt, m.BaseCreditCost, cost, found)
			}
		}
	}

	// Seeding again, as every process does when it starts, adds nothing.
	for table, want := range map[string]int{"sceneries": len(seed.Sceneries) + 2, "fashion_models": len(seed.FashionModels), "presets": len(seed.Presets)} {
		if err := models.SeedReference(env.DB); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := env.DB.Table(table).Count(&n).Error; err != nil || n != int64(want) {
			t.Errorf("%s: %d rows (err %v), want %d", table, n, err, want)
		}
	}
}
