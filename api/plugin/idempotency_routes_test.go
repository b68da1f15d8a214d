package plugin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// keyedCall is one request of a mutating route, sent with an Idempotency-Key.
type keyedCall struct {
	method, path string
	body         any
}

// send sends the call with the key (and moves the rate limiter's clock on).
func (e *env) send(call keyedCall, key, idemKey string) *httptest.ResponseRecorder {
	e.t.Helper()
	e.clock.Advance(time.Minute)
	return e.do(call.method, p(call.path), key, call.body, keyHeader, idemKey)
}

// requireReplay asserts that replay is the first answer again: the same status, body (byte for
// byte) and the headers the route set, with Idempotent-Replayed: true.
func requireReplay(t *testing.T, first, replay *httptest.ResponseRecorder) {
	t.Helper()
	require.Equal(t, first.Code, replay.Code, replay.Body.String())
	assert.Equal(t, first.Body.String(), replay.Body.String(), "the replay is the first answer, byte for byte")
	assert.Empty(t, first.Header().Get("Idempotent-Replayed"))
	assert.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
	for _, h := range []string{"Content-Type", "Cache-Control"} {
		assert.Equal(t, first.Header().Get(h), replay.Header().Get(h), h)
	}
}

// keyedRoute is one listed route: how to set up a call, the call with another payload under the
// same key, and the effect a second run would have.
type keyedRoute struct {
	name   string
	status int
	// setup prepares the environment and returns the call, another call (a different payload or
	// path) and a count that a second run of the call would change.
	setup func(e *env) (call, other keyedCall, effect func() any)
}

// pendingJob stores an order whose workflow runs, with one pending job of the installation.
func (e *env) pendingJob(inst *models.Installation) models.Job {
	e.t.Helper()
	o, j, _ := e.storeJob(inst)
	now := time.Now().UTC()
	require.NoError(e.t, e.db.Model(&models.Order{}).Where("id = ?", o.ID).
		Updates(map[string]any{"status": status.OrderInProgress, "workflow_started_at": now}).Error)
	require.NoError(e.t, e.db.Model(&models.Job{}).Where("id = ?", j.ID).
		Updates(map[string]any{"status": status.JobPending, "completed_at": nil}).Error)
	// The job holds its credit, as an accepted order's jobs do: a cancel releases it.
	require.NoError(e.t, e.db.Model(&models.Account{}).Where("id = ?", inst.AccountID).
		Update("credits_reserved", gorm.Expr("credits_reserved + ?", j.CreditCost)).Error)
	return e.jobRow(j.ID)
}

// cancelling takes the calls a cancel makes to Temporal once it is committed; it returns how many
// signals the order workflow was sent.
func (e *env) cancelling() *atomic.Int32 {
	m := e.withTemporal()
	var sent atomic.Int32
	// The cancel is decided in the database; the order is told with a signal, counted here.
	m.On("SignalWorkflow", mock.Anything, mock.Anything, "", workflows.SignalCancelJob, mock.Anything).
		Run(func(mock.Arguments) { sent.Add(1) }).Return(nil)
	// The job.cancelled delivery's start, for an installation with a callback URL.
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(&mocks.WorkflowRun{}, nil).Maybe()
	return &sent
}

func countOf(e *env, model any, where string, args ...any) func() any {
	return func() any { return e.count(model, where, args...) }
}

