package external_test

import (
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// recFix builds the records of the record-list tests directly in the database. Every row gets a
// creation time one minute after the previous one, so the newest-first order is known.
type recFix struct {
	e     *env
	t     testing.TB
	clock time.Time
}

func newRecFix(e *env) *recFix {
	return &recFix{e: e, t: e.t, clock: e.now.Add(-24 * time.Hour).Truncate(time.Second)}
}

// tick returns the next creation time.
func (f *recFix) tick() time.Time {
	f.clock = f.clock.Add(time.Minute)
	return f.clock
}

func (f *recFix) create(rows ...any) {
	f.t.Helper()
	for _, r := range rows {
		if err := f.e.db.Create(r).Error; err != nil {
			f.t.Fatal(err)
		}
	}
}

// asset stores a ready asset of the kind; an output belongs to job (may be "").
func (f *recFix) asset(account, kind, job string, pos int, preview bool) *models.Asset {
	f.t.Helper()
	now := f.tick()
	a := &models.Asset{ID: models.NewID(), AccountID: account, Kind: kind, Status: status.AssetReady, ContentType: "image/png",
		BlobKey: kind + "s/" + models.NewID(), Position: pos, CreatedAt: now, UpdatedAt: now}
	if job != "" {
		a.JobID = &job
	}
	if preview {
		a.ThumbnailBlobKey = a.BlobKey + "/thumbnail"
	}
	f.create(a)
	return a
}

// product stores a product of the account.
func (f *recFix) product(account, name, ref string) *models.Product {
	f.t.Helper()
	now := f.tick()
	p := &models.Product{ID: models.NewID(), AccountID: account, ExternalRef: ref, DisplayName: name, CreatedAt: now, UpdatedAt: now}
	f.create(p)
	return p
}

// photo stores a product photo of the product.
func (f *recFix) photo(p *models.Product) *models.ProductImage {
	f.t.Helper()
	a := f.asset(p.AccountID, models.AssetKindUpload, "", 0, true)
	img := &models.ProductImage{ID: models.NewID(), AccountID: p.AccountID, ProductID: p.ID, AssetID: a.ID,
		ExternalRef: models.NewID(), CreatedAt: f.tick()}
	f.create(img)
	return img
}

// packshot stores a packshot of the product with a stored file; change adjusts it before insertion.
func (f *recFix) packshot(p *models.Product, voting string, change func(*models.Packshot)) *models.Packshot {
	f.t.Helper()
	a := f.asset(p.AccountID, models.AssetKindOutput, "", 0, false)
	ps := &models.Packshot{ID: models.NewID(), AccountID: p.AccountID, ProductID: p.ID, AssetID: a.ID, Voting: voting, CreatedAt: f.tick()}
	if change != nil {
		change(ps)
	}
	f.create(ps)
	return ps
}

// job stores an order of one job of the type and status; change adjusts the job before insertion.
// A completed job gets outputs output files.
func (f *recFix) job(account, jobType, st string, outputs int, change func(*models.Job)) *models.Job {
	f.t.Helper()
	now := f.tick()
	o := &models.Order{ID: models.NewID(), AccountID: account, API: models.APIExternal, JobType: jobType,
		SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now}
	j := &models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: account, JobType: jobType, AIModel: "local/studio",
		AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: st, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
	if st == status.JobCompleted {
		j.CompletedAt = &now
	}
	if change != nil {
		change(j)
	}
	f.create(o, j)
	for i := range outputs {
		f.asset(account, models.AssetKindOutput, j.ID, i, false)
	}
	return j
}

// refItem stores a fashion model or scenery.
func (f *recFix) refItem(kind models.ReferenceKind, account *string, name, status string, voting *string, thumbnail string) *models.ReferenceItem {
	f.t.Helper()
	it := &models.ReferenceItem{AccountID: account, Name: name, Status: status, Voting: voting, CreatedAt: f.tick()}
	if thumbnail != "" {
		it.ThumbnailAssetID = &thumbnail
	}
	if err := models.CreateReferenceItem(f.e.db, kind, it); err != nil {
		f.t.Fatal(err)
	}
	return it
}

// outputPath is the download path of the job's first output (position 0).
func (f *recFix) outputPath(j *models.Job) string {
	f.t.Helper()
	var a models.Asset
	if err := f.e.db.Where("job_id = ? AND position = 0", j.ID).Take(&a).Error; err != nil {
		f.t.Fatal(err)
	}
	return jobview.FilePath(a.ID)
}

func strp(s string) *string { return &s }

// recList gets a list that fits in one page and checks its shape: exactly {<listKey>, count,
// has_more}, count the number of items, has_more false, each item exactly the keys.
func (f *recFix) recList(key, path, listKey string, keys ...string) []map[string]any {
	f.t.Helper()
	items, more := f.recPage(key, path, listKey, keys...)
	if more {
		f.t.Fatalf("GET %s: has_more is true, want the whole list in one page", path)
	}
	return items
}

// recPage gets a page of a list and checks its shape as recList does; it returns the items and
// has_more.
func (f *recFix) recPage(key, path, listKey string, keys ...string) ([]map[string]any, bool) {
	f.t.Helper()
	code, body := f.e.getAs(key, path)
	if code != http.StatusOK {
		f.t.Fatalf("GET %s = %d %v", path, code, body)
	}
	list, ok := body[listKey].([]any)
	more, isBool := body["has_more"].(bool)
	if !ok || !isBool || len(body) != 3 || body["count"] != float64(len(list)) {
		f.t.Fatalf("GET %s = %v, want {%s, count, has_more}", path, body, listKey)
	}
	sort.Strings(keys)
	out := make([]map[string]any, len(list))
	for i, raw := range list {
		item := raw.(map[string]any)
		var got []string
		for k := range item {
			got = append(got, k)
		}
		sort.Strings(got)
		if !slices.Equal(got, keys) {
			f.t.Fatalf("GET %s: item keys %v, want %v", path, got, keys)
		}
		out[i] = item
	}
	return out, more
}

var recordKeys = []string{"id", "name", "thumbnail", "status", "voting", "createdAt", "livemode"}

func recIDs(items []map[string]any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it["id"].(string)
	}
	return out
}

