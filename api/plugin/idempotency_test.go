package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

// unreachableTemporal is a Temporal client whose workflow starts fail, as when the cluster is
// down: a session is committed and answered 201, and its start is left to the sweeper.
type unreachableTemporal struct{ client.Client }

func (unreachableTemporal) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return nil, errors.New("temporal unreachable (unit test)")
}

// SignalWorkflow fails as a start does, so that a cancel through the API (which tells the order
// after its commit) meets an unreachable Temporal instead of a nil client.
func (unreachableTemporal) SignalWorkflow(context.Context, string, string, string, any) error {
	return errors.New("temporal unreachable (unit test)")
}

// CancelWorkflow fails as a start does: an endpoint's deletion cancels the workflows of the
// deliveries it ends after its commit.
func (unreachableTemporal) CancelWorkflow(context.Context, string, string) error {
	return errors.New("temporal unreachable (unit test)")
}

// committing lets sessions of the environment commit (the harness has no Temporal client).
func (e *env) committing() *env {
	e.withEngine(func(c *engine.Config) { c.Temporal = unreachableTemporal{} })
	return e
}

// approved stores a product of the main installation with an approved packshot.
func (e *env) approved(ref string) models.Product {
	e.t.Helper()
	pr := e.product(e.inst, ref)
	e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	return pr
}

func (e *env) credits() (available, reserved int64) {
	e.t.Helper()
	acc, err := models.GetAccount(e.db, e.account.ID)
	require.NoError(e.t, err)
	return acc.CreditBalance, acc.CreditsReserved
}

const keyHeader = plugin.HeaderIdempotencyKey

func jsonBytes(v any) ([]byte, error) { return json.Marshal(v) }

func TestIdempotencyKeyHeaderIsValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := strings.Repeat("k", plugin.MaxIdempotencyKeyLength+1)
	body := session(subject("p1"))

	// POST /jobs: optional, but when sent it must have 1–200 characters.
	msg := e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, body, keyHeader, long), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "Idempotency-Key")
	assert.Contains(t, msg, "200")
	msg = e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, body, keyHeader, ""), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "Idempotency-Key")
	// Two of them.
	req := httptest.NewRequest(http.MethodPost, p("/jobs"), strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", e.key)
	req.Header.Add(keyHeader, "a")
	req.Header.Add(keyHeader, "b")
	rec := httptest.NewRecorder()
	e.router.ServeHTTP(rec, req)
	assert.Contains(t, e.requireError(rec, http.StatusBadRequest, plugin.CodeInvalidInput), "Idempotency-Key")
	// 200 characters (also multi-byte ones) pass: the session gets as far as its packshot check.
	for _, k := range []string{strings.Repeat("k", 200), strings.Repeat("é", 200), "x"} {
		e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, body, keyHeader, k), http.StatusUnprocessableEntity, plugin.CodePackshotNotApproved)
	}

	// POST /orders/{id}/clone: required, before anything else (also for an unknown order).
	o, _, _ := e.storeJob(e.inst)
	for _, id := range []string{o.ID, models.NewID()} {
		msg = e.requireError(e.do(http.MethodPost, p("/orders/"+id+"/clone"), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "Idempotency-Key")
		assert.Contains(t, msg, "required")
	}
	msg = e.requireError(e.do(http.MethodPost, p("/orders/"+o.ID+"/clone"), e.key, nil, keyHeader, long), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "Idempotency-Key")
	assert.Equal(t, int64(1), e.count(&models.Order{}, "1 = 1"), "only the stored order")
	assert.Zero(t, e.count(&models.IdempotencyKey{}, "1 = 1"), "no key was kept")
}

func TestRequestHashIsCanonical(t *testing.T) {
	t.Parallel()
	h := func(method, path, body string) string {
		t.Helper()
		s, err := plugin.RequestHash(method, path, []byte(body))
		require.NoError(t, err)
		return s
	}
	base := h("POST", "/jobs", `{"a":1,"b":{"c":[1,2],"d":"x"}}`)
	assert.Len(t, base, 64)
	assert.Equal(t, base, h("POST", "/jobs", " {\n  \"b\": {\"d\": \"x\", \"c\": [1, 2]},\n  \"a\": 1.0\n}\n"), "whitespace, key order and number form do not matter")
	assert.NotEqual(t, base, h("POST", "/jobs", `{"a":2,"b":{"c":[1,2],"d":"x"}}`), "values matter")
	assert.NotEqual(t, base, h("POST", "/jobs", `{"a":1,"b":{"c":[2,1],"d":"x"}}`), "array order matters")
	assert.NotEqual(t, base, h("POST", "/jobs/batch", `{"a":1,"b":{"c":[1,2],"d":"x"}}`), "the route matters")
	assert.NotEqual(t, base, h("PUT", "/jobs", `{"a":1,"b":{"c":[1,2],"d":"x"}}`), "the method matters")
	assert.Equal(t, h("POST", "/c", ""), h("POST", "/c", " {} "), "an empty body is {}")
	_, err := plugin.RequestHash("POST", "/jobs", []byte(`{"a":1} {}`))
	assert.Error(t, err)
}

func TestIdempotentSessionReplaysTheFirstAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	e.approved("p1")
	e.approved("p2")
	first := `{"session_config":{"style":"studio","aspect_ratio":"1:1"},"subjects":[{"product_ref":"p1","images_count":2,"ai_model":"local/studio-v1"}]}`
	// The same request, formatted differently.
	same := "{\n \"subjects\": [ {\"ai_model\": \"local/studio-v1\", \"images_count\": 2, \"product_ref\": \"p1\"} ],\n \"session_config\": {\"aspect_ratio\": \"1:1\", \"style\": \"studio\"}\n}"

	rec := e.do(http.MethodPost, p("/jobs"), e.key, first, keyHeader, "order-42")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	assert.Empty(t, rec.Header().Get("Idempotent-Replayed"))
	created := decode(t, rec)
	orderID := created["order_id"].(string)
	avail, reserved := e.credits()
	require.Equal(t, int64(498), avail)
	require.Equal(t, int64(2), reserved)

	for range 2 {
		replay := e.do(http.MethodPost, p("/jobs"), e.key, same, keyHeader, "order-42")
		require.Equal(t, http.StatusOK, replay.Code, replay.Body.String())
		assert.Equal(t, rec.Body.String(), replay.Body.String(), "the replay is the first answer, byte for byte")
		assert.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
		assert.Contains(t, replay.Header().Get("Content-Type"), "application/json")
	}
	assert.Equal(t, int64(1), e.count(&models.Order{}, "1 = 1"))
	assert.Equal(t, int64(2), e.count(&models.Job{}, "1 = 1"))
	avail, reserved = e.credits()
	assert.Equal(t, int64(498), avail, "a replay charges nothing")
	assert.Equal(t, int64(2), reserved)
	stored, err := models.GetIdempotencyKey(e.db, e.inst.ID, "order-42")
	require.NoError(t, err)
	assert.Equal(t, models.IdempotencyCompleted, stored.Status)
	assert.Equal(t, orderID, *stored.OrderID)

	// The same key with another payload, or on another route, is a conflict.
	other := session(subject("p2"))
	msg := e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, other, keyHeader, "order-42"), http.StatusConflict, plugin.CodeIdempotencyConflict)
	assert.Contains(t, msg, "different request")
	e.requireError(e.do(http.MethodPost, p("/orders/"+orderID+"/clone"), e.key, nil, keyHeader, "order-42"), http.StatusConflict, plugin.CodeIdempotencyConflict)
	// Keys are case-sensitive, and scoped per installation: another installation's same key is its own.
	rec = e.do(http.MethodPost, p("/jobs"), e.key, other, keyHeader, "ORDER-42")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	sibling, siblingKey := e.addInstallation(e.account.ID, 0)
	pr := e.product(sibling, "p1")
	e.packshot(sibling, pr.ID, e.readyAsset(sibling).ID, models.VotingAccepted)
	rec = e.do(http.MethodPost, p("/jobs"), siblingKey, first, keyHeader, "order-42")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	assert.NotEqual(t, orderID, decode(t, rec)["order_id"])
	// Without a key every call is a new session.
	for range 2 {
		require.Equal(t, http.StatusCreated, e.do(http.MethodPost, p("/jobs"), e.key, first).Code)
	}
	assert.Equal(t, int64(5), e.count(&models.Order{}, "1 = 1"))
}

// A request that fails keeps nothing under its key, so the corrected request can use it.
func TestIdempotencyKeyOfAFailedRequestIsFree(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCredits(3)).committing()
	body := session(subject("p1")) // 2 images

	// 422: p1 has no approved packshot.
	e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, body, keyHeader, "k"), http.StatusUnprocessableEntity, plugin.CodePackshotNotApproved)
	assert.Zero(t, e.count(&models.IdempotencyKey{}, "1 = 1"))
	// 400 with the same key.
	e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, session(), keyHeader, "k"), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Zero(t, e.count(&models.IdempotencyKey{}, "1 = 1"))
	// 402: four images cost more than the account's 3 credits.
	e.approved("p1")
	e.approved("p3")
	big := session(map[string]any{"product_ref": "p3", "images_count": 4, "ai_model": "local/studio-v1"})
	e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, big, keyHeader, "k"), http.StatusPaymentRequired, plugin.CodeInsufficientCredits)
	assert.Zero(t, e.count(&models.IdempotencyKey{}, "1 = 1"))
	e.noOrdersOf(0)

	// The corrected request succeeds under the same key, and is then replayed.
	rec := e.do(http.MethodPost, p("/jobs"), e.key, body, keyHeader, "k")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	again := e.do(http.MethodPost, p("/jobs"), e.key, body, keyHeader, "k")
	require.Equal(t, http.StatusOK, again.Code, again.Body.String())
	assert.Equal(t, rec.Body.String(), again.Body.String())
	e.noOrdersOf(1)
}

// noOrdersOf asserts the number of orders of the main installation.
func (e *env) noOrdersOf(n int64) {
	e.t.Helper()
	assert.Equal(e.t, n, e.count(&models.Order{}, "installation_id = ?", e.inst.ID), "orders")
}

