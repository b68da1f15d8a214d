package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

func batch(sessions ...any) map[string]any { return map[string]any{"batches": sessions} }

// sessionOf builds a session of n subjects of count images each.
func sessionOf(prefix string, n, count int) map[string]any {
	subjects := make([]map[string]any, n)
	for i := range subjects {
		subjects[i] = map[string]any{"product_ref": prefix + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26)),
			"images_count": count, "ai_model": "local/studio-v1"}
	}
	return session(subjects...)
}

func TestBatchEnvelopeIsValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tooMany := make([]any, plugin.MaxSessionsPerBatch+1)
	for i := range tooMany {
		tooMany[i] = session(subject("p1"))
	}
	// 51 sessions of 5 × 20 images: 5,100 images (each session on its own would be valid).
	overImages := make([]any, 51)
	for i := range overImages {
		overImages[i] = sessionOf("s", 5, 20)
	}
	cases := []struct {
		name string
		body any
		want []string
	}{
		{"retired jobs body", map[string]any{"jobs": []any{map[string]any{"provider": "x", "model": "y"}}}, []string{"rename jobs to batches"}},
		{"retired jobs body, empty", map[string]any{"jobs": []any{}}, []string{"rename jobs to batches"}},
		{"no batches", map[string]any{}, []string{"batches"}},
		{"unknown top-level field", map[string]any{"batches": []any{session(subject("p1"))}, "dry_run": true},
			[]string{"dry_run is not a field of this request", "takes only batches"}},
		{"batches in another case", map[string]any{"Batches": []any{session(subject("p1"))}}, []string{"Batches is not a field", "did you mean batches?"}},
		{"batches twice", `{"batches":[],"batches":[{}]}`, []string{"batches is given more than once"}},
		{"retired jobs next to batches", map[string]any{"batches": []any{session(subject("p1"))}, "jobs": []any{}}, []string{"rename jobs to batches"}},
		{"empty body", "", []string{"empty"}},
		{"not JSON", `{"batches":`, []string{"JSON"}},
		{"array body", `[]`, []string{"batches"}},
		{"batches not an array", map[string]any{"batches": map[string]any{}}, []string{"batches", "array"}},
		{"batches null", map[string]any{"batches": nil}, []string{"batches must not be null"}},
		{"no sessions", map[string]any{"batches": []any{}}, []string{"batches", "at least 1"}},
		{"101 sessions", map[string]any{"batches": tooMany}, []string{"at most 100"}},
		{"5,001+ images", map[string]any{"batches": overImages}, []string{"5100", "5000"}},
		{"one huge images_count", batch(map[string]any{"session_config": map[string]any{}, "subjects": []any{
			map[string]any{"product_ref": "p", "images_count": 1e9, "ai_model": "local/studio-v1"}}}), []string{"5000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := e.requireError(e.do(http.MethodPost, p("/jobs/batch"), e.key, c.body), http.StatusBadRequest, plugin.CodeInvalidInput)
			for _, w := range c.want {
				assert.Contains(t, msg, w)
			}
		})
	}
	e.noOrders()
}

// Exactly 100 sessions and 5,000 images pass the envelope: each session is then judged alone.
func TestBatchLimitsAreInclusive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sessions := make([]any, 0, plugin.MaxSessionsPerBatch)
	for range 50 {
		sessions = append(sessions, sessionOf("s", 5, 20)) // 5,000 images
	}
	for len(sessions) < plugin.MaxSessionsPerBatch {
		sessions = append(sessions, map[string]any{"subjects": []any{}}) // invalid, no images
	}
	rec := e.do(http.MethodPost, p("/jobs/batch"), e.key, map[string]any{"batches": sessions})
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	results := decode(t, rec)["results"].([]any)
	require.Len(t, results, plugin.MaxSessionsPerBatch)
	for i, r := range results {
		res := r.(map[string]any)
		assert.Equal(t, float64(i), res["index"])
		want := float64(http.StatusUnprocessableEntity) // no product has a packshot
		if i >= 50 {
			want = http.StatusBadRequest
		}
		assert.Equal(t, want, res["status"], "result %d", i)
	}
	e.noOrders()
}