func recByID(t *testing.T, items []map[string]any, id string) map[string]any {
	t.Helper()
	for _, it := range items {
		if it["id"] == id {
			return it
		}
	}
	t.Fatalf("record %s is not listed", id)
	return nil
}

// checkRecord asserts an item's status and voting (nil: null), and that its thumbnail is "" unless
// thumbnail names the path it must be signed for.
func (f *recFix) checkRecord(item map[string]any, name, status string, voting any, thumbnail string) {
	f.t.Helper()
	if item["status"] != status || item["voting"] != voting || item["name"] != name {
		f.t.Fatalf("record %v, want name %q, status %s, voting %v", item, name, status, voting)
	}
	if thumbnail == "" {
		if item["thumbnail"] != "" {
			f.t.Fatalf("record %v: thumbnail should be empty", item)
		}
		return
	}
	f.e.checkSigned(item["thumbnail"], thumbnail)
}

func (f *recFix) checkCreatedAt(item map[string]any, want time.Time) {
	f.t.Helper()
	got, err := time.Parse(time.RFC3339Nano, item["createdAt"].(string))
	if err != nil || !got.Equal(want) {
		f.t.Fatalf("createdAt = %v, want %v", item["createdAt"], want)
	}
}

// checkStatusFilter checks that statusFilter=bogus is a 400 naming statusFilter, and that an empty
// statusFilter and all list the same as none.
func (f *recFix) checkStatusFilter(path, listKey string, keys []string, all []string) {
	f.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	for _, q := range []string{"statusFilter=all", "statusFilter="} {
		if got := recIDs(f.recList(f.e.key, path+sep+q, listKey, keys...)); !slices.Equal(got, all) {
			f.t.Fatalf("GET %s%s%s = %v, want %v", path, sep, q, got, all)
		}
	}
	for _, q := range []string{"statusFilter=bogus", "statusFilter=APPROVED", "statusFilter=accepted"} {
		code, body := f.e.getAs(f.e.key, path+sep+q)
		if code != http.StatusBadRequest || !strings.Contains(errorOf(f.t, body), "statusFilter") {
			f.t.Fatalf("GET %s%s%s = %d %v, want 400 naming statusFilter", path, sep, q, code, body)
		}
	}
}

