package plugin_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
)

// alerts reads GET /alerts with key.
func (e *env) alerts(key string) map[string]any {
	e.t.Helper()
	rec := e.do(http.MethodGet, p("/alerts"), key, nil)
	require.Equal(e.t, http.StatusOK, rec.Code, rec.Body.String())
	return decode(e.t, rec)
}

// GET answers the threshold (null when none); PUT sets it and null clears it; a test key's is its
// test twin's; another tenant's is its own.
func TestAlertsSetGetClear(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	assert.Equal(t, map[string]any{"low_balance_threshold": nil}, e.alerts(e.key))
	rec := e.do(http.MethodPut, p("/alerts"), e.key, map[string]any{"low_balance_threshold": 100})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, map[string]any{"low_balance_threshold": float64(100)}, decode(t, rec))
	assert.Equal(t, map[string]any{"low_balance_threshold": float64(100)}, e.alerts(e.key))

	testKey := e.issueTestKey(models.PluginScopes...)
	assert.Equal(t, map[string]any{"low_balance_threshold": nil}, e.alerts(testKey))
	_, otherKey := e.otherInstallation()
	assert.Equal(t, map[string]any{"low_balance_threshold": nil}, e.alerts(otherKey))

	rec = e.do(http.MethodPut, p("/alerts"), e.key, map[string]any{"low_balance_threshold": nil})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, map[string]any{"low_balance_threshold": nil}, e.alerts(e.key))
}

// PUT takes exactly {"low_balance_threshold": 1..1e9 or null}: anything else is 400 invalid_input
// naming the field, and the threshold is unchanged; a key without plugin.installations.manage is 403.
func TestAlertsValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Equal(t, http.StatusOK, e.do(http.MethodPut, p("/alerts"), e.key, map[string]any{"low_balance_threshold": 7}).Code)
	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"empty object", map[string]any{}, "low_balance_threshold"},
		{"zero", map[string]any{"low_balance_threshold": 0}, "low_balance_threshold"},
		{"negative", map[string]any{"low_balance_threshold": -1}, "low_balance_threshold"},
		{"too large", map[string]any{"low_balance_threshold": 1_000_000_001}, "low_balance_threshold"},
		{"fraction", `{"low_balance_threshold": 1.5}`, "low_balance_threshold"},
		{"string", map[string]any{"low_balance_threshold": "10"}, "low_balance_threshold"},
		{"unknown field", map[string]any{"low_balance_threshold": 10, "lowBalanceThreshold": 10}, "lowBalanceThreshold"},
		{"repeated field", `{"low_balance_threshold": 10, "low_balance_threshold": 20}`, "low_balance_threshold"},
		{"array", `[{"low_balance_threshold": 10}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := e.requireError(e.do(http.MethodPut, p("/alerts"), e.key, tc.body), http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Contains(t, msg, tc.field)
		})
	}
	assert.Equal(t, map[string]any{"low_balance_threshold": float64(7)}, e.alerts(e.key))

	key := e.issueKey("plugin.jobs:write", "plugin.jobs:read", "plugin.catalog:read")
	e.requireError(e.do(http.MethodGet, p("/alerts"), key, nil), http.StatusForbidden, plugin.CodeForbidden)
	e.requireError(e.do(http.MethodPut, p("/alerts"), key, map[string]any{"low_balance_threshold": 1}), http.StatusForbidden, plugin.CodeForbidden)
	assert.Equal(t, map[string]any{"low_balance_threshold": float64(7)}, e.alerts(e.key))
}

// chargeOf reads the charge headers of an answer.
func chargeOf(t *testing.T, h http.Header) (reserved, remaining int64) {
	t.Helper()
	var err error
	reserved, err = strconv.ParseInt(h.Get("X-Credits-Reserved"), 10, 64)
	require.NoError(t, err, "X-Credits-Reserved %q", h.Get("X-Credits-Reserved"))
	remaining, err = strconv.ParseInt(h.Get("X-Credits-Remaining"), 10, 64)
	require.NoError(t, err, "X-Credits-Remaining %q", h.Get("X-Credits-Remaining"))
	return reserved, remaining
}

// Every accepted session, clone and batch answers X-Credits-Reserved (what it reserved, as its
// credits_reserved) and X-Credits-Remaining (the balance right after it); a keyed replay answers
// the first request's; a refused session answers neither.
func TestAcceptedSessionsAnswerChargeHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	e.approved("p1")
	e.approved("p2")
	before, _ := e.credits()

	rec := e.do(http.MethodPost, p("/jobs"), e.key, session(subject("p1"), subject("p2")), keyHeader, "charge-1")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	reserved, remaining := chargeOf(t, rec.Header())
	body := decode(t, rec)
	assert.Equal(t, body["credits_reserved"], float64(reserved))
	available, _ := e.credits()
	assert.Equal(t, before-reserved, remaining)
	assert.Equal(t, available, remaining)

	replay := e.do(http.MethodPost, p("/jobs"), e.key, session(subject("p1"), subject("p2")), keyHeader, "charge-1")
	require.Equal(t, http.StatusOK, replay.Code, replay.Body.String()) // a replay is 200
	assert.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
	r2, rem2 := chargeOf(t, replay.Header())
	assert.Equal(t, [2]int64{reserved, remaining}, [2]int64{r2, rem2})

	clone := e.do(http.MethodPost, p("/orders/"+body["order_id"].(string)+"/clone"), e.key, map[string]any{}, keyHeader, "clone-1")
	require.Equal(t, http.StatusCreated, clone.Code, clone.Body.String())
	r3, rem3 := chargeOf(t, clone.Header())
	assert.Equal(t, reserved, r3)
	assert.Equal(t, remaining-r3, rem3)

	b := e.do(http.MethodPost, p("/jobs/batch"), e.key, batch(session(subject("p1")), session(subject("nope")), session(subject("p2"))))
	require.Equal(t, http.StatusMultiStatus, b.Code, b.Body.String())
	r4, rem4 := chargeOf(t, b.Header())
	available, _ = e.credits()
	assert.Equal(t, rem3-r4, rem4)
	assert.Equal(t, available, rem4)

	require.Equal(t, http.StatusOK, e.do(http.MethodPut, p("/spend-limit"), e.key, map[string]any{"monthly_credits": 1}).Code)
	refused := e.do(http.MethodPost, p("/jobs"), e.key, session(subject("p1")))
	require.Equal(t, http.StatusPaymentRequired, refused.Code, refused.Body.String())
	assert.Empty(t, refused.Header().Get("X-Credits-Reserved"))
	assert.Empty(t, refused.Header().Get("X-Credits-Remaining"))
	none := e.do(http.MethodPost, p("/jobs/batch"), e.key, batch(session(subject("p1"))))
	require.Equal(t, http.StatusMultiStatus, none.Code, none.Body.String())
	assert.Empty(t, none.Header().Get("X-Credits-Reserved"))
}
