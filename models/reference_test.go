package models_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/testdb"
)

func ptr[T any](v T) *T { return &v }

func countRows(t *testing.T, db *gorm.DB, table string, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Table(table).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func mustSeed(t *testing.T) *models.ReferenceSeed {
	t.Helper()
	s, err := models.LoadReferenceSeed()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEmbeddedReferenceSeed(t *testing.T) {
	t.Parallel()
	s := mustSeed(t)
	if len(s.FashionModels) != 6 || len(s.Sceneries) != 6 || len(s.Presets) < 3 {
		t.Fatalf("seed has %d models, %d sceneries, %d presets", len(s.FashionModels), len(s.Sceneries), len(s.Presets))
	}
	var free, paid, required, recommended, unknown int
	for _, p := range s.Presets {
		if p.Cover == nil || len(p.Gallery) == 0 || len(p.Gallery) > models.MaxPresetGallery {
			t.Errorf("preset %s: cover %v, %d gallery images", p.Slug, p.Cover != nil, len(p.Gallery))
		}
		if p.IsFree {
			free++
		} else {
			paid++
		}
		switch {
		case p.Scenery == nil:
			unknown++
		case *p.Scenery == models.SceneryRequired:
			required++
		default:
			recommended++
		}
	}
	// The seed exercises every value clients must handle.
	if free == 0 || paid == 0 || required == 0 || recommended == 0 || unknown == 0 {
		t.Errorf("seed presets: %d free, %d paid, scenery %d required / %d recommended / %d null", free, paid, required, recommended, unknown)
	}
}

func TestParseReferenceSeedRejectsBadSeeds(t *testing.T) {
	t.Parallel()
	good, err := json.Marshal(mustSeed(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := models.ParseReferenceSeed(good); err != nil {
		t.Fatalf("the embedded seed re-encoded: %v", err)
	}
	mutate := func(f func(s *models.ReferenceSeed)) []byte {
		s := mustSeed(t)
		f(s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := map[string][]byte{
		"seven gallery images": mutate(func(s *models.ReferenceSeed) {
			for len(s.Presets[0].Gallery) < 7 {
				img := s.Presets[0].Gallery[0]
				img.ID = models.NewID()
				s.Presets[0].Gallery = append(s.Presets[0].Gallery, img)
			}
		}),
		"free with a cost":       mutate(func(s *models.ReferenceSeed) { s.Presets[0].IsFree, s.Presets[0].CreditCost = true, 2 }),
		"paid without a cost":    mutate(func(s *models.ReferenceSeed) { s.Presets[0].IsFree, s.Presets[0].CreditCost = false, 0 }),
		"unknown scenery value":  mutate(func(s *models.ReferenceSeed) { s.Presets[0].Scenery = ptr("optional") }),
		"repeated id":            mutate(func(s *models.ReferenceSeed) { s.Sceneries[1].ID = s.FashionModels[0].ID }),
		"malformed id":           mutate(func(s *models.ReferenceSeed) { s.Sceneries[0].ID = "scenery-1" }),
		"repeated slug":          mutate(func(s *models.ReferenceSeed) { s.Presets[1].Slug = s.Presets[0].Slug }),
		"bad colour":             mutate(func(s *models.ReferenceSeed) { s.FashionModels[0].Look.Skin = "beige" }),
		"unknown product shape":  mutate(func(s *models.ReferenceSeed) { s.Presets[0].Cover.Product.Shape = "vase" }),
		"scenery without prompt": mutate(func(s *models.ReferenceSeed) { s.Sceneries[0].Preferences = "" }),
		"unknown field":          []byte(strings.Replace(string(good), `"version"`, `"versoin"`, 1)),
	}
	for name, data := range cases {
		if _, err := models.ParseReferenceSeed(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSeedReferenceIsIdempotentAndKeepsDecisions(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		s := mustSeed(t)
		images := 0
		for _, p := range s.Presets {
			images += len(p.Gallery) + 1
		}
		check := func() {
			t.Helper()
			if n := countRows(t, db, "fashion_models", "account_id IS NULL"); n != int64(len(s.FashionModels)) {
				t.Errorf("%d marketplace models, want %d", n, len(s.FashionModels))
			}
			if n := countRows(t, db, "sceneries", "account_id IS NULL"); n != int64(len(s.Sceneries)) {
				t.Errorf("%d marketplace sceneries, want %d", n, len(s.Sceneries))
			}
			if n := countRows(t, db, "presets", "type = ?", models.PresetTypeSystem); n != int64(len(s.Presets)) {
				t.Errorf("%d system presets, want %d", n, len(s.Presets))
			}
			if n := countRows(t, db, "preset_images", "1 = 1"); n != int64(images) {
				t.Errorf("%d preset images, want %d", n, images)
			}
		}
		if err := models.SeedReference(db); err != nil {
			t.Fatal(err)
		}
		check()
		// Several processes starting at once all succeed and leave one copy.
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- models.SeedReference(db)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent seed: %v", err)
			}
		}
		check()

		// Operators archive and reject seeded rows; a new seed renames them. The decisions stay.
		sc, m, p := s.Sceneries[0], s.FashionModels[0], s.Presets[0]
		testdb.MustExec(t, db, "UPDATE sceneries SET status = ? WHERE id = ?", models.RefStatusArchived, sc.ID)
		testdb.MustExec(t, db, "UPDATE fashion_models SET voting = ? WHERE id = ?", models.RefVotingRejected, m.ID)
		testdb.MustExec(t, db, "UPDATE presets SET status = ? WHERE id = ?", models.PresetArchived, p.ID)
		s.Sceneries[0].Name, s.FashionModels[0].Name = "Renamed scenery", "Renamed model"
		s.Presets[0].Name, s.Presets[0].Tags = "Renamed preset", []string{"new-tag"}
		if err := models.ApplyReferenceSeed(db, s); err != nil {
			t.Fatal(err)
		}
		check()
		var scRow, mRow models.ReferenceItem
		if err := db.Table("sceneries").Take(&scRow, "id = ?", sc.ID).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Table("fashion_models").Take(&mRow, "id = ?", m.ID).Error; err != nil {
			t.Fatal(err)
		}
		if scRow.Name != "Renamed scenery" || scRow.Status != models.RefStatusArchived {
			t.Errorf("scenery after reseed: %q %s", scRow.Name, scRow.Status)
		}
		if mRow.Name != "Renamed model" || mRow.Voting == nil || *mRow.Voting != models.RefVotingRejected {
			t.Errorf("model after reseed: %q %v", mRow.Name, mRow.Voting)
		}
		var pRow models.Preset
		if err := db.Take(&pRow, "id = ?", p.ID).Error; err != nil {
			t.Fatal(err)
		}
		if pRow.Name != "Renamed preset" || pRow.Status != models.PresetArchived || !slices.Equal(pRow.Tags, []string{"new-tag"}) {
			t.Errorf("preset after reseed: %q %s %v", pRow.Name, pRow.Status, pRow.Tags)
		}
	})
}

// refFixture seeds the marketplace and gives account A one item of every state, and account B one
// usable item.
type refFixture struct {
	a, b                string
	aDone, aApproved    string // usable, in creation order
	aRejected, aArchive string
	aInProgress, aFail  string
	bDone               string
}

func newRefFixture(t *testing.T, db *gorm.DB, kind models.ReferenceKind) refFixture {
	t.Helper()
	if err := models.SeedReference(db); err != nil {
		t.Fatal(err)
	}
	accA, err := models.CreateAccount(db, "A", 0)
	if err != nil {
		t.Fatal(err)
	}
	accB, err := models.CreateAccount(db, "B", 0)
	if err != nil {
		t.Fatal(err)
	}
	f := refFixture{a: accA.ID, b: accB.ID}
	base := time.Now().UTC().Add(-time.Hour)
	add := func(account, name, status string, voting *string, i int) string {
		it := models.ReferenceItem{AccountID: &account, Name: name, Status: status, Voting: voting,
			CreatedAt: base.Add(time.Duration(i) * time.Minute)}
		if err := models.CreateReferenceItem(db, kind, &it); err != nil {
			t.Fatal(err)
		}
		return it.ID
	}
	f.aDone = add(f.a, "a done", models.RefStatusDone, nil, 1)
	f.aApproved = add(f.a, "a approved", models.RefStatusDone, ptr(models.RefVotingApproved), 2)
	f.aRejected = add(f.a, "a rejected", models.RefStatusDone, ptr(models.RefVotingRejected), 3)
	f.aArchive = add(f.a, "a archived", models.RefStatusArchived, ptr(models.RefVotingApproved), 4)
	f.aInProgress = add(f.a, "a in progress", models.RefStatusInProgress, nil, 5)
	f.aFail = add(f.a, "a failed", models.RefStatusFailed, nil, 6)
	f.bDone = add(f.b, "b done", models.RefStatusDone, nil, 7)
	return f
}

func TestListUsableReferenceItems(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		s := mustSeed(t)
		for _, kind := range []models.ReferenceKind{models.KindFashionModel, models.KindScenery} {
			t.Run(string(kind), func(t *testing.T) {
				f := newRefFixture(t, db, kind)
				var market []string
				if kind == models.KindScenery {
					for _, sc := range s.Sceneries {
						market = append(market, sc.Name)
					}
				} else {
					for _, m := range s.FashionModels {
						market = append(market, m.Name)
					}
				}
				// One marketplace item is archived and one rejected by an operator.
				testdb.MustExec(t, db, "UPDATE "+kind.Table()+" SET status = ? WHERE name = ? AND account_id IS NULL", models.RefStatusArchived, market[0])
				testdb.MustExec(t, db, "UPDATE "+kind.Table()+" SET voting = ? WHERE name = ? AND account_id IS NULL", models.RefVotingRejected, market[1])
				market = market[2:]
				slices.Sort(market)

				items, err := models.ListUsableReferenceItems(db, kind, f.a, 1000)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, it := range items {
					got = append(got, it.ID)
					if it.Marketplace() && !strings.HasPrefix(it.ThumbnailKey, models.ReferenceBlobPrefix) {
						t.Errorf("marketplace item %s has thumbnail key %q", it.Name, it.ThumbnailKey)
					}
				}
				want := []string{f.aApproved, f.aDone} // own, newest first
				for _, name := range market {
					i := slices.IndexFunc(items, func(it models.ReferenceItem) bool { return it.Name == name && it.Marketplace() })
					if i < 0 {
						t.Fatalf("marketplace %s %q missing: %+v", kind, name, items)
					}
					want = append(want, items[i].ID)
				}
				if !slices.Equal(got, want) {
					t.Errorf("listed %v, want %v", got, want)
				}
				// The database orders and cuts: the first three are the first three of the whole list.
				if first, err := models.ListUsableReferenceItems(db, kind, f.a, 3); err != nil || len(first) != 3 ||
					first[0].ID != want[0] || first[1].ID != want[1] || first[2].ID != want[2] {
					t.Errorf("the first 3 = %+v, %v; want %v", first, err, want[:3])
				}

				for _, id := range []string{f.aDone, f.aApproved, want[2]} {
					if _, err := models.FindUsableReferenceItem(db, kind, f.a, id); err != nil {
						t.Errorf("find usable %s: %v", id, err)
					}
				}
				for _, id := range []string{f.aRejected, f.aArchive, f.aInProgress, f.aFail, f.bDone, models.NewID()} {
					if _, err := models.FindUsableReferenceItem(db, kind, f.a, id); !errors.Is(err, models.ErrNotFound) {
						t.Errorf("find %s: %v, want ErrNotFound", id, err)
					}
				}
				// B sees its own and the marketplace, nothing of A.
				items, err = models.ListUsableReferenceItems(db, kind, f.b, 1000)
				if err != nil {
					t.Fatal(err)
				}
				if len(items) != 1+len(market) || items[0].ID != f.bDone {
					t.Errorf("B lists %+v", items)
				}
			})
		}
	})
}

func TestReferenceItemConstraints(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		for _, it := range []models.ReferenceItem{
			{Name: "bad status", Status: "PUBLISHED"},
			{Name: "bad voting", Status: models.RefStatusDone, Voting: ptr("pending")},
		} {
			if err := models.CreateReferenceItem(db, models.KindScenery, &it); err == nil {
				t.Errorf("%s: accepted", it.Name)
			}
		}
	})
}

func TestListVisiblePresets(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		if err := models.SeedReference(db); err != nil {
			t.Fatal(err)
		}
		s := mustSeed(t)
		a, err := models.CreateAccount(db, "A", 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := models.CreateAccount(db, "B", 0)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		user := func(account, name, status, visibility string, age time.Duration) models.Preset {
			p := models.Preset{ID: models.NewID(), AccountID: &account, Type: models.PresetTypeUser, Status: status,
				Visibility: visibility, Name: name, QuantityGuidelines: "q", QualityGuidelines: "ql", IsFree: true,
				CreatedAt: now.Add(-age), UpdatedAt: now}
			if err := db.Create(&p).Error; err != nil {
				t.Fatal(err)
			}
			return p
		}
		older := user(a.ID, "a older", models.PresetPublished, models.PresetPrivate, 2*time.Hour)
		newer := user(a.ID, "a newer", models.PresetPublished, models.PresetPrivate, time.Hour)
		user(a.ID, "a draft", models.PresetDraft, models.PresetPrivate, 0)
		user(b.ID, "b private", models.PresetPublished, models.PresetPrivate, 0)
		shared := user(b.ID, "b public", models.PresetPublished, models.PresetPublic, 3*time.Hour)
		// A user preset with a gallery stored out of order and no cover.
		for _, pos := range []int{2, 0, 1} {
			img := models.PresetImage{ID: models.NewID(), PresetID: newer.ID, Role: models.PresetImageGallery, Position: pos,
				BlobKey: "presets/x/" + string(rune('a'+pos)), CreatedAt: now}
			if err := db.Create(&img).Error; err != nil {
				t.Fatal(err)
			}
		}
		// An archived system preset disappears.
		testdb.MustExec(t, db, "UPDATE presets SET status = ? WHERE id = ?", models.PresetArchived, s.Presets[1].ID)

		presets, images, err := models.ListVisiblePresets(db, a.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range presets {
			got = append(got, p.Name)
		}
		var want []string
		for i, sp := range s.Presets {
			if i != 1 {
				want = append(want, sp.Name)
			}
		}
		want = append(want, newer.Name, older.Name, shared.Name) // user presets newest first
		if !slices.Equal(got, want) {
			t.Fatalf("A sees %q, want %q", got, want)
		}
		first := presets[0]
		sp := s.Presets[0]
		if first.Slug != sp.Slug || !slices.Equal(first.Categories, sp.Categories) || !slices.Equal(first.Tags, sp.Tags) ||
			first.IsFree != sp.IsFree || first.CreditCost != sp.CreditCost || first.DoTips != sp.Do || first.DontTips != sp.Dont ||
			first.HeroIntro != sp.HeroIntro || first.InputRequirements != sp.InputRequirements {
			t.Errorf("system preset round trip: %+v", first)
		}
		imgs := images[first.ID]
		if len(imgs) != 1+len(sp.Gallery) || imgs[0].Role != models.PresetImageCover || imgs[0].ID != sp.Cover.ID {
			t.Fatalf("images of %s: %+v", sp.Slug, imgs)
		}
		for i, g := range sp.Gallery {
			if imgs[i+1].ID != g.ID || imgs[i+1].Position != i {
				t.Errorf("gallery %d: %+v, want %s", i, imgs[i+1], g.ID)
			}
		}
		if g := images[newer.ID]; len(g) != 3 || g[0].Position != 0 || g[1].Position != 1 || g[2].Position != 2 {
			t.Errorf("user gallery order: %+v", g)
		}
		// Empty lists read back as [], not null.
		if older.Categories != nil {
			t.Fatal("fixture should leave categories nil")
		}
		for _, p := range presets {
			if p.ID == older.ID && (p.Categories == nil || len(p.Categories) != 0 || p.Tags == nil) {
				t.Errorf("user preset lists: %#v %#v", p.Categories, p.Tags)
			}
		}
		// B sees the system presets, its own (private and public), nothing of A.
		presets, _, err = models.ListVisiblePresets(db, b.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(presets) != len(s.Presets)-1+2 || slices.ContainsFunc(presets, func(p models.Preset) bool { return p.AccountID != nil && *p.AccountID == a.ID }) {
			t.Errorf("B sees %+v", presets)
		}
	})
}

func TestPresetConstraints(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		if err := models.SeedReference(db); err != nil {
			t.Fatal(err)
		}
		s := mustSeed(t)
		acc, err := models.CreateAccount(db, "A", 0)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		p := s.Presets[0] // has a cover and gallery images at positions 0..n-1
		img := func(role string, pos int) *models.PresetImage {
			return &models.PresetImage{ID: models.NewID(), PresetID: p.ID, Role: role, Position: pos, BlobKey: "k", CreatedAt: now}
		}
		for pos := len(p.Gallery); pos < models.MaxPresetGallery; pos++ {
			if err := db.Create(img(models.PresetImageGallery, pos)).Error; err != nil {
				t.Fatalf("gallery image %d: %v", pos+1, err)
			}
		}
		for name, bad := range map[string]any{
			"seventh gallery image": img(models.PresetImageGallery, models.MaxPresetGallery),
			"second cover":          img(models.PresetImageCover, 0),
			"cover at position 1":   img(models.PresetImageCover, 1),
			"taken gallery slot":    img(models.PresetImageGallery, 0),
			"image without a file": &models.PresetImage{ID: models.NewID(), PresetID: s.Presets[len(s.Presets)-1].ID,
				Role: models.PresetImageGallery, Position: models.MaxPresetGallery - 1, CreatedAt: now},
			"user preset without account": &models.Preset{ID: models.NewID(), Type: models.PresetTypeUser, Status: models.PresetPublished,
				Visibility: models.PresetPrivate, Name: "x", CreatedAt: now, UpdatedAt: now},
			"system preset of an account": &models.Preset{ID: models.NewID(), AccountID: &acc.ID, Type: models.PresetTypeSystem,
				Status: models.PresetPublished, Visibility: models.PresetPublic, Name: "x", CreatedAt: now, UpdatedAt: now},
			"unknown scenery value": &models.Preset{ID: models.NewID(), AccountID: &acc.ID, Type: models.PresetTypeUser,
				Status: models.PresetPublished, Visibility: models.PresetPrivate, Name: "x", SceneryRequirement: ptr("optional"), CreatedAt: now, UpdatedAt: now},
			"repeated system slug": &models.Preset{ID: models.NewID(), Type: models.PresetTypeSystem, Status: models.PresetPublished,
				Visibility: models.PresetPublic, Name: "x", Slug: p.Slug, CreatedAt: now, UpdatedAt: now},
		} {
			if err := db.Create(bad).Error; err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
		// The same slug in an account is fine (slugs are unique per owner).
		own := models.Preset{ID: models.NewID(), AccountID: &acc.ID, Type: models.PresetTypeUser, Status: models.PresetPublished,
			Visibility: models.PresetPrivate, Name: "mine", Slug: p.Slug, CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&own).Error; err != nil {
			t.Errorf("account preset reusing a system slug: %v", err)
		}
	})
}

const pricingCatalog = `{
  "version": 1,
  "aspect_ratios": [{"id": "1:1", "label": "Square", "width": 1, "height": 1, "default": true}],
  "ai_models": [
    {"id": "local/a", "provider": "local", "name": "a", "output_type": "image", "job_types": ["photo_shoot", "packshot"], "supported_aspect_ratios": ["1:1"]},
    {"id": "local/b", "provider": "local", "name": "b", "output_type": "image", "job_types": ["photo_shoot"], "supported_aspect_ratios": ["1:1"], "base_credit_cost": 5},
    {"id": "other/c", "provider": "other", "name": "c", "output_type": "image", "job_types": ["photo_shoot"], "supported_aspect_ratios": ["1:1"], "base_credit_cost": 0}
  ],
  "provider_prices": [
    {"provider": "local", "job_type": "photo_shoot", "credit_cost": 2},
    {"provider": "local", "job_type": "packshot", "credit_cost": 2},
    {"provider": "local", "job_type": "video", "credit_cost": 9},
    {"provider": "other", "job_type": "photo_shoot", "credit_cost": 3}
  ]
}`

func TestCatalogPrices(t *testing.T) {
	t.Parallel()
	c, err := catalog.Parse([]byte(pricingCatalog))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Model("local/a")
	b, _ := c.Model("local/b")
	other, _ := c.Model("other/c")
	// A model without base_credit_cost costs its provider's default; an explicit one (even 0) stays.
	if a.BaseCreditCost != 2 || b.BaseCreditCost != 5 || other.BaseCreditCost != 0 {
		t.Fatalf("base costs a=%d b=%d c=%d", a.BaseCreditCost, b.BaseCreditCost, other.BaseCreditCost)
	}
	// Only the "local" provider is available: no entry of "other", and no "*" for a job type
	// (video) no available model serves.
	got := c.Prices([]catalog.AIModel{b, a})
	want := []catalog.Price{
		{JobType: "packshot", Provider: "local", Model: "*", CreditCost: 2},
		{JobType: "packshot", Provider: "local", Model: "a", CreditCost: 2},
		{JobType: "photo_shoot", Provider: "local", Model: "*", CreditCost: 2},
		{JobType: "photo_shoot", Provider: "local", Model: "a", CreditCost: 2},
		{JobType: "photo_shoot", Provider: "local", Model: "b", CreditCost: 5},
	}
	if !slices.Equal(got, want) {
		t.Errorf("prices\n got %+v\nwant %+v", got, want)
	}
	if got := c.Prices(nil); got == nil || len(got) != 0 {
		t.Errorf("no models: %#v, want an empty list", got)
	}

	for name, doc := range map[string]string{
		"no default for a job type": strings.Replace(pricingCatalog, `{"provider": "local", "job_type": "packshot", "credit_cost": 2},`, "", 1),
		"defaults disagree":         strings.Replace(pricingCatalog, `"job_type": "packshot", "credit_cost": 2`, `"job_type": "packshot", "credit_cost": 4`, 1),
		"repeated provider price":   strings.Replace(pricingCatalog, `"job_type": "video"`, `"job_type": "packshot"`, 1),
		"negative provider price":   strings.Replace(pricingCatalog, `"credit_cost": 9`, `"credit_cost": -1`, 1),
		"negative model cost":       strings.Replace(pricingCatalog, `"base_credit_cost": 5`, `"base_credit_cost": -5`, 1),
	} {
		if _, err := catalog.Parse([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestEmbeddedCatalogHasProviderPrices: every provider and job type a catalog model serves has a
// default price, so GET /pricing always has a "*" entry for it.
func TestEmbeddedCatalogHasProviderPrices(t *testing.T) {
	t.Parallel()
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.AIModels {
		for _, jt := range m.JobTypes {
			if _, ok := c.ProviderPrice(m.Provider, jt); !ok {
				t.Errorf("catalog.json: provider %q has no provider_prices entry for job type %q (model %s)", m.Provider, jt, m.ID)
			}
		}
	}
}