func TestListModelsAndSceneries(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		f := newRecFix(e)
		other, _ := e.newAccount(external.ScopeRead)
		for _, tc := range []struct {
			kind models.ReferenceKind
			path string
		}{{models.KindFashionModel, "/models"}, {models.KindScenery, "/sceneries"}} {
			listKey := strings.TrimPrefix(tc.path, "/")
			thumb := f.asset(e.account, models.AssetKindOutput, "", 0, false)
			approved := f.refItem(tc.kind, &e.account, "Approved", models.RefStatusDone, strp(models.RefVotingApproved), thumb.ID)
			generating := f.refItem(tc.kind, &e.account, "Generating", models.RefStatusInProgress, nil, "")
			failed := f.refItem(tc.kind, &e.account, "Failed", models.RefStatusFailed, nil, "")
			rejected := f.refItem(tc.kind, &e.account, "Rejected", models.RefStatusDone, strp(models.RefVotingRejected),
				f.asset(e.account, models.AssetKindOutput, "", 0, false).ID)
			// A done item without rating, whose file is a seeded blob.
			seeded := &models.ReferenceItem{AccountID: &e.account, Name: "Seeded", Status: models.RefStatusDone, CreatedAt: f.tick(),
				ThumbnailKey: models.ReferenceBlobKey(listKey, models.NewID())}
			if err := models.CreateReferenceItem(db, tc.kind, seeded); err != nil {
				t.Fatal(err)
			}
			// Never listed: archived, another account's, the marketplace's.
			f.refItem(tc.kind, &e.account, "Archived", models.RefStatusArchived, strp(models.RefVotingApproved), thumb.ID)
			f.refItem(tc.kind, &other, "Other", models.RefStatusDone, strp(models.RefVotingApproved), f.asset(other, models.AssetKindOutput, "", 0, false).ID)
			f.refItem(tc.kind, nil, "Marketplace", models.RefStatusDone, nil, thumb.ID)

			items := f.recList(e.key, tc.path, listKey, recordKeys...)
			want := []string{seeded.ID, rejected.ID, failed.ID, generating.ID, approved.ID}
			if got := recIDs(items); !slices.Equal(got, want) {
				t.Fatalf("GET %s = %v, want %v (newest first)", tc.path, got, want)
			}
			f.checkRecord(items[0], "Seeded", models.RefStatusDone, nil, files.RefPath(seeded.ThumbnailKey))
			f.checkRecord(items[1], "Rejected", models.RefStatusDone, models.RefVotingRejected, jobview.FilePath(*rejected.ThumbnailAssetID))
			f.checkRecord(items[2], "Failed", models.RefStatusFailed, nil, "")
			f.checkRecord(items[3], "Generating", models.RefStatusInProgress, nil, "")
			f.checkRecord(items[4], "Approved", models.RefStatusDone, models.RefVotingApproved, jobview.FilePath(thumb.ID))
			f.checkCreatedAt(items[4], approved.CreatedAt)

			if got := recIDs(f.recList(e.key, tc.path+"?statusFilter=approved", listKey, recordKeys...)); !slices.Equal(got, []string{approved.ID}) {
				t.Fatalf("GET %s?statusFilter=approved = %v, want only %s", tc.path, got, approved.ID)
			}
			f.checkStatusFilter(tc.path, listKey, recordKeys, want)
		}
	})
}

func TestListPackshots(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		f := newRecFix(e)
		other, _ := e.newAccount(external.ScopeRead)
		mug := f.product(e.account, "Blue mug", "mug-1")
		bare := f.product(e.account, "", "sku-2")

		// A packshot job that made its packshot: the record is dated by the job.
		madeBy := f.job(e.account, jobtype.Packshot, status.JobCompleted, 1, func(j *models.Job) {
			j.ProductID = &mug.ID
		})
		made := f.packshot(mug, models.VotingAccepted, func(p *models.Packshot) { p.JobID = &madeBy.ID })
		if err := db.Model(&models.Job{}).Where("id = ?", madeBy.ID).Update("record_id", made.ID).Error; err != nil {
			t.Fatal(err)
		}
		pending := f.packshot(bare, models.VotingPending, nil)
		rejected := f.packshot(mug, models.VotingRejected, nil)
		deletedAt := f.tick()
		f.packshot(mug, models.VotingAccepted, func(p *models.Packshot) { p.DeletedAt = &deletedAt })
		f.packshot(mug, models.VotingAccepted, func(p *models.Packshot) { p.ArchivedAt = &deletedAt })
		f.packshot(f.product(other, "Theirs", "t"), models.VotingAccepted, nil)
		// Packshot jobs still without their packshot.
		record := func() func(*models.Job) {
			id := models.NewID()
			return func(j *models.Job) { j.RecordID, j.ProductID = &id, &mug.ID }
		}
		running := f.job(e.account, jobtype.Packshot, status.JobInProgress, 0, record())
		retrying := f.job(e.account, jobtype.Packshot, status.JobRetryPending, 0, record())
		failed := f.job(e.account, jobtype.Packshot, status.JobFailed, 0, record())
		cancelled := f.job(e.account, jobtype.Packshot, status.JobCancelled, 0, record())
		// Not listed: a plugin packshot job (no record ID), another account's job.
		f.job(e.account, jobtype.Packshot, status.JobInProgress, 0, func(j *models.Job) { j.ProductID = &mug.ID })
		f.job(other, jobtype.Packshot, status.JobInProgress, 0, func(j *models.Job) { id := models.NewID(); j.RecordID = &id })

		items := f.recList(e.key, "/packshots", "packshots", recordKeys...)
		want := []string{*cancelled.RecordID, *failed.RecordID, *retrying.RecordID, *running.RecordID, rejected.ID, pending.ID, made.ID}
		if got := recIDs(items); !slices.Equal(got, want) {
			t.Fatalf("GET /packshots = %v, want %v", got, want)
		}
		f.checkRecord(items[0], "Blue mug", models.RefStatusFailed, nil, "")
		f.checkRecord(items[1], "Blue mug", models.RefStatusFailed, nil, "")
		f.checkRecord(items[2], "Blue mug", models.RefStatusInProgress, nil, "")
		f.checkRecord(items[3], "Blue mug", models.RefStatusInProgress, nil, "")
		f.checkCreatedAt(items[3], running.CreatedAt)
		f.checkRecord(items[4], "Blue mug", models.RefStatusDone, models.RefVotingRejected, jobview.FilePath(rejected.AssetID))
		f.checkRecord(items[5], "sku-2", models.RefStatusDone, nil, jobview.FilePath(pending.AssetID))
		f.checkRecord(items[6], "Blue mug", models.RefStatusDone, models.RefVotingApproved, jobview.FilePath(made.AssetID))
		f.checkCreatedAt(items[6], madeBy.CreatedAt)

		if got := recIDs(f.recList(e.key, "/packshots?statusFilter=approved", "packshots", recordKeys...)); !slices.Equal(got, []string{made.ID}) {
			t.Fatalf("approved packshots = %v, want %s", got, made.ID)
		}
		f.checkStatusFilter("/packshots", "packshots", recordKeys, want)
	})
}

