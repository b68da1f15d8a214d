package plugin_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// listBase is the creation time of the first job the listing tests store.
var listBase = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

// jobSeeder stores jobs of one installation directly, all in one order.
type jobSeeder struct {
	t     *testing.T
	db    *gorm.DB
	inst  *models.Installation
	order models.Order
	n     int
}

func seedJobsOf(t *testing.T, db *gorm.DB, inst *models.Installation) *jobSeeder {
	t.Helper()
	now := time.Now().UTC()
	o := models.Order{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress,
		CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Create(&o).Error)
	return &jobSeeder{t: t, db: db, inst: inst, order: o}
}

// add stores a job created at the given time with the given status; a completed job gets one
// output file.
func (s *jobSeeder) add(at time.Time, st string) models.Job {
	s.t.Helper()
	s.n++
	j := models.Job{ID: models.NewID(), OrderID: s.order.ID, AccountID: s.inst.AccountID, InstallationID: &s.inst.ID,
		JobType: jobtype.PhotoShoot, Position: s.n, ProductRef: "REF-" + strconv.Itoa(s.n), ProductLabel: "Label",
		AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: st, Voting: models.VotingPending,
		CreatedAt: at, UpdatedAt: at}
	if st == status.JobCompleted {
		j.CompletedAt = &at
	}
	require.NoError(s.t, s.db.Create(&j).Error)
	if st == status.JobCompleted {
		a := models.Asset{ID: models.OutputAssetID(j.ID, 1, 0), AccountID: s.inst.AccountID, InstallationID: &s.inst.ID,
			Kind: models.AssetKindOutput, Status: status.AssetReady, ContentType: "image/png", SizeBytes: 4,
			BlobKey: "outputs/" + j.ID + ".png", Width: 2, Height: 2, JobID: &j.ID, CreatedAt: at, UpdatedAt: at}
		require.NoError(s.t, s.db.Create(&a).Error)
	}
	return j
}

// jobsPage fetches GET /jobs with the query and returns the job IDs in order and next_cursor. The
// rate limiter's clock moves a minute per call so that long walks never hit 429.
func (e *env) jobsPage(key, query string) ([]string, *string) {
	e.t.Helper()
	rec := e.jobsGet(key, query)
	require.Equal(e.t, http.StatusOK, rec.Code, "GET /jobs?%s: %s", query, rec.Body.String())
	var page struct {
		Jobs       []plugin.JobResponse `json:"jobs"`
		NextCursor *string              `json:"next_cursor"`
	}
	require.NoError(e.t, json.Unmarshal(rec.Body.Bytes(), &page))
	require.NotNil(e.t, page.Jobs, "jobs is an array, never null: %s", rec.Body.String())
	ids := make([]string, len(page.Jobs))
	for i, j := range page.Jobs {
		ids[i] = j.ID
	}
	return ids, page.NextCursor
}

func (e *env) jobsGet(key, query string) *httptest.ResponseRecorder {
	e.t.Helper()
	e.clock.Advance(time.Minute)
	target := p("/jobs")
	if query != "" {
		target += "?" + query
	}
	return e.do(http.MethodGet, target, key, nil)
}

// newestFirst returns the IDs of jobs sorted by (created_at, id) descending.
func newestFirst(jobs ...models.Job) []string {
	sorted := append([]models.Job(nil), jobs...)
	for i := range sorted {
		for k := i + 1; k < len(sorted); k++ {
			a, b := sorted[i], sorted[k]
			if b.CreatedAt.After(a.CreatedAt) || (b.CreatedAt.Equal(a.CreatedAt) && b.ID > a.ID) {
				sorted[i], sorted[k] = b, a
			}
		}
	}
	ids := make([]string, len(sorted))
	for i, j := range sorted {
		ids[i] = j.ID
	}
	return ids
}