var keyedRoutes = []keyedRoute{
	{name: "POST /assets/upload", status: http.StatusCreated, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		body := map[string]any{"mode": "presigned", "filename": "a.png", "content_type": "image/png", "size_bytes": 10}
		other := map[string]any{"mode": "presigned", "filename": "a.png", "content_type": "image/png", "size_bytes": 11}
		return keyedCall{http.MethodPost, "/assets/upload", body}, keyedCall{http.MethodPost, "/assets/upload", other},
			countOf(e, &models.Asset{}, "installation_id = ?", e.inst.ID)
	}},
	{name: "POST /images", status: http.StatusOK, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		asset := e.readyAsset(e.inst)
		one := map[string]any{"images": []any{imageReg("img-1", "P1", asset.ID)}}
		two := map[string]any{"images": []any{imageReg("img-2", "P1", asset.ID)}}
		// A second run would answer the image `existing`: the replay must say `created` again.
		return keyedCall{http.MethodPost, "/images", one}, keyedCall{http.MethodPost, "/images", two},
			countOf(e, &models.ProductImage{}, "1 = 1")
	}},
	{name: "POST /packshots", status: http.StatusOK, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		asset := e.readyAsset(e.inst)
		item := map[string]any{"asset_id": asset.ID, "product_ref": "P1", "product_metadata": map[string]any{"display_name": "P"}}
		other := map[string]any{"asset_id": asset.ID, "product_ref": "P2", "product_metadata": map[string]any{"display_name": "P"}}
		return keyedCall{http.MethodPost, "/packshots", map[string]any{"packshots": []any{item}}},
			keyedCall{http.MethodPost, "/packshots", map[string]any{"packshots": []any{other}}},
			countOf(e, &models.Packshot{}, "1 = 1")
	}},
	{name: "POST /jobs/{id}/accept", status: http.StatusNoContent, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		_, j, _ := e.storeJob(e.inst)
		// A second run would move voting_at on.
		return keyedCall{http.MethodPost, "/jobs/" + j.ID + "/accept", nil}, keyedCall{http.MethodPost, "/jobs/" + j.ID + "/reject", nil},
			func() any { return e.jobRow(j.ID).VotingAt.UnixNano() }
	}},
	{name: "POST /jobs/{id}/reject", status: http.StatusNoContent, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		_, j, _ := e.storeJob(e.inst)
		_, k, _ := e.storeJob(e.inst)
		return keyedCall{http.MethodPost, "/jobs/" + j.ID + "/reject", nil}, keyedCall{http.MethodPost, "/jobs/" + k.ID + "/reject", nil},
			func() any { return e.jobRow(j.ID).VotingAt.UnixNano() }
	}},
	{name: "POST /jobs/{id}/refresh-url", status: http.StatusOK, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		j, _, _ := e.storedOutputJob(e.inst)
		k, _, _ := e.storedOutputJob(e.inst)
		return keyedCall{http.MethodPost, "/jobs/" + j.ID + "/refresh-url", nil}, keyedCall{http.MethodPost, "/jobs/" + k.ID + "/refresh-url", nil},
			func() any { return e.jobRow(j.ID).UpdatedAt.UnixNano() }
	}},
	{name: "POST /installations/{id}/rotate-hmac", status: http.StatusOK, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		e.handler.Secrets = e.box
		return keyedCall{http.MethodPost, "/installations/" + e.inst.ID + "/rotate-hmac", nil},
			keyedCall{http.MethodPost, "/installations/" + models.NewID() + "/rotate-hmac", nil},
			func() any {
				inst, err := models.GetInstallation(e.db, e.inst.ID)
				require.NoError(e.t, err)
				return inst.WebhookSecretEnc
			}
	}},
	{name: "POST /webhooks/{delivery_id}/replay", status: http.StatusAccepted, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		m := e.withTemporal()
		d := e.delivery(e.inst)
		other := e.delivery(e.inst)
		var starts atomic.Int32
		m.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
			Run(func(mock.Arguments) { starts.Add(1) }).Return(&mocks.WorkflowRun{}, nil)
		return keyedCall{http.MethodPost, "/webhooks/" + d.ID + "/replay", nil}, keyedCall{http.MethodPost, "/webhooks/" + other.ID + "/replay", nil},
			func() any { return starts.Load() }
	}},
	{name: "DELETE /jobs/{id}", status: http.StatusOK, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		sent := e.cancelling()
		a, b := e.pendingJob(e.inst), e.pendingJob(e.inst)
		// A second run would answer 409 job_not_cancelable: the replay must be the 200 again.
		return keyedCall{http.MethodDelete, "/jobs/" + a.ID, nil}, keyedCall{http.MethodDelete, "/jobs/" + b.ID, nil},
			func() any { return sent.Load() }
	}},
	{name: "DELETE /products/{id_or_ref}", status: http.StatusNoContent, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		e.product(e.inst, "A")
		e.product(e.inst, "B")
		// A second run would answer 404.
		return keyedCall{http.MethodDelete, "/products/A", nil}, keyedCall{http.MethodDelete, "/products/B", nil},
			countOf(e, &models.Product{}, "deleted_at IS NULL")
	}},
	{name: "DELETE /packshots/{id_or_ref}", status: http.StatusNoContent, setup: func(e *env) (keyedCall, keyedCall, func() any) {
		pr := e.product(e.inst, "A")
		a := e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
		b := e.packshot(e.inst, pr.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
		return keyedCall{http.MethodDelete, "/packshots/" + a.ID, nil}, keyedCall{http.MethodDelete, "/packshots/" + b.ID, nil},
			countOf(e, &models.Packshot{}, "1 = 1")
	}},
}

