package plugin_test

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/internal/providers/sim"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
)

// refList GETs a reference list with key and returns its entries under field, checking the
// status, the exact set of top-level keys and that it was not truncated.
func (e *env) refList(path, key, field string) (*httptest.ResponseRecorder, []map[string]any) {
	e.t.Helper()
	rec := e.do(http.MethodGet, p(path), key, nil)
	require.Equal(e.t, http.StatusOK, rec.Code, rec.Body.String())
	body := decode(e.t, rec)
	require.ElementsMatch(e.t, []string{field, "truncated"}, keysOf(body), rec.Body.String())
	require.Equal(e.t, false, body["truncated"], rec.Body.String())
	raw, ok := body[field].([]any)
	require.True(e.t, ok, "%s is not an array: %s", field, rec.Body.String())
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i], ok = r.(map[string]any)
		require.True(e.t, ok, "entry %d is not an object", i)
	}
	return rec, out
}

// fetchSigned GETs a signed URL of the API (no key) with optional extra headers.
func (e *env) fetchSigned(rawURL string, headers ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(e.t, err)
	require.Equal(e.t, publicBaseURL, u.Scheme+"://"+u.Host, "signed URLs start with PUBLIC_BASE_URL")
	return e.do(http.MethodGet, u.RequestURI(), "", nil, headers...)
}

// ownItem stores an item of the account of kind with the given state; thumbnail true gives it
// a ready asset as its image.
func (e *env) ownItem(kind models.ReferenceKind, inst *models.Installation, name, status string, voting *string, thumbnail bool, age time.Duration) models.ReferenceItem {
	e.t.Helper()
	it := models.ReferenceItem{AccountID: &inst.AccountID, Name: name, Status: status, Voting: voting,
		Preferences: "prefs of " + name, CreatedAt: time.Now().UTC().Add(-age)}
	if thumbnail {
		a := e.readyAsset(inst)
		require.NoError(e.t, e.blobs.Put(e.t.Context(), a.BlobKey, testimage.GradientPNG(e.t, 4, 4), "image/png"))
		it.ThumbnailAssetID = &a.ID
	}
	require.NoError(e.t, models.CreateReferenceItem(e.db, kind, &it))
	return it
}

func strPtr(s string) *string { return &s }

