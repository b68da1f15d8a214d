package models_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// dateLikeTexts are client texts shaped as the times SQLite's driver can read from text: a date,
// a date and time (with a space, with a T and Z, to the minute) and a bare time of day.
var dateLikeTexts = []string{"2026-01-02", "2026-01-02 10:00:00", "2026-01-02T10:00:00Z", "2026-01-02 10:00", "12:00"}

// dateTextFixture is one account whose client texts (names, references, labels, descriptions)
// are all text, with a record of every list that shows one.
type dateTextFixture struct {
	t       *testing.T
	db      *gorm.DB
	text    string
	account string
	inst    string
	clock   time.Time
}

func (f *dateTextFixture) tick() time.Time {
	f.clock = f.clock.Add(time.Minute)
	return f.clock
}

func (f *dateTextFixture) create(rows ...any) {
	f.t.Helper()
	for _, r := range rows {
		if err := f.db.Create(r).Error; err != nil {
			f.t.Fatalf("create %T: %v", r, err)
		}
	}
}

func (f *dateTextFixture) asset(kind string) *models.Asset {
	f.t.Helper()
	now := f.tick()
	a := &models.Asset{ID: models.NewID(), AccountID: f.account, Kind: kind, Status: status.AssetReady, ContentType: "image/png",
		BlobKey: kind + "s/" + models.NewID(), CreatedAt: now, UpdatedAt: now}
	f.create(a)
	return a
}

func (f *dateTextFixture) product(name, ref string) *models.Product {
	f.t.Helper()
	now := f.tick()
	p := &models.Product{ID: models.NewID(), AccountID: f.account, InstallationID: &f.inst, ExternalRef: ref, DisplayName: name,
		SKU: f.text, CreatedAt: now, UpdatedAt: now}
	f.create(p)
	return p
}

func (f *dateTextFixture) packshot(p *models.Product, voting string) *models.Packshot {
	f.t.Helper()
	a := f.asset(models.AssetKindOutput)
	ps := &models.Packshot{ID: models.NewID(), AccountID: f.account, InstallationID: &f.inst, ProductID: p.ID, AssetID: a.ID,
		ExternalRef: models.NewID(), Voting: voting, CreatedAt: f.tick()}
	f.create(ps)
	return ps
}

// job stores a one-job order of the type; change adjusts the job before insertion.
func (f *dateTextFixture) job(jobType, st string, change func(*models.Job)) *models.Job {
	f.t.Helper()
	now := f.tick()
	o := &models.Order{ID: models.NewID(), AccountID: f.account, InstallationID: &f.inst, API: models.APIExternal, JobType: jobType,
		SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now}
	j := &models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: f.account, InstallationID: &f.inst, JobType: jobType,
		ProductRef: "ref-" + models.NewID(), AIModel: "local/studio", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: st,
		Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
	if st == status.JobCompleted {
		j.CompletedAt = &now
	}
	change(j)
	f.create(o, j)
	return j
}

// recordNames maps the records' IDs to their names, and checks every record is dated as want says.
func recordNames(t *testing.T, recs []models.Record, want map[string]time.Time) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range recs {
		out[r.ID] = r.Name
		if at, ok := want[r.ID]; ok && !r.CreatedAt.Equal(at) {
			t.Errorf("record %s createdAt = %v, want %v", r.ID, r.CreatedAt, at)
		}
	}
	return out
}

// checkNames asserts that names maps every ID of ids to the text, whatever else it holds.
func (f *dateTextFixture) checkNames(list string, names map[string]string, ids ...string) {
	f.t.Helper()
	for _, id := range ids {
		got, ok := names[id]
		if !ok {
			f.t.Errorf("%s: %s is not listed (%v)", list, id, names)
		} else if got != f.text {
			f.t.Errorf("%s: %s is named %q, want %q as stored", list, id, got, f.text)
		}
	}
}