func TestListJobsNewestFirstOfTheCallersInstallationOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mine := seedJobsOf(t, e.db, e.inst)
	otherInst, otherKey := e.otherInstallation()
	siblingInst, _ := e.addInstallation(e.account.ID, 0)
	var jobs []models.Job
	for i, status := range []string{status.JobCompleted, status.JobPending, status.JobFailed, status.JobCompleted, status.JobInProgress} {
		jobs = append(jobs, mine.add(listBase.Add(time.Duration(i)*time.Minute), status))
	}
	theirs := seedJobsOf(t, e.db, otherInst).add(listBase.Add(2*time.Minute+time.Second), status.JobCompleted)
	sibling := seedJobsOf(t, e.db, siblingInst).add(listBase.Add(3*time.Minute+time.Second), status.JobCompleted)

	rec := e.jobsGet(e.key, "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	body := decode(t, rec)
	assert.Equal(t, []string{"jobs", "next_cursor"}, keysOf(body))
	assert.Nil(t, body["next_cursor"], "a single page has no next_cursor")
	ids, _ := e.jobsPage(e.key, "")
	assert.Equal(t, newestFirst(jobs...), ids)
	assert.NotContains(t, ids, theirs.ID)
	assert.NotContains(t, ids, sibling.ID)

	// Each entry is the job as GET /jobs/{id} shows it, outputs with signed URLs included.
	listed := body["jobs"].([]any)
	newest := listed[1].(map[string]any) // jobs[3], completed
	assert.Equal(t, jobs[3].ID, newest["id"])
	single := decode(t, e.do(http.MethodGet, p("/jobs/"+jobs[3].ID), e.key, nil))
	assert.Equal(t, keysOf(single), keysOf(newest))
	assert.Equal(t, single["outputs"], newest["outputs"])
	outs := newest["outputs"].([]any)
	require.Len(t, outs, 1)
	u, err := url.Parse(outs[0].(map[string]any)["url"].(string))
	require.NoError(t, err)
	require.NoError(t, e.signer.Verify(http.MethodGet, u.Path, u.Query(), time.Now().Add(167*time.Hour)))
	assert.Equal(t, []any{}, listed[0].(map[string]any)["outputs"], "a job that has not completed lists no outputs")

	// The other installations see only their own.
	ids, _ = e.jobsPage(otherKey, "")
	assert.Equal(t, []string{theirs.ID}, ids)
	// An installation without jobs gets an empty page.
	_, emptyKey := e.otherInstallation()
	ids, next := e.jobsPage(emptyKey, "")
	assert.Empty(t, ids)
	assert.Nil(t, next)
}

func TestListJobsFiltersByStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := seedJobsOf(t, e.db, e.inst)
	byStatus := map[string][]models.Job{}
	for i, status := range append(plugin.JobStatuses, status.JobCompleted, status.JobFailed, status.JobCompleted) {
		byStatus[status] = append(byStatus[status], s.add(listBase.Add(time.Duration(i)*time.Second), status))
	}
	require.Len(t, plugin.JobStatuses, 7)
	for _, status := range plugin.JobStatuses {
		ids, _ := e.jobsPage(e.key, "status="+status)
		assert.Equal(t, newestFirst(byStatus[status]...), ids, "status=%s", status)
	}
	for _, bad := range []string{"done", "COMPLETED", "", "completed,failed", "queued"} {
		msg := e.requireError(e.jobsGet(e.key, "status="+url.QueryEscape(bad)), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "status", "status=%q", bad)
	}
	msg := e.requireError(e.jobsGet(e.key, "status=completed&status=failed"), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "status")
}

// On both databases: PostgreSQL keeps microseconds, SQLite the nanoseconds it is given, and a
// bound to the nanosecond answers the same on both (models.halfOpenBound).
func TestListJobsCreatedAfterIsInclusiveAndCreatedBeforeExclusive(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, listJobsCreatedAfterIsInclusiveAndCreatedBeforeExclusive)
}