// Every listed route: the same key twice has one effect and replays the first answer; the key
// with another payload or path is a conflict that changes nothing.
func TestIdempotencyKeyOnEveryMutatingRoute(t *testing.T) {
	t.Parallel()
	for _, r := range keyedRoutes {
		t.Run(r.name, func(t *testing.T) {
			e := newEnv(t)
			call, other, effect := r.setup(e)
			first := e.send(call, e.key, "k1")
			require.Equal(t, r.status, first.Code, first.Body.String())
			after := effect()
			time.Sleep(2 * time.Millisecond) // a second run would stamp a later time
			for range 2 {
				requireReplay(t, first, e.send(call, e.key, "k1"))
			}
			assert.Equal(t, after, effect(), "a replay does nothing")

			e.requireError(e.send(other, e.key, "k1"), http.StatusConflict, plugin.CodeIdempotencyConflict)
			assert.Equal(t, after, effect(), "a conflict does nothing")
			assert.Equal(t, int64(1), e.count(&models.IdempotencyKey{}, "1 = 1"))
			// Without the header the route runs each time, as before.
			require.NotEqual(t, http.StatusConflict, e.send(other, e.key, "k2").Code)
		})
	}
}

// The same key in two installations names two requests, each with its own effect.
func TestIdempotencyKeyOfAnotherInstallationIsIndependent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sibling, siblingKey := e.addInstallation(e.account.ID, 0)
	call := keyedCall{http.MethodPost, "/assets/upload",
		map[string]any{"mode": "presigned", "filename": "a.png", "content_type": "image/png", "size_bytes": 10}}
	mine := e.send(call, e.key, "shared")
	require.Equal(t, http.StatusCreated, mine.Code, mine.Body.String())
	theirs := e.send(call, siblingKey, "shared")
	require.Equal(t, http.StatusCreated, theirs.Code, theirs.Body.String())
	assert.Empty(t, theirs.Header().Get("Idempotent-Replayed"))
	assert.NotEqual(t, decode(t, mine)["asset_id"], decode(t, theirs)["asset_id"])
	assert.Equal(t, int64(1), e.count(&models.Asset{}, "installation_id = ?", e.inst.ID))
	assert.Equal(t, int64(1), e.count(&models.Asset{}, "installation_id = ?", sibling.ID))

	// DELETE of the same product ref in two installations.
	e.product(e.inst, "P")
	e.product(sibling, "P")
	del := keyedCall{http.MethodDelete, "/products/P", nil}
	require.Equal(t, http.StatusNoContent, e.send(del, e.key, "d").Code)
	rec := e.send(del, siblingKey, "d")
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	assert.Empty(t, rec.Header().Get("Idempotent-Replayed"))
	assert.Zero(t, e.count(&models.Product{}, "deleted_at IS NULL"))
}

// Concurrent duplicates of a route without a transaction of its own still have one effect: one
// runs, the others wait for its answer and replay it (on both databases).
func TestIdempotencyConcurrentDuplicatesHaveOneEffect(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { concurrentDuplicates(t, newEnv(t)) })
	t.Run("postgres", func(t *testing.T) { concurrentDuplicates(t, newEnv(t, onPostgres())) })
}