func TestListImages(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		f := newRecFix(e)
		other, _ := e.newAccount(external.ScopeRead)
		mug := f.product(e.account, "Blue mug", "mug-1")
		front, side := f.photo(mug), f.photo(mug)
		frontShot := f.packshot(mug, models.VotingAccepted, func(p *models.Packshot) { p.SourceImageID = &front.ID })
		sideShot := f.packshot(mug, models.VotingAccepted, func(p *models.Packshot) { p.SourceImageID = &side.ID })
		shoot := func(status, voting string, from *models.Packshot, outputs int) *models.Job {
			return f.job(e.account, jobtype.PhotoShoot, status, outputs, func(j *models.Job) {
				j.ProductID, j.PackshotID, j.Voting = &mug.ID, &from.ID, voting
				j.ProductLabel = "label"
			})
		}
		accepted := shoot(status.JobCompleted, models.VotingAccepted, frontShot, 2)
		unrated := shoot(status.JobCompleted, models.VotingPending, sideShot, 1)
		rejected := shoot(status.JobCompleted, models.VotingRejected, frontShot, 1)
		queued := shoot(status.JobPending, models.VotingPending, frontShot, 0)
		retrying := shoot(status.JobRetryPending, models.VotingPending, sideShot, 0)
		failed := shoot(status.JobFailed, models.VotingPending, frontShot, 0)
		expired := shoot(status.JobExpired, models.VotingPending, sideShot, 0)
		// A shoot named by its label only (no product), a packshot job and another account's shoot.
		labelled := f.job(e.account, jobtype.PhotoShoot, status.JobInProgress, 0, func(j *models.Job) { j.ProductLabel = "Just a label" })
		f.job(e.account, jobtype.Packshot, status.JobCompleted, 1, nil)
		f.job(other, jobtype.PhotoShoot, status.JobCompleted, 1, nil)

		items := f.recList(e.key, "/image-picker", "images", recordKeys...)
		want := []string{labelled.ID, expired.ID, failed.ID, retrying.ID, queued.ID, rejected.ID, unrated.ID, accepted.ID}
		if got := recIDs(items); !slices.Equal(got, want) {
			t.Fatalf("GET /image-picker = %v, want %v", got, want)
		}
		for _, it := range items {
			if it["voting"] == models.VotingPending {
				t.Fatalf("image %v: voting is never pending", it)
			}
		}
		f.checkRecord(items[0], "Just a label", models.RefStatusInProgress, nil, "")
		f.checkRecord(items[1], "Blue mug", models.RefStatusFailed, nil, "")
		f.checkRecord(items[2], "Blue mug", models.RefStatusFailed, nil, "")
		f.checkRecord(items[3], "Blue mug", models.RefStatusInProgress, nil, "")
		f.checkRecord(items[4], "Blue mug", models.RefStatusInProgress, nil, "")
		f.checkRecord(items[5], "Blue mug", models.RefStatusDone, models.VotingRejected, f.outputPath(rejected))
		f.checkRecord(items[6], "Blue mug", models.RefStatusDone, nil, f.outputPath(unrated))
		f.checkRecord(items[7], "Blue mug", models.RefStatusDone, models.VotingAccepted, f.outputPath(accepted))
		f.checkCreatedAt(items[7], accepted.CreatedAt)

		if got := recIDs(f.recList(e.key, "/image-picker?statusFilter=approved", "images", recordKeys...)); !slices.Equal(got, []string{accepted.ID}) {
			t.Fatalf("approved images = %v, want %s", got, accepted.ID)
		}
		f.checkStatusFilter("/image-picker", "images", recordKeys, want)

		// productId: only the shoots of that photo's packshots.
		q := "/image-picker?productId=" + front.ID
		if got := recIDs(f.recList(e.key, q, "images", recordKeys...)); !slices.Equal(got, []string{failed.ID, queued.ID, rejected.ID, accepted.ID}) {
			t.Fatalf("GET %s = %v", q, got)
		}
		if got := recIDs(f.recList(e.key, q+"&statusFilter=approved", "images", recordKeys...)); !slices.Equal(got, []string{accepted.ID}) {
			t.Fatalf("GET %s&statusFilter=approved = %v", q, got)
		}
		if got := recIDs(f.recList(e.key, "/image-picker?productId="+side.ID, "images", recordKeys...)); !slices.Equal(got, []string{expired.ID, retrying.ID, unrated.ID}) {
			t.Fatalf("GET productId=side = %v", got)
		}
		if got := recIDs(f.recList(e.key, "/image-picker?productId=", "images", recordKeys...)); !slices.Equal(got, want) {
			t.Fatalf("empty productId = %v, want every image", got)
		}
		f.checkStatusFilter(q, "images", recordKeys, []string{failed.ID, queued.ID, rejected.ID, accepted.ID})
		// A photo without shoots lists nothing; a photo of no shoot's packshot either.
		if got := f.recList(e.key, "/image-picker?productId="+f.photo(mug).ID, "images", recordKeys...); len(got) != 0 {
			t.Fatalf("photo without shoots: %v", got)
		}
		code, body := e.getAs(e.key, "/image-picker?productId=nope")
		if code != http.StatusBadRequest || !strings.Contains(errorOf(t, body), "productId") {
			t.Fatalf("productId=nope: %d %v", code, body)
		}
		theirs := f.photo(f.product(other, "Theirs", "t"))
		for _, id := range []string{models.NewID(), theirs.ID, mug.ID} {
			code, body := e.getAs(e.key, "/image-picker?productId="+id)
			if code != http.StatusNotFound || errorOf(t, body) != "Product not found." {
				t.Fatalf("productId=%s: %d %v, want 404", id, code, body)
			}
		}
	})
}

