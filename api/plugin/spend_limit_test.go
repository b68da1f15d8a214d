package plugin_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

// spendLimit reads GET /spend-limit with key.
func (e *env) spendLimit(key string) map[string]any {
	e.t.Helper()
	rec := e.do(http.MethodGet, p("/spend-limit"), key, nil)
	require.Equal(e.t, http.StatusOK, rec.Code, rec.Body.String())
	return decode(e.t, rec)
}

// resetsAt is the start of the next UTC month, as the API writes it (the engine's clock is the
// real one).
func (e *env) resetsAt() string {
	return models.SpendResetsAt(time.Now()).Format(time.RFC3339)
}

// Without a limit GET answers 200 with monthly_credits null and the month's use; PUT sets it,
// GET reads it back, DELETE removes it (204, also when there is none) and the use stays.
func TestSpendLimitSetGetClear(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	assert.Equal(t, map[string]any{"monthly_credits": nil, "alert_at_percent": float64(80), "used": float64(0), "resets_at": e.resetsAt()},
		e.spendLimit(e.key))

	rec := e.do(http.MethodPut, p("/spend-limit"), e.key, map[string]any{"monthly_credits": 10, "alert_at_percent": 50})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	want := map[string]any{"monthly_credits": float64(10), "alert_at_percent": float64(50), "used": float64(0), "resets_at": e.resetsAt()}
	assert.Equal(t, want, decode(t, rec))
	assert.Equal(t, want, e.spendLimit(e.key))

	// A session of 2 credits counts in used.
	e.approved("p1")
	require.Equal(t, http.StatusCreated, e.do(http.MethodPost, p("/jobs"), e.key, session(subject("p1"))).Code)
	want["used"] = float64(2)
	assert.Equal(t, want, e.spendLimit(e.key))

	// alert_at_percent may be omitted: 80.
	rec = e.do(http.MethodPut, p("/spend-limit"), e.key, map[string]any{"monthly_credits": 7})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, map[string]any{"monthly_credits": float64(7), "alert_at_percent": float64(80), "used": float64(2), "resets_at": e.resetsAt()},
		decode(t, rec))

	for range 2 {
		rec = e.do(http.MethodDelete, p("/spend-limit"), e.key, nil)
		require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
		assert.Empty(t, rec.Body.String())
	}
	assert.Equal(t, map[string]any{"monthly_credits": nil, "alert_at_percent": float64(80), "used": float64(2), "resets_at": e.resetsAt()},
		e.spendLimit(e.key))
}

