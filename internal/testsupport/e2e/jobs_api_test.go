package e2e_test

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// TestJobsListRefreshAndRatingsEndToEnd runs a real photo session and then uses the job routes as
// a client would: GET /jobs page by page while another session arrives, refresh-url and a
// download, accept and reject, the 409 and 404 answers, and finally the worker's retention sweep
// purging the files, after which refresh-url and the downloads answer 410.
func TestJobsListRefreshAndRatingsEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.OutputRetention = time.Hour
		c.RetentionSweepInterval = 200 * time.Millisecond
	}})
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "kettle", packshotPNG(t))
	session := startSession(t, api, "kettle", "local/studio-v1", 3)
	ids := session.Subjects[0].JobIDs
	jobs := waitTerminal(t, api, ids)
	for id, j := range jobs {
		if j.Status != status.JobCompleted || len(j.Outputs) != 1 {
			t.Fatalf("job %s = %+v, want completed with one output", id, j)
		}
	}

	// 1. GET /jobs, two per page; a second session arrives between the pages (with no worker, so
	// its jobs stay pending). The walk returns the first session's jobs once each, newest first.
	var page plugin.JobsPage
	expect(t, api.do(http.MethodGet, "/jobs?limit=2", nil, &page), http.StatusOK)
	if len(page.Jobs) != 2 || page.NextCursor == nil {
		t.Fatalf("first page = %d jobs, next_cursor %v; want 2 and a cursor", len(page.Jobs), page.NextCursor)
	}
	env.StopWorker()
	pending := startSession(t, api, "kettle", "local/studio-v1", 2).Subjects[0].JobIDs
	seen := []string{page.Jobs[0].ID, page.Jobs[1].ID}
	for page.NextCursor != nil {
		cursor := *page.NextCursor
		page = plugin.JobsPage{}
		expect(t, api.do(http.MethodGet, "/jobs?limit=2&cursor="+url.QueryEscape(cursor), nil, &page), http.StatusOK)
		for _, j := range page.Jobs {
			seen = append(seen, j.ID)
		}
	}
	if want := idsNewestFirst(ids); !slices.Equal(seen, want) {
		t.Fatalf("paged walk = %v, want %v (each job once, (created_at, id) descending)", seen, want)
	}
	// A fresh walk starts with the new session, and the status filter separates the two.
	expect(t, api.do(http.MethodGet, "/jobs", nil, &page), http.StatusOK)
	if len(page.Jobs) != 5 || page.NextCursor != nil || !slices.Contains(pending, page.Jobs[0].ID) {
		t.Fatalf("GET /jobs = %+v", page)
	}
	expect(t, api.do(http.MethodGet, "/jobs?status=completed", nil, &page), http.StatusOK)
	if got := jobIDsOf(page.Jobs); !slices.Equal(got, idsNewestFirst(ids)) {
		t.Fatalf("status=completed lists %v, want %v", got, idsNewestFirst(ids))
	}
	// created_after includes its instant, created_before excludes it (timestamps as PostgreSQL keeps them).
	first := jobs[ids[0]].CreatedAt
	at := url.QueryEscape(first.Format(time.RFC3339Nano))
	expect(t, api.do(http.MethodGet, "/jobs?status=completed&created_after="+at, nil, &page), http.StatusOK)
	if len(page.Jobs) != 3 {
		t.Fatalf("created_after=%s lists %d completed jobs, want 3", first.Format(time.RFC3339Nano), len(page.Jobs))
	}
	expect(t, api.do(http.MethodGet, "/jobs?status=completed&created_before="+at, nil, &page), http.StatusOK)
	if len(page.Jobs) != 0 {
		t.Fatalf("created_before=%s lists %d completed jobs, want 0", first.Format(time.RFC3339Nano), len(page.Jobs))
	}
	expect(t, api.do(http.MethodGet, "/jobs?cursor=bm90LWEtY3Vyc29y", nil, nil), http.StatusBadRequest)

	// 2. refresh-url signs the outputs again; the file downloads.
	var refreshed plugin.RefreshURLResponse
	expect(t, api.do(http.MethodPost, "/jobs/"+ids[0]+"/refresh-url", nil, &refreshed), http.StatusOK)
	if refreshed.JobID != ids[0] || len(refreshed.Outputs) != 1 || time.Until(refreshed.Outputs[0].ExpiresAt) < 168*time.Hour {
		t.Fatalf("refresh-url = %+v", refreshed)
	}
	if status, body := fetchFile(t, refreshed.Outputs[0].URL); status != http.StatusOK || len(body) == 0 {
		t.Fatalf("download of a refreshed URL: %d, %d bytes", status, len(body))
	}

	// 3. Ratings: 204, visible on the job, a later one overwrites.
	expect(t, api.do(http.MethodPost, "/jobs/"+ids[0]+"/accept", nil, nil), http.StatusNoContent)
	var job plugin.JobResponse
	expect(t, api.do(http.MethodGet, "/jobs/"+ids[0], nil, &job), http.StatusOK)
	if job.Voting != models.VotingAccepted || job.VotingAt == nil {
		t.Fatalf("after accept: voting %q at %v", job.Voting, job.VotingAt)
	}
	acceptedAt := *job.VotingAt
	expect(t, api.do(http.MethodPost, "/jobs/"+ids[0]+"/reject", nil, nil), http.StatusNoContent)
	expect(t, api.do(http.MethodPost, "/jobs/"+ids[1]+"/reject", nil, nil), http.StatusNoContent)
	expect(t, api.do(http.MethodGet, "/jobs/"+ids[0], nil, &job), http.StatusOK)
	if job.Voting != models.VotingRejected || job.VotingAt == nil || job.VotingAt.Before(acceptedAt) {
		t.Fatalf("after reject: voting %q at %v (accepted at %v)", job.Voting, job.VotingAt, acceptedAt)
	}

	// 4. A job that has not completed: 409 job_not_completed on all three.
	for _, action := range []string{"refresh-url", "accept", "reject"} {
		var e struct {
			Error plugin.ErrorDetail `json:"error"`
		}
		expect(t, api.do(http.MethodPost, "/jobs/"+pending[0]+"/"+action, nil, &e), http.StatusConflict)
		if e.Error.Code != plugin.CodeJobNotCompleted {
			t.Fatalf("%s on a pending job: %+v", action, e.Error)
		}
	}
	// Another installation sees nothing: its list is empty and the job routes are 404.
	other := env.NewTenant(t, 1)
	stranger := &client{t: t, base: env.BaseURL + plugin.Base, key: other.PluginKey}
	expect(t, stranger.do(http.MethodGet, "/jobs", nil, &page), http.StatusOK)
	if len(page.Jobs) != 0 {
		t.Fatalf("another installation lists %d jobs", len(page.Jobs))
	}
	for _, action := range []string{"refresh-url", "accept", "reject"} {
		expect(t, stranger.do(http.MethodPost, "/jobs/"+ids[2]+"/"+action, nil, nil), http.StatusNotFound)
	}
	expect(t, api.do(http.MethodGet, "/jobs/"+ids[2], nil, &job), http.StatusOK)
	if job.Voting != models.VotingPending {
		t.Fatalf("a stranger's rating changed the job: %q", job.Voting)
	}

	// 5. Retention: the worker's sweep (OUTPUT_RETENTION=1h, every 200ms) purges files older than
	// an hour. Age one job's files by two hours; the sweep removes them and only them.
	env.StartWorker()
	oldURL := jobs[ids[0]].Outputs[0].URL
	if err := env.DB.Model(&models.Asset{}).Where("job_id = ? AND kind = ?", ids[0], models.AssetKindOutput).
		Update("created_at", time.Now().UTC().Add(-2*time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the retention sweep to purge the aged files", func() bool {
		return api.do(http.MethodPost, "/jobs/"+ids[0]+"/refresh-url", nil, nil).StatusCode == http.StatusGone
	})
	if status, _ := fetchFile(t, oldURL); status != http.StatusGone {
		t.Fatalf("download of a purged file: %d, want 410", status)
	}
	expect(t, api.do(http.MethodGet, "/jobs/"+ids[0], nil, &job), http.StatusOK)
	if job.Status != status.JobCompleted || len(job.Outputs) != 0 {
		t.Fatalf("purged job = %+v, want completed without outputs", job)
	}
	expect(t, api.do(http.MethodPost, "/jobs/"+ids[1]+"/refresh-url", nil, &refreshed), http.StatusOK)
	if status, _ := fetchFile(t, refreshed.Outputs[0].URL); status != http.StatusOK {
		t.Fatalf("download of a file within retention: %d", status)
	}
}

// idsNewestFirst orders job IDs as GET /jobs does for jobs created together (same created_at): by ID, descending.
func idsNewestFirst(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

func jobIDsOf(jobs []plugin.JobResponse) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func fetchFile(t *testing.T, rawURL string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}