func TestListVideos(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		f := newRecFix(e)
		other, _ := e.newAccount(external.ScopeRead)
		mug := f.product(e.account, "Blue mug", "mug-1")
		photo := f.photo(mug)
		shoot := f.job(e.account, jobtype.PhotoShoot, status.JobCompleted, 1, func(j *models.Job) { j.ProductID = &mug.ID })
		var shootImage models.Asset
		if err := db.Where("job_id = ?", shoot.ID).Take(&shootImage).Error; err != nil {
			t.Fatal(err)
		}
		video := f.job(e.account, jobtype.Video, status.JobCompleted, 1, func(j *models.Job) {
			j.ProductID, j.Voting = &mug.ID, models.VotingAccepted
			j.SetInputs([]string{photo.AssetID})
		})
		reel := f.job(e.account, jobtype.Reel, status.JobCompleted, 1, func(j *models.Job) {
			j.Voting = models.VotingRejected
			j.SetInputs([]string{shootImage.ID, photo.AssetID})
		})
		rendering := f.job(e.account, jobtype.Video, status.JobInProgress, 0, func(j *models.Job) {
			j.ProductID = &mug.ID
			j.SetInputs([]string{photo.AssetID})
		})
		failed := f.job(e.account, jobtype.Reel, status.JobFailed, 0, func(j *models.Job) {
			j.SetInputs([]string{photo.AssetID, shootImage.ID})
		})
		f.job(other, jobtype.Video, status.JobCompleted, 1, nil)

		keys := []string{"id", "name", "thumbnail", "videoUrl", "status", "voting", "createdAt", "livemode"}
		items := f.recList(e.key, "/videos", "videos", keys...)
		want := []string{failed.ID, rendering.ID, reel.ID, video.ID}
		if got := recIDs(items); !slices.Equal(got, want) {
			t.Fatalf("GET /videos = %v, want %v (reels included, no photo shoot)", got, want)
		}
		for _, it := range items[:2] {
			if it["thumbnail"] != "" || it["videoUrl"] != "" || it["voting"] != nil {
				t.Fatalf("video not done: %v, want empty thumbnail and videoUrl, voting null", it)
			}
		}
		if items[0]["status"] != models.RefStatusFailed || items[1]["status"] != models.RefStatusInProgress || items[1]["name"] != "Blue mug" {
			t.Fatalf("videos not done: %v", items[:2])
		}
		f.checkRecord(items[2], "", models.RefStatusDone, models.RefVotingRejected, jobview.FilePath(shootImage.ID))
		f.e.checkSigned(items[2]["videoUrl"], f.outputPath(reel))
		f.checkRecord(items[3], "Blue mug", models.RefStatusDone, models.RefVotingApproved, jobview.ThumbnailPath(photo.AssetID))
		f.e.checkSigned(items[3]["videoUrl"], f.outputPath(video))
		f.checkCreatedAt(items[3], video.CreatedAt)
	})
}