// PUT takes exactly {"monthly_credits": 1..1e9, "alert_at_percent": 1..100}: anything else is 400
// invalid_input naming the field, and the limit is unchanged.
func TestSpendLimitValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Equal(t, http.StatusOK, e.do(http.MethodPut, p("/spend-limit"), e.key, map[string]any{"monthly_credits": 100}).Code)
	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"empty object", map[string]any{}, "monthly_credits"},
		{"only alert", map[string]any{"alert_at_percent": 50}, "monthly_credits"},
		{"null limit", map[string]any{"monthly_credits": nil}, "monthly_credits"},
		{"zero", map[string]any{"monthly_credits": 0}, "monthly_credits"},
		{"negative", map[string]any{"monthly_credits": -5}, "monthly_credits"},
		{"too large", map[string]any{"monthly_credits": engine.MaxSpendLimit + 1}, "monthly_credits"},
		{"beyond int64", `{"monthly_credits": 99999999999999999999}`, "monthly_credits"},
		{"fraction", `{"monthly_credits": 1.5}`, "monthly_credits"},
		{"string", map[string]any{"monthly_credits": "10"}, "monthly_credits"},
		{"alert zero", map[string]any{"monthly_credits": 10, "alert_at_percent": 0}, "alert_at_percent"},
		{"alert 101", map[string]any{"monthly_credits": 10, "alert_at_percent": 101}, "alert_at_percent"},
		{"alert string", map[string]any{"monthly_credits": 10, "alert_at_percent": "50"}, "alert_at_percent"},
		{"unknown field", map[string]any{"monthly_credits": 10, "monthlyCredits": 10}, "monthlyCredits"},
		{"repeated field", `{"monthly_credits": 10, "monthly_credits": 20}`, "monthly_credits"},
		{"array", `[{"monthly_credits": 10}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := e.requireError(e.do(http.MethodPut, p("/spend-limit"), e.key, tc.body), http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Contains(t, msg, tc.field)
		})
	}
	assert.Equal(t, float64(100), e.spendLimit(e.key)["monthly_credits"])
}

// The routes need plugin.installations.manage: a key without it is 403 and changes nothing.
func TestSpendLimitNeedsInstallationsManage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.issueKey("plugin.jobs:write", "plugin.jobs:read", "plugin.catalog:read")
	e.requireError(e.do(http.MethodGet, p("/spend-limit"), key, nil), http.StatusForbidden, plugin.CodeForbidden)
	e.requireError(e.do(http.MethodPut, p("/spend-limit"), key, map[string]any{"monthly_credits": 1}), http.StatusForbidden, plugin.CodeForbidden)
	e.requireError(e.do(http.MethodDelete, p("/spend-limit"), key, nil), http.StatusForbidden, plugin.CodeForbidden)
	assert.Nil(t, e.spendLimit(e.key)["monthly_credits"])
}

// A session past the installation's limit is 402 spend_limit_exceeded with the limit, the month's
// use, its reset and scope "installation", and creates and charges nothing; another installation
// of the account and another tenant are unaffected, and the limit raised lets it through.
func TestSessionPastTheSpendLimitIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	e.approved("p1")
	e.approved("p2")
	require.Equal(t, http.StatusOK, e.do(http.MethodPut, p("/spend-limit"), e.key, map[string]any{"monthly_credits": 3}).Code)
	require.Equal(t, http.StatusCreated, e.do(http.MethodPost, p("/jobs"), e.key, session(subject("p1"))).Code) // 2 of 3
	available, reserved := e.credits()

	for _, headers := range [][]string{nil, {keyHeader, "over-1"}} {
		rec := e.do(http.MethodPost, p("/jobs"), e.key, session(subject("p2")), headers...) // 2 more: 4 > 3
		_, details := e.requireErrorDetails(rec, http.StatusPaymentRequired, plugin.CodeSpendLimitExceeded)
		assert.Equal(t, map[string]any{"limit": float64(3), "used": float64(2), "resets_at": e.resetsAt(), "scope": "installation"}, details)
	}
	e.noOrdersOf(1)
	assert.Equal(t, int64(2), e.count(&models.Job{}, "1 = 1"))
	assert.Zero(t, e.count(&models.IdempotencyKey{}, "1 = 1"))
	a2, r2 := e.credits()
	assert.Equal(t, [2]int64{available, reserved}, [2]int64{a2, r2}, "nothing charged")
	assert.Equal(t, float64(2), e.spendLimit(e.key)["used"])

	// A sibling installation of the same account has no limit of its own.
	sibling, siblingKey := e.addInstallation(e.account.ID, 0)
	pr := e.product(sibling, "s1")
	e.packshot(sibling, pr.ID, e.readyAsset(sibling).ID, models.VotingAccepted)
	require.Equal(t, http.StatusCreated, e.do(http.MethodPost, p("/jobs"), siblingKey, session(subject("s1"))).Code)
	assert.Equal(t, map[string]any{"monthly_credits": nil, "alert_at_percent": float64(80), "used": float64(2), "resets_at": e.resetsAt()},
		e.spendLimit(siblingKey))
	// Another tenant sees its own, untouched.
	_, otherKey := e.otherInstallation()
	assert.Equal(t, map[string]any{"monthly_credits": nil, "alert_at_percent": float64(80), "used": float64(0), "resets_at": e.resetsAt()},
		e.spendLimit(otherKey))

	// Raised, the session goes through.
	require.Equal(t, http.StatusOK, e.do(http.MethodPut, p("/spend-limit"), e.key, map[string]any{"monthly_credits": 4}).Code)
	require.Equal(t, http.StatusCreated, e.do(http.MethodPost, p("/jobs"), e.key, session(subject("p2"))).Code)
	assert.Equal(t, float64(4), e.spendLimit(e.key)["used"])
}

// The account's limit (set through the external API) caps the plugin's sessions too, refused with
// scope "account".
func TestSessionPastTheAccountsSpendLimitIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	e.approved("p1")
	_, err := e.handler.Engine.Accounts.SetSpendLimit(t.Context(), engine.SpendScope{AccountID: e.account.ID}, 1, nil)
	require.NoError(t, err)
	_, details := e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, session(subject("p1"))),
		http.StatusPaymentRequired, plugin.CodeSpendLimitExceeded)
	assert.Equal(t, map[string]any{"limit": float64(1), "used": float64(0), "resets_at": e.resetsAt(), "scope": "account"}, details)
	e.noOrdersOf(0)
}

// PUT and DELETE honour Idempotency-Key: a repeat replays the first answer, the key with another
// body is 409 idempotency_conflict.
func TestSpendLimitIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := map[string]any{"monthly_credits": 10}
	first := e.do(http.MethodPut, p("/spend-limit"), e.key, body, keyHeader, "sl-1")
	require.Equal(t, http.StatusOK, first.Code, first.Body.String())
	again := e.do(http.MethodPut, p("/spend-limit"), e.key, body, keyHeader, "sl-1")
	require.Equal(t, http.StatusOK, again.Code, again.Body.String())
	assert.Equal(t, "true", again.Header().Get("Idempotent-Replayed"))
	assert.Equal(t, first.Body.String(), again.Body.String())
	e.requireError(e.do(http.MethodPut, p("/spend-limit"), e.key, map[string]any{"monthly_credits": 11}, keyHeader, "sl-1"),
		http.StatusConflict, plugin.CodeIdempotencyConflict)
	assert.Equal(t, float64(10), e.spendLimit(e.key)["monthly_credits"])

	del := e.do(http.MethodDelete, p("/spend-limit"), e.key, nil, keyHeader, "sl-2")
	require.Equal(t, http.StatusNoContent, del.Code, del.Body.String())
	// A limit set in between is not removed by the replay.
	require.Equal(t, http.StatusOK, e.do(http.MethodPut, p("/spend-limit"), e.key, map[string]any{"monthly_credits": 12}).Code)
	del = e.do(http.MethodDelete, p("/spend-limit"), e.key, nil, keyHeader, "sl-2")
	require.Equal(t, http.StatusNoContent, del.Code, del.Body.String())
	assert.Equal(t, "true", del.Header().Get("Idempotent-Replayed"))
	assert.Equal(t, float64(12), e.spendLimit(e.key)["monthly_credits"])
}

// A test key's spend limit is its test twin's: setting it leaves the live installation's alone,
// and the other way round.
func TestSpendLimitOfATestKeyIsTheTestTwins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	testKey := e.issueTestKey(models.PluginScopes...)
	require.Equal(t, http.StatusOK, e.do(http.MethodPut, p("/spend-limit"), testKey, map[string]any{"monthly_credits": 5}).Code)
	require.Equal(t, http.StatusOK, e.do(http.MethodPut, p("/spend-limit"), e.key, map[string]any{"monthly_credits": 9}).Code)
	assert.Equal(t, float64(5), e.spendLimit(testKey)["monthly_credits"])
	assert.Equal(t, float64(9), e.spendLimit(e.key)["monthly_credits"])
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/spend-limit"), testKey, nil).Code)
	assert.Nil(t, e.spendLimit(testKey)["monthly_credits"])
	assert.Equal(t, float64(9), e.spendLimit(e.key)["monthly_credits"])
}