// The 5,000-image budget counts images_count as the sessions spell it: a session whose subject says
// Images_Count is refused on its own (an unknown field), so its images do not count against the
// batch.
func TestBatchImagesCountOnlyTheExactName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sessions := make([]any, 0, 51)
	for range 50 {
		sessions = append(sessions, sessionOf("s", 5, 20)) // 5,000 images
	}
	sessions = append(sessions, map[string]any{"session_config": map[string]any{}, "subjects": []any{
		map[string]any{"product_ref": "p", "Images_Count": 20, "ai_model": "local/studio-v1"}}})
	rec := e.do(http.MethodPost, p("/jobs/batch"), e.key, map[string]any{"batches": sessions})
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	results := decode(t, rec)["results"].([]any)
	require.Len(t, results, 51)
	last := results[50].(map[string]any)
	assert.Equal(t, float64(http.StatusBadRequest), last["status"])
	assert.Contains(t, fmt.Sprint(last), "Images_Count")
	e.noOrders()
}

// Every session of a batch stands alone: the results come in input order, each a session (201) or
// an error object, and only the sessions that succeed create orders and reserve credits.
func TestBatchSessionsAreIndependent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCredits(5)).committing()
	e.approved("p1")
	e.approved("p2")
	e.approved("p3")
	rec := e.do(http.MethodPost, p("/jobs/batch"), e.key, batch(
		session(subject("p1")),                  // 0: 201, 2 credits
		session(subject("p1"), subject("nope")), // 1: 422, nope has no packshot
		map[string]any{"subjects": []any{}},     // 2: 400, no session_config
		session(subject("p2")),                  // 3: 201, 2 credits
		"not a session",                         // 4: 400
		session(subject("p3")),                  // 5: 402, 1 credit left
		map[string]any{"provider": "local"},     // 6: 400, the retired single-job body
		session(map[string]any{"product_ref": "p3", "images_count": 1, "ai_model": "local/studio-v1"}), // 7: 201, the last credit
	), keyHeader, "ignored")
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	top := decode(t, rec)
	assert.Equal(t, []string{"results"}, keysOf(top))
	results := top["results"].([]any)
	require.Len(t, results, 8)
	wantStatus := []int{201, 422, 400, 201, 400, 402, 400, 201}
	wantCode := map[int]string{1: plugin.CodePackshotNotApproved, 2: plugin.CodeInvalidInput, 4: plugin.CodeInvalidInput,
		5: plugin.CodeInsufficientCredits, 6: plugin.CodeInvalidInput}
	var orderIDs []string
	for i, r := range results {
		res := r.(map[string]any)
		assert.Equal(t, float64(i), res["index"], "index of result %d", i)
		assert.Equal(t, float64(wantStatus[i]), res["status"], "status of result %d: %v", i, res)
		if wantStatus[i] == http.StatusCreated {
			assert.Equal(t, []string{"index", "session", "status"}, keysOf(res))
			s := res["session"].(map[string]any)
			orderIDs = append(orderIDs, s["order_id"].(string))
			assert.Equal(t, status.OrderInProgress, s["status"])
			continue
		}
		assert.Equal(t, []string{"error", "index", "status"}, keysOf(res))
		errObj := res["error"].(map[string]any)
		assert.Equal(t, wantCode[i], errObj["code"], "code of result %d", i)
		assert.Equal(t, false, errObj["retryable"])
		assert.Equal(t, docsURL+"/plugin-api/errors/"+wantCode[i], errObj["doc_url"])
		assert.NotEmpty(t, errObj["message_i18n"].(map[string]any)["en"])
	}
	assert.Contains(t, results[6].(map[string]any)["error"].(map[string]any)["message_i18n"].(map[string]any)["en"], "subjects")
	assert.Equal(t, []any{"nope"}, results[1].(map[string]any)["error"].(map[string]any)["details"].(map[string]any)["product_refs"])

	// Three orders, five credits reserved, nothing for the failed sessions; the header was ignored.
	require.Len(t, orderIDs, 3)
	for _, id := range orderIDs {
		assert.Equal(t, int64(1), e.count(&models.Order{}, "id = ?", id))
	}
	assert.Equal(t, int64(3), e.count(&models.Order{}, "1 = 1"))
	assert.Equal(t, int64(5), e.count(&models.Job{}, "1 = 1"))
	avail, reserved := e.credits()
	assert.Equal(t, int64(0), avail)
	assert.Equal(t, int64(5), reserved)
	assert.Zero(t, e.count(&models.IdempotencyKey{}, "1 = 1"), "Idempotency-Key is not used on batches")
}

func TestBatchAndCloneNeedJobsCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o, _, _ := e.storeJob(e.inst)
	key := e.issueKey("plugin.jobs:read", "plugin.catalog:write")
	e.requireError(e.do(http.MethodPost, p("/jobs/batch"), key, batch(session(subject("p1")))), http.StatusForbidden, plugin.CodeForbidden)
	e.requireError(e.do(http.MethodPost, p("/orders/"+o.ID+"/clone"), key, nil, keyHeader, "k"), http.StatusForbidden, plugin.CodeForbidden)
	// plugin.jobs:write grants it.
	key = e.issueKey("plugin.jobs:write")
	rec := e.do(http.MethodPost, p("/jobs/batch"), key, batch(session(subject("p1"))))
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	e.requireError(e.do(http.MethodPost, p("/jobs/batch"), "", batch(session(subject("p1")))), http.StatusUnauthorized, plugin.CodeUnauthorized)
}

// hangingTemporal is a Temporal client whose workflow starts hang until their context ends.
type hangingTemporal struct {
	unreachableTemporal
	calls *atomic.Int32
}

func (h hangingTemporal) ExecuteWorkflow(ctx context.Context, _ client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	h.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// A batch commits its sessions first and then starts their workflows together under one deadline:
// a hanging Temporal delays the answer once, not once per session, and the orders stay committed
// for the sweeper to start.
func TestBatchStartsItsWorkflowsTogether(t *testing.T) {
	// Not parallel: plugin.SetBatchStartTimeout changes a package variable.
	e := newEnv(t)
	calls := &atomic.Int32{}
	e.withEngine(func(c *engine.Config) { c.Temporal = hangingTemporal{calls: calls} })
	defer plugin.SetBatchStartTimeout(400 * time.Millisecond)()
	sessions := make([]any, 6)
	for i := range sessions {
		ref := fmt.Sprintf("p%d", i)
		e.approved(ref)
		sessions[i] = session(map[string]any{"product_ref": ref, "images_count": 1, "ai_model": "local/studio-v1"})
	}
	began := time.Now()
	rec := e.do(http.MethodPost, p("/jobs/batch"), e.key, batch(sessions...))
	elapsed := time.Since(began)
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	for i, r := range decode(t, rec)["results"].([]any) {
		assert.Equal(t, float64(http.StatusCreated), r.(map[string]any)["status"], "result %d", i)
	}
	assert.Less(t, elapsed, 2*time.Second, "the starts ran together under one deadline")
	assert.GreaterOrEqual(t, elapsed, 400*time.Millisecond)
	assert.Equal(t, int32(6), calls.Load(), "every committed order's start was tried")
	assert.Equal(t, int64(6), e.count(&models.Order{}, "workflow_started_at IS NULL"), "left to the sweeper")
}

func TestBatchEntriesAreStrict(t *testing.T) {
	t.Parallel()
	// Each session of a batch is decoded as strictly as POST /jobs: an unknown field, a retired
	// field next to the session shape or a key in another case is that entry's 400, naming it.
	e := newEnv(t)
	unknown := session(subject("p1"))
	unknown["priority"] = 1
	retired := session(subject("p1"))
	retired["unit_cost"] = 1
	otherCase := map[string]any{"session_config": map[string]any{}, "subjects": []any{
		map[string]any{"product_ref": "p1", "Images_count": 1, "ai_model": "local/studio-v1"}}}
	rec := e.do(http.MethodPost, p("/jobs/batch"), e.key, batch(unknown, retired, otherCase))
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	want := [][]string{
		{"batches[0]: priority is not a field of this request"},
		{"batches[1]: unit_cost:", "retired"},
		{"batches[2]: subjects[0].Images_count is not a field", "did you mean images_count?"},
	}
	results := decode(t, rec)["results"].([]any)
	require.Len(t, results, len(want))
	for i, r := range results {
		res := r.(map[string]any)
		assert.Equal(t, float64(http.StatusBadRequest), res["status"], "result %d: %v", i, res)
		errBody := res["error"].(map[string]any)
		assert.Equal(t, plugin.CodeInvalidInput, errBody["code"])
		msg := errBody["message_i18n"].(map[string]any)["en"].(string)
		for _, w := range want[i] {
			assert.Contains(t, msg, w, "result %d", i)
		}
	}
	e.noOrders()
}

// batchSessions decodes a batch's 207: the session answer of each created session, nil for a
// refused one.
func batchSessions(t *testing.T, rec *httptest.ResponseRecorder) []*plugin.SessionResponse {
	t.Helper()
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	var resp plugin.BatchResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
	out := make([]*plugin.SessionResponse, len(resp.Results))
	for i, r := range resp.Results {
		out[i] = r.Session
	}
	return out
}

// POST /jobs/batch takes Cancel-After as POST /jobs does: an invalid value is 400 naming the
// header and creates nothing; a valid one is the deadline of every job of every created session.
func TestBatchTakesCancelAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	e.approved("mug")
	body := batch(mugSession(2), session(map[string]any{"product_ref": "nope", "images_count": 1, "ai_model": "local/studio-v1"}), mugSession(1))
	for _, bad := range []string{"9s", "abc", "24h1s"} {
		msg := e.requireError(e.do(http.MethodPost, p("/jobs/batch"), e.key, body, cancelAfter, bad), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "Cancel-After", bad)
	}
	assert.Zero(t, e.count(&models.Order{}, "1 = 1"), "a refused Cancel-After created an order")

	before := time.Now()
	sessions := batchSessions(t, e.do(http.MethodPost, p("/jobs/batch"), e.key, body, cancelAfter, "90s"))
	require.Len(t, sessions, 3)
	require.Nil(t, sessions[1], "the unknown product's session is refused")
	jobs := 0
	for _, s := range []*plugin.SessionResponse{sessions[0], sessions[2]} {
		require.NotNil(t, s)
		for _, id := range s.Subjects[0].JobIDs {
			j := e.jobView(id)
			require.NotNil(t, j.CancelAfterAt, "job %s of a batch with Cancel-After has no deadline", id)
			assert.WithinDuration(t, before.Add(90*time.Second), *j.CancelAfterAt, 2*time.Second)
			jobs++
		}
	}
	assert.Equal(t, 3, jobs)

	// Without the header a batch's jobs have no deadline.
	sessions = batchSessions(t, e.do(http.MethodPost, p("/jobs/batch"), e.key, batch(mugSession(1))))
	assert.Nil(t, e.jobView(sessions[0].Subjects[0].JobIDs[0]).CancelAfterAt)
}

