package external_test

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// recordList is one of the paged record lists: its path, list key and item keys, and how to store
// a record of it created at a time, for an account, returning the id the list shows.
type recordList struct {
	path, listKey string
	keys          []string
	create        func(f *recFix, account string, i int, at time.Time) string
}

var productKeys = []string{"id", "name", "thumbnail", "status", "createdAt", "livemode"}

// recordLists are the six paged lists. Their records are of every kind a list holds: packshots,
// packshots made by a job (dated by the job) and packshot jobs still without theirs; videos and
// reels.
func recordLists() []recordList {
	refItem := func(kind models.ReferenceKind) func(*recFix, string, int, time.Time) string {
		return func(f *recFix, account string, _ int, at time.Time) string {
			it := &models.ReferenceItem{AccountID: &account, Name: "Item", Status: models.RefStatusInProgress, CreatedAt: at}
			if err := models.CreateReferenceItem(f.e.db, kind, it); err != nil {
				f.t.Fatal(err)
			}
			return it.ID
		}
	}
	return []recordList{
		{"/products", "products", productKeys, func(f *recFix, account string, _ int, at time.Time) string {
			id, _ := f.e.storePhoto(productPhoto{account: account, name: "Photo", assetStatus: status.AssetReady, created: at})
			return id
		}},
		{"/models", "models", recordKeys, refItem(models.KindFashionModel)},
		{"/sceneries", "sceneries", recordKeys, refItem(models.KindScenery)},
		{"/packshots", "packshots", recordKeys, func(f *recFix, account string, i int, at time.Time) string {
			p := f.product(account, "Mug", "mug-"+models.NewID())
			switch i % 3 {
			case 0:
				return f.packshot(p, models.VotingPending, func(ps *models.Packshot) { ps.CreatedAt = at }).ID
			case 1: // made by a job: dated by the job, not by the packshot
				j := f.job(account, jobtype.Packshot, status.JobCompleted, 1, func(j *models.Job) { j.CreatedAt, j.ProductID = at, &p.ID })
				return f.packshot(p, models.VotingPending, func(ps *models.Packshot) { ps.JobID, ps.CreatedAt = &j.ID, at.Add(time.Hour) }).ID
			}
			id := models.NewID()
			f.job(account, jobtype.Packshot, status.JobInProgress, 0, func(j *models.Job) { j.CreatedAt, j.RecordID, j.ProductID = at, &id, &p.ID })
			return id
		}},
		{"/image-picker", "images", recordKeys, func(f *recFix, account string, _ int, at time.Time) string {
			return f.job(account, jobtype.PhotoShoot, status.JobInProgress, 0, func(j *models.Job) { j.CreatedAt = at }).ID
		}},
		{"/videos", "videos", []string{"id", "name", "thumbnail", "videoUrl", "status", "voting", "createdAt", "livemode"},
			func(f *recFix, account string, i int, at time.Time) string {
				kind := jobtype.Video
				if i%2 == 1 {
					kind = jobtype.Reel
				}
				return f.job(account, kind, status.JobInProgress, 0, func(j *models.Job) { j.CreatedAt = at }).ID
			}},
	}
}

// tiedTimes are creation times of records that tie: the same second, several in the same
// microsecond (PostgreSQL keeps microseconds, so 500 ns and 700 ns past a second are that second
// there, and distinct instants on SQLite), fractions whose text sorts before their value would
// ("05.5" after "05.123456789") and a whole second beside fractions of it.
func tiedTimes(base time.Time) []time.Time {
	return []time.Time{
		base, base, base,
		base.Add(500 * time.Nanosecond), base.Add(700 * time.Nanosecond),
		base.Add(123456789 * time.Nanosecond), base.Add(500 * time.Millisecond), base.Add(500 * time.Millisecond),
		base.Add(time.Second), base.Add(-time.Microsecond),
	}
}

// tiedRecord is a record stored at a time.
type tiedRecord struct {
	id string
	at time.Time
}

// pageOrder is the records' IDs in the order the lists promise on db: created_at (as db keeps
// it) then id, both descending.
func pageOrder(db *gorm.DB, recs []tiedRecord) []string {
	kept := func(t time.Time) time.Time {
		if db.Dialector.Name() == "postgres" {
			return t.Truncate(time.Microsecond)
		}
		return t
	}
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b tiedRecord) int {
		return cmp.Or(kept(b.at).Compare(kept(a.at)), cmp.Compare(b.id, a.id))
	})
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.id
	}
	return out
}

