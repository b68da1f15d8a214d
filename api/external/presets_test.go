package external_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// presetItemKeys are the keys of a preset item: the spec's table and the additive cover and gallery.
var presetItemKeys = []string{"bestFor", "categories", "cover", "createdAt", "do", "dont", "gallery", "heroIntro", "id",
	"inputRequirements", "isFree", "livemode", "name", "qualityGuidelines", "quantityGuidelines", "scenery", "slug", "tags"}

// System presets of models/seed/reference.json and their stored scenery requirement.
const (
	presetCleanEcommerce = "clean-ecommerce" // recommended
	presetLuxuryDark     = "luxury-dark"     // required
	presetFestiveHoliday = "festive-holiday" // null
)

// requiredFields are the fields POST /presets requires.
func requiredFields(name string) []string {
	return []string{"name", name, "quantityGuidelines", "3 to 5 photos", "qualityGuidelines", "sharp, well lit"}
}

// createPreset creates a preset through the API and returns its item.
func (e *env) createPreset(key string, fields []string, files ...formFile) map[string]any {
	e.t.Helper()
	code, body := e.multipart(key, http.MethodPost, "/presets", fields, files...)
	if code != http.StatusOK {
		e.t.Fatalf("POST /presets: %d %v", code, body)
	}
	item := body["preset"].(map[string]any)
	if body["success"] != true || body["presetId"] != item["id"] || len(body) != 3 {
		e.t.Fatalf("POST /presets answered %v", body)
	}
	return item
}

// listPresets answers GET /presets?query as the key's account, failing unless 200.
func (e *env) listPresets(key, query string) []map[string]any {
	e.t.Helper()
	code, body := e.getAs(key, "/presets"+query)
	if code != http.StatusOK {
		e.t.Fatalf("GET /presets%s: %d %v", query, code, body)
	}
	list := body["presets"].([]any)
	if int(body["count"].(float64)) != len(list) || len(body) != 2 {
		e.t.Fatalf("GET /presets%s: count %v for %d items", query, body["count"], len(list))
	}
	out := make([]map[string]any, len(list))
	for i, it := range list {
		out[i] = it.(map[string]any)
	}
	return out
}

// presetByID finds a preset in the list of the key's account; nil when it is not listed.
func (e *env) presetByID(key, id string) map[string]any {
	e.t.Helper()
	for _, it := range e.listPresets(key, "?maxRecords=1000") {
		if it["id"] == id {
			return it
		}
	}
	return nil
}

// putPreset sends PUT /presets for the preset id with more fields.
func (e *env) putPreset(key, id string, fields []string, files ...formFile) (int, map[string]any) {
	e.t.Helper()
	return e.multipart(key, http.MethodPut, "/presets", append([]string{"presetId", id}, fields...), files...)
}

// galleryIDs lists the ids of an item's gallery.
func galleryIDs(item map[string]any) []string {
	var out []string
	for _, g := range item["gallery"].([]any) {
		out = append(out, g.(map[string]any)["id"].(string))
	}
	return out
}

// jsonList is ids as a JSON array.
func jsonList(ids []string) string {
	b, err := json.Marshal(ids)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func coverID(item map[string]any) string {
	if c, ok := item["cover"].(map[string]any); ok {
		return c["id"].(string)
	}
	return ""
}

// checkSigned checks that raw is a URL signed by the test signer for GET of a path with the prefix.
func checkSigned(t *testing.T, raw, prefix string, now time.Time) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || !strings.HasPrefix(u.Path, prefix) {
		t.Fatalf("URL %q does not lead to %s…", raw, prefix)
	}
	s := urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "http://shotflow.test")
	if err := s.Verify(http.MethodGet, u.Path, u.Query(), now); err != nil {
		t.Errorf("URL %q: %v", raw, err)
	}
}

