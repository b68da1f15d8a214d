package external_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/models/testdb"
)

// GET and PUT /alerts (scope content.billing): the account's low_balance_threshold, set, read back
// and cleared with null; bad values are 400 and change nothing; another account's is its own; a
// key without content.billing is 403.
func TestExternalAlerts(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		_, key := e.newAccount(external.ScopeRegister, external.ScopeBilling)
		_, otherKey := e.newAccount(external.ScopeBilling)
		code, out, _ := e.send(key, http.MethodGet, "/alerts", nil)
		require.Equal(t, http.StatusOK, code, "%v", out)
		assert.Equal(t, map[string]any{"low_balance_threshold": nil}, out)
		code, out, _ = e.send(key, http.MethodPut, "/alerts", map[string]any{"low_balance_threshold": 40})
		require.Equal(t, http.StatusOK, code, "%v", out)
		assert.Equal(t, map[string]any{"low_balance_threshold": float64(40)}, out)
		for _, bad := range []any{map[string]any{}, map[string]any{"low_balance_threshold": 0}, map[string]any{"low_balance_threshold": "5"},
			map[string]any{"lowBalanceThreshold": 5}, `{"low_balance_threshold": 2.5}`, map[string]any{"low_balance_threshold": 1_000_000_001}} {
			code, out, _ = e.send(key, http.MethodPut, "/alerts", bad)
			assert.Equal(t, http.StatusBadRequest, code, "%v: %v", bad, out)
			errorOf(t, out)
		}
		_, out, _ = e.send(key, http.MethodGet, "/alerts", nil)
		assert.Equal(t, map[string]any{"low_balance_threshold": float64(40)}, out)
		_, out, _ = e.send(otherKey, http.MethodGet, "/alerts", nil)
		assert.Equal(t, map[string]any{"low_balance_threshold": nil}, out)
		code, out, _ = e.send(key, http.MethodPut, "/alerts", map[string]any{"low_balance_threshold": nil})
		require.Equal(t, http.StatusOK, code, "%v", out)
		assert.Equal(t, map[string]any{"low_balance_threshold": nil}, out)

		noBilling := e.issue(e.account, nil, external.ScopeRegister, external.ScopeRead)
		for _, method := range []string{http.MethodGet, http.MethodPut} {
			code, out, _ = e.send(noBilling, method, "/alerts", map[string]any{"low_balance_threshold": 1})
			assert.Equal(t, http.StatusForbidden, code, "%s: %v", method, out)
		}
	})
}

// An accepted generation request answers X-Credits-Reserved (its creditsReserved) and
// X-Credits-Remaining (the balance right after it); a refused one answers neither.
func TestExternalGenerationAnswersChargeHeaders(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		acc, key := e.newAccount(external.ScopeRegister, external.ScopeBilling) // 100 credits
		body := map[string]any{"preferences": "beach", "count": 20}
		code, out, h := e.send(key, http.MethodPost, "/sceneries/register-ideas", body)
		require.Equal(t, http.StatusOK, code, "%v", out)
		reserved, err := strconv.ParseInt(h.Get("X-Credits-Reserved"), 10, 64)
		require.NoError(t, err)
		remaining, err := strconv.ParseInt(h.Get("X-Credits-Remaining"), 10, 64)
		require.NoError(t, err)
		assert.Equal(t, out["creditsReserved"], float64(reserved))
		balance, _ := e.credits(acc)
		assert.Equal(t, balance, remaining)
		assert.Equal(t, int64(100)-reserved, remaining)

		// A keyed request's replay sends the first answer's headers, not today's balance.
		first := e.keyedPost(key, "charge-1", "/sceneries/register-ideas", body)
		require.Equal(t, http.StatusOK, first.Code, first.Body.String())
		e.keyedPost(key, "", "/sceneries/register-ideas", body) // the balance moves on
		replay := e.keyedPost(key, "charge-1", "/sceneries/register-ideas", body)
		require.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
		for _, h := range []string{"X-Credits-Reserved", "X-Credits-Remaining"} {
			require.NotEmpty(t, first.Header().Get(h))
			assert.Equal(t, first.Header().Get(h), replay.Header().Get(h), h)
		}

		code, out, _ = e.send(key, http.MethodPut, "/spend-limit", map[string]any{"monthlyCredits": 1})
		require.Equal(t, http.StatusOK, code, "%v", out)
		code, out, h = e.send(key, http.MethodPost, "/sceneries/register-ideas", body)
		require.Equal(t, http.StatusPaymentRequired, code, "%v", out)
		assert.Empty(t, h.Get("X-Credits-Reserved"))
		assert.Empty(t, h.Get("X-Credits-Remaining"))
	})
}