// POST /jobs/batch with Prefer: wait is held until the order of every session it created has
// ended, not only the first, and answers each session's status then with Preference-Applied; a
// wait that runs out answers in_progress; a batch that created nothing is answered at once.
func TestBatchPreferWaitHoldsUntilEveryOrderEnded(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	e.approved("mug")
	store := models.NewStore(e.db)
	type answer struct {
		rec  *httptest.ResponseRecorder
		took time.Duration
	}
	post := func(body any, wait string) <-chan answer {
		done := make(chan answer, 1)
		go func() {
			start := time.Now()
			rec := e.do(http.MethodPost, p("/jobs/batch"), e.key, body, prefer.HeaderPrefer, wait)
			done <- answer{rec, time.Since(start)}
		}()
		return done
	}
	ordersAndJobs := func() (orders []string, jobs map[string][]string) {
		var rows []models.Job
		require.NoError(t, e.db.Order("order_id, position").Find(&rows).Error)
		jobs = map[string][]string{}
		for _, j := range rows {
			if _, ok := jobs[j.OrderID]; !ok {
				orders = append(orders, j.OrderID)
			}
			jobs[j.OrderID] = append(jobs[j.OrderID], j.ID)
		}
		return orders, jobs
	}
	cancelOrder := func(jobIDs []string) {
		for _, id := range jobIDs {
			_, _, err := store.CancelJobNotBegun(t.Context(), id, 1, status.CancelRequested)
			require.NoError(t, err)
		}
	}

	done := post(batch(mugSession(2), mugSession(1)), "wait=30")
	var orders []string
	var jobs map[string][]string
	require.Eventually(t, func() bool {
		orders, jobs = ordersAndJobs()
		return len(orders) == 2 && e.handler.Engine.Feed.Waiting() == 1
	}, 5*time.Second, 10*time.Millisecond)
	cancelOrder(jobs[orders[0]])
	select {
	case a := <-done:
		t.Fatalf("the batch was answered when the first of its two orders ended: %s", a.rec.Body.String())
	case <-time.After(500 * time.Millisecond):
	}
	cancelOrder(jobs[orders[1]])
	a := <-done
	assert.Less(t, a.took, 10*time.Second)
	assert.Equal(t, "wait=30", a.rec.Header().Get(prefer.HeaderPreferenceApplied))
	for i, s := range batchSessions(t, a.rec) {
		require.NotNil(t, s, "session %d", i)
		assert.Equal(t, status.OrderCancelled, s.Status, "session %d", i)
	}

	// The wait runs out while the first order is in progress: each session answers its order's
	// status of then, the second's end included although the hold never waited on it.
	e.approved("cup")
	cup := session(map[string]any{"product_ref": "cup", "images_count": 1, "ai_model": "local/studio-v1"})
	done = post(batch(mugSession(1), cup), "wait=2")
	var cupJob models.Job
	require.Eventually(t, func() bool {
		return e.db.Where("product_ref = ?", "cup").Take(&cupJob).Error == nil && e.handler.Engine.Feed.Waiting() == 1
	}, 5*time.Second, 10*time.Millisecond)
	cancelOrder([]string{cupJob.ID})
	a = <-done
	sessions := batchSessions(t, a.rec)
	require.Len(t, sessions, 2)
	assert.GreaterOrEqual(t, a.took, 2*time.Second)
	assert.Equal(t, "wait=2", a.rec.Header().Get(prefer.HeaderPreferenceApplied))
	assert.Equal(t, status.OrderInProgress, sessions[0].Status)
	assert.Equal(t, cupJob.OrderID, sessions[1].OrderID)
	assert.Equal(t, status.OrderCancelled, sessions[1].Status, "the answer shows the second order's end")

	// Nothing created: nothing to wait for.
	unknown := session(map[string]any{"product_ref": "nope", "images_count": 1, "ai_model": "local/studio-v1"})
	a = <-post(batch(unknown), "wait=30")
	assert.Less(t, a.took, 5*time.Second)
	assert.Empty(t, a.rec.Header().Get(prefer.HeaderPreferenceApplied))
	assert.Nil(t, batchSessions(t, a.rec)[0])
}