// storedUploads lists the uploaded files in the blob store of the test: newEnv opens it in a
// directory of t.TempDir, which shares its parent with every other t.TempDir of the test.
func storedUploads(t *testing.T) []string {
	t.Helper()
	var out []string
	root := filepath.Dir(t.TempDir())
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(filepath.ToSlash(path), "/uploads/") && !strings.HasSuffix(path, ".attrs") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func countRows(t *testing.T, db *gorm.DB, model any, where string, args ...any) int64 {
	t.Helper()
	var n int64
	q := db.Model(model)
	if where != "" {
		q = q.Where(where, args...)
	}
	if err := q.Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func systemPresetID(t *testing.T, db *gorm.DB, slug string) string {
	t.Helper()
	var p models.Preset
	if err := db.Where("type = ? AND slug = ?", models.PresetTypeSystem, slug).Take(&p).Error; err != nil {
		t.Fatal(err)
	}
	return p.ID
}

func TestListPresetsMaxRecords(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		if err := models.SeedReference(db); err != nil {
			t.Fatal(err)
		}
		for i := range 25 {
			p := &models.Preset{Name: fmt.Sprintf("own %02d", i), QuantityGuidelines: "q", QualityGuidelines: "q",
				CreatedAt: e.now.Add(time.Duration(i) * time.Minute)}
			if _, err := models.CreateUserPreset(db, e.account, p, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		all, _, err := models.ListVisiblePresets(db, e.account, 0)
		if err != nil || len(all) != 29 {
			t.Fatalf("visible presets: %d, %v", len(all), err)
		}
		for query, want := range map[string]int{"": 20, "?maxRecords=": 20, "?maxRecords=5": 5, "?maxRecords=1": 1,
			"?maxRecords=20": 20, "?maxRecords=29": 29, "?maxRecords=1000": 29, "?maxRecords=007": 7,
			"?maxRecords=99999999999999999999999": 29} {
			items := e.listPresets(e.key, query)
			if len(items) != want {
				t.Errorf("GET /presets%s: %d items, want %d", query, len(items), want)
				continue
			}
			// The plugin API's order: system presets first, then the account's own newest first.
			for i, it := range items {
				if it["id"] != all[i].ID {
					t.Errorf("GET /presets%s: item %d is %v, want %s", query, i, it["name"], all[i].Name)
				}
			}
		}
		for _, bad := range []string{"0", "-1", "abc", "1.5", "1e3", "+5", " 5", "5 ", "0x10", "00"} {
			code, body := e.getAs(e.key, "/presets?maxRecords="+url.QueryEscape(bad))
			if code != http.StatusBadRequest || !strings.Contains(errorOf(t, body), "maxRecords") {
				t.Errorf("maxRecords=%q: %d %v, want 400 naming maxRecords", bad, code, body)
			}
		}
		// The cap: 1000 even when more are visible.
		rows := make([]models.Preset, 1000)
		for i := range rows {
			acc := e.account
			rows[i] = models.Preset{ID: models.NewID(), AccountID: &acc, Type: models.PresetTypeUser, Status: models.PresetPublished,
				Visibility: models.PresetPrivate, Name: fmt.Sprintf("bulk %d", i), Categories: models.StringList{}, Tags: models.StringList{},
				IsFree: true, CreatedAt: e.now, UpdatedAt: e.now}
		}
		if err := db.CreateInBatches(rows, 200).Error; err != nil {
			t.Fatal(err)
		}
		for _, query := range []string{"?maxRecords=1000", "?maxRecords=1001", "?maxRecords=5000"} {
			if n := len(e.listPresets(e.key, query)); n != external.MaxPresetsLimit {
				t.Errorf("GET /presets%s with 1029 visible: %d items, want 1000", query, n)
			}
		}
	})
}

func TestPresetItems(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		if err := models.SeedReference(db); err != nil {
			t.Fatal(err)
		}
		bare := e.createPreset(e.key, requiredFields("Bare"))
		// A requirement text that speaks of a scenery does not make the scenery required: it is stored, never inferred.
		wordy := e.createPreset(e.key, append(requiredFields("Wordy"), "inputRequirements", "Needs a scenery backdrop behind the product."))
		req := e.createPreset(e.key, append(requiredFields("Req"), "scenery", "required"))
		rec := e.createPreset(e.key, append(requiredFields("Rec"), "scenery", "recommended"))

		items := e.listPresets(e.key, "")
		byID := map[string]map[string]any{}
		for _, it := range items {
			keys := make([]string, 0, len(it))
			for k := range it {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if !slices.Equal(keys, presetItemKeys) {
				t.Errorf("preset %v has keys %v, want %v", it["name"], keys, presetItemKeys)
			}
			byID[it["id"].(string)] = it
		}
		got := byID[bare["id"].(string)]
		if got == nil {
			t.Fatalf("the new preset is not listed: %v", items)
		}
		for _, k := range []string{"bestFor", "do", "dont", "inputRequirements", "heroIntro", "slug"} {
			if got[k] != "" {
				t.Errorf("unset %s = %#v, want \"\"", k, got[k])
			}
		}
		for _, k := range []string{"categories", "tags", "gallery"} {
			if l, ok := got[k].([]any); !ok || len(l) != 0 {
				t.Errorf("unset %s = %#v, want []", k, got[k])
			}
		}
		if got["cover"] != nil || got["scenery"] != nil || got["isFree"] != true || got["name"] != "Bare" ||
			got["quantityGuidelines"] != "3 to 5 photos" || got["qualityGuidelines"] != "sharp, well lit" {
			t.Errorf("bare preset = %v", got)
		}
		if created, err := time.Parse(time.RFC3339Nano, got["createdAt"].(string)); err != nil || created.IsZero() {
			t.Errorf("createdAt %v: %v", got["createdAt"], err)
		}
		for id, want := range map[string]any{wordy["id"].(string): nil, req["id"].(string): "required", rec["id"].(string): "recommended",
			systemPresetID(t, db, presetLuxuryDark): "required", systemPresetID(t, db, presetCleanEcommerce): "recommended",
			systemPresetID(t, db, presetFestiveHoliday): nil} {
			if it := byID[id]; it == nil || it["scenery"] != want {
				t.Errorf("preset %s: scenery %#v, want %#v", id, it["scenery"], want)
			}
		}
		// A system preset: its slug, and its seeded images behind signed /files/ref/ URLs.
		sys := byID[systemPresetID(t, db, presetLuxuryDark)]
		if sys["slug"] != presetLuxuryDark || sys["cover"] == nil || len(sys["gallery"].([]any)) != 4 {
			t.Fatalf("system preset = %v", sys)
		}
		checkSigned(t, sys["cover"].(map[string]any)["url"].(string), "/files/ref/v1/presets/"+coverID(sys)+".jpg", e.now)
		for _, g := range sys["gallery"].([]any) {
			g := g.(map[string]any)
			checkSigned(t, g["url"].(string), "/files/ref/v1/presets/"+g["id"].(string)+".jpg", e.now)
		}
		var images []models.PresetImage
		if err := db.Where("preset_id = ? AND role = ?", sys["id"], models.PresetImageGallery).Order("position").Find(&images).Error; err != nil {
			t.Fatal(err)
		}
		for i, img := range images {
			if galleryIDs(sys)[i] != img.ID {
				t.Errorf("system gallery %v, want in position order", galleryIDs(sys))
			}
		}

		// Another account sees the system presets but none of these private ones.
		_, otherKey := e.newAccount(external.ScopeRead)
		for _, it := range e.listPresets(otherKey, "?maxRecords=1000") {
			if it["slug"] == "" {
				t.Errorf("another account sees the private preset %v", it["name"])
			}
		}
		if n := len(e.listPresets(otherKey, "")); n != 4 {
			t.Errorf("another account sees %d presets, want the 4 system ones", n)
		}
	})
}

func TestCreatePreset(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		item := e.createPreset(e.key, []string{
			"name", "  Studio white  ", "quantityGuidelines", "3-5 photos", "qualityGuidelines", "Sharp, 2000 px",
			"bestFor", "Catalogues", "do", "Use daylight", "dont", "No clutter", "inputRequirements", "The whole product",
			"heroIntro", "Clean shots", "categories", `["studio", " food ", "studio"]`, "tags", `["white"]`, "scenery", "recommended",
		}, formFile{"cover", "cover.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{1, 100, 200, 255})}, formFile{"gallery", "a.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{2, 100, 200, 255})}, formFile{"gallery", "b.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{3, 100, 200, 255})})

		want := map[string]any{"name": "Studio white", "quantityGuidelines": "3-5 photos", "qualityGuidelines": "Sharp, 2000 px",
			"bestFor": "Catalogues", "do": "Use daylight", "dont": "No clutter", "inputRequirements": "The whole product",
			"heroIntro": "Clean shots", "slug": "", "isFree": true, "scenery": "recommended"}
		for k, v := range want {
			if item[k] != v {
				t.Errorf("%s = %#v, want %#v", k, item[k], v)
			}
		}
		if fmt.Sprint(item["categories"]) != "[studio food]" || fmt.Sprint(item["tags"]) != "[white]" {
			t.Errorf("categories %v, tags %v", item["categories"], item["tags"])
		}
		if listed := e.presetByID(e.key, item["id"].(string)); fmt.Sprint(listed) != fmt.Sprint(item) {
			t.Errorf("GET lists %v\nPOST answered %v", listed, item)
		}

		var p models.Preset
		if err := db.Take(&p, "id = ?", item["id"]).Error; err != nil {
			t.Fatal(err)
		}
		if p.Type != models.PresetTypeUser || p.Status != models.PresetPublished || p.Visibility != models.PresetPrivate ||
			p.AccountID == nil || *p.AccountID != e.account || !p.IsFree || p.CreditCost != 0 || p.Slug != "" {
			t.Errorf("stored preset %+v", p)
		}
		var images []models.PresetImage
		if err := db.Where("preset_id = ?", p.ID).Order("role, position").Find(&images).Error; err != nil {
			t.Fatal(err)
		}
		if len(images) != 3 || images[0].Role != models.PresetImageCover || images[1].Position != 0 || images[2].Position != 1 ||
			images[0].ID != coverID(item) || !slices.Equal([]string{images[1].ID, images[2].ID}, galleryIDs(item)) {
			t.Fatalf("stored images %+v for item %v", images, item)
		}
		for i, img := range images {
			var a models.Asset
			if img.AssetID == nil || db.Take(&a, "id = ?", *img.AssetID).Error != nil {
				t.Fatalf("image %+v has no asset", img)
			}
			if a.AccountID != e.account || a.Status != status.AssetReady || a.ContentType != "image/png" {
				t.Errorf("asset %+v", a)
			}
			data, err := e.blobs.Get(context.Background(), a.BlobKey)
			if err != nil || string(data) != string(testimage.SolidPNG(t, 8, 6, color.NRGBA{uint8(i + 1), 100, 200, 255})) {
				t.Errorf("blob of %s: %v", img.Role, err)
			}
		}
		if files := storedUploads(t); len(files) != 3 {
			t.Errorf("stored files %v, want the cover and 2 gallery images", files)
		}
		checkSigned(t, item["cover"].(map[string]any)["url"].(string), jobview.FilePath(*images[0].AssetID), e.now)
		checkSigned(t, item["gallery"].([]any)[1].(map[string]any)["url"].(string), jobview.FilePath(*images[2].AssetID), e.now)
	})
}