func listJobsCreatedAfterIsInclusiveAndCreatedBeforeExclusive(t *testing.T, db *gorm.DB) {
	e := newEnv(t, onDatabase(db))
	s := seedJobsOf(t, e.db, e.inst)
	t0, t1, t2, t3 := listBase, listBase.Add(time.Hour), listBase.Add(2*time.Hour), listBase.Add(3*time.Hour)
	j0 := s.add(t0, status.JobCompleted)
	j1 := s.add(t1, status.JobCompleted)
	j1b := s.add(t1.Add(time.Microsecond), status.JobPending) // just after t1
	j2a := s.add(t2.Add(-time.Microsecond), status.JobPending)
	j2 := s.add(t2, status.JobCompleted)
	j3 := s.add(t3, status.JobFailed)
	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	rfc := func(t time.Time) string { return t.Format(time.RFC3339Nano) }

	cases := []struct {
		name  string
		query string
		want  []models.Job
	}{
		{"after includes its instant", q("created_after", rfc(t1)), []models.Job{j1, j1b, j2a, j2, j3}},
		{"before excludes its instant", q("created_before", rfc(t2)), []models.Job{j0, j1, j1b, j2a}},
		{"both", q("created_after", rfc(t1), "created_before", rfc(t2)), []models.Job{j1, j1b, j2a}},
		{"one microsecond later", q("created_after", rfc(t1.Add(time.Microsecond)), "created_before", rfc(t2.Add(time.Microsecond))), []models.Job{j1b, j2a, j2}},
		{"offset notation is the same instant", q("created_after", t1.In(time.FixedZone("", 2*3600)).Format(time.RFC3339), "created_before", t2.In(time.FixedZone("", -5*3600)).Format(time.RFC3339)), []models.Job{j1, j1b, j2a}},
		{"whole range", q("created_after", rfc(t0), "created_before", rfc(t3.Add(time.Second))), []models.Job{j0, j1, j1b, j2a, j2, j3}},
		{"with status", q("created_after", rfc(t1), "status", status.JobCompleted), []models.Job{j1, j2}},
		{"nothing after", q("created_after", rfc(t3.Add(time.Nanosecond))), nil},
		{"a nanosecond past an instant is after it", q("created_after", rfc(t1.Add(time.Nanosecond))), []models.Job{j1b, j2a, j2, j3}},
		{"a nanosecond past an instant is before nothing later", q("created_before", rfc(t2.Add(-time.Microsecond+time.Nanosecond))), []models.Job{j0, j1, j1b, j2a}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids, next := e.jobsPage(e.key, c.query)
			assert.Equal(t, newestFirst(c.want...), ids)
			assert.Nil(t, next)
		})
	}
	// A "+" offset must be percent-encoded: unencoded it arrives as a space, which is refused
	// rather than guessed at.
	plus := t1.In(time.FixedZone("", 3600)).Format(time.RFC3339)
	ids, _ := e.jobsPage(e.key, "created_after="+strings.Replace(plus, "+", "%2B", 1))
	assert.Equal(t, newestFirst(j1, j1b, j2a, j2, j3), ids)
	msg := e.requireError(e.jobsGet(e.key, "created_after="+plus), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "created_after")
	assert.Contains(t, msg, "percent-encode it as %2B", "the refusal says why")

	for _, bad := range []struct{ name, value string }{
		{"created_after", "2026-05-01"},
		{"created_after", "yesterday"},
		{"created_after", ""},
		{"created_before", "2026-05-01 09:00:00"},
		{"created_before", "1714554000"},
		{"created_before", "2026-13-01T00:00:00Z"},
		// RFC 3339, but the year 10000 in UTC, which SQLite would compare as text before 2026.
		{"created_before", "9999-12-31T23:00:00-01:00"},
		{"created_after", "0000-01-01T00:30:00+01:00"},
	} {
		msg := e.requireError(e.jobsGet(e.key, q(bad.name, bad.value)), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, bad.name, "%s=%q", bad.name, bad.value)
	}
	// An empty or inverted range is refused rather than answered with nothing.
	for _, r := range [][2]time.Time{{t1, t1}, {t2, t1}} {
		msg := e.requireError(e.jobsGet(e.key, q("created_after", rfc(r[0]), "created_before", rfc(r[1]))), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "created_after")
	}
}

func TestListJobsLimitBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := seedJobsOf(t, e.db, e.inst)
	var jobs []models.Job
	for i := range plugin.MaxJobsLimit + 5 {
		jobs = append(jobs, s.add(listBase.Add(time.Duration(i)*time.Second), status.JobPending))
	}
	all := newestFirst(jobs...)

	ids, next := e.jobsPage(e.key, "")
	assert.Equal(t, all[:plugin.DefaultJobsLimit], ids, "default limit is 50")
	assert.NotNil(t, next)
	for _, n := range []int{1, 2, 199, plugin.MaxJobsLimit} {
		ids, next := e.jobsPage(e.key, "limit="+strconv.Itoa(n))
		assert.Equal(t, all[:n], ids, "limit=%d", n)
		assert.NotNil(t, next, "limit=%d leaves jobs for a next page", n)
	}
	for _, bad := range []string{"0", "-1", "201", "1000", "abc", "1.5", "", "1e2", " 5"} {
		msg := e.requireError(e.jobsGet(e.key, "limit="+url.QueryEscape(bad)), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "limit", "limit=%q", bad)
	}
	// A page that ends exactly at the last job has no next_cursor.
	_, next = e.jobsPage(e.key, "limit=200")
	require.NotNil(t, next)
	ids, next = e.jobsPage(e.key, "limit=5&cursor="+*next)
	assert.Equal(t, all[200:], ids)
	assert.Nil(t, next)
}

// Walking the pages while new jobs keep arriving returns every job that existed at the start
// exactly once, in order, whatever the page size; ties on created_at (the jobs of one session
// share it) are ordered by ID.
func TestListJobsCursorNeitherSkipsNorRepeatsWhileJobsAreCreated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := seedJobsOf(t, e.db, e.inst)
	for i := range 23 {
		at := listBase.Add(time.Duration(i/4) * time.Minute) // groups of four share created_at
		s.add(at, []string{status.JobCompleted, status.JobPending}[i%2])
	}
	for _, limit := range []int{1, 3, 4, 7} {
		t.Run("limit="+strconv.Itoa(limit), func(t *testing.T) {
			// The jobs that exist when the walk starts (earlier walks added some).
			var existing []models.Job
			require.NoError(t, e.db.Where("installation_id = ?", e.inst.ID).Find(&existing).Error)
			want := newestFirst(existing...)
			seen := map[string]bool{}
			var got []string
			cursor := ""
			arrivals := 0
			for page := 0; ; page++ {
				require.Less(t, page, 100, "pagination does not end")
				query := "limit=" + strconv.Itoa(limit)
				if cursor != "" {
					query += "&cursor=" + cursor
				}
				ids, next := e.jobsPage(e.key, query)
				for _, id := range ids {
					require.False(t, seen[id], "job %s repeated on page %d", id, page)
					seen[id] = true
					got = append(got, id)
				}
				if next == nil {
					break
				}
				cursor = *next
				// New jobs arrive between page fetches: newer than everything, and a whole session
				// with one created_at, like POST /jobs makes them.
				now := time.Now().UTC()
				for range 3 {
					s.add(now, status.JobPending)
					arrivals++
				}
			}
			require.Positive(t, arrivals)
			// Every job that existed at the start came once, in order; the new ones are newer
			// than the first page and therefore never appear behind a cursor.
			assert.Equal(t, want, got)
		})
	}
}

// The cursor combines with the filters: the status filter applies on every page.
func TestListJobsCursorWithFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := seedJobsOf(t, e.db, e.inst)
	var completed []models.Job
	for i := range 9 {
		j := s.add(listBase.Add(time.Duration(i)*time.Minute), []string{status.JobCompleted, status.JobFailed, status.JobPending}[i%3])
		if j.Status == status.JobCompleted && i >= 2 {
			completed = append(completed, j)
		}
	}
	query := "status=completed&limit=1&created_after=" + url.QueryEscape(listBase.Add(2*time.Minute).Format(time.RFC3339))
	var got []string
	ids, next := e.jobsPage(e.key, query)
	got = append(got, ids...)
	for next != nil {
		ids, next = e.jobsPage(e.key, query+"&cursor="+*next)
		got = append(got, ids...)
	}
	assert.Equal(t, newestFirst(completed...), got)
}