// withQuery adds the query parameters to path.
func withQuery(path string, params ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		q.Add(params[i], params[i+1])
	}
	if strings.Contains(path, "?") {
		return path + "&" + q.Encode()
	}
	return path + "?" + q.Encode()
}

// walk reads every page of the list at path with the limit, each starting after the last item of
// the one before, and returns the ids in the order read. Every page but the last holds limit items
// and says has_more; the last says it has no more, also when it is full.
func (f *recFix) walk(path, listKey string, limit int, keys []string) []string {
	f.t.Helper()
	var ids []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			f.t.Fatalf("GET %s with limit %d: more than 100 pages", path, limit)
		}
		q := withQuery(path, "limit", strconv.Itoa(limit))
		if after != "" {
			q = withQuery(q, "starting_after", after)
		}
		items, more := f.recPage(f.e.key, q, listKey, keys...)
		if len(items) > limit || (more && len(items) != limit) {
			f.t.Fatalf("GET %s: %d items, has_more %v, with limit %d", q, len(items), more, limit)
		}
		ids = append(ids, recIDs(items)...)
		if !more {
			return ids
		}
		after = ids[len(ids)-1]
	}
}

// Walking a record list page by page gives every record once, in the list's order, on both
// databases: records created in the same microsecond and the same second included, whatever the
// page size; a full last page says has_more false, and the default page holds every record of a
// small account.
func TestRecordListPagesNeitherSkipNorRepeat(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1<<20) // hundreds of pages
		f := newRecFix(e)
		other, _ := e.newAccount(external.ScopeRead)
		base := e.now.Add(-time.Hour).Truncate(time.Second)
		for _, l := range recordLists() {
			var recs []tiedRecord
			for i, at := range tiedTimes(base) {
				recs = append(recs, tiedRecord{l.create(f, e.account, i, at), at})
			}
			l.create(f, other, 0, base) // another account's, at the same time: never listed
			want := pageOrder(db, recs)

			if got := recIDs(f.recList(e.key, l.path, l.listKey, l.keys...)); !slices.Equal(got, want) {
				t.Fatalf("GET %s = %v, want every record, newest first %v", l.path, got, want)
			}
			for _, limit := range []int{1, 2, 3, 4, len(want) - 1, len(want), 1000} {
				if got := f.walk(l.path, l.listKey, limit, l.keys); !slices.Equal(got, want) {
					t.Fatalf("GET %s in pages of %d = %v, want %v", l.path, limit, got, want)
				}
			}
			// A page starts right after the record it names, in either case.
			for i, id := range want {
				for _, cursor := range []string{id, strings.ToUpper(id)} {
					items, more := f.recPage(e.key, withQuery(l.path, "starting_after", cursor), l.listKey, l.keys...)
					if got := recIDs(items); !slices.Equal(got, want[i+1:]) || more {
						t.Fatalf("GET %s starting after %s = %v (has_more %v), want %v", l.path, cursor, got, more, want[i+1:])
					}
				}
			}
		}
	})
}

