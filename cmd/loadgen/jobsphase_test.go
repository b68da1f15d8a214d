package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"
)

// fakePluginAPI answers what runShotflow sends: an upload, its packshots, sessions (one job per
// image of each subject) and their orders, finished at once. It records the subjects of every session.
type fakePluginAPI struct {
	mu       sync.Mutex
	sessions [][]map[string]any
	srv      *httptest.Server
	status   string // of every order; "" is completed
}

func newFakePluginAPI(t *testing.T) *fakePluginAPI {
	f := &fakePluginAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, "/api/v1/plugin")
		switch {
		case r.Method == http.MethodPost && path == "/assets/upload":
			fmt.Fprintf(w, `{"asset_id":"asset-1","upload_url":%q}`, f.srv.URL+"/upload")
		case r.Method == http.MethodPut && r.URL.Path == "/upload", r.Method == http.MethodPost && path == "/packshots":
			w.WriteHeader(http.StatusOK)
		case r.Method == http.MethodPost && path == "/jobs":
			var body struct {
				Subjects []map[string]any `json:"subjects"`
			}
			require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
			f.mu.Lock()
			n := len(f.sessions)
			f.sessions = append(f.sessions, body.Subjects)
			f.mu.Unlock()
			type subject struct {
				JobIDs []string `json:"job_ids"`
			}
			resp := struct {
				OrderID  string    `json:"order_id"`
				Subjects []subject `json:"subjects"`
			}{OrderID: fmt.Sprintf("order-%d", n)}
			for i, s := range body.Subjects {
				var ids []string
				for j := range int(s["images_count"].(float64)) {
					ids = append(ids, fmt.Sprintf("job-%d-%d-%d", n, i, j))
				}
				resp.Subjects = append(resp.Subjects, subject{JobIDs: ids})
			}
			_ = json.NewEncoder(w).Encode(resp)
		case r.Method == http.MethodGet && strings.HasPrefix(path, "/orders/"):
			f.mu.Lock()
			defer f.mu.Unlock()
			fmt.Fprintf(w, `{"status":%q}`, cmp.Or(f.status, "completed"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func preparedUpload() *mocks.Client {
	c := &mocks.Client{}
	done := &mocks.WorkflowRun{}
	done.On("Get", mock.Anything, nil).Return(nil)
	c.On("GetWorkflow", mock.Anything, mock.Anything, "").Return(done)
	return c
}

// With -order-jobs the jobs end to end are measured on sessions of their own, of that many
// one-image subjects each and as many jobs as the accepted sessions hold (rounded up to whole
// sessions), after the accepted sessions; the accepted sessions' jobs are reported apart.
func TestOrderJobsMeasuresTheJobsOnSessionsOfTheirOwn(t *testing.T) {
	t.Parallel()
	f := newFakePluginAPI(t)
	o := options{base: f.srv.URL, key: "pk_live_x", model: "local/studio-v1", orders: 30, products: 1, images: 2,
		concurrency: 4, orderJobs: 25}
	r, err := runShotflow(context.Background(), o, preparedUpload(), meter{proc: "/proc"}, func() error { return nil })
	require.NoError(t, err)

	require.Equal(t, 30, r.accepted.count)
	require.Equal(t, 60, r.acceptedJobs.count, "the accepted sessions' own jobs")
	require.Equal(t, 2, r.jobsPerAccepted)
	require.Equal(t, 75, r.jobs.count, "60 jobs rounded up to three sessions of 25")
	require.Equal(t, 75, o.jobsMeasured(), "the bare orders hold as many")
	require.Equal(t, 25, r.jobsPerOrder)
	require.Len(t, f.sessions, 33)
	refs := map[any]bool{}
	for _, s := range f.sessions[30:] {
		require.Len(t, s, 25)
		for _, subject := range s {
			require.EqualValues(t, 1, subject["images_count"])
			refs[subject["product_ref"]] = true
		}
	}
	require.Len(t, refs, 25, "a session's subjects are distinct products")
	for _, s := range f.sessions[:30] {
		require.Len(t, s, 1)
		require.EqualValues(t, 2, s[0]["images_count"])
	}

	// Without it the accepted sessions' jobs are the ones measured.
	o.orderJobs = 0
	r, err = runShotflow(context.Background(), o, preparedUpload(), meter{proc: "/proc"}, func() error { return nil })
	require.NoError(t, err)
	require.Equal(t, 60, r.jobs.count)
	require.Equal(t, 60, o.jobsMeasured())
	require.Zero(t, r.acceptedJobs.count)
	require.Equal(t, 2, r.jobsPerOrder)

	// -jobs sets the jobs phase's size apart from the accepted sessions'.
	o.orderJobs, o.jobs = 25, 30
	require.Equal(t, 50, o.jobsMeasured(), "30 jobs rounded up to two sessions of 25")
	r, err = runShotflow(context.Background(), o, preparedUpload(), meter{proc: "/proc"}, func() error { return nil })
	require.NoError(t, err)
	require.Equal(t, 60, r.acceptedJobs.count)
	require.Equal(t, 50, r.jobs.count)
}

// With -start-only no job can run while the worker is paused (the sessions' acceptance and the
// bare starts measured meanwhile), so the jobs are timed from its resume.
func TestStartOnlyTimesTheJobsFromTheWorkersResume(t *testing.T) {
	t.Parallel()
	worker := exec.Command("sleep", "60")
	require.NoError(t, worker.Start())
	t.Cleanup(func() { _ = worker.Process.Kill(); _ = worker.Wait() })
	f := newFakePluginAPI(t)
	o := options{base: f.srv.URL, key: "pk_live_x", model: "local/studio-v1", orders: 5, products: 1, images: 1,
		concurrency: 2, startOnly: true}
	m := meter{proc: "/proc", watch: []watched{{name: "worker", pid: worker.Process.Pid}}}
	const paused = 2 * time.Second
	r, err := runShotflow(context.Background(), o, preparedUpload(), m, func() error {
		time.Sleep(paused) // the bare starts while the worker is paused
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 5, r.jobs.count)
	require.Less(t, r.jobs.secs, paused.Seconds()/2, "the jobs' window must not hold the pause")
}

// The orders are waited for as the bare workflows are, through Temporal (an order's workflow not
// found yet is looked for again), then read once through the API: one still in progress there is
// an error.
func TestWaitOrdersWaitsForTheOrderWorkflows(t *testing.T) {
	workflowPoll = time.Millisecond
	c := &mocks.Client{}
	done := &mocks.WorkflowRun{}
	done.On("Get", mock.Anything, nil).Return(nil)
	notYet := &mocks.WorkflowRun{}
	notYet.On("Get", mock.Anything, nil).Return(serviceerror.NewNotFound("workflow not found"))
	c.On("GetWorkflow", mock.Anything, "order/o-1", "").Return(notYet).Twice()
	c.On("GetWorkflow", mock.Anything, "order/o-1", "").Return(done).Once()
	c.On("GetWorkflow", mock.Anything, "order/o-2", "").Return(done).Once()
	require.NoError(t, waitOrders(context.Background(), c, []string{"o-1", "o-2"}))
	c.AssertExpectations(t)

	f := newFakePluginAPI(t)
	a := &api{base: f.srv.URL, key: "pk_live_x", http: http.DefaultClient}
	require.NoError(t, checkOrders(context.Background(), a, []string{"o-1"}))
	f.status = "in_progress"
	require.ErrorContains(t, checkOrders(context.Background(), a, []string{"o-1"}), "in progress")
}