// Ten identical requests at once create one order: one answers 201, the others wait for it and
// replay its answer with 200.
func TestIdempotencyConcurrentRequestsCreateOneOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	e.approved("p1")
	body := session(subject("p1"))
	const n = 10
	var wg sync.WaitGroup
	start := make(chan struct{})
	recs := make([]*httptest.ResponseRecorder, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			recs[i] = e.do(http.MethodPost, p("/jobs"), e.key, body, keyHeader, "same")
		}()
	}
	close(start)
	wg.Wait()
	created, replayed := 0, 0
	orderIDs := map[string]bool{}
	for _, rec := range recs {
		switch rec.Code {
		case http.StatusCreated:
			created++
		case http.StatusOK:
			replayed++
		default:
			t.Fatalf("answer %d: %s", rec.Code, rec.Body.String())
		}
		orderIDs[decode(t, rec)["order_id"].(string)] = true
	}
	assert.Equal(t, 1, created)
	assert.Equal(t, n-1, replayed)
	assert.Len(t, orderIDs, 1)
	assert.Equal(t, int64(1), e.count(&models.Order{}, "1 = 1"))
	_, reserved := e.credits()
	assert.Equal(t, int64(2), reserved)
}

// A request whose key is held by a request still running waits for it; when the first does not
// finish in time it answers 409 saying so. An abandoned claim (its request died) is taken over.
func TestIdempotencyKeyHeldByARunningRequest(t *testing.T) {
	// Not parallel: plugin.SetIdempotencyTiming changes package variables.
	e := newEnv(t).committing()
	e.approved("p1")
	body := session(subject("p1"))
	raw, _ := jsonBytes(body)
	hash, err := plugin.RequestHash(http.MethodPost, p("/jobs"), raw)
	require.NoError(t, err)

	// The first request holds the key (its claim is in progress) and never finishes.
	claim, claimed, err := models.ClaimIdempotencyKey(e.db, e.inst.ID, "held", hash, time.Minute)
	require.NoError(t, err)
	require.True(t, claimed)
	restore := plugin.SetIdempotencyTiming(300*time.Millisecond, time.Minute)
	began := time.Now()
	rec := e.do(http.MethodPost, p("/jobs"), e.key, raw, keyHeader, "held")
	msg := e.requireError(rec, http.StatusConflict, plugin.CodeIdempotencyConflict)
	assert.Contains(t, msg, "still being processed")
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "it waited for the first request")
	// Another payload under the held key is a conflict at once.
	msg = e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, session(subject("p2")), keyHeader, "held"), http.StatusConflict, plugin.CodeIdempotencyConflict)
	assert.Contains(t, msg, "different request")
	restore()

	// The first request finishes while the second waits: the second replays its answer.
	order, _, _ := e.storeJob(e.inst)
	answer := `{"order_id":"` + order.ID + `","status":"in_progress","subjects":[],"credits_reserved":0,"livemode":true}` + "\n"
	go func() {
		time.Sleep(200 * time.Millisecond)
		assert.NoError(t, models.CompleteIdempotencyKey(e.db, claim, order.ID, http.StatusCreated, []byte(answer)))
	}()
	rec = e.do(http.MethodPost, p("/jobs"), e.key, raw, keyHeader, "held")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, answer, rec.Body.String())
	assert.Equal(t, int64(1), e.count(&models.Order{}, "1 = 1"), "only the stored order")

	// A claim abandoned for longer than the lease is taken over: the session is created.
	_, claimed, err = models.ClaimIdempotencyKey(e.db, e.inst.ID, "abandoned", hash, time.Minute)
	require.NoError(t, err)
	require.True(t, claimed)
	defer plugin.SetIdempotencyTiming(300*time.Millisecond, 100*time.Millisecond)()
	time.Sleep(150 * time.Millisecond)
	rec = e.do(http.MethodPost, p("/jobs"), e.key, raw, keyHeader, "abandoned")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	assert.Equal(t, int64(2), e.count(&models.Order{}, "1 = 1"))
}

// An expired key is used afresh: a new session, not a replay.
func TestIdempotencyExpiredKeyCreatesANewSession(t *testing.T) {
	// Not parallel: plugin.SetIdempotencyTiming changes package variables.
	e := newEnv(t).committing()
	e.approved("p1")
	body := session(subject("p1"))
	first := e.do(http.MethodPost, p("/jobs"), e.key, body, keyHeader, "k")
	require.Equal(t, http.StatusCreated, first.Code, first.Body.String())
	require.NoError(t, e.db.Model(&models.IdempotencyKey{}).Where("1 = 1").
		Update("expires_at", time.Now().UTC().Add(-time.Minute)).Error)
	second := e.do(http.MethodPost, p("/jobs"), e.key, body, keyHeader, "k")
	require.Equal(t, http.StatusCreated, second.Code, second.Body.String())
	assert.NotEqual(t, decode(t, first)["order_id"], decode(t, second)["order_id"])
	assert.Equal(t, int64(1), e.count(&models.IdempotencyKey{}, "1 = 1"))
}
