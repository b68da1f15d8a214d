package external_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// resetsAt is the start of the UTC month after the env's clock, as the API writes it.
func (e *env) resetsAt() string {
	return models.SpendResetsAt(e.now).Format("2006-01-02T15:04:05Z07:00")
}

// spendLimit reads GET /spend-limit with key.
func (e *env) spendLimit(key string) map[string]any {
	e.t.Helper()
	code, out, _ := e.send(key, http.MethodGet, "/spend-limit", nil)
	require.Equal(e.t, http.StatusOK, code, "%v", out)
	return out
}

// Without a limit GET answers 200 with monthlyCredits null; PUT sets it, GET reads it back,
// DELETE removes it (204, also when there is none) and the month's use stays.
func TestExternalSpendLimitSetGetClear(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		_, key := e.newAccount(external.ScopeRegister, external.ScopeBilling)
		assert.Equal(t, map[string]any{"monthlyCredits": nil, "alertAtPercent": float64(80), "used": float64(0), "resetsAt": e.resetsAt()},
			e.spendLimit(key))

		code, out, _ := e.send(key, http.MethodPut, "/spend-limit", map[string]any{"monthlyCredits": 50, "alertAtPercent": 90})
		require.Equal(t, http.StatusOK, code, "%v", out)
		want := map[string]any{"monthlyCredits": float64(50), "alertAtPercent": float64(90), "used": float64(0), "resetsAt": e.resetsAt()}
		assert.Equal(t, want, out)
		assert.Equal(t, want, e.spendLimit(key))

		// A request of 20 credits counts in used.
		e.accepted(20)(e.post(key, "/sceneries/register-ideas", map[string]any{"preferences": "beach", "count": 20}))
		want["used"] = float64(20)
		assert.Equal(t, want, e.spendLimit(key))

		for range 2 {
			code, out, _ = e.send(key, http.MethodDelete, "/spend-limit", nil)
			require.Equal(t, http.StatusNoContent, code, "%v", out)
		}
		assert.Equal(t, map[string]any{"monthlyCredits": nil, "alertAtPercent": float64(80), "used": float64(20), "resetsAt": e.resetsAt()},
			e.spendLimit(key))
	})
}

// PUT takes exactly {"monthlyCredits": 1..1e9, "alertAtPercent": 1..100}: anything else is 400
// naming the field in this API's spelling, and the limit is unchanged.
func TestExternalSpendLimitValidation(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		_, key := e.newAccount(external.ScopeBilling)
		code, out, _ := e.send(key, http.MethodPut, "/spend-limit", map[string]any{"monthlyCredits": 100})
		require.Equal(t, http.StatusOK, code, "%v", out)
		for _, tc := range []struct {
			name  string
			body  any
			field string
		}{
			{"empty object", map[string]any{}, "monthlyCredits"},
			{"only alert", map[string]any{"alertAtPercent": 50}, "monthlyCredits"},
			{"null limit", map[string]any{"monthlyCredits": nil}, "monthlyCredits"},
			{"zero", map[string]any{"monthlyCredits": 0}, "monthlyCredits"},
			{"negative", map[string]any{"monthlyCredits": -1}, "monthlyCredits"},
			{"too large", map[string]any{"monthlyCredits": engine.MaxSpendLimit + 1}, "monthlyCredits"},
			{"fraction", `{"monthlyCredits": 2.5}`, "monthlyCredits"},
			{"string", map[string]any{"monthlyCredits": "10"}, "monthlyCredits"},
			{"alert zero", map[string]any{"monthlyCredits": 10, "alertAtPercent": 0}, "alertAtPercent"},
			{"alert 101", map[string]any{"monthlyCredits": 10, "alertAtPercent": 101}, "alertAtPercent"},
			{"snake case", map[string]any{"monthly_credits": 10}, "monthly_credits"},
			{"repeated", `{"monthlyCredits": 10, "monthlyCredits": 20}`, "monthlyCredits"},
			{"not an object", `[1]`, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, out, _ := e.send(key, http.MethodPut, "/spend-limit", tc.body)
				require.Equal(t, http.StatusBadRequest, code, "%v", out)
				msg := errorOf(t, out)
				assert.Contains(t, msg, tc.field)
				assert.NotContains(t, msg, "alert_at_percent", "the engine's field name leaks")
				if tc.field != "monthly_credits" {
					assert.NotContains(t, msg, "monthly_credits", "the engine's field name leaks")
				}
			})
		}
		assert.Equal(t, float64(100), e.spendLimit(key)["monthlyCredits"])
	})
}