func concurrentDuplicates(t *testing.T, e *env) {
	e.handler.Secrets = e.box
	before, err := models.GetInstallation(e.db, e.inst.ID)
	require.NoError(t, err)
	upload := keyedCall{http.MethodPost, "/assets/upload",
		map[string]any{"mode": "presigned", "filename": "a.png", "content_type": "image/png", "size_bytes": 10}}
	rotate := keyedCall{http.MethodPost, "/installations/" + e.inst.ID + "/rotate-hmac", nil}
	const n = 6
	var wg sync.WaitGroup
	start := make(chan struct{})
	recs := make([]*httptest.ResponseRecorder, 2*n)
	for i := range 2 * n {
		call := upload
		if i%2 == 1 {
			call = rotate
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			recs[i] = e.do(call.method, p(call.path), e.key, call.body, keyHeader, call.path)
		}()
	}
	close(start)
	wg.Wait()
	for parity, status := range []int{http.StatusCreated, http.StatusOK} {
		bodies := map[string]bool{}
		fresh := 0
		for i := parity; i < 2*n; i += 2 {
			require.Equal(t, status, recs[i].Code, recs[i].Body.String())
			bodies[recs[i].Body.String()] = true
			if recs[i].Header().Get("Idempotent-Replayed") == "" {
				fresh++
			}
		}
		assert.Len(t, bodies, 1, "every duplicate gets the first answer")
		assert.Equal(t, 1, fresh, "one request ran")
	}
	assert.Equal(t, int64(1), e.count(&models.Asset{}, "installation_id = ?", e.inst.ID))
	after, err := models.GetInstallation(e.db, e.inst.ID)
	require.NoError(t, err)
	assert.Equal(t, before.WebhookSecretEnc, after.PreviousWebhookSecretEnc, "one rotation: the original secret is the previous one")
}

// Refusals are not remembered: the key is free again for the corrected request, and nothing of
// the refused request is replayed.
func TestIdempotencyRefusalsAreNotRemembered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// 400: an invalid body, or a body that is not JSON at all (no 500).
	for _, bad := range []string{`{"mode":"presigned","filename":"a.png","content_type":"image/png","size_bytes":0}`, `{"mode":`, `not json`} {
		e.requireError(e.send(keyedCall{http.MethodPost, "/assets/upload", bad}, e.key, "k"), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Zero(t, e.count(&models.IdempotencyKey{}, "1 = 1"))
	}
	good := keyedCall{http.MethodPost, "/assets/upload",
		map[string]any{"mode": "presigned", "filename": "a.png", "content_type": "image/png", "size_bytes": 10}}
	rec := e.send(good, e.key, "k")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	assert.Empty(t, rec.Header().Get("Idempotent-Replayed"))

	// 404, then the record exists and the same key deletes it.
	del := keyedCall{http.MethodDelete, "/products/LATER", nil}
	e.requireError(e.send(del, e.key, "d"), http.StatusNotFound, plugin.CodeNotFound)
	e.product(e.inst, "LATER")
	require.Equal(t, http.StatusNoContent, e.send(del, e.key, "d").Code)
	assert.Zero(t, e.count(&models.Product{}, "deleted_at IS NULL"))

	// 409 job_not_completed, then the job completes and the same key accepts it.
	_, j, _ := e.storeJob(e.inst)
	require.NoError(t, e.db.Model(&models.Job{}).Where("id = ?", j.ID).Update("status", status.JobInProgress).Error)
	accept := keyedCall{http.MethodPost, "/jobs/" + j.ID + "/accept", nil}
	e.requireError(e.send(accept, e.key, "a"), http.StatusConflict, plugin.CodeJobNotCompleted)
	require.NoError(t, e.db.Model(&models.Job{}).Where("id = ?", j.ID).Update("status", status.JobCompleted).Error)
	require.Equal(t, http.StatusNoContent, e.send(accept, e.key, "a").Code)
	assert.Equal(t, models.VotingAccepted, e.jobRow(j.ID).Voting)
}