func TestRecordListScopes(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		_, registerOnly := e.newAccount(external.ScopeRegister)
		for _, path := range []string{"/models", "/sceneries", "/packshots", "/image-picker", "/videos"} {
			code, body := e.getAs(registerOnly, path)
			if code != http.StatusForbidden || !strings.Contains(errorOf(t, body), external.ScopeRead) {
				t.Fatalf("GET %s without content.read: %d %v", path, code, body)
			}
		}
		_, readOnly := e.newAccount(external.ScopeRead)
		for path, body := range map[string]any{
			"/packshots/update-packshot": map[string]any{"recordId": models.NewID(), "Voting": "APPROVED"},
			"/image-picker/review":       map[string]any{"recordId": models.NewID(), "verdict": "accepted"},
		} {
			code, out := e.post(readOnly, path, body)
			if code != http.StatusForbidden || !strings.Contains(errorOf(t, out), external.ScopeRegister) {
				t.Fatalf("POST %s without content.register: %d %v", path, code, out)
			}
		}
	})
}

func TestUpdatePackshot(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		f := newRecFix(e)
		mug := f.product(e.account, "Blue mug", "mug-1")
		maker := f.job(e.account, jobtype.Packshot, status.JobCompleted, 1, func(j *models.Job) { j.ProductID = &mug.ID })
		ps := f.packshot(mug, models.VotingPending, func(p *models.Packshot) { p.JobID = &maker.ID })
		load := func(id string) (models.Packshot, models.Job) {
			t.Helper()
			var p models.Packshot
			var j models.Job
			if err := db.Take(&p, "id = ?", id).Error; err != nil {
				t.Fatal(err)
			}
			if p.JobID != nil {
				if err := db.Take(&j, "id = ?", *p.JobID).Error; err != nil {
					t.Fatal(err)
				}
			}
			return p, j
		}
		update := func(body any) (int, map[string]any) {
			t.Helper()
			return e.post(e.key, "/packshots/update-packshot", body)
		}
		ok := func(body any) {
			t.Helper()
			code, out := update(body)
			if code != http.StatusOK || len(out) != 1 || out["success"] != true {
				t.Fatalf("update-packshot %v = %d %v, want {success: true}", body, code, out)
			}
		}
		listed := func(id string) map[string]any {
			t.Helper()
			return recByID(t, f.recList(e.key, "/packshots", "packshots", recordKeys...), id)
		}

		// APPROVED: accepted, on the packshot and its job.
		ok(map[string]any{"recordId": ps.ID, "Voting": "APPROVED"})
		p, j := load(ps.ID)
		if p.Voting != models.VotingAccepted || p.VotingAt == nil || j.Voting != models.VotingAccepted || j.VotingAt == nil {
			t.Fatalf("after APPROVED: packshot %s %v, job %s %v", p.Voting, p.VotingAt, j.Voting, j.VotingAt)
		}
		if v := listed(ps.ID)["voting"]; v != models.RefVotingApproved {
			t.Fatalf("listed voting %v, want APPROVED", v)
		}
		// REJECTED: the vote is cleared; the packshot stays listed, un-rated.
		ok(map[string]any{"recordId": ps.ID, "Voting": "REJECTED"})
		p, j = load(ps.ID)
		if p.Voting != models.VotingPending || p.VotingAt != nil || j.Voting != models.VotingPending || j.VotingAt != nil {
			t.Fatalf("after REJECTED: packshot %s %v, job %s %v", p.Voting, p.VotingAt, j.Voting, j.VotingAt)
		}
		if it := listed(ps.ID); it["voting"] != nil || it["status"] != models.RefStatusDone {
			t.Fatalf("after REJECTED: listed %v, want DONE with voting null", it)
		}

		// Refusals change nothing.
		for _, tc := range []struct {
			body any
			want string
		}{
			{map[string]any{"recordId": ps.ID, "Voting": "APPROVED", "note": "x"}, "note"},
			{map[string]any{"recordId": ps.ID, "voting": "APPROVED"}, "voting"},
			{map[string]any{"recordId": ps.ID, "Status": "ARCHIVE"}, "Status"},
			{`{"recordId": "` + ps.ID + `", "Voting": "APPROVED"`, "JSON"},
			{`[]`, "JSON"},
			{`null`, "JSON"},
			{``, "JSON"},
			{map[string]any{"recordId": ps.ID}, "Voting"},
			{map[string]any{"recordId": ps.ID, "Voting": "MAYBE"}, "Voting"},
			{map[string]any{"recordId": ps.ID, "Voting": nil}, "Voting"},
			{map[string]any{"recordId": ps.ID, "status": "DELETE"}, "status"},
			{map[string]any{"recordId": ps.ID, "status": true}, "status"},
			{map[string]any{"Voting": "APPROVED"}, "recordId"},
			{map[string]any{"recordId": 42, "Voting": "APPROVED"}, "recordId"},
			{map[string]any{"recordId": "packshot-1", "Voting": "APPROVED"}, "recordId"},
		} {
			code, out := update(tc.body)
			if code != http.StatusBadRequest || !strings.Contains(errorOf(t, out), tc.want) {
				t.Fatalf("update-packshot %v = %d %v, want 400 naming %s", tc.body, code, out, tc.want)
			}
		}
		if p, _ := load(ps.ID); p.Voting != models.VotingPending || p.ArchivedAt != nil {
			t.Fatalf("a refused update changed the packshot: %+v", p)
		}

		// ARCHIVE: archived whatever the voting; it leaves the list and cannot be reviewed again.
		ok(map[string]any{"recordId": ps.ID, "Voting": "APPROVED"})
		ok(map[string]any{"recordId": ps.ID, "status": "ARCHIVE"})
		if p, _ := load(ps.ID); p.ArchivedAt == nil || p.Voting != models.VotingAccepted {
			t.Fatalf("after ARCHIVE: %+v, want archived and still accepted", p)
		}
		if ids := recIDs(f.recList(e.key, "/packshots", "packshots", recordKeys...)); slices.Contains(ids, ps.ID) {
			t.Fatalf("an archived packshot is listed: %v", ids)
		}
		// Voting and status together; an un-rated packshot is archived too.
		both := f.packshot(mug, models.VotingPending, nil)
		ok(map[string]any{"recordId": both.ID, "Voting": "APPROVED", "status": "ARCHIVE"})
		if p, _ := load(both.ID); p.ArchivedAt == nil || p.Voting != models.VotingAccepted {
			t.Fatalf("Voting and status together: %+v", p)
		}
		unrated := f.packshot(mug, models.VotingPending, nil)
		ok(map[string]any{"recordId": unrated.ID, "status": "ARCHIVE"})
		if p, _ := load(unrated.ID); p.ArchivedAt == nil || p.Voting != models.VotingPending {
			t.Fatalf("ARCHIVE of an un-rated packshot: %+v", p)
		}

		// 404: missing, archived, deleted, another account's, still generating.
		other, _ := e.newAccount(external.ScopeRead)
		theirs := f.packshot(f.product(other, "Theirs", "t"), models.VotingPending, nil)
		deletedAt := f.tick()
		deleted := f.packshot(mug, models.VotingPending, func(p *models.Packshot) { p.DeletedAt = &deletedAt })
		generating := f.job(e.account, jobtype.Packshot, status.JobInProgress, 0, func(j *models.Job) {
			id := models.NewID()
			j.RecordID, j.ProductID = &id, &mug.ID
		})
		for name, id := range map[string]string{"missing": models.NewID(), "archived": ps.ID, "deleted": deleted.ID,
			"another account's": theirs.ID, "generating": *generating.RecordID} {
			code, out := update(map[string]any{"recordId": id, "Voting": "APPROVED"})
			if code != http.StatusNotFound || errorOf(t, out) != "Packshot not found." {
				t.Fatalf("%s packshot: %d %v, want 404 Packshot not found.", name, code, out)
			}
		}
		if p, _ := load(theirs.ID); p.Voting != models.VotingPending {
			t.Fatalf("another account's packshot changed: %+v", p)
		}

		// A packshot whose file was purged cannot be approved (409); clearing its vote still works.
		purged := f.packshot(mug, models.VotingRejected, nil)
		if err := db.Model(&models.Asset{}).Where("id = ?", purged.AssetID).Update("purged_at", f.tick()).Error; err != nil {
			t.Fatal(err)
		}
		code, out := update(map[string]any{"recordId": purged.ID, "Voting": "APPROVED"})
		if code != http.StatusConflict {
			t.Fatalf("approving a purged packshot: %d %v, want 409", code, out)
		}
		errorOf(t, out)
		ok(map[string]any{"recordId": purged.ID, "Voting": "REJECTED"})
		if it := listed(purged.ID); it["thumbnail"] != "" || it["status"] != models.RefStatusDone {
			t.Fatalf("purged packshot listed as %v, want DONE without thumbnail", it)
		}
	})
}

