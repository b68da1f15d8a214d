package external_test

import (
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// testKey issues a test key (mk_test_…) of the main account's test twin with the scopes and returns
// the twin's ID and the key.
func (e *env) testKey(scopes ...string) (twinID, key string) {
	e.t.Helper()
	k, err := e.handler.Engine.Accounts.IssueTestAccountKey(e.t.Context(), engine.AccountKeyRequest{
		AccountID: e.account, Name: "test", Scopes: scopes})
	require.NoError(e.t, err)
	return k.AccountID, k.APIKey
}

// withClock rebuilds the handler's engine with now as the clock of test mode's day.
func (e *env) withClock(now time.Time) {
	cfg := e.engineConfig
	cfg.Now = func() time.Time { return now }
	e.handler.Engine = engine.New(cfg)
}

// put sends a PUT of body (a string as it is, anything else as JSON) with the key.
func (e *env) put(key, path, body string) (int, map[string]any, http.Header) {
	e.t.Helper()
	req := httptest.NewRequest(http.MethodPut, external.Base+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	return e.serve(req)
}

// ledgerAccount checks that the account's balance and reservations are its ledger's sums and
// returns it.
func ledgerAccount(t *testing.T, db *gorm.DB, accountID string) *models.Account {
	t.Helper()
	acc, err := models.GetAccount(db, accountID)
	require.NoError(t, err)
	balance, reserved, err := models.LedgerSums(db, accountID)
	require.NoError(t, err)
	require.Equal(t, acc.CreditBalance, balance, "balance and ledger")
	require.Equal(t, acc.CreditsReserved, reserved, "reserved and ledger")
	return acc
}

// GET /account says livemode: true for a live key; false for a test key, which sees its test twin
// and its test credits.
func TestAccountShowsTheKeysMode(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		code, body, _ := e.get("/account", "X-Api-Key", e.key)
		require.Equal(t, http.StatusOK, code, "%v", body)
		assert.Equal(t, true, body["livemode"])
		assert.Equal(t, e.account, body["id"])

		twin, key := e.testKey(external.ScopeRead)
		code, body, _ = e.get("/account", "X-Api-Key", key)
		require.Equal(t, http.StatusOK, code, "%v", body)
		assert.Equal(t, false, body["livemode"])
		assert.Equal(t, twin, body["id"])
		assert.Equal(t, map[string]any{"available": float64(models.TestDailyCredits), "reserved": float64(0)}, body["credits"])

		// A new UTC day: the read refills the test credits set the day before.
		twin2, register := e.testKey(external.ScopeRegister, external.ScopeRead)
		require.Equal(t, twin, twin2)
		code, body, _ = e.put(register, "/test/credits", `{"available": 4}`)
		require.Equal(t, http.StatusOK, code, "%v", body)
		e.withClock(time.Now().UTC().Add(24 * time.Hour))
		_, body, _ = e.get("/account", "X-Api-Key", key)
		assert.Equal(t, float64(models.TestDailyCredits), body["credits"].(map[string]any)["available"])
		ledgerAccount(t, db, twin)
	})
}

// PUT /test/credits: a test key with content.register sets its test balance, 0 to 1,000,000;
// anything else is 400 naming the field; a live key's well-formed request is 403; nothing changes
// then, and the live balance never.
func TestPutTestCreditsEdges(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		twin, key := e.testKey(external.ScopeRegister, external.ScopeRead)
		for body, field := range map[string]string{
			`{"available": -1}`:                "available",
			`{"available": 1000001}`:           "available",
			`{"available": 1.5}`:               "available",
			`{"available": "5"}`:               "available",
			`{"available": null}`:              "available",
			`{}`:                               "available",
			`{"available": 5, "reserved": 0}`:  "reserved",
			`{"available": 5, "available": 6}`: "available",
		} {
			code, out, _ := e.put(key, "/test/credits", body)
			require.Equal(t, http.StatusBadRequest, code, "%s: %v", body, out)
			assert.Contains(t, errorOf(t, out), field, body)
		}
		assert.EqualValues(t, models.TestDailyCredits, ledgerAccount(t, db, twin).CreditBalance, "a refused PUT changes nothing")

		for _, n := range []int64{0, engine.MaxTestCredits, 1} {
			code, out, _ := e.put(key, "/test/credits", `{"available": `+strconv.FormatInt(n, 10)+`}`)
			require.Equal(t, http.StatusOK, code, "%v", out)
			assert.Equal(t, map[string]any{"credits": map[string]any{"available": float64(n), "reserved": float64(0)}, "livemode": false}, out)
		}
		assert.EqualValues(t, 1, ledgerAccount(t, db, twin).CreditBalance)

		code, out, _ := e.put(e.key, "/test/credits", `{"available": 0}`)
		require.Equal(t, http.StatusForbidden, code, "%v", out)
		assert.Contains(t, errorOf(t, out), "test keys only")
		code, _, _ = e.put(e.key, "/test/credits", `{"available": -1}`)
		assert.Equal(t, http.StatusBadRequest, code, "a malformed request is 400 whatever the key")
		assert.EqualValues(t, 100, ledgerAccount(t, db, e.account).CreditBalance, "the live balance is untouched")

		_, readOnly := e.testKey(external.ScopeRead)
		code, _, _ = e.put(readOnly, "/test/credits", `{"available": 0}`)
		assert.Equal(t, http.StatusForbidden, code, "content.register is needed")
		assert.EqualValues(t, 1, ledgerAccount(t, db, twin).CreditBalance)
	})
}