// limit is an integer from 1 to 1000 and starting_after the id of a record of the list and the
// account: anything else is a 400 naming the parameter, another account's record the same as a
// missing one.
func TestRecordListPageRefusals(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1<<20) // hundreds of pages
		f := newRecFix(e)
		other, _ := e.newAccount(external.ScopeRead)
		lists := recordLists()
		mine, theirs := map[string]string{}, map[string]string{}
		for _, l := range lists {
			mine[l.path] = l.create(f, e.account, 0, f.tick())
			theirs[l.path] = l.create(f, other, 0, f.tick())
		}
		refused := func(path, param string) string {
			t.Helper()
			code, body := e.getAs(e.key, path)
			msg := errorOf(t, body)
			if code != http.StatusBadRequest || !strings.HasPrefix(msg, param+": ") {
				t.Fatalf("GET %s = %d %v, want 400 naming %s", path, code, body, param)
			}
			return msg
		}
		for i, l := range lists {
			for _, q := range []string{"limit=0", "limit=1001", "limit=-1", "limit=ten", "limit=", "limit=1.5", "limit=1e3",
				"limit=%201", "limit=99999999999999999999", "limit=1&limit=2"} {
				if msg := refused(l.path+"?"+q, "limit"); q == "limit=1001" && msg != "limit: must be an integer from 1 to 1000 (the default)." {
					t.Fatalf("GET %s?%s: %q", l.path, q, msg)
				}
			}
			unknown := refused(withQuery(l.path, "starting_after", models.NewID()), "starting_after")
			if want := "starting_after: names no record of this list; pass the id of the last record of the previous page, or leave it out for the first page."; unknown != want {
				t.Fatalf("GET %s with an unknown starting_after: %q, want %q", l.path, unknown, want)
			}
			another := lists[(i+1)%len(lists)].path
			for name, id := range map[string]string{"another account's": theirs[l.path], "another list's": mine[another]} {
				if msg := refused(withQuery(l.path, "starting_after", id), "starting_after"); msg != unknown {
					t.Fatalf("GET %s starting after %s record: %q, want the same as for an unknown id (%q)", l.path, name, msg, unknown)
				}
			}
			for _, q := range []string{"starting_after=", "starting_after=nope", "starting_after=" + mine[l.path] + "x",
				"starting_after=" + mine[l.path] + "&starting_after=" + mine[l.path]} {
				refused(l.path+"?"+q, "starting_after")
			}
			// The bounds themselves are accepted.
			for _, limit := range []string{"1", "1000", "+7"} {
				f.recPage(e.key, withQuery(l.path, "limit", limit), l.listKey, l.keys...)
			}
		}
	})
}

// The filters combine with paging: the pages of a filtered list are the filtered list, and a
// record the filter leaves out, or the list no longer shows, still marks a place to start after.
func TestRecordListPagesWithFilters(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1<<20) // hundreds of pages
		f := newRecFix(e)
		base := e.now.Add(-time.Hour).Truncate(time.Second)
		times := tiedTimes(base)

		// Models: every other one approved.
		var all, approved []tiedRecord
		for i, at := range times {
			it := &models.ReferenceItem{AccountID: &e.account, Name: "M", Status: models.RefStatusDone, CreatedAt: at}
			if i%2 == 0 {
				it.Voting = strp(models.RefVotingApproved)
			}
			if err := models.CreateReferenceItem(db, models.KindFashionModel, it); err != nil {
				t.Fatal(err)
			}
			all = append(all, tiedRecord{it.ID, at})
			if it.Voting != nil {
				approved = append(approved, tiedRecord{it.ID, at})
			}
		}
		order, want := pageOrder(db, all), pageOrder(db, approved)
		for _, limit := range []int{1, 2, 4} {
			if got := f.walk("/models?statusFilter=approved", "models", limit, recordKeys); !slices.Equal(got, want) {
				t.Fatalf("approved models in pages of %d = %v, want %v", limit, got, want)
			}
		}
		// Starting after a model the filter leaves out: the approved ones after its place.
		for i, id := range order {
			var after []string
			for _, later := range order[i+1:] {
				if slices.Contains(want, later) {
					after = append(after, later)
				}
			}
			items, _ := f.recPage(e.key, withQuery("/models?statusFilter=approved", "starting_after", id), "models", recordKeys...)
			if got := recIDs(items); !slices.Equal(got, after) {
				t.Fatalf("approved models after %s = %v, want %v", id, got, after)
			}
		}

		// Photo-shoot images of one product photo, approved or not.
		mug := f.product(e.account, "Mug", "mug")
		front, side := f.photo(mug), f.photo(mug)
		frontShot := f.packshot(mug, models.VotingAccepted, func(p *models.Packshot) { p.SourceImageID = &front.ID })
		sideShot := f.packshot(mug, models.VotingAccepted, func(p *models.Packshot) { p.SourceImageID = &side.ID })
		var shoots, ofFront, acceptedOfFront []tiedRecord
		for i, at := range times {
			from, voting := frontShot, models.VotingAccepted
			if i%3 == 1 {
				from = sideShot
			}
			if i%2 == 1 {
				voting = models.VotingPending
			}
			j := f.job(e.account, jobtype.PhotoShoot, status.JobCompleted, 1, func(j *models.Job) {
				j.CreatedAt, j.ProductID, j.PackshotID, j.Voting = at, &mug.ID, &from.ID, voting
			})
			shoots = append(shoots, tiedRecord{j.ID, at})
			if from == frontShot {
				ofFront = append(ofFront, tiedRecord{j.ID, at})
				if voting == models.VotingAccepted {
					acceptedOfFront = append(acceptedOfFront, tiedRecord{j.ID, at})
				}
			}
		}
		both := "/image-picker?productId=" + front.ID + "&statusFilter=approved"
		for path, want := range map[string][]string{
			"/image-picker?productId=" + front.ID: pageOrder(db, ofFront),
			both:                                  pageOrder(db, acceptedOfFront),
		} {
			for _, limit := range []int{1, 3} {
				if got := f.walk(path, "images", limit, recordKeys); !slices.Equal(got, want) {
					t.Fatalf("GET %s in pages of %d = %v, want %v", path, limit, got, want)
				}
			}
		}
		// Starting after any shoot, of the side photo or not accepted included.
		every, accepted := pageOrder(db, shoots), pageOrder(db, acceptedOfFront)
		for i, id := range every {
			var after []string
			for _, later := range every[i+1:] {
				if slices.Contains(accepted, later) {
					after = append(after, later)
				}
			}
			items, _ := f.recPage(e.key, withQuery(both, "starting_after", id), "images", recordKeys...)
			if got := recIDs(items); !slices.Equal(got, after) {
				t.Fatalf("GET %s after %s = %v, want %v", both, id, got, after)
			}
		}

		// Packshots: one archived while a client pages still marks its place.
		var shots []tiedRecord
		for _, at := range times[:4] {
			shots = append(shots, tiedRecord{f.packshot(mug, models.VotingAccepted, func(p *models.Packshot) { p.CreatedAt = at }).ID, at})
		}
		first, more := f.recPage(e.key, "/packshots?statusFilter=approved&limit=2", "packshots", recordKeys...)
		if !more || len(first) != 2 {
			t.Fatalf("first page of packshots: %v, has_more %v", recIDs(first), more)
		}
		last := first[1]["id"].(string)
		if code, out := e.post(e.key, "/packshots/update-packshot", map[string]any{"recordId": last, "status": "ARCHIVE"}); code != http.StatusOK {
			t.Fatalf("archive %s: %d %v", last, code, out)
		}
		listed := pageOrder(db, append(shots, tiedRecord{frontShot.ID, frontShot.CreatedAt}, tiedRecord{sideShot.ID, sideShot.CreatedAt}))
		rest, more := f.recPage(e.key, "/packshots?statusFilter=approved&limit=100&starting_after="+last, "packshots", recordKeys...)
		if got := recIDs(rest); more || !slices.Equal(got, listed[slices.Index(listed, last)+1:]) {
			t.Fatalf("packshots after the archived %s = %v (has_more %v), want %v", last, got, more, listed[slices.Index(listed, last)+1:])
		}
	})
}