func TestCreatePresetRefusals(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		cover := formFile{"cover", "cover.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{9, 100, 200, 255})}
		refuse := func(name string, fields []string, mention string, files ...formFile) {
			t.Helper()
			code, body := e.multipart(e.key, http.MethodPost, "/presets", fields, files...)
			if code != http.StatusBadRequest || !strings.Contains(errorOf(t, body), mention) {
				t.Errorf("%s: %d %v, want 400 naming %s", name, code, body, mention)
			}
		}
		full := requiredFields("Nope")
		for i := 0; i < len(full); i += 2 {
			field := full[i]
			without := slices.Concat(full[:i], full[i+2:])
			refuse("without "+field, without, field, cover)
			blank := slices.Clone(full)
			blank[i+1] = "   "
			refuse("blank "+field, blank, field, cover)
		}
		refuse("long name", append(requiredFields(strings.Repeat("n", 201)), "bestFor", "x"), "name")
		refuse("long text", append(requiredFields("x"), "heroIntro", strings.Repeat("é", 4001)), "heroIntro")
		refuse("unknown field", append(requiredFields("x"), "colour", "red"), "colour")
		refuse("presetId in POST", append(requiredFields("x"), "presetId", models.NewID()), "presetId")
		refuse("twice", append(requiredFields("x"), "name", "again"), "name")
		refuse("scenery", append(requiredFields("x"), "scenery", "optional"), "scenery")
		refuse("categories not JSON", append(requiredFields("x"), "categories", "studio,food"), "categories")
		refuse("tags empty entry", append(requiredFields("x"), "tags", `["a", " "]`), "tags")
		// Refused at the 21st distinct entry, whatever follows: a list of 100,000 costs what one of
		// 21 does (deduplicating the whole list first was quadratic in its length).
		refuse("100,000 tags", append(requiredFields("x"), "tags", manyLabels(100_000)), "tags has more than 20 distinct entries")
		refuse("100,000 categories", append(requiredFields("x"), "categories", manyLabels(100_000)), "categories has more than 20 distinct entries")
		// One rule for text on both APIs: half a surrogate pair is refused, never stored as U+FFFD.
		refuse("tags lone surrogate", append(requiredFields("x"), "tags", `["\ud800"]`), "tags")
		refuse("file in a text field", requiredFields("x"), "name", formFile{"name", "n.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{1, 100, 200, 255})})
		refuse("two covers", requiredFields("x"), "cover", cover, formFile{"cover", "c2.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{2, 100, 200, 255})})
		gallery := []formFile{cover}
		for i := range 7 {
			gallery = append(gallery, formFile{"gallery", fmt.Sprintf("g%d.png", i), testimage.SolidPNG(t, 8, 6, color.NRGBA{uint8(i), 100, 200, 255})})
		}
		refuse("7 gallery images", requiredFields("x"), "gallery", gallery...)
		refuse("not an image", requiredFields("x"), "gallery", cover, formFile{"gallery", "g.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{1, 100, 200, 255})},
			formFile{"gallery", "notes.png", []byte("just some text, not a picture")})
		refuse("bad cover", requiredFields("x"), "cover", formFile{"cover", "c.jpg", []byte("\xff\xd8\xff\xe0 broken jpeg")})
		code, body := e.post(e.key, "/presets", map[string]any{"name": "x", "quantityGuidelines": "q", "qualityGuidelines": "q"})
		if code != http.StatusBadRequest {
			t.Errorf("JSON body: %d %v, want 400", code, body)
		}
		errorOf(t, body)

		if n := countRows(t, db, &models.Preset{}, ""); n != 0 {
			t.Errorf("%d presets created by refused requests", n)
		}
		if n := countRows(t, db, &models.Asset{}, ""); n != 0 {
			t.Errorf("%d assets created by refused requests", n)
		}
		if files := storedUploads(t); len(files) != 0 {
			t.Errorf("refused requests left files: %v", files)
		}
	})
}

func TestUpdatePreset(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		if err := models.SeedReference(db); err != nil {
			t.Fatal(err)
		}
		item := e.createPreset(e.key, append(requiredFields("First"), "bestFor", "Shoes", "tags", `["a"]`),
			formFile{"cover", "c.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{1, 100, 200, 255})}, formFile{"gallery", "g0.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{10, 100, 200, 255})},
			formFile{"gallery", "g1.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{11, 100, 200, 255})}, formFile{"gallery", "g2.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{12, 100, 200, 255})})
		id := item["id"].(string)
		g := galleryIDs(item)
		put := func(fields []string, files ...formFile) map[string]any {
			t.Helper()
			code, body := e.putPreset(e.key, id, fields, files...)
			if code != http.StatusOK || body["success"] != true || len(body) != 2 {
				t.Fatalf("PUT %v: %d %v", fields, code, body)
			}
			it := body["preset"].(map[string]any)
			if listed := e.presetByID(e.key, id); fmt.Sprint(listed) != fmt.Sprint(it) {
				t.Fatalf("GET lists %v\nPUT answered %v", listed, it)
			}
			return it
		}
		assetOf := func(imageID string) models.Asset {
			t.Helper()
			var a models.Asset
			if err := db.Where("id = (?)", db.Model(&models.PresetImage{}).Select("asset_id").Where("id = ?", imageID)).Take(&a).Error; err != nil {
				t.Fatal(err)
			}
			return a
		}
		gone := func(imageID string, a models.Asset) {
			t.Helper()
			if n := countRows(t, db, &models.PresetImage{}, "id = ?", imageID); n != 0 {
				t.Errorf("removed image %s is still stored", imageID)
			}
			var now models.Asset
			if err := db.Take(&now, "id = ?", a.ID).Error; err != nil || now.PurgedAt == nil {
				t.Errorf("asset of removed image %s: %+v, %v; want purged", imageID, now, err)
			}
			if _, err := e.blobs.Get(context.Background(), a.BlobKey); !errors.Is(err, blobstore.ErrNotFound) {
				t.Errorf("file of removed image %s: %v, want deleted", imageID, err)
			}
		}

		// Rename: only the name changes.
		it := put([]string{"name", " Second "})
		if it["name"] != "Second" || it["bestFor"] != "Shoes" || fmt.Sprint(it["tags"]) != "[a]" || coverID(it) != coverID(item) ||
			!slices.Equal(galleryIDs(it), g) || it["createdAt"] != item["createdAt"] {
			t.Errorf("after rename: %v", it)
		}
		// Other fields, cleared or set.
		it = put([]string{"bestFor", "", "tags", "[]", "categories", `["x"]`, "scenery", "required", "qualityGuidelines", "New"})
		if it["bestFor"] != "" || len(it["tags"].([]any)) != 0 || fmt.Sprint(it["categories"]) != "[x]" || it["scenery"] != "required" ||
			it["qualityGuidelines"] != "New" || it["quantityGuidelines"] != "3 to 5 photos" {
			t.Errorf("after edit: %v", it)
		}
		if it = put([]string{"scenery", ""}); it["scenery"] != nil {
			t.Errorf("empty scenery: %v, want null", it["scenery"])
		}

		// Cover replaced: the old one is removed.
		oldCover, oldAsset := coverID(item), assetOf(coverID(item))
		it = put(nil, formFile{"cover", "c2.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{2, 100, 200, 255})})
		if coverID(it) == "" || coverID(it) == oldCover || !slices.Equal(galleryIDs(it), g) {
			t.Fatalf("after cover replace: %v", it)
		}
		gone(oldCover, oldAsset)
		checkSigned(t, it["cover"].(map[string]any)["url"].(string), jobview.FilePath(assetOf(coverID(it)).ID), e.now)

		// Keep g0 and g2, add one: g1 is removed, the rest repacked.
		g1Asset := assetOf(g[1])
		it = put([]string{"existingGalleryIds", fmt.Sprintf(`[%q, %q]`, g[2], g[0])}, formFile{"gallery", "g3.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{13, 100, 200, 255})})
		now := galleryIDs(it)
		if len(now) != 3 || now[0] != g[0] || now[1] != g[2] || slices.Contains(g, now[2]) {
			t.Fatalf("after keep [g0 g2] + 1: %v (was %v)", now, g)
		}
		gone(g[1], g1Asset)
		var rows []models.PresetImage
		if err := db.Where("preset_id = ? AND role = ?", id, models.PresetImageGallery).Order("position").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			if r.ID != now[i] || r.Position != i {
				t.Errorf("gallery row %d: %+v, want %s at %d", i, r, now[i], i)
			}
		}
		// Adding without existingGalleryIds keeps all.
		it = put(nil, formFile{"gallery", "g4.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{14, 100, 200, 255})}, formFile{"gallery", "g5.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{15, 100, 200, 255})})
		if len(galleryIDs(it)) != 5 || !slices.Equal(galleryIDs(it)[:3], now) {
			t.Fatalf("after adding 2: %v", galleryIDs(it))
		}

		// Refusals change nothing.
		before := e.presetByID(e.key, id)
		assets := countRows(t, db, &models.Asset{}, "")
		files := len(storedUploads(t))
		refuse := func(name string, status int, presetID string, fields []string, mention string, files ...formFile) {
			t.Helper()
			code, body := e.putPreset(e.key, presetID, fields, files...)
			if code != status || !strings.Contains(errorOf(t, body), mention) {
				t.Errorf("%s: %d %v, want %d naming %q", name, code, body, status, mention)
			}
		}
		two := []formFile{{"gallery", "x.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{20, 100, 200, 255})}, {"gallery", "y.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{21, 100, 200, 255})}}
		refuse("7 in the end", 400, id, nil, "gallery", two...)
		refuse("7 in the end, keeping", 400, id, []string{"existingGalleryIds", jsonList(galleryIDs(before))}, "gallery", two...)
		refuse("unknown kept id", 400, id, []string{"existingGalleryIds", fmt.Sprintf(`[%q]`, coverID(before))}, "existingGalleryIds")
		refuse("kept id twice", 400, id, []string{"existingGalleryIds", fmt.Sprintf(`[%q, %q]`, now[0], now[0])}, "existingGalleryIds")
		// Counted before any is compared: a gallery holds at most 6.
		refuse("100,000 kept ids", 400, id, []string{"existingGalleryIds", manyLabels(100_000)}, "existingGalleryIds: a gallery holds at most 6 images")
		refuse("malformed existingGalleryIds", 400, id, []string{"existingGalleryIds", "[" + now[0]}, "existingGalleryIds")
		refuse("existingGalleryIds null", 400, id, []string{"existingGalleryIds", "null"}, "existingGalleryIds")
		refuse("removeCover and cover", 400, id, []string{"removeCover", "true"}, "removeCover", formFile{"cover", "c.png", testimage.SolidPNG(t, 8, 6, color.NRGBA{3, 100, 200, 255})})
		refuse("removeCover yes", 400, id, []string{"removeCover", "yes"}, "removeCover")
		refuse("empty name", 400, id, []string{"name", " "}, "name")
		refuse("unknown field", 400, id, []string{"visibility", "public"}, "visibility")
		refuse("bad image", 400, id, nil, "gallery", formFile{"gallery", "x.png", []byte("nope")})
		refuse("missing presetId", 400, "", nil, "presetId")
		refuse("non-UUID presetId", 400, "preset-1", nil, "presetId")
		refuse("unknown preset", 404, models.NewID(), []string{"name", "x"}, "not found")
		refuse("system preset", 403, systemPresetID(t, db, presetLuxuryDark), []string{"name", "Mine"}, "owner")
		code, body := e.multipart(e.key, http.MethodPut, "/presets", []string{"name", "x"})
		if code != http.StatusBadRequest || !strings.Contains(errorOf(t, body), "presetId") {
			t.Errorf("PUT without presetId: %d %v", code, body)
		}
		if after := e.presetByID(e.key, id); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("refused requests changed the preset:\n%v\n%v", before, after)
		}
		if n := countRows(t, db, &models.Asset{}, ""); n != assets {
			t.Errorf("refused requests created assets: %d, was %d", n, assets)
		}
		if n := len(storedUploads(t)); n != files {
			t.Errorf("refused requests left files: %d, was %d", n, files)
		}
		var sys models.Preset
		if err := db.Take(&sys, "slug = ? AND type = ?", presetLuxuryDark, models.PresetTypeSystem).Error; err != nil || sys.Name == "Mine" {
			t.Errorf("system preset %+v, %v", sys, err)
		}

		// Another account: the private preset is a 404, a public one of another account a 403.
		other, otherKey := e.newAccount(external.ScopeRead, external.ScopeRegister)
		code, body = e.putPreset(otherKey, id, []string{"name", "Theirs"})
		if code != http.StatusNotFound {
			t.Errorf("other account's private preset: %d %v, want 404", code, body)
		}
		errorOf(t, body)
		if e.presetByID(otherKey, id) != nil {
			t.Errorf("another account lists the private preset")
		}
		theirs := e.createPreset(otherKey, requiredFields("Theirs"))
		testdb.MustExec(t, db, "UPDATE presets SET visibility = 'public' WHERE id = ?", theirs["id"])
		if e.presetByID(e.key, theirs["id"].(string)) == nil {
			t.Fatal("a public preset of another account is not listed")
		}
		code, body = e.putPreset(e.key, theirs["id"].(string), []string{"name", "Stolen"})
		if code != http.StatusForbidden || !strings.Contains(errorOf(t, body), "owner") {
			t.Errorf("another account's public preset: %d %v, want 403", code, body)
		}
		if n := countRows(t, db, &models.Preset{}, "account_id = ? AND name = ?", other, "Theirs"); n != 1 {
			t.Errorf("the other account's preset changed")
		}

		// removeCover: false does nothing, true removes it.
		if it = put([]string{"removeCover", "false"}); coverID(it) != coverID(before) {
			t.Errorf("removeCover=false: %v", it["cover"])
		}
		coverAsset := assetOf(coverID(before))
		if it = put([]string{"removeCover", "true"}); it["cover"] != nil || len(galleryIDs(it)) != 5 {
			t.Errorf("removeCover=true: %v", it)
		}
		gone(coverID(before), coverAsset)
		// Keep none.
		if it = put([]string{"existingGalleryIds", "[]"}); len(it["gallery"].([]any)) != 0 {
			t.Errorf("existingGalleryIds=[]: %v", it["gallery"])
		}
	})
}

