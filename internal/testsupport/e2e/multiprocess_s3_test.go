package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	activitycontract "github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/historycost"
	"github.com/shotflow/shotflow/internal/providers/sim"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// lbBase is the PUBLIC_BASE_URL every process of the deployment shares: the address of the load
// balancer a deployment puts in front of its API processes. Nothing listens there: the test is the
// load balancer and sends each signed URL to the API process it chooses (via).
const lbBase = "http://shotflow-lb.test"

// via points a URL the deployment signed under lbBase at one API process (base); a URL of
// another host (the store's own, signed by it) is returned as it is.
func via(t *testing.T, base, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := url.Parse(lbBase)
	if u.Host != lb.Host {
		return raw
	}
	b, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Scheme, u.Host = b.Scheme, b.Host
	return u.String()
}

// sharedRedisURL is the Redis the API processes share their rate limits in: TEST_REDIS_URL, or
// database 15 of the local Redis (as the ratelimit package's tests use). The test fails when it
// does not answer.
func sharedRedisURL(t *testing.T) string {
	t.Helper()
	raw := os.Getenv("TEST_REDIS_URL")
	if raw == "" {
		raw = "redis://127.0.0.1:6379/15"
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatalf("TEST_REDIS_URL %q: %v", raw, err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s does not answer (%v): start redis-server or set TEST_REDIS_URL", raw, err)
	}
	return raw
}

// fetchVia GETs a signed file URL through one API process and returns its status, content type
// and body.
func fetchVia(t *testing.T, base, raw string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Get(via(t, base, raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

// sameFileFromBoth fetches a signed file URL through both API processes and returns its bytes,
// failing unless both serve it, alike. A URL of the store (FILE_URLS=store) is fetched from the
// store, as the clients of either API do.
func sameFileFromBoth(t *testing.T, base1, base2, raw, wantType string) []byte {
	t.Helper()
	code1, type1, body1 := fetchVia(t, base1, raw)
	code2, type2, body2 := fetchVia(t, base2, raw)
	if code1 != http.StatusOK || code2 != http.StatusOK || type1 != wantType || type2 != wantType {
		t.Fatalf("%s: API 1 answered %d %q, API 2 %d %q; want 200 %s from both", raw, code1, type1, code2, type2, wantType)
	}
	if len(body1) == 0 || !bytes.Equal(body1, body2) {
		t.Fatalf("%s: API 1 served %d bytes, API 2 %d other bytes", raw, len(body1), len(body2))
	}
	return body1
}

// pollerIdentities lists the identities of the workers polling the main task queue.
func pollerIdentities(t *testing.T, env *testenv.Env) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := env.App.Temporal.DescribeTaskQueue(ctx, env.Config.TemporalTaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range d.GetPollers() {
		out[p.GetIdentity()] = true
	}
	return out
}

// workersInHistories counts, by worker identity, the workflow and activity tasks the workers
// started in the histories of the workflows.
func workersInHistories(t *testing.T, env *testenv.Env, workflowIDs []string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string]int{}
	for _, id := range workflowIDs {
		events, err := historycost.Read(ctx, env.App.Temporal, id, "")
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		for _, e := range events {
			if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
				out[a.GetIdentity()]++
			}
			if w := e.GetWorkflowTaskStartedEventAttributes(); w != nil {
				out[w.GetIdentity()]++
			}
		}
	}
	return out
}

// generatingOn counts the jobs among ids whose generation attempt the worker process is running,
// as Temporal sees it: a started Generate activity last taken by the worker (its identity starts
// with its process ID).
func generatingOn(t *testing.T, env *testenv.Env, ids []string, worker *testenv.Process) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := strconv.Itoa(worker.Pid()) + "@"
	n := 0
	for _, id := range ids {
		d, err := env.App.Temporal.DescribeWorkflowExecution(ctx, workflows.JobWorkflowID(id, 1), "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			continue // its order has not launched it yet
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetActivityType().GetName() == activitycontract.Generate && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED &&
				strings.HasPrefix(a.GetLastWorkerIdentity(), prefix) {
				n++
			}
		}
	}
	return n
}

// putUploadVia sends the bytes of a presigned upload where its URL points: to one API process when
// it is the deployment's (FILE_URLS=api), which prepares the upload, or to the store itself
// (FILE_URLS=store), where the upload waits until it is first used. It reports whether the URL
// was the store's.
func putUploadVia(t *testing.T, env *testenv.Env, srv *s3server.Server, base string, up plugin.UploadResponse, contentType string, data []byte) bool {
	t.Helper()
	u, err := url.Parse(up.UploadURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Host == srv.Addr {
		if code := putToStore(t, up.UploadURL, contentType, data); code != http.StatusOK {
			t.Fatalf("PUT upload to the store: %d", code)
		}
		return true
	}
	req, err := http.NewRequest(http.MethodPut, via(t, base, up.UploadURL), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT upload: %d %s", resp.StatusCode, body)
	}
	waitPrepared(t, env, up.AssetID)
	return false
}

// assetInBucket fails unless the asset's file is an object of the S3 server's bucket (versitygw's
// posix backend keeps each object as a file under its key) of the given size.
func assetInBucket(t *testing.T, env *testenv.Env, srv *s3server.Server, assetID string, size int) {
	t.Helper()
	var a models.Asset
	if err := env.DB.Take(&a, "id = ?", assetID).Error; err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(srv.Dir, srv.Bucket, filepath.FromSlash(a.BlobKey)))
	if err != nil || fi.Size() != int64(size) {
		t.Fatalf("asset %s is not in the bucket as %s (%d bytes): %v", assetID, a.BlobKey, size, err)
	}
}

// noLocalFiles fails if the file:// store testenv configured, which the processes would use
// without BLOB_URL, holds any file: every byte went to the bucket.
func noLocalFiles(t *testing.T, env *testenv.Env) {
	t.Helper()
	dir, ok := strings.CutPrefix(env.Config.BlobURL, "file://")
	if !ok {
		t.Fatalf("testenv's BLOB_URL is %s, not file://", env.Config.BlobURL)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			err = fmt.Errorf("%s was written outside the bucket", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sessionAttempt is one POST /jobs of the load: its answer, or the transport error of a request
// that got none.
type sessionAttempt struct {
	session plugin.SessionResponse
	status  int
	body    string
	err     error
}

// postSession sends one session of sim/slow jobs to an API process; it never fails the test, so
// that goroutines may call it while an API process dies.
func postSession(base, key string, body []byte) sessionAttempt {
	req, err := http.NewRequest(http.MethodPost, base+plugin.Base+"/jobs", bytes.NewReader(body))
	if err != nil {
		return sessionAttempt{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return sessionAttempt{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return sessionAttempt{err: err} // the process died while answering: no answer
	}
	a := sessionAttempt{status: resp.StatusCode, body: string(data)}
	if resp.StatusCode == http.StatusCreated {
		// An answer outside the contract is an unexpected answer, not a missing one.
		if err := contract.Plugin.Validate(req, body, resp.StatusCode, resp.Header, data); err != nil {
			return sessionAttempt{status: -1, body: "contract: " + err.Error()}
		}
		if err := json.Unmarshal(data, &a.session); err != nil {
			return sessionAttempt{status: -1, body: "decode: " + err.Error()}
		}
	}
	return a
}

// TestTwoAPIsAndTwoWorkersOverS3AndRedis runs the production shape: two `api` and two `worker`
// processes over one Temporal server, one PostgreSQL database, one S3 bucket (versitygw) and one
// Redis, with one PUBLIC_BASE_URL (a load balancer's) for all. It shows that
//   - plugin and external sessions sent through either API complete, and both workers ran them;
//   - with the store's URLs (the default for s3://), an upload sent straight to the bucket with
//     the URL API 1 gave is collected by its registration through API 2 and served by both APIs'
//     signed route; the outputs' URLs either API gives are the bucket's and serve the same bytes,
//     as do the thumbnails: every file is in the bucket, none on a process's disk;
//   - a key limited to 10 requests a minute is admitted 10 times of 30 spread over both APIs;
//   - with 20+ sessions in flight, a SIGKILL of one worker and one API loses nothing: every
//     answered session completes, every accepted order ends, each job is settled once in the
//     ledger with one output, and no credit stays reserved.
func TestTwoAPIsAndTwoWorkersOverS3AndRedis(t *testing.T) {
	t.Parallel()
	long(t)
	srv := s3server.Start(t)
	redisURL := sharedRedisURL(t)
	env := testenv.New(t, temporalServer, testenv.Options{NoWorker: true})
	deployment := append(srv.Env(),
		"REDIS_URL="+redisURL,
		"PUBLIC_BASE_URL="+lbBase,
		"SIM_PROVIDER=true",
		"RENDER_LONG_EDGE=512",
		// A high default, so that only the installation limited below meets the limit.
		"RATE_LIMIT_PER_MINUTE=6000",
		// A session the killed API committed but could not start is started soon by a worker.
		"OUTBOX_SWEEP_INTERVAL=1s",
		"OUTBOX_START_AFTER=3s",
	)
	worker1 := env.StartWorkerProcess(t, deployment...)
	env.StartWorkerProcess(t, deployment...)
	_, base1 := startAPI(t, env, deployment...)
	api2, base2 := startAPI(t, env, deployment...)
	var workers map[string]bool
	testenv.Eventually(t, 60*time.Second, "both workers to poll the task queue", func() bool {
		workers = pollerIdentities(t, env)
		return len(workers) == 2
	})

	tenant := env.NewTenant(t, 10000)
	p1 := &client{t: t, base: base1 + plugin.Base, key: tenant.PluginKey}
	p2 := &client{t: t, base: base2 + plugin.Base, key: tenant.PluginKey}
	x1 := &client{t: t, base: base1 + external.Base, key: tenant.ExternalKey, doc: contract.External}
	x2 := &client{t: t, base: base2 + external.Base, key: tenant.ExternalKey, doc: contract.External}

	// An upload whose URL API 1 gave is registered through API 2 and served by both. With the
	// store's URLs (the default for s3://) the bytes go straight to the bucket, and API 2's
	// registration collects them; the API's signed route still serves the file from either API.
	input := packshotPNG(t)
	up := presign(t, p1, "bottle.png", "image/png", input)
	if !putUploadVia(t, env, srv, base1, up, "image/png", input) {
		t.Fatalf("the upload URL %s is not the store's, though the deployment makes store URLs", up.UploadURL)
	}
	var reg struct{ Results []plugin.BulkResult }
	expect(t, p2.do(http.MethodPost, "/packshots", map[string]any{"packshots": []map[string]any{{
		"asset_id": up.AssetID, "product_ref": "bottle", "product_metadata": map[string]any{"display_name": "Bottle"},
	}}}, &reg), http.StatusOK)
	if len(reg.Results) != 1 || reg.Results[0].Status != "created" {
		t.Fatalf("packshot registered through API 2: %+v", reg)
	}
	waitPrepared(t, env, up.AssetID) // API 2 collected the upload and started its preparation
	// The deployment's key signs the file's URL (the signature covers the path, not the host);
	// both APIs serve the very bytes sent with API 1's URL.
	signed := lbBase + strings.TrimPrefix(env.App.Signer.URL(http.MethodGet, files.Path(up.AssetID), time.Now().Add(time.Hour)), env.BaseURL)
	if got := sameFileFromBoth(t, base1, base2, signed, "image/png"); !bytes.Equal(got, input) {
		t.Fatalf("the upload served back is %d bytes, not the %d uploaded", len(got), len(input))
	}
	assetInBucket(t, env, srv, up.AssetID, len(input))
	// A photo posted to the external API through API 1 is listed with its thumbnail through API 2.
	photo := uploadProductPhoto(t, env, x1, "Red box", photoOnGrey(t))
	item := listed(t, x2, "/products", "products")[photo]
	thumb, _ := item["thumbnail"].(string)
	if item == nil || thumb == "" {
		t.Fatalf("the photo uploaded through API 1 is listed through API 2 as %v", item)
	}
	if _, format, err := image.Decode(bytes.NewReader(sameFileFromBoth(t, base1, base2, thumb, "image/jpeg"))); err != nil || format != "jpeg" {
		t.Fatalf("the photo's thumbnail is not a JPEG: %v", err)
	}

	// Sessions through both APIs, plugin and external, complete; the outputs are served by both.
	var s1, s2 plugin.SessionResponse
	session := map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects":       []any{map[string]any{"product_ref": "bottle", "images_count": 3, "ai_model": "local/studio-v1"}},
	}
	expect(t, p1.do(http.MethodPost, "/jobs", session, &s1), http.StatusCreated)
	expect(t, p2.do(http.MethodPost, "/jobs", session, &s2), http.StatusCreated)
	ideas := map[string]any{"preferences": "tall woman, short dark hair, linen dress", "count": 2}
	g1 := register(t, x1, "/models/register-ideas", ideas)
	g2 := register(t, x2, "/models/register-ideas", ideas)
	var histories []string
	for i, s := range []plugin.SessionResponse{s1, s2} {
		other := []*client{p2, p1}[i] // each session is read through the API that did not take it
		taker := []*client{p1, p2}[i]
		for _, id := range s.Subjects[0].JobIDs {
			job := waitCompleted(t, other, id)
			if len(job.Outputs) != 1 {
				t.Fatalf("job %s: %d outputs", id, len(job.Outputs))
			}
			// Both APIs give a presigned URL of the bucket, which serves the same bytes.
			body := sameFileFromBoth(t, base1, base2, job.Outputs[0].URL, "image/png")
			again := waitCompleted(t, taker, id)
			for _, u := range []string{job.Outputs[0].URL, again.Outputs[0].URL} {
				if parsed, err := url.Parse(u); err != nil || parsed.Host != srv.Addr {
					t.Fatalf("output URL %s of job %s is not the store's", u, id)
				}
			}
			if _, _, other := fetchVia(t, base1, again.Outputs[0].URL); !bytes.Equal(other, body) {
				t.Fatalf("the output URLs of job %s the two APIs gave serve different bytes", id)
			}
			img, format, err := image.Decode(bytes.NewReader(body))
			if err != nil || format != "png" {
				t.Fatalf("output of job %s is not a PNG: %v", id, err)
			}
			if !hasColourNear(img, color.NRGBA{30, 60, 180, 255}) {
				t.Fatalf("output of job %s does not show the uploaded bottle", id)
			}
			assetInBucket(t, env, srv, job.Outputs[0].AssetID, int(job.Outputs[0].SizeBytes))
			histories = append(histories, workflows.JobWorkflowID(id, 1))
		}
		histories = append(histories, workflows.OrderWorkflowID(s.OrderID))
	}
	for i, g := range []external.GenerationResponse{g1, g2} {
		other := []*client{x2, x1}[i]
		d := waitOrder(t, env, other, g.OrderID)
		if d.Status != status.OrderCompleted || d.JobsCompleted != 2 || len(d.Jobs) != 2 {
			t.Fatalf("external order through API %d: %+v", i+1, d)
		}
		for _, j := range d.Jobs {
			if j.OutputURL == nil {
				t.Fatalf("external job %s has no output URL", j.JobID)
			}
			sameFileFromBoth(t, base1, base2, *j.OutputURL, "image/png")
			histories = append(histories, workflows.JobWorkflowID(j.JobID, 1))
		}
		histories = append(histories, workflows.OrderWorkflowID(g.OrderID))
	}
	tasks := workersInHistories(t, env, histories)
	for id, n := range tasks {
		if !workers[id] {
			t.Fatalf("tasks were started by %q, which is not one of the two workers %v", id, workers)
		}
		if n == 0 {
			t.Fatalf("worker %s ran nothing", id)
		}
	}
	if len(tasks) != 2 {
		t.Fatalf("the tasks of %d workflows were started by %v, want both workers", len(histories), tasks)
	}
	t.Logf("tasks started per worker: %v", tasks)

	// The rate limit holds across both APIs: 30 requests of a key limited to 10 a minute, every
	// other one through API 2, are admitted 10 times, 5 by each API.
	limited, err := models.CreateInstallation(env.DB, env.App.Box, models.NewInstallation{
		AccountID: tenant.AccountID, Name: "limited shop", RateLimitPerMin: 10}, webhooks.NewSecret())
	if err != nil {
		t.Fatal(err)
	}
	admitted := [2]int{}
	for i := range 30 {
		c := &client{t: t, base: []string{base1, base2}[i%2] + plugin.Base, key: limited.APIKey.Secret}
		resp := c.do(http.MethodGet, "/me", nil, nil)
		switch resp.StatusCode {
		case http.StatusOK:
			admitted[i%2]++
		case http.StatusTooManyRequests:
			if resp.Header.Get("Retry-After") == "" {
				t.Fatalf("request %d: 429 without Retry-After", i)
			}
		default:
			t.Fatalf("request %d: status %d: %s", i, resp.StatusCode, readBody(resp))
		}
		if i < 10 && resp.StatusCode != http.StatusOK || i >= 10 && resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("request %d of the limited key answered %d; want the first 10 admitted and the rest refused", i, resp.StatusCode)
		}
	}
	if admitted != [2]int{5, 5} {
		t.Fatalf("admitted per API: %v, want 5 and 5", admitted)
	}

	// Under load: six senders post sessions of two slow jobs, one per ticket, every other one
	// through API 2 while it lives (then all through API 1, as a load balancer would).
	load, err := json.Marshal(map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1", "suggestions": sim.DelayOption + "=4s"},
		"subjects":       []any{map[string]any{"product_ref": "bottle", "images_count": 2, "ai_model": "sim/slow"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu         sync.Mutex
		answered   []plugin.SessionResponse
		unanswered int
		unexpected []string
		api2Down   atomic.Bool
		toAPI2     atomic.Int64 // requests being sent to API 2
		finished   atomic.Int64 // requests answered or failed
		issued     int64
		tickets    = make(chan struct{}, 256)
		stop       = make(chan struct{})
		senders    sync.WaitGroup
	)
	issue := func(n int) {
		for range n {
			tickets <- struct{}{}
		}
		issued += int64(n)
	}
	for i := range 6 {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-tickets:
				}
				base := []string{base1, base2}[(i+n)%2]
				if api2Down.Load() {
					base = base1
				}
				if base == base2 {
					toAPI2.Add(1)
				}
				a := postSession(base, tenant.PluginKey, load)
				if base == base2 {
					toAPI2.Add(-1)
				}
				mu.Lock()
				switch {
				case a.err != nil:
					unanswered++
				case a.status == http.StatusCreated:
					answered = append(answered, a.session)
				default:
					unexpected = append(unexpected, base+": "+a.body)
				}
				mu.Unlock()
				finished.Add(1)
			}
		}()
	}
	stopSenders := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		senders.Wait()
	}
	t.Cleanup(stopSenders)
	issue(24)
	var inFlight int64
	testenv.Eventually(t, 90*time.Second, "20 sessions in flight, 10 jobs generating, some on the worker to kill", func() bool {
		inFlight = countRows(t, env, &models.Order{}, "account_id = ? AND status = ?", tenant.AccountID, status.OrderInProgress)
		if inFlight < 20 || countRows(t, env, &models.Job{}, "account_id = ? AND status = ?", tenant.AccountID, status.JobInProgress) < 10 {
			return false
		}
		mu.Lock()
		var ids []string
		for _, s := range answered {
			ids = append(ids, s.Subjects[0].JobIDs...)
		}
		mu.Unlock()
		return generatingOn(t, env, ids, worker1) > 0
	})
	// API 2 is killed while a session request is on its way to it: more tickets until one is.
	deadline := time.Now().Add(60 * time.Second)
	for toAPI2.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no session request reached API 2 within 60 s")
		}
		if len(tickets) == 0 {
			issue(2)
		}
		time.Sleep(time.Millisecond)
	}
	api2Down.Store(true)
	api2.Kill()
	worker1.Kill()
	mu.Lock()
	before := len(answered)
	mu.Unlock()
	t.Logf("killed API 2 and a worker with %d sessions in flight, %d answered so far", inFlight, before)
	issue(10)
	testenv.Eventually(t, 60*time.Second, "every session request to be sent", func() bool { return finished.Load() == issued })
	stopSenders()
	if len(unexpected) > 0 {
		t.Fatalf("%d session requests answered neither 201 nor nothing, e.g. %s", len(unexpected), unexpected[0])
	}
	if len(answered) < before+10 {
		t.Fatalf("API 1 answered %d of the 10 sessions sent after the kills", len(answered)-before)
	}
	t.Logf("%d sessions answered, %d requests unanswered", len(answered), unanswered)

	// Afterwards every accepted order ends, and every job.
	testenv.Eventually(t, 3*time.Minute, "every order to end", func() bool {
		return countRows(t, env, &models.Order{}, "account_id = ? AND status = ?", tenant.AccountID, status.OrderInProgress) == 0 &&
			countRows(t, env, &models.Job{}, "account_id = ? AND status NOT IN ?", tenant.AccountID,
				[]string{status.JobCompleted, status.JobFailed, status.JobCancelled, status.JobExpired}) == 0
	})
	// Every answered session completed, each of its jobs with one output, as API 1 shows it.
	for _, s := range answered {
		var o plugin.OrderResponse
		expect(t, p1.do(http.MethodGet, "/orders/"+s.OrderID, nil, &o), http.StatusOK)
		if o.Status != status.OrderCompleted || o.JobsCompleted != 2 || len(o.Images) != 2 {
			t.Fatalf("answered session %s ended as %+v", s.OrderID, o)
		}
	}
	// Nothing doubled: each job of the account is settled once and has one output if it completed.
	var jobs []models.Job
	if err := env.DB.Where("account_id = ?", tenant.AccountID).Find(&jobs).Error; err != nil {
		t.Fatal(err)
	}
	retried := 0
	for _, j := range jobs {
		settled := countRows(t, env, &models.LedgerEntry{}, "job_id = ? AND kind IN ?", j.ID,
			[]string{models.LedgerConsume, models.LedgerRelease})
		outputs := countRows(t, env, &models.Asset{}, "job_id = ? AND kind = ?", j.ID, models.AssetKindOutput)
		wantOutputs := int64(0)
		if j.Status == status.JobCompleted {
			wantOutputs = 1
		}
		if settled != 1 || outputs != wantOutputs {
			t.Fatalf("job %s (%s): settled %d times, %d outputs", j.ID, j.Status, settled, outputs)
		}
		if j.Status != status.JobCompleted {
			t.Fatalf("job %s ended %s; every sim/slow job completes", j.ID, j.Status)
		}
		if j.AttemptCount > 1 {
			retried++
		}
	}
	if retried == 0 {
		t.Fatal("no job needed a second attempt, though the killed worker was generating")
	}
	t.Logf("%d jobs of %d orders ended; %d were retried after the worker's kill", len(jobs),
		countRows(t, env, &models.Order{}, "account_id = ?", tenant.AccountID), retried)
	// Nothing left reserved: the account's balance and reservations are its ledger's sums.
	var acc models.Account
	if err := env.DB.Take(&acc, "id = ?", tenant.AccountID).Error; err != nil {
		t.Fatal(err)
	}
	if acc.CreditsReserved != 0 {
		t.Fatalf("%d credits still reserved", acc.CreditsReserved)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	noLocalFiles(t, env)
}