// A 402 rehearsed: after PUT {available: 0}, a test generation request is refused 402 and creates
// nothing; the live account is untouched.
func TestTestKeyRehearsesA402(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		twin, key := e.testKey(external.ScopeRegister, external.ScopeRead)
		o, _, _ := e.accepted(2)(e.post(key, "/models/register-ideas", map[string]any{"preferences": "red hair", "count": 2}))
		require.Equal(t, twin, o.AccountID)
		require.True(t, o.TestMode)

		code, out, _ := e.put(key, "/test/credits", `{"available": 0}`)
		require.Equal(t, http.StatusOK, code, "%v", out)
		code, out = e.post(key, "/models/register-ideas", map[string]any{"preferences": "red hair", "count": 1})
		require.Equal(t, http.StatusPaymentRequired, code, "%v", out)
		assert.Contains(t, errorOf(t, out), "Insufficient credits")
		var orders int64
		require.NoError(t, db.Model(&models.Order{}).Where("account_id = ?", twin).Count(&orders).Error)
		assert.EqualValues(t, 1, orders)
		acc := ledgerAccount(t, db, twin)
		assert.Zero(t, acc.CreditBalance)
		assert.EqualValues(t, 2, acc.CreditsReserved)
		assert.Equal(t, 2, acc.TestJobsToday)
		e.nothingCreated(e.account, 100)
	})
}

// The quota's edge: with 998 jobs run today, two one-job requests are accepted and the next is
// 429 with errors.testQuotaExceeded and Retry-After the seconds until midnight UTC by the
// database's clock; a request of
// more jobs than are left is refused whole; a live key has no quota.
func TestTestQuotaEdge(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		twin, key := e.testKey(external.ScopeRegister, external.ScopeRead)
		now := time.Now().UTC()
		clock := time.Date(now.Year(), now.Month(), now.Day(), 23, 59, 30, 250_000_000, time.UTC)
		e.withClock(clock)
		require.NoError(t, db.Model(&models.Account{}).Where("id = ?", twin).
			Updates(map[string]any{"test_day": models.TestDay(clock), "test_jobs_today": models.TestDailyJobs - 2}).Error)

		for range 2 {
			e.accepted(1)(e.post(key, "/sceneries/register-ideas", map[string]any{"preferences": "beach", "count": 1}))
		}
		req := httptest.NewRequest(http.MethodPost, external.Base+"/sceneries/register-ideas", strings.NewReader(`{"preferences":"beach","count":1}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", key)
		code, out, hdr := e.serve(req)
		require.Equal(t, http.StatusTooManyRequests, code, "%v", out)
		// The seconds until the database's midnight, not the engine's clock's (29.75 s before it).
		until := time.Until(time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC))
		retryAfter, err := strconv.Atoi(hdr.Get("Retry-After"))
		require.NoError(t, err, "Retry-After %q", hdr.Get("Retry-After"))
		assert.InDelta(t, math.Ceil(until.Seconds()), retryAfter, 2, "Retry-After")
		assert.Contains(t, out["error"], "1000 jobs per UTC day")
		assert.Equal(t, map[string]any{"testQuotaExceeded": map[string]any{"details": []any{"test_quota_exceeded"}}}, out["errors"])
		acc := ledgerAccount(t, db, twin)
		assert.Equal(t, models.TestDailyJobs, acc.TestJobsToday)
		assert.EqualValues(t, models.TestDailyCredits-2, acc.CreditBalance)

		// Two left, three asked: refused whole.
		require.NoError(t, db.Model(&models.Account{}).Where("id = ?", twin).Update("test_jobs_today", models.TestDailyJobs-2).Error)
		code, out = e.post(key, "/sceneries/register-ideas", map[string]any{"preferences": "beach", "count": 3})
		require.Equal(t, http.StatusTooManyRequests, code, "%v", out)
		assert.Equal(t, models.TestDailyJobs-2, ledgerAccount(t, db, twin).TestJobsToday)

		// A live key is neither counted nor limited.
		e.accepted(1)(e.post(e.key, "/sceneries/register-ideas", map[string]any{"preferences": "beach", "count": 1}))
		assert.Zero(t, ledgerAccount(t, db, e.account).TestJobsToday)
	})
}