func TestPresetScopes(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		_, readOnly := e.newAccount(external.ScopeRead)
		_, registerOnly := e.newAccount(external.ScopeRegister)
		code, body := e.getAs(registerOnly, "/presets")
		if code != http.StatusForbidden || !strings.Contains(errorOf(t, body), external.ScopeRead) {
			t.Errorf("GET without content.read: %d %v", code, body)
		}
		for _, method := range []string{http.MethodPost, http.MethodPut} {
			code, body := e.multipart(readOnly, method, "/presets", append(requiredFields("x"), "presetId", models.NewID()))
			if code != http.StatusForbidden || !strings.Contains(errorOf(t, body), external.ScopeRegister) {
				t.Errorf("%s without content.register: %d %v", method, code, body)
			}
		}
		if n := countRows(t, db, &models.Preset{}, ""); n != 0 {
			t.Errorf("%d presets created without the scope", n)
		}
	})
}

// TestPresetImageURLsResolve follows the image URLs of the preset items through the service's
// whole router (api.NewRouter, as internal/app builds it): an uploaded image through /files/{id},
// a system preset's seeded image through the plugin handler's signed /files/ref/ route, which
// needs no key of either API.
func TestPresetImageURLsResolve(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	e := newEnv(t, db, 0)
	e.now = time.Now() // the download routes check the signatures against the real clock
	if err := models.SeedReference(db); err != nil {
		t.Fatal(err)
	}
	p := &plugin.Handler{Engine: e.handler.Engine, Signer: e.handler.Signer,
		Limiter: e.handler.Limiter, Slots: e.handler.Slots, Log: zap.NewNop()}
	router := api.NewRouter(api.Deps{Engine: e.handler.Engine, Blobs: e.blobs, Signer: e.handler.Signer, Log: zap.NewNop(), External: e.handler}, p)
	download := func(raw string) (int, string, []byte) {
		t.Helper()
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u.RequestURI(), nil))
		return rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes()
	}
	cover := testimage.SolidPNG(t, 8, 6, color.NRGBA{42, 100, 200, 255})
	own := e.createPreset(e.key, requiredFields("Own"), formFile{"cover", "c.png", cover})
	ownURL := own["cover"].(map[string]any)["url"].(string)
	if code, ct, body := download(ownURL); code != http.StatusOK || ct != "image/png" || string(body) != string(cover) {
		t.Errorf("uploaded cover: %d %s (%d bytes)", code, ct, len(body))
	}
	sys := e.presetByID(e.key, systemPresetID(t, db, presetCleanEcommerce))
	for _, raw := range []string{sys["cover"].(map[string]any)["url"].(string), sys["gallery"].([]any)[0].(map[string]any)["url"].(string)} {
		if code, ct, body := download(raw); code != http.StatusOK || ct != "image/jpeg" || len(body) == 0 {
			t.Errorf("seeded image %s: %d %s", raw, code, ct)
		}
	}
	// A removed image's URL stops working.
	if code, body := e.putPreset(e.key, own["id"].(string), []string{"removeCover", "true"}); code != http.StatusOK {
		t.Fatalf("removeCover: %d %v", code, body)
	}
	if code, _, _ := download(ownURL); code != http.StatusGone {
		t.Errorf("removed cover: %d, want 410", code)
	}
}

// manyLabels is a JSON array of n distinct short strings ("0", "1", …).
func manyLabels(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(strconv.Itoa(i)))
	}
	b.WriteByte(']')
	return b.String()
}