// Without limit a page holds 1000 records: an account with more gets the newest 1000 and
// has_more, and the rest after the last of them.
func TestRecordListDefaultPage(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1<<20) // hundreds of pages
		f := newRecFix(e)
		base := e.now.Add(-time.Hour)
		items := make([]models.ReferenceItem, engine.MaxRecordPage+1)
		for i := range items {
			at := base.Add(time.Duration(i/3) * time.Millisecond) // three at a time
			items[i] = models.ReferenceItem{ID: models.NewID(), AccountID: &e.account, Name: "S", Status: models.RefStatusDone,
				CreatedAt: at, UpdatedAt: at}
		}
		if err := db.Table("sceneries").CreateInBatches(items, 200).Error; err != nil {
			t.Fatal(err)
		}
		page, more := f.recPage(e.key, "/sceneries", "sceneries", recordKeys...)
		if len(page) != engine.MaxRecordPage || !more {
			t.Fatalf("GET /sceneries: %d items, has_more %v; want %d and has_more", len(page), more, engine.MaxRecordPage)
		}
		rest, more := f.recPage(e.key, withQuery("/sceneries", "starting_after", page[len(page)-1]["id"].(string)), "sceneries", recordKeys...)
		if len(rest) != 1 || more {
			t.Fatalf("the page after the first: %d items, has_more %v; want 1, no more", len(rest), more)
		}
		seen := map[string]bool{}
		for _, id := range append(recIDs(page), recIDs(rest)...) {
			seen[id] = true
		}
		if len(seen) != len(items) {
			t.Fatalf("two pages hold %d distinct records of %d", len(seen), len(items))
		}
	})
}
