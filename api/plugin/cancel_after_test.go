package plugin_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

const cancelAfter = engine.HeaderCancelAfter

// mugSession is a session of n images of the approved product "mug".
func mugSession(n int) map[string]any {
	return map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects":       []any{map[string]any{"product_ref": "mug", "images_count": n, "ai_model": "local/studio-v1"}},
	}
}

// jobView is GET /jobs/{id} of the main installation's job.
func (e *env) jobView(id string) plugin.JobResponse {
	e.t.Helper()
	rec := e.do(http.MethodGet, p("/jobs/"+id), e.key, nil)
	require.Equal(e.t, http.StatusOK, rec.Code, rec.Body.String())
	var j plugin.JobResponse
	require.NoError(e.t, json.Unmarshal(rec.Body.Bytes(), &j))
	return j
}

// POST /jobs and POST /orders/{id}/clone take Cancel-After from 10 s to 24 h inclusive, as a Go
// duration or a number of seconds: each job carries the deadline (cancel_after_at) and no reason
// yet. Anything else, and the header sent twice, is 400 invalid_input naming the header, and
// nothing is created. A clone's deadline is its own, not its source's.
func TestCancelAfterOnSessionsAndClones(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withEngine(func(c *engine.Config) { c.Temporal = fuzzTemporal{} })
	e.approved("mug")

	for _, bad := range []string{"9s", "24h1s", "abc", "-5", "86401", "", "10s,20s"} {
		rec := e.do(http.MethodPost, p("/jobs"), e.key, mugSession(1), cancelAfter, bad)
		msg := e.requireError(rec, http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "Cancel-After must be a duration from 10s to 24h", "Cancel-After: %q", bad)
	}
	twice := func(path string, extra ...string) *httptest.ResponseRecorder {
		body, err := json.Marshal(mugSession(1))
		require.NoError(t, err)
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", e.key)
		req.Header.Add(cancelAfter, "10s")
		req.Header.Add(cancelAfter, "10s")
		for i := 0; i+1 < len(extra); i += 2 {
			req.Header.Set(extra[i], extra[i+1])
		}
		return contract.ServeAndCheck(t, e.router, req)
	}
	msg := e.requireError(twice(p("/jobs")), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Equal(t, "Cancel-After is sent 2 times; send it once.", msg)
	assert.Zero(t, e.count(&models.Order{}, "installation_id = ?", e.inst.ID), "a refused request created an order")

	for value, d := range map[string]time.Duration{"10s": 10 * time.Second, "24h": 24 * time.Hour, "600": 10 * time.Minute, "2h30m": 150 * time.Minute} {
		before := time.Now()
		rec := e.do(http.MethodPost, p("/jobs"), e.key, mugSession(2), cancelAfter, value)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		var s plugin.SessionResponse
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
		for _, id := range s.Subjects[0].JobIDs {
			j := e.jobView(id)
			require.NotNil(t, j.CancelAfterAt, "Cancel-After: %s", value)
			assert.WithinDuration(t, before.Add(d), *j.CancelAfterAt, 2*time.Second, "Cancel-After: %s", value)
			assert.Nil(t, j.CancelReason)
		}
	}
	rec := e.do(http.MethodPost, p("/jobs"), e.key, mugSession(1))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var plain plugin.SessionResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &plain))
	j := e.jobView(plain.Subjects[0].JobIDs[0])
	assert.Nil(t, j.CancelAfterAt)
	assert.Nil(t, j.CancelReason)
	raw := decode(t, e.do(http.MethodGet, p("/jobs/"+j.ID), e.key, nil))
	assert.Contains(t, raw, "cancel_reason", "the view leaves cancel_reason out instead of null")
	assert.Contains(t, raw, "cancel_after_at")

	// Clones: refused alike, and their deadline is the clone request's.
	clone := p("/orders/" + plain.OrderID + "/clone")
	msg = e.requireError(e.do(http.MethodPost, clone, e.key, nil, keyHeader, "clone-bad", cancelAfter, "9s"), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "Cancel-After")
	e.requireError(twice(clone, keyHeader, "clone-twice"), http.StatusBadRequest, plugin.CodeInvalidInput)
	before := time.Now()
	rec = e.do(http.MethodPost, clone, e.key, nil, keyHeader, "clone-1", cancelAfter, "90s")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var cloned plugin.SessionResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &cloned))
	j = e.jobView(cloned.Subjects[0].JobIDs[0])
	require.NotNil(t, j.CancelAfterAt)
	assert.WithinDuration(t, before.Add(90*time.Second), *j.CancelAfterAt, 2*time.Second)
	rec = e.do(http.MethodPost, p("/orders/"+cloned.OrderID+"/clone"), e.key, nil, keyHeader, "clone-2")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &cloned))
	assert.Nil(t, e.jobView(cloned.Subjects[0].JobIDs[0]).CancelAfterAt, "a clone took its source's deadline")
}

// A client's cancel answers, and shows from then on, cancel_reason "requested"; a job the
// deadline cancelled shows "deadline".
func TestCancelReasonInTheJobView(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withEngine(func(c *engine.Config) { c.Temporal = fuzzTemporal{} })
	e.approved("mug")
	rec := e.do(http.MethodPost, p("/jobs"), e.key, mugSession(2), cancelAfter, "1h")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var s plugin.SessionResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
	ids := s.Subjects[0].JobIDs

	rec = e.do(http.MethodDelete, p("/jobs/"+ids[0]), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var cancelled plugin.JobResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &cancelled))
	require.Equal(t, status.JobCancelled, cancelled.Status)
	require.NotNil(t, cancelled.CancelReason)
	assert.Equal(t, status.CancelRequested, *cancelled.CancelReason)
	assert.Equal(t, status.CancelRequested, *e.jobView(ids[0]).CancelReason)

	require.NoError(t, e.db.Model(&models.Job{}).Where("id = ?", ids[1]).Update("start_deadline", time.Now().UTC().Add(-time.Second)).Error)
	n, _, err := e.handler.Engine.Jobs.CancelPastDeadline(t.Context(), 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	j := e.jobView(ids[1])
	assert.Equal(t, status.JobCancelled, j.Status)
	require.NotNil(t, j.CancelReason)
	assert.Equal(t, status.CancelDeadline, *j.CancelReason)
}