// A route that takes no body ignores one, and so does the key's payload; the query string counts.
func TestIdempotencyPayloadOfBodylessRoutesAndQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.product(e.inst, "A")
	first := e.send(keyedCall{http.MethodDelete, "/products/A", nil}, e.key, "k")
	require.Equal(t, http.StatusNoContent, first.Code)
	for _, body := range []string{"{}", `{"x":1}`, "not json"} {
		requireReplay(t, first, e.send(keyedCall{http.MethodDelete, "/products/A", body}, e.key, "k"))
	}
	upload := map[string]any{"mode": "presigned", "filename": "a.png", "content_type": "image/png", "size_bytes": 10}
	require.Equal(t, http.StatusCreated, e.send(keyedCall{http.MethodPost, "/assets/upload", upload}, e.key, "q").Code)
	e.requireError(e.send(keyedCall{http.MethodPost, "/assets/upload?v=2", upload}, e.key, "q"), http.StatusConflict, plugin.CodeIdempotencyConflict)
	assert.Equal(t, int64(1), e.count(&models.Asset{}, "installation_id = ?", e.inst.ID))
}

// The replayed rotate-hmac answer shows the secret of the one rotation, with no-store; the
// recorded answer holds it sealed, never in clear.
func TestIdempotentRotateHMACRecordsTheSecretSealed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handler.Secrets = e.box
	call := keyedCall{http.MethodPost, "/installations/" + e.inst.ID + "/rotate-hmac", nil}
	first := e.send(call, e.key, "r")
	require.Equal(t, http.StatusOK, first.Code, first.Body.String())
	replay := e.send(call, e.key, "r")
	requireReplay(t, first, replay)
	assert.Equal(t, "no-store", replay.Header().Get("Cache-Control"))
	secret := decode(t, first)["webhook_secret"].(string)
	inst, err := models.GetInstallation(e.db, e.inst.ID)
	require.NoError(t, err)
	got, err := models.WebhookSecrets(e.box, inst, time.Now())
	require.NoError(t, err)
	assert.Equal(t, []string{secret, "whsec"}, got, "rotated once")
	row, err := models.GetIdempotencyKey(e.db, e.inst.ID, "r")
	require.NoError(t, err)
	require.NotNil(t, row.ResponseBody)
	assert.NotContains(t, *row.ResponseBody, strings.TrimPrefix(secret, "whsec_"))
}

// Every mutating route the router mounts reads the Idempotency-Key header (keyed): one over the
// longest accepted is refused. POST /jobs/batch ignores the header, and the upload PUT, reached by
// its signed URL, takes none. keyedRoutes checks what each listed route does with a key; this
// catches a mutating route mounted without one.
func TestEveryMutatingRouteReadsTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tooLong := strings.Repeat("k", plugin.MaxIdempotencyKeyLength+1)
	seen := 0
	for _, r := range e.router.Routes() {
		if r.Method == http.MethodGet || !strings.HasPrefix(r.Path, plugin.Base+"/") ||
			r.Path == p("/jobs/batch") || r.Path == p("/uploads/:id") {
			continue
		}
		seen++
		e.clock.Advance(time.Minute) // out of the rate limit's way
		target := paramSegment.ReplaceAllString(r.Path, "/"+models.NewID())
		msg := e.requireError(e.do(r.Method, target, e.key, map[string]any{}, keyHeader, tooLong), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, plugin.HeaderIdempotencyKey, "%s %s", r.Method, r.Path)
	}
	assert.GreaterOrEqual(t, seen, len(keyedRoutes), "the mutating routes")
	e.clock.Advance(time.Minute)
	rec := e.do(http.MethodPost, p("/jobs/batch"), e.key, map[string]any{"batches": []any{}}, keyHeader, tooLong)
	assert.NotContains(t, e.requireError(rec, http.StatusBadRequest, plugin.CodeInvalidInput), plugin.HeaderIdempotencyKey, "batch ignores the header")
}