func TestListModelsAndSceneries(t *testing.T) {
	t.Parallel()
	seed, err := models.LoadReferenceSeed()
	require.NoError(t, err)
	for _, c := range []struct {
		path, field, group string
		kind               models.ReferenceKind
		market             []string
	}{
		{"/models", "models", "models", models.KindFashionModel, nil},
		{"/sceneries", "sceneries", "sceneries", models.KindScenery, nil},
	} {
		t.Run(c.field, func(t *testing.T) {
			e := newEnv(t)
			require.NoError(t, models.SeedReference(e.db))
			if c.kind == models.KindScenery {
				for _, s := range seed.Sceneries {
					c.market = append(c.market, s.Name)
				}
			} else {
				for _, m := range seed.FashionModels {
					c.market = append(c.market, m.Name)
				}
			}
			// An operator archived one marketplace item and rejected another.
			require.NoError(t, e.db.Table(c.kind.Table()).Where("name = ? AND account_id IS NULL", c.market[0]).
				Update("status", models.RefStatusArchived).Error)
			require.NoError(t, e.db.Table(c.kind.Table()).Where("name = ? AND account_id IS NULL", c.market[1]).
				Update("voting", models.RefVotingRejected).Error)
			market := slices.Clone(c.market[2:])
			slices.Sort(market)

			older := e.ownItem(c.kind, e.inst, "own older", models.RefStatusDone, nil, true, 2*time.Hour)
			newer := e.ownItem(c.kind, e.inst, "own newer", models.RefStatusDone, strPtr(models.RefVotingApproved), true, time.Hour)
			hidden := []string{
				e.ownItem(c.kind, e.inst, "own rejected", models.RefStatusDone, strPtr(models.RefVotingRejected), true, 0).ID,
				e.ownItem(c.kind, e.inst, "own archived", models.RefStatusArchived, nil, true, 0).ID,
				e.ownItem(c.kind, e.inst, "own generating", models.RefStatusInProgress, nil, false, 0).ID,
				e.ownItem(c.kind, e.inst, "own failed", models.RefStatusFailed, nil, false, 0).ID,
			}
			otherInst, otherKey := e.otherInstallation()
			otherOwn := e.ownItem(c.kind, otherInst, "other account's", models.RefStatusDone, nil, true, 0)
			hidden = append(hidden, otherOwn.ID)

			rec, entries := e.refList(c.path, e.key, c.field)
			assert.Equal(t, "private, max-age=60", rec.Header().Get("Cache-Control"))
			assert.Equal(t, "X-Api-Key", rec.Header().Get("Vary"))
			require.Len(t, entries, 2+len(market), rec.Body.String())
			var names []string
			for _, en := range entries {
				assert.Equal(t, []string{"id", "livemode", "name", "source", "thumbnail"}, keysOf(en))
				names = append(names, en["name"].(string))
				assert.NotContains(t, hidden, en["id"])
			}
			// The account's own first, newest first, then the marketplace by name.
			assert.Equal(t, append([]string{"own newer", "own older"}, market...), names)
			for i, own := range []models.ReferenceItem{newer, older} {
				assert.Equal(t, own.ID, entries[i]["id"])
				assert.Equal(t, plugin.SourceAccount, entries[i]["source"])
				u, err := url.Parse(entries[i]["thumbnail"].(string))
				require.NoError(t, err)
				assert.Equal(t, files.Path(*own.ThumbnailAssetID), u.Path, "an own item's image is its asset")
				require.Equal(t, http.StatusOK, e.fetchSigned(entries[i]["thumbnail"].(string)).Code)
			}
			for _, en := range entries[2:] {
				assert.Equal(t, plugin.SourceMarketplace, en["source"])
				assert.True(t, models.IsUUID(en["id"].(string)))
				assert.Contains(t, en["thumbnail"], publicBaseURL+files.RefPrefix+"v1/"+c.group+"/"+en["id"].(string)+".jpg?")
			}

			// The own items belong to the account: another installation of it sees them too.
			_, sameAccountKey := e.addInstallation(e.account.ID, 0)
			_, again := e.refList(c.path, sameAccountKey, c.field)
			assert.Equal(t, entries[0]["id"], again[0]["id"])
			assert.Len(t, again, len(entries))
			// Another account sees its own and the marketplace, nothing of this account's.
			_, others := e.refList(c.path, otherKey, c.field)
			require.Len(t, others, 1+len(market))
			assert.Equal(t, otherOwn.ID, others[0]["id"])
			assert.Equal(t, plugin.SourceAccount, others[0]["source"])
			for _, en := range others[1:] {
				assert.Equal(t, plugin.SourceMarketplace, en["source"])
			}
		})
	}
}

func TestReferenceListsAreEmptyArrays(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // nothing seeded
	for _, c := range [][2]string{{"/models", "models"}, {"/sceneries", "sceneries"}, {"/presets", "presets"}} {
		rec, entries := e.refList(c[0], e.key, c[1])
		assert.Empty(t, entries)
		assert.Contains(t, rec.Body.String(), `"`+c[1]+`":[]`)
	}
}