// The routes need content.billing: without it, 403 and nothing changes.
func TestExternalSpendLimitNeedsBillingScope(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		key := e.issue(e.account, nil, external.ScopeRegister, external.ScopeRead, external.ScopeWebhooks)
		for _, req := range []struct {
			method string
			body   any
		}{{http.MethodGet, nil}, {http.MethodPut, map[string]any{"monthlyCredits": 1}}, {http.MethodDelete, nil}} {
			code, out, _ := e.send(key, req.method, "/spend-limit", req.body)
			assert.Equal(t, http.StatusForbidden, code, "%s: %v", req.method, out)
			errorOf(t, out)
		}
		var acc models.Account
		require.NoError(t, db.Take(&acc, "id = ?", e.account).Error)
		assert.Nil(t, acc.SpendLimitMonthly)
	})
}

// A generation request past the account's limit is 402 with errors.spendLimitExceeded (the limit,
// the month's use, its reset, scope account) and creates and charges nothing; another account is
// unaffected, and the limit raised lets the request through.
func TestExternalRequestPastTheSpendLimitIsRefused(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		acc, key := e.newAccount(external.ScopeRegister, external.ScopeBilling) // 100 credits
		body := map[string]any{"preferences": "beach", "count": 20}
		code, out, _ := e.send(key, http.MethodPut, "/spend-limit", map[string]any{"monthlyCredits": 30})
		require.Equal(t, http.StatusOK, code, "%v", out)
		e.accepted(20)(e.post(key, "/sceneries/register-ideas", body))
		var orders int64
		db.Model(&models.Order{}).Where("account_id = ?", acc).Count(&orders)
		require.EqualValues(t, 1, orders)
		balance, reserved := e.credits(acc)

		code, out = e.post(key, "/sceneries/register-ideas", body) // 20 + 20 > 30
		require.Equal(t, http.StatusPaymentRequired, code, "%v", out)
		assert.NotEmpty(t, out["error"])
		assert.Equal(t, map[string]any{"spendLimitExceeded": map[string]any{"details": []any{"spend_limit_exceeded"},
			"limit": float64(30), "used": float64(20), "resetsAt": e.resetsAt(), "scope": "account"}}, out["errors"])
		db.Model(&models.Order{}).Where("account_id = ?", acc).Count(&orders)
		assert.EqualValues(t, 1, orders, "nothing created")
		b2, r2 := e.credits(acc)
		assert.Equal(t, [2]int64{balance, reserved}, [2]int64{b2, r2}, "nothing charged")
		assert.Equal(t, float64(20), e.spendLimit(key)["used"])

		// Another account: its own limit (none) and use.
		_, otherKey := e.newAccount(external.ScopeRegister, external.ScopeBilling)
		assert.Equal(t, map[string]any{"monthlyCredits": nil, "alertAtPercent": float64(80), "used": float64(0), "resetsAt": e.resetsAt()},
			e.spendLimit(otherKey))
		e.accepted(20)(e.post(otherKey, "/sceneries/register-ideas", body))

		// Raised, the request goes through.
		code, out, _ = e.send(key, http.MethodPut, "/spend-limit", map[string]any{"monthlyCredits": 40})
		require.Equal(t, http.StatusOK, code, "%v", out)
		e.accepted(20)(e.post(key, "/sceneries/register-ideas", body))
		assert.Equal(t, float64(40), e.spendLimit(key)["used"])
	})
}

// A test key's spend limit is its test twin account's, apart from the live account's.
func TestExternalSpendLimitOfATestKeyIsTheTestTwins(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		liveKey := e.issue(e.account, nil, external.ScopeBilling)
		_, testKey := e.testKey(external.ScopeBilling)
		code, out, _ := e.send(testKey, http.MethodPut, "/spend-limit", map[string]any{"monthlyCredits": 5})
		require.Equal(t, http.StatusOK, code, "%v", out)
		assert.Nil(t, e.spendLimit(liveKey)["monthlyCredits"])
		assert.Equal(t, float64(5), e.spendLimit(testKey)["monthlyCredits"])
	})
}