func TestReviewImage(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		f := newRecFix(e)
		other, _ := e.newAccount(external.ScopeRead)
		done := f.job(e.account, jobtype.PhotoShoot, status.JobCompleted, 1, nil)
		review := func(body any) (int, map[string]any) {
			t.Helper()
			return e.post(e.key, "/image-picker/review", body)
		}
		listedVoting := func() any {
			t.Helper()
			return recByID(t, f.recList(e.key, "/image-picker", "images", recordKeys...), done.ID)["voting"]
		}
		stored := func() models.Job {
			t.Helper()
			var j models.Job
			if err := db.Take(&j, "id = ?", done.ID).Error; err != nil {
				t.Fatal(err)
			}
			return j
		}
		for _, tc := range []struct {
			verdict string
			listed  any
		}{
			{"accepted", "accepted"}, {"rejected", "rejected"}, {"pending", nil}, {"rejected", "rejected"}, {"pending", nil},
		} {
			code, out := review(map[string]any{"recordId": done.ID, "verdict": tc.verdict})
			if code != http.StatusOK || len(out) != 1 || out["success"] != true {
				t.Fatalf("verdict %s: %d %v", tc.verdict, code, out)
			}
			if v := listedVoting(); v != tc.listed {
				t.Fatalf("after verdict %s: listed voting %v, want %v", tc.verdict, v, tc.listed)
			}
			j := stored()
			if j.Voting != tc.verdict || (j.VotingAt == nil) != (tc.verdict == models.VotingPending) {
				t.Fatalf("after verdict %s: job voting %s at %v", tc.verdict, j.Voting, j.VotingAt)
			}
		}

		for _, tc := range []struct {
			body any
			want string
		}{
			{map[string]any{"recordId": done.ID, "verdict": "accepted", "Voting": "APPROVED"}, "Voting"},
			{map[string]any{"recordId": done.ID}, "verdict"},
			{map[string]any{"recordId": done.ID, "verdict": "APPROVED"}, "verdict"},
			{map[string]any{"recordId": done.ID, "verdict": nil}, "verdict"},
			{map[string]any{"verdict": "accepted"}, "recordId"},
			{map[string]any{"recordId": "x", "verdict": "accepted"}, "recordId"},
			{`{"recordId":`, "JSON"},
		} {
			code, out := review(tc.body)
			if code != http.StatusBadRequest || !strings.Contains(errorOf(t, out), tc.want) {
				t.Fatalf("review %v = %d %v, want 400 naming %s", tc.body, code, out, tc.want)
			}
		}
		if j := stored(); j.Voting != models.VotingPending {
			t.Fatalf("a refused review changed the image: %s", j.Voting)
		}

		// Only DONE images: 409 while generating or failed.
		for _, status := range []string{status.JobPending, status.JobInProgress, status.JobFailed} {
			j := f.job(e.account, jobtype.PhotoShoot, status, 0, nil)
			code, out := review(map[string]any{"recordId": j.ID, "verdict": "accepted"})
			if code != http.StatusConflict {
				t.Fatalf("reviewing a %s image: %d %v, want 409", status, code, out)
			}
			errorOf(t, out)
		}
		// 404: missing, another account's, a video.
		video := f.job(e.account, jobtype.Video, status.JobCompleted, 1, nil)
		theirs := f.job(other, jobtype.PhotoShoot, status.JobCompleted, 1, nil)
		for name, id := range map[string]string{"missing": models.NewID(), "another account's": theirs.ID, "video": video.ID} {
			code, out := review(map[string]any{"recordId": id, "verdict": "accepted"})
			if code != http.StatusNotFound || errorOf(t, out) != "Image not found." {
				t.Fatalf("%s: %d %v, want 404", name, code, out)
			}
		}
		var j models.Job
		if err := db.Take(&j, "id = ?", theirs.ID).Error; err != nil || j.Voting != models.VotingPending {
			t.Fatalf("another account's image changed: %v %s", err, j.Voting)
		}
	})
}