func TestReferenceImageDownload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, models.SeedReference(e.db))
	_, sceneries := e.refList("/sceneries", e.key, "sceneries")
	_, fashion := e.refList("/models", e.key, "models")
	_, presets := e.refList("/presets", e.key, "presets")
	srv := httptest.NewServer(e.router)
	defer srv.Close()

	for _, c := range []struct {
		url  string
		w, h int
	}{
		{sceneries[0]["thumbnail"].(string), 1024, 768},
		{fashion[0]["thumbnail"].(string), 512, 640},
		{presets[0]["thumbnail"].(string), 640, 640},
		{presets[0]["example_gallery"].([]any)[0].(string), 512, 640},
	} {
		u, err := url.Parse(c.url)
		require.NoError(t, err)
		key := models.ReferenceBlobPrefix + strings.TrimPrefix(u.Path, files.RefPrefix)
		// Not rendered yet: the first download draws the image and stores it.
		_, err = e.blobs.Get(t.Context(), key)
		require.Error(t, err, "%s stored before its first download", key)
		rec := e.fetchSigned(c.url)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		assert.Equal(t, "image/jpeg", rec.Header().Get("Content-Type"))
		assert.Equal(t, "private, max-age=86400", rec.Header().Get("Cache-Control"))
		// Its length is said, over a real connection, on a GET and on a HEAD (served as the GET,
		// without the body).
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			req, err := http.NewRequest(method, srv.URL+u.RequestURI(), nil)
			require.NoError(t, err)
			res, err := srv.Client().Do(req)
			require.NoError(t, err)
			res.Body.Close()
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.Equal(t, strconv.Itoa(rec.Body.Len()), res.Header.Get("Content-Length"), "%s %s", method, c.url)
		}
		img, err := jpeg.Decode(bytes.NewReader(rec.Body.Bytes()))
		require.NoError(t, err)
		assert.Equal(t, c.w, img.Bounds().Dx(), c.url)
		assert.Equal(t, c.h, img.Bounds().Dy(), c.url)
		stored, err := e.blobs.Get(t.Context(), key)
		require.NoError(t, err)
		assert.Equal(t, rec.Body.Bytes(), stored)
		// The same bytes again, and a 304 for the client's copy.
		again := e.fetchSigned(c.url)
		require.Equal(t, http.StatusOK, again.Code)
		assert.Equal(t, rec.Body.Bytes(), again.Body.Bytes())
		etag := rec.Header().Get("ETag")
		require.NotEmpty(t, etag)
		assert.Equal(t, http.StatusNotModified, e.fetchSigned(c.url, "If-None-Match", etag).Code)
	}

	good, err := url.Parse(sceneries[0]["thumbnail"].(string))
	require.NoError(t, err)
	// A tampered signature, or a URL for another file, is refused.
	q := good.Query()
	q.Set("signature", "x"+q.Get("signature")[1:])
	e.requireError(e.do(http.MethodGet, good.Path+"?"+q.Encode(), "", nil), http.StatusForbidden, plugin.CodeForbidden)
	other := strings.Replace(good.Path, sceneries[0]["id"].(string), sceneries[1]["id"].(string), 1)
	e.requireError(e.do(http.MethodGet, other+"?"+good.RawQuery, "", nil), http.StatusForbidden, plugin.CodeForbidden)
	// An expired URL is gone.
	expired := e.signer.URL(http.MethodGet, good.Path, time.Now().Add(-time.Minute))
	e.requireError(e.fetchSigned(expired), http.StatusGone, plugin.CodeURLExpired)
	// Signed, but no such seeded image or not a reference file at all.
	for _, path := range []string{
		files.RefPath(models.ReferenceBlobKey("sceneries", models.NewID())),
		files.RefPrefix + "v1/secrets/" + models.NewID() + ".jpg",
		files.RefPrefix + "v1/sceneries/..%2F..%2Fsecret.key",
	} {
		e.requireError(e.fetchSigned(e.signer.URL(http.MethodGet, path, time.Now().Add(time.Hour))), http.StatusNotFound, plugin.CodeNotFound)
	}
}