func TestListJobsRefusesCursorsItDidNotMake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := seedJobsOf(t, e.db, e.inst)
	var jobs []models.Job
	for i := range 6 {
		jobs = append(jobs, s.add(listBase.Add(time.Duration(i)*time.Minute), status.JobPending))
	}
	otherInst, otherKey := e.otherInstallation()
	seedJobsOf(t, e.db, otherInst).add(listBase, status.JobPending)
	seedJobsOf(t, e.db, otherInst).add(listBase.Add(time.Second), status.JobPending)
	_, next := e.jobsPage(e.key, "limit=2")
	require.NotNil(t, next)
	good := *next
	_, theirNext := e.jobsPage(otherKey, "limit=1")
	require.NotNil(t, theirNext)

	// The genuine cursor works, and is opaque base64url of the position.
	ids, _ := e.jobsPage(e.key, "limit=2&cursor="+good)
	assert.Equal(t, newestFirst(jobs...)[2:4], ids)
	raw, err := base64.RawURLEncoding.DecodeString(good)
	require.NoError(t, err)
	var tok map[string]any
	require.NoError(t, json.Unmarshal(raw, &tok))

	reencode := func(change func(map[string]any)) string {
		m := map[string]any{}
		for k, v := range tok {
			m[k] = v
		}
		change(m)
		data, _ := json.Marshal(m)
		return base64.RawURLEncoding.EncodeToString(data)
	}
	// Point the cursor elsewhere in the list: a well-formed position with the old signature.
	moved := reencode(func(m map[string]any) { m["id"] = jobs[0].ID })
	earlier := reencode(func(m map[string]any) {
		m["t"] = listBase.Add(-time.Hour).Format(time.RFC3339Nano)
	})
	unsigned := reencode(func(m map[string]any) {
		for k := range m {
			if k != "t" && k != "id" {
				delete(m, k)
			}
		}
	})
	flipped := []byte(good)
	if mid := len(flipped) / 2; flipped[mid] == 'A' {
		flipped[mid] = 'B'
	} else {
		flipped[mid] = 'A'
	}
	for name, bad := range map[string]string{
		"one character changed":         string(flipped),
		"position moved":                moved,
		"time moved":                    earlier,
		"signature removed":             unsigned,
		"another installation's cursor": *theirNext,
		"not base64":                    "!!!",
		"base64 of nonsense":            base64.RawURLEncoding.EncodeToString([]byte("hello")),
		"padded standard base64":        base64.StdEncoding.EncodeToString(raw) + "==",
		"truncated":                     good[:len(good)-4],
		"very long":                     strings.Repeat("A", 5000),
	} {
		t.Run(name, func(t *testing.T) {
			msg := e.requireError(e.jobsGet(e.key, "limit=2&cursor="+url.QueryEscape(bad)), http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Contains(t, msg, "cursor")
		})
	}
	// An empty cursor is no cursor of ours either; omitting it starts from the newest job.
	e.requireError(e.jobsGet(e.key, "limit=2&cursor="), http.StatusBadRequest, plugin.CodeInvalidInput)
	ids, _ = e.jobsPage(e.key, "limit=2")
	assert.Equal(t, newestFirst(jobs...)[:2], ids)
}

func TestJobRoutesPermissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, j, _ := e.storeJob(e.inst)
	routes := []struct{ method, path string }{
		{http.MethodGet, "/jobs"},
		{http.MethodPost, "/jobs/" + j.ID + "/refresh-url"},
		{http.MethodPost, "/jobs/" + j.ID + "/accept"},
		{http.MethodPost, "/jobs/" + j.ID + "/reject"},
	}
	for _, r := range routes {
		for _, scope := range []string{"plugin.jobs:write", plugin.PermJobsCreate, plugin.PermJobsCancel, "plugin.catalog:read", "plugin.catalog:write"} {
			e.clock.Advance(time.Minute)
			msg := e.requireError(e.do(r.method, p(r.path), e.issueKey(scope), nil), http.StatusForbidden, plugin.CodeForbidden)
			assert.Contains(t, msg, plugin.PermJobsRead)
		}
		e.requireError(e.do(r.method, p(r.path), "", nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
		e.requireError(e.do(r.method, p(r.path), "pk_live_nope.nope", nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
		for _, scope := range []string{"plugin.jobs:read", plugin.PermJobsRead} {
			e.clock.Advance(time.Minute)
			rec := e.do(r.method, p(r.path), e.issueKey(scope), nil)
			assert.Contains(t, []int{http.StatusOK, http.StatusNoContent, http.StatusGone}, rec.Code, "%s %s with %s: %s", r.method, r.path, scope, rec.Body.String())
		}
	}
}