// Client texts shaped as times (a product named "2026-01-02") come out of every list as they
// went in, on both databases: on SQLite the driver would otherwise read such a text from a column
// without a declared type (COALESCE, UNION, subquery) as a time, and the string would then get
// that time back as RFC 3339 ("2026-01-02T00:00:00Z"). The records stay dated as they were, and a
// page of packshots starts after the record named, so times of expressions still read.
func TestDateLikeTextsListAsStored(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		box, err := secrets.NewBox(make([]byte, 32))
		if err != nil {
			t.Fatal(err)
		}
		store := models.NewStore(db)
		ctx := context.Background()
		for _, text := range dateLikeTexts {
			t.Run(text, func(t *testing.T) {
				acc, err := models.CreateAccount(db, "team", 0)
				if err != nil {
					t.Fatal(err)
				}
				created, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: text, RateLimitPerMin: 60}, "whsec_x")
				if err != nil {
					t.Fatal(err)
				}
				inst := created.Installation
				f := &dateTextFixture{t: t, db: db, text: text, account: acc.ID, inst: inst.ID,
					clock: time.Date(2026, 3, 1, 9, 0, 0, 123456000, time.UTC)}

				// Products named by the text, and one with no name whose reference is the text.
				named := f.product(text, "named-"+models.NewID())
				bare := f.product("", text)

				// Packshots: of each product, one made by a job (dated by it), and a packshot job whose
				// packshot does not exist yet.
				pending := f.packshot(named, models.VotingPending)
				approved := f.packshot(bare, models.VotingAccepted)
				maker := f.job(jobtype.Packshot, status.JobCompleted, func(j *models.Job) { j.ProductID = &bare.ID })
				made := f.packshot(bare, models.VotingPending)
				if err := db.Model(made).Update("job_id", maker.ID).Error; err != nil {
					t.Fatal(err)
				}
				recordID := models.NewID()
				making := f.job(jobtype.Packshot, status.JobInProgress, func(j *models.Job) { j.ProductID, j.RecordID = &named.ID, &recordID })
				// A packshot whose file was purged: listed without a thumbnail.
				purged := f.packshot(named, models.VotingPending)
				if err := db.Model(&models.Asset{}).Where("id = ?", purged.AssetID).Update("purged_at", f.tick()).Error; err != nil {
					t.Fatal(err)
				}
				dated := map[string]time.Time{pending.ID: pending.CreatedAt, approved.ID: approved.CreatedAt,
					made.ID: maker.CreatedAt, recordID: making.CreatedAt, purged.ID: purged.CreatedAt}

				all, err := store.ListAccountPackshots(ctx, acc.ID, false, models.RecordPage{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				f.checkNames("ListAccountPackshots", recordNames(t, all, dated), pending.ID, approved.ID, made.ID, recordID, purged.ID)
				thumbnails := map[string]string{}
				for _, r := range all {
					thumbnails[r.ID] = r.Thumbnail.AssetID
				}
				if want := map[string]string{purged.ID: "", recordID: "", pending.ID: pending.AssetID, approved.ID: approved.AssetID,
					made.ID: made.AssetID}; !maps.Equal(thumbnails, want) {
					t.Errorf("packshot thumbnails = %v, want %v", thumbnails, want)
				}
				ok, err := store.ListAccountPackshots(ctx, acc.ID, true, models.RecordPage{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				f.checkNames("ListAccountPackshots approved", recordNames(t, ok, dated), approved.ID)
				var paged []string
				for after := ""; ; {
					page, err := store.ListAccountPackshots(ctx, acc.ID, false, models.RecordPage{StartingAfter: after, Limit: 1})
					if err != nil {
						t.Fatal(err)
					}
					if len(page) == 0 {
						break
					}
					after = page[0].ID
					paged = append(paged, after)
				}
				if want := []string{purged.ID, recordID, made.ID, approved.ID, pending.ID}; !slices.Equal(paged, want) {
					t.Errorf("packshots one by one = %v, want %v", paged, want)
				}

				// Photo-shoot images and videos, named by their product's name, their label, their
				// product's reference or the reference they were ordered with.
				byName := f.job(jobtype.PhotoShoot, status.JobCompleted, func(j *models.Job) { j.ProductID = &named.ID })
				byLabel := f.job(jobtype.PhotoShoot, status.JobInProgress, func(j *models.Job) { j.ProductLabel = text })
				byRef := f.job(jobtype.PhotoShoot, status.JobFailed, func(j *models.Job) { j.ProductID = &bare.ID })
				byOrderedRef := f.job(jobtype.PhotoShoot, status.JobPending, func(j *models.Job) { j.ProductRef = text })
				video := f.job(jobtype.Video, status.JobInProgress, func(j *models.Job) { j.ProductID = &named.ID })
				reel := f.job(jobtype.Reel, status.JobPending, func(j *models.Job) { j.ProductLabel = text })
				shoots, err := store.ListAccountShoots(ctx, acc.ID, false, "", models.RecordPage{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				f.checkNames("ListAccountShoots", recordNames(t, shoots, map[string]time.Time{byName.ID: byName.CreatedAt}),
					byName.ID, byLabel.ID, byRef.ID, byOrderedRef.ID)
				videos, err := store.ListAccountVideos(ctx, acc.ID, models.RecordPage{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				f.checkNames("ListAccountVideos", recordNames(t, videos, map[string]time.Time{video.ID: video.CreatedAt}), video.ID, reel.ID)
				jobIDs := []string{byName.ID, byLabel.ID, byRef.ID, byOrderedRef.ID, video.ID, reel.ID, making.ID}
				names, err := store.RecordNamesOfJobs(ctx, jobIDs)
				if err != nil {
					t.Fatal(err)
				}
				f.checkNames("RecordNamesOfJobs", names, jobIDs...)
				for _, id := range jobIDs {
					name, err := store.RecordNameOfJob(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					f.checkNames("RecordNameOfJob", map[string]string{id: name}, id)
				}

				// The account's own fashion model, and a marketplace one, named by the text.
				own := &models.ReferenceItem{AccountID: &acc.ID, Name: text, Status: models.RefStatusDone, CreatedAt: f.tick()}
				shared := &models.ReferenceItem{Name: text, Status: models.RefStatusDone, CreatedAt: f.tick()}
				for _, it := range []*models.ReferenceItem{own, shared} {
					if err := models.CreateReferenceItem(db, models.KindFashionModel, it); err != nil {
						t.Fatal(err)
					}
				}
				items, err := store.ListAccountReferenceItems(ctx, models.KindFashionModel, acc.ID, false, models.RecordPage{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				f.checkNames("ListAccountReferenceItems", recordNames(t, items, nil), own.ID)
				usable, err := store.ListUsableReferenceItems(ctx, models.KindFashionModel, acc.ID, 100)
				if err != nil {
					t.Fatal(err)
				}
				itemNames := map[string]string{}
				for _, it := range usable {
					itemNames[it.ID] = it.Name
				}
				f.checkNames("ListUsableReferenceItems", itemNames, own.ID, shared.ID)

				// Product photos, the catalog's products, images and packshots.
				photo := &models.ProductImage{ID: models.NewID(), AccountID: acc.ID, InstallationID: &inst.ID, ProductID: bare.ID,
					AssetID: f.asset(models.AssetKindUpload).ID, ExternalRef: text, CreatedAt: f.tick()}
				f.create(photo)
				photos, err := store.ListAccountPhotos(ctx, acc.ID, models.RecordPage{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(photos) != 1 || photos[0].ProductRef != text || photos[0].ProductName != "" {
					t.Errorf("ListAccountPhotos = %+v, want one photo of product reference %q", photos, text)
				}
				named2 := &models.ProductImage{ID: models.NewID(), AccountID: acc.ID, InstallationID: &inst.ID, ProductID: named.ID,
					AssetID: f.asset(models.AssetKindUpload).ID, ExternalRef: models.NewID(), CreatedAt: f.tick()}
				f.create(named2)
				photos, err = store.ListAccountPhotos(ctx, acc.ID, models.RecordPage{Limit: 1})
				if err != nil {
					t.Fatal(err)
				}
				if len(photos) != 1 || photos[0].ProductName != text {
					t.Errorf("ListAccountPhotos = %+v, want one photo of product name %q", photos, text)
				}
				products, err := store.ListProducts(ctx, inst.ID, nil, 10, false)
				if err != nil {
					t.Fatal(err)
				}
				productText := map[string]string{}
				for _, p := range products {
					if p.SKU != text {
						t.Errorf("ListProducts: product %s has SKU %q, want %q", p.ID, p.SKU, text)
					}
					productText[p.ID] = p.DisplayName
					if p.ID == bare.ID {
						productText[p.ID] = p.ExternalRef
					}
				}
				f.checkNames("ListProducts", productText, named.ID, bare.ID)
				images, err := store.ProductImages(ctx, inst.ID, bare.ID, 10)
				if err != nil {
					t.Fatal(err)
				}
				imageRefs := map[string]string{}
				for _, img := range images {
					imageRefs[img.ID] = img.ProductRef
				}
				f.checkNames("ProductImages", imageRefs, photo.ID)
				catalog, err := store.ListPackshots(ctx, inst.ID, text, nil, 10)
				if err != nil {
					t.Fatal(err)
				}
				packshotRefs := map[string]string{}
				for _, p := range catalog {
					packshotRefs[p.ID] = p.ProductRef
				}
				f.checkNames("ListPackshots", packshotRefs, approved.ID, made.ID)

				// The installation's jobs (their references and labels), the account's own preset and
				// webhook endpoint.
				jobs, err := store.InstallationJobs(ctx, inst.ID, models.InstallationJobFilter{Limit: 20})
				if err != nil {
					t.Fatal(err)
				}
				jobTexts := map[string]string{}
				for _, j := range jobs {
					switch j.ID {
					case byLabel.ID, reel.ID:
						jobTexts[j.ID] = j.ProductLabel
					case byOrderedRef.ID:
						jobTexts[j.ID] = j.ProductRef
					}
				}
				f.checkNames("InstallationJobs", jobTexts, byLabel.ID, reel.ID, byOrderedRef.ID)
				preset := &models.Preset{Name: text, BestFor: text}
				if _, err := models.CreateUserPreset(db, acc.ID, preset, nil, nil); err != nil {
					t.Fatal(err)
				}
				presets, _, err := store.ListVisiblePresets(ctx, acc.ID, 0)
				if err != nil {
					t.Fatal(err)
				}
				presetNames := map[string]string{}
				for _, p := range presets {
					presetNames[p.ID] = p.Name
				}
				f.checkNames("ListVisiblePresets", presetNames, preset.ID)
				ep := &models.WebhookEndpoint{AccountID: acc.ID, URL: "https://example.com/hook", Description: text}
				if err := store.CreateWebhookEndpoint(ctx, ep); err != nil {
					t.Fatal(err)
				}
				endpoints, err := store.WebhookEndpoints(ctx, models.WebhookScope{AccountID: acc.ID}, nil, 10)
				if err != nil {
					t.Fatal(err)
				}
				descriptions := map[string]string{}
				for _, e := range endpoints {
					descriptions[e.ID] = e.Description
				}
				f.checkNames("WebhookEndpoints", descriptions, ep.ID)
			})
		}
	})
}

// On SQLite a time is still written as the text the driver always wrote, and read back from its
// DATETIME column as the same instant; a column without a declared type (here MAX) gives the text
// as it is stored, which exprTime reads as that instant, while a text that is no time is refused.
func TestSQLiteTimesKeepTheirText(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	acc, err := models.CreateAccount(db, "team", 0)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 9, 1, 0, 123456789, time.UTC)
	p := models.Product{ID: models.NewID(), AccountID: acc.ID, ExternalRef: "ref", DisplayName: "2026-01-02", CreatedAt: at, UpdatedAt: at}
	if err := db.Create(&p).Error; err != nil {
		t.Fatal(err)
	}
	const stored = "2026-03-01 09:01:00.123456789+00:00"
	var quoted string
	if err := db.Raw("SELECT quote(created_at) FROM products WHERE id = ?", p.ID).Scan(&quoted).Error; err != nil {
		t.Fatal(err)
	}
	if quoted != "'"+stored+"'" {
		t.Fatalf("created_at is stored as %s, want '%s'", quoted, stored)
	}
	var read models.Product
	if err := db.Take(&read, "id = ?", p.ID).Error; err != nil {
		t.Fatal(err)
	}
	if !read.CreatedAt.Equal(at) || read.DisplayName != "2026-01-02" {
		t.Fatalf("read back created_at %v, display_name %q, want %v and 2026-01-02", read.CreatedAt, read.DisplayName, at)
	}
	var latest string
	if err := db.Raw("SELECT MAX(created_at) FROM products WHERE id = ?", p.ID).Scan(&latest).Error; err != nil {
		t.Fatal(err)
	}
	if latest != stored {
		t.Fatalf("MAX(created_at) = %q, want the stored text %q", latest, stored)
	}
	for _, tc := range []struct {
		src  any
		want time.Time
	}{
		{stored, at},
		{[]byte(stored), at},
		{at, at},
		{"2026-03-01T09:01:00.123456789Z", at},
		{"2026-03-01 10:01:00.123456789+01:00", at},
		{"2026-03-01 09:01:00", at.Truncate(time.Second)},
		{"2026-03-01 09:01", at.Truncate(time.Minute)},
		{"2026-03-01", at.Truncate(24 * time.Hour)},
	} {
		got, err := models.ScanExprTime(tc.src)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("exprTime from %v = %v, %v; want %v", tc.src, got, err, tc.want)
		}
	}
	for _, src := range []any{"12:00", "Blue mug", int64(7)} {
		if got, err := models.ScanExprTime(src); err == nil {
			t.Errorf("exprTime from %v = %v, want an error", src, got)
		}
	}
}