func TestListPresets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, models.SeedReference(e.db))
	seed, err := models.LoadReferenceSeed()
	require.NoError(t, err)
	now := time.Now().UTC()
	userPreset := func(accountID, name, status string) models.Preset {
		pr := models.Preset{ID: models.NewID(), AccountID: &accountID, Type: models.PresetTypeUser, Status: status,
			Visibility: models.PresetPrivate, Name: name, QuantityGuidelines: "two photos", QualityGuidelines: "sharp",
			IsFree: true, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, e.db.Create(&pr).Error)
		return pr
	}
	own := userPreset(e.account.ID, "My preset", models.PresetPublished)
	var gallery []string
	for i := range 2 {
		a := e.readyAsset(e.inst)
		gallery = append(gallery, a.ID)
		require.NoError(t, e.db.Create(&models.PresetImage{ID: models.NewID(), PresetID: own.ID, Role: models.PresetImageGallery,
			Position: i, AssetID: &a.ID, CreatedAt: now}).Error)
	}
	draft := userPreset(e.account.ID, "My draft", models.PresetDraft)
	otherInst, otherKey := e.otherInstallation()
	foreign := userPreset(otherInst.AccountID, "Theirs", models.PresetPublished)

	rec, entries := e.refList("/presets", e.key, "presets")
	assert.Equal(t, "private, max-age=60", rec.Header().Get("Cache-Control"))
	assert.Equal(t, "X-Api-Key", rec.Header().Get("Vary"))
	require.Len(t, entries, len(seed.Presets)+1, rec.Body.String())
	want := []string{"best_for", "categories", "credit_cost", "description", "example_gallery", "id", "input_guidance",
		"is_free", "livemode", "name", "scenery", "slug", "source", "tags", "thumbnail"}
	for _, en := range entries {
		assert.Equal(t, want, keysOf(en))
		assert.NotEqual(t, draft.ID, en["id"])
		assert.NotEqual(t, foreign.ID, en["id"])
	}
	// System presets first, in catalog order, with every field of the seed.
	for i, sp := range seed.Presets {
		en := entries[i]
		assert.Equal(t, sp.ID, en["id"])
		assert.Equal(t, sp.Slug, en["slug"])
		assert.Equal(t, sp.Name, en["name"])
		assert.Equal(t, sp.HeroIntro, en["description"])
		assert.Equal(t, sp.BestFor, en["best_for"])
		assert.Equal(t, plugin.SourceSystem, en["source"])
		assert.Equal(t, sp.IsFree, en["is_free"])
		assert.EqualValues(t, sp.CreditCost, en["credit_cost"])
		assert.Equal(t, sp.IsFree, sp.CreditCost == 0)
		assert.Equal(t, map[string]any{"requirements": sp.InputRequirements, "quantity": sp.QuantityGuidelines,
			"quality": sp.QualityGuidelines, "do": sp.Do, "dont": sp.Dont}, en["input_guidance"])
		assert.Equal(t, toAny(sp.Categories), en["categories"])
		assert.Equal(t, toAny(sp.Tags), en["tags"])
		if sp.Scenery == nil {
			v, present := en["scenery"]
			assert.True(t, present && v == nil, "scenery of %s must be null", sp.Slug)
		} else {
			assert.Equal(t, *sp.Scenery, en["scenery"])
		}
		assert.Contains(t, en["thumbnail"], publicBaseURL+files.RefPrefix+"v1/presets/"+sp.Cover.ID+".jpg?")
		g := en["example_gallery"].([]any)
		require.Len(t, g, len(sp.Gallery))
		assert.LessOrEqual(t, len(g), 6)
		for j, img := range sp.Gallery {
			assert.Contains(t, g[j], "/presets/"+img.ID+".jpg?")
		}
	}
	// Then the account's own: no cover, so the first gallery image is the thumbnail.
	last := entries[len(entries)-1]
	assert.Equal(t, own.ID, last["id"])
	assert.Equal(t, plugin.SourceAccount, last["source"])
	assert.Nil(t, last["scenery"])
	assert.Equal(t, []any{}, last["categories"])
	assert.Equal(t, []any{}, last["tags"])
	g := last["example_gallery"].([]any)
	require.Len(t, g, 2)
	for i, id := range gallery {
		u, err := url.Parse(g[i].(string))
		require.NoError(t, err)
		assert.Equal(t, files.Path(id), u.Path)
	}
	assert.Equal(t, g[0], last["thumbnail"])

	// The other account sees the system presets and its own.
	_, theirs := e.refList("/presets", otherKey, "presets")
	require.Len(t, theirs, len(seed.Presets)+1)
	assert.Equal(t, foreign.ID, theirs[len(theirs)-1]["id"])
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func TestReferencePermissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		path    string
		allowed []string
	}{
		{"/models", []string{"plugin.catalog:read"}},
		{"/sceneries", []string{"plugin.catalog:read"}},
		{"/pricing", []string{"plugin.catalog:read"}},
		{"/presets", []string{"plugin.catalog:read", "plugin.jobs:read", "plugin.presets:read"}},
	} {
		for _, scope := range models.PluginScopes {
			rec := e.do(http.MethodGet, p(c.path), e.issueKey(scope), nil)
			if slices.Contains(c.allowed, scope) {
				assert.Equal(t, http.StatusOK, rec.Code, "%s with %s: %s", c.path, scope, rec.Body.String())
			} else {
				msg := e.requireError(rec, http.StatusForbidden, plugin.CodeForbidden)
				assert.Contains(t, msg, c.allowed[0], "%s with %s", c.path, scope)
				assert.Empty(t, rec.Header().Get("Cache-Control"), "a 403 carries no cache header")
			}
		}
		e.requireError(e.do(http.MethodGet, p(c.path), "", nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
	}
}

// requirePricingMatchesAIModels checks GET /pricing against GET /ai-models: every listed AI
// model's base_credit_cost is the price of its own entry, or else of its provider's "*", for every
// job type it serves; every price entry names a listed model or is a provider's "*".
func requirePricingMatchesAIModels(t *testing.T, e *env) []catalog.Price {
	t.Helper()
	rec := e.do(http.MethodGet, p("/pricing"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "public, max-age=300", rec.Header().Get("Cache-Control"))
	assert.Empty(t, rec.Header().Get("Vary"))
	body := decode(t, rec)
	require.Equal(t, []string{"prices"}, keysOf(body))
	var prices []catalog.Price
	for _, raw := range body["prices"].([]any) {
		en := raw.(map[string]any)
		require.Equal(t, []string{"credit_cost", "job_type", "model", "provider"}, keysOf(en))
		prices = append(prices, catalog.Price{JobType: en["job_type"].(string), Provider: en["provider"].(string),
			Model: en["model"].(string), CreditCost: int64(en["credit_cost"].(float64))})
	}
	rec = e.do(http.MethodGet, p("/ai-models"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	var listed []map[string]any
	for _, raw := range decode(t, rec)["ai_models"].([]any) {
		listed = append(listed, raw.(map[string]any))
	}
	require.NotEmpty(t, listed)

	seen := map[[3]string]bool{}
	for _, pr := range prices {
		k := [3]string{pr.JobType, pr.Provider, pr.Model}
		require.False(t, seen[k], "two entries for %v", k)
		seen[k] = true
	}
	find := func(jt, provider, model string) (int64, bool) {
		for _, pr := range prices {
			if pr.JobType == jt && pr.Provider == provider && pr.Model == model {
				return pr.CreditCost, true
			}
		}
		return 0, false
	}
	providers := map[string]bool{}
	modelKeys := map[[3]string]bool{}
	for _, m := range listed {
		id, provider := m["id"].(string), m["provider"].(string)
		providers[provider] = true
		_, model, _ := strings.Cut(id, "/")
		base := int64(m["base_credit_cost"].(float64))
		for _, jt := range m["job_types"].([]any) {
			modelKeys[[3]string{jt.(string), provider, model}] = true
			cost, ok := find(jt.(string), provider, model)
			if !ok {
				cost, ok = find(jt.(string), provider, catalog.PriceAnyModel)
			}
			require.True(t, ok, "no price for %s (%s)", id, jt)
			assert.Equal(t, base, cost, "price of %s (%s) differs from its base_credit_cost", id, jt)
		}
	}
	for _, pr := range prices {
		assert.True(t, providers[pr.Provider], "price of provider %s, which lists no AI model", pr.Provider)
		if pr.Model != catalog.PriceAnyModel {
			assert.True(t, modelKeys[[3]string{pr.JobType, pr.Provider, pr.Model}], "price of an unlisted model %+v", pr)
		}
	}
	return prices
}

func TestPricingMatchesAIModels(t *testing.T) {
	t.Parallel()
	t.Run("default providers", func(t *testing.T) {
		prices := requirePricingMatchesAIModels(t, newEnv(t))
		assert.Contains(t, prices, catalog.Price{JobType: jobtype.PhotoShoot, Provider: "local", Model: "*", CreditCost: 1})
		assert.Contains(t, prices, catalog.Price{JobType: jobtype.PhotoShoot, Provider: "local", Model: "studio-v1", CreditCost: 1})
		for _, pr := range prices {
			assert.NotEqual(t, sim.Name, pr.Provider, "the sim provider is not configured")
		}
	})
	t.Run("with the simulated provider", func(t *testing.T) {
		prices := requirePricingMatchesAIModels(t, newEnv(t, withProviders(map[string]providers.Provider{
			"local": local.Provider{}, sim.Name: sim.Provider{},
		})))
		assert.Contains(t, prices, catalog.Price{JobType: jobtype.PhotoShoot, Provider: sim.Name, Model: "*", CreditCost: 1})
	})
	t.Run("model prices that differ from the provider default", func(t *testing.T) {
		cat, err := catalog.Parse([]byte(`{
		  "version": 1,
		  "aspect_ratios": [{"id": "1:1", "label": "Square", "width": 1, "height": 1, "default": true}],
		  "ai_models": [
		    {"id": "local/standard", "provider": "local", "name": "standard", "output_type": "image", "job_types": ["photo_shoot"], "supported_aspect_ratios": ["1:1"]},
		    {"id": "local/premium", "provider": "local", "name": "premium", "output_type": "image", "job_types": ["photo_shoot"], "supported_aspect_ratios": ["1:1"], "base_credit_cost": 4}
		  ],
		  "provider_prices": [{"provider": "local", "job_type": "photo_shoot", "credit_cost": 2}]
		}`))
		require.NoError(t, err)
		prices := requirePricingMatchesAIModels(t, newEnv(t, withCatalog(cat)))
		assert.Equal(t, []catalog.Price{
			{JobType: "photo_shoot", Provider: "local", Model: "*", CreditCost: 2},
			{JobType: "photo_shoot", Provider: "local", Model: "premium", CreditCost: 4},
			{JobType: "photo_shoot", Provider: "local", Model: "standard", CreditCost: 2},
		}, prices)
	})
}

// One answer of GET /models, /sceneries or /presets holds at most engine.MaxReferenceList items,
// the first ones of the list's order, and says truncated when the account has more: an account
// makes them without bound, and one answer must stay bounded.
func TestReferenceListsAreCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := time.Now().UTC()
	var scenes []models.ReferenceItem
	for i := range engine.MaxReferenceList + 1 {
		scenes = append(scenes, models.ReferenceItem{ID: models.NewID(), AccountID: &e.account.ID, Name: fmt.Sprintf("Scene %04d", i),
			Status: models.RefStatusDone, CreatedAt: now.Add(time.Duration(i) * time.Second), UpdatedAt: now})
	}
	require.NoError(t, e.db.Table(models.KindScenery.Table()).CreateInBatches(scenes, 200).Error)
	rec := e.do(http.MethodGet, p("/sceneries"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	body := decode(t, rec)
	assert.Equal(t, true, body["truncated"])
	items := body["sceneries"].([]any)
	require.Len(t, items, engine.MaxReferenceList)
	assert.Equal(t, scenes[len(scenes)-1].ID, items[0].(map[string]any)["id"], "the account's own, newest first")
	assert.Equal(t, scenes[1].ID, items[len(items)-1].(map[string]any)["id"], "the oldest own one is the one left out")
}
