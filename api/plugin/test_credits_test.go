package plugin_test

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

// issueTestKey issues a test key (pk_test_…) of the main installation's test twin with exactly the
// given scopes.
func (e *env) issueTestKey(scopes ...string) string {
	e.t.Helper()
	k, err := e.handler.Engine.Accounts.IssueTestPluginKey(e.t.Context(), e.box, e.inst.ID, "test", append([]string{}, scopes...), nil)
	require.NoError(e.t, err)
	return k.APIKey
}

// testTwin is the main installation's test twin (made by issueTestKey).
func (e *env) testTwin() *models.Installation {
	e.t.Helper()
	var twin models.Installation
	require.NoError(e.t, e.db.Where("test_of_installation_id = ?", e.inst.ID).Take(&twin).Error)
	return &twin
}

// testAccount is the account of the main installation's test twin.
func (e *env) testAccount() *models.Account {
	e.t.Helper()
	acc, err := models.GetAccount(e.db, e.testTwin().AccountID)
	require.NoError(e.t, err)
	return acc
}

// requireLedger checks that the account's balance and reservations are its ledger's sums.
func (e *env) requireLedger(accountID string) *models.Account {
	e.t.Helper()
	acc, err := models.GetAccount(e.db, accountID)
	require.NoError(e.t, err)
	balance, reserved, err := models.LedgerSums(e.db, accountID)
	require.NoError(e.t, err)
	require.Equal(e.t, acc.CreditBalance, balance, "balance and ledger")
	require.Equal(e.t, acc.CreditsReserved, reserved, "reserved and ledger")
	return acc
}

// A live key's GET /me is livemode true with the live balance; a test key's is livemode false
// with the test twin's installation, account and test credits.
func TestMeShowsTheKeysMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := e.do(http.MethodGet, p("/me"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	live := decode(t, rec)
	assert.Equal(t, true, live["livemode"])
	assert.Equal(t, map[string]any{"available": float64(500), "reserved": float64(0)}, live["credits"])

	testKey := e.issueTestKey(models.PluginScopes...)
	rec = e.do(http.MethodGet, p("/me"), testKey, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	test := decode(t, rec)
	assert.Equal(t, false, test["livemode"])
	assert.Equal(t, map[string]any{"available": float64(models.TestDailyCredits), "reserved": float64(0)}, test["credits"])
	twin := e.testTwin()
	assert.Equal(t, twin.ID, test["installation_id"])
	assert.Equal(t, twin.AccountID, test["account_id"])
	assert.NotEqual(t, e.account.ID, test["account_id"])
}

// GET /me of a test key refills the day's test credits when a UTC day has begun since they were
// last refilled, once, through the ledger.
func TestMeRefillsTheTestCreditsOfANewDay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	testKey := e.issueTestKey(models.PluginScopes...)
	rec := e.do(http.MethodPut, p("/test/credits"), testKey, map[string]any{"available": 3})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	credits := func() any {
		rec := e.do(http.MethodGet, p("/me"), testKey, nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		return decode(t, rec)["credits"].(map[string]any)["available"]
	}
	assert.Equal(t, float64(3), credits(), "the same day keeps what was set")

	now := time.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	e.withEngine(func(c *engine.Config) { c.Now = func() time.Time { return midnight } })
	assert.Equal(t, float64(models.TestDailyCredits), credits(), "a new day: the day's allowance")
	e.withEngine(func(c *engine.Config) { c.Now = func() time.Time { return midnight.Add(time.Hour) } })
	assert.Equal(t, float64(models.TestDailyCredits), credits())
	acc := e.requireLedger(e.testTwin().AccountID)
	assert.Equal(t, models.TestDay(midnight), acc.TestDay)
	assert.EqualValues(t, 2, e.count(&models.LedgerEntry{}, "account_id = ? AND kind = ?", acc.ID, models.LedgerAdjust),
		"the PUT and one refill")
	assert.EqualValues(t, 500, e.requireLedger(e.account.ID).CreditBalance, "the live balance is untouched")
}

// PUT /test/credits: a test key sets its test balance, 0 to 1,000,000; anything else is 400
// naming available; a live key's well-formed request is 403 and changes nothing.
func TestPutTestCreditsEdges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	testKey := e.issueTestKey(models.PluginScopes...)
	put := func(key string, body any) (int, map[string]any) {
		rec := e.do(http.MethodPut, p("/test/credits"), key, body)
		return rec.Code, decode(t, rec)
	}
	for _, bad := range []string{`{"available": -1}`, `{"available": 1000001}`, `{"available": 1.5}`, `{"available": "5"}`,
		`{"available": null}`, `{}`, `{"available": 5, "reserved": 0}`, `[5]`, `{"available": 1e400}`} {
		rec := e.do(http.MethodPut, p("/test/credits"), testKey, bad)
		msg := e.requireError(rec, http.StatusBadRequest, plugin.CodeInvalidInput)
		if bad != `[5]` {
			assert.Contains(t, msg, map[bool]string{true: "reserved", false: "available"}[bad == `{"available": 5, "reserved": 0}`], "body %s", bad)
		}
	}
	assert.EqualValues(t, models.TestDailyCredits, e.testAccount().CreditBalance, "a refused PUT changes nothing")

	for _, n := range []int64{0, engine.MaxTestCredits, 1} {
		code, body := put(testKey, map[string]any{"available": n})
		require.Equal(t, http.StatusOK, code, "%v", body)
		assert.Equal(t, map[string]any{"credits": map[string]any{"available": float64(n), "reserved": float64(0)}, "livemode": false}, body)
		assert.EqualValues(t, n, e.requireLedger(e.testTwin().AccountID).CreditBalance)
	}

	// A live key: a malformed body is 400 as for any key, a well-formed one 403; nothing changes.
	e.requireError(e.do(http.MethodPut, p("/test/credits"), e.key, `{"available": -1}`), http.StatusBadRequest, plugin.CodeInvalidInput)
	for _, n := range []int64{0, 5} {
		msg := e.requireError(e.do(http.MethodPut, p("/test/credits"), e.key, map[string]any{"available": n}), http.StatusForbidden, plugin.CodeForbidden)
		assert.Contains(t, msg, "test keys only")
	}
	assert.EqualValues(t, 500, e.requireLedger(e.account.ID).CreditBalance)
	assert.EqualValues(t, 1, e.testAccount().CreditBalance)
	// A test key without plugin.jobs:create: 403 naming it.
	msg := e.requireError(e.do(http.MethodPut, p("/test/credits"), e.issueTestKey("plugin.jobs:read"), map[string]any{"available": 0}),
		http.StatusForbidden, plugin.CodeForbidden)
	assert.Contains(t, msg, plugin.PermJobsCreate)
}

// approvedIn stores a product of inst with an approved packshot.
func (e *env) approvedIn(inst *models.Installation, ref string) {
	e.t.Helper()
	pr := e.product(inst, ref)
	e.packshot(inst, pr.ID, e.readyAsset(inst).ID, models.VotingAccepted)
}

// A 402 rehearsed: after PUT {available: 0} a test session is refused 402 insufficient_credits and
// nothing is created; the live balance and the live world are untouched.
func TestTestKeyRehearsesA402(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	testKey := e.issueTestKey(models.PluginScopes...)
	twin := e.testTwin()
	e.approvedIn(twin, "mug")

	rec := e.do(http.MethodPost, p("/jobs"), testKey, mugSession(2))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	acc := e.requireLedger(twin.AccountID)
	assert.EqualValues(t, models.TestDailyCredits-acc.CreditsReserved, acc.CreditBalance)
	assert.Positive(t, acc.CreditsReserved)
	assert.Equal(t, 2, acc.TestJobsToday)

	rec = e.do(http.MethodPut, p("/test/credits"), testKey, map[string]any{"available": 0})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	_, details := e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), testKey, mugSession(1)), http.StatusPaymentRequired, plugin.CodeInsufficientCredits)
	assert.Positive(t, details["credits_required"])
	assert.EqualValues(t, 1, e.count(&models.Order{}, "account_id = ?", twin.AccountID), "nothing created")
	assert.Equal(t, 2, e.requireLedger(twin.AccountID).TestJobsToday, "a refused session counts no job")

	live := e.requireLedger(e.account.ID)
	assert.EqualValues(t, 500, live.CreditBalance)
	assert.Zero(t, live.CreditsReserved)
	assert.Zero(t, e.count(&models.Order{}, "account_id = ?", e.account.ID))
	assert.Equal(t, "", live.TestDay, "a live account keeps no test day")
}

// secondsUntilMidnightUTC is the seconds, rounded up, from now by this machine's clock (the test
// databases') to the next midnight UTC.
func secondsUntilMidnightUTC() float64 {
	now := time.Now().UTC()
	return math.Ceil(time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Sub(now).Seconds())
}

// headerSeconds is the Retry-After of h, in seconds.
func headerSeconds(t *testing.T, h http.Header) float64 {
	t.Helper()
	n, err := strconv.Atoi(h.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", h.Get("Retry-After"))
	return float64(n)
}

// The quota's edge: with 998 jobs run today, two one-job sessions are accepted (999, 1,000) and the
// next is 429 test_quota_exceeded with Retry-After the seconds until midnight UTC by the
// database's clock, creating nothing. A live key has no quota.
func TestTestQuotaEdge(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	testKey := e.issueTestKey(models.PluginScopes...)
	twin := e.testTwin()
	e.approvedIn(twin, "mug")
	e.approved("mug")
	now := time.Now().UTC()
	clock := time.Date(now.Year(), now.Month(), now.Day(), 23, 59, 30, 250_000_000, time.UTC)
	e.withEngine(func(c *engine.Config) { c.Now = func() time.Time { return clock } })
	require.NoError(t, e.db.Model(&models.Account{}).Where("id = ?", twin.AccountID).
		Updates(map[string]any{"test_day": models.TestDay(clock), "test_jobs_today": models.TestDailyJobs - 2}).Error)

	for range 2 {
		rec := e.do(http.MethodPost, p("/jobs"), testKey, mugSession(1))
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	}
	rec := e.do(http.MethodPost, p("/jobs"), testKey, mugSession(1))
	msg := e.requireError(rec, http.StatusTooManyRequests, plugin.CodeTestQuotaExceeded)
	assert.Contains(t, msg, "1000 jobs per UTC day")
	// The seconds until the database's midnight, not the engine's clock's (29.75 s before it).
	assert.InDelta(t, secondsUntilMidnightUTC(), headerSeconds(t, rec.Header()), 2, "Retry-After")
	assert.EqualValues(t, 2, e.count(&models.Order{}, "account_id = ?", twin.AccountID))
	acc := e.requireLedger(twin.AccountID)
	assert.Equal(t, models.TestDailyJobs, acc.TestJobsToday)

	// In a batch, the session's result carries it.
	rec = e.do(http.MethodPost, p("/jobs/batch"), testKey, batch(mugSession(1)))
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	result := decode(t, rec)["results"].([]any)[0].(map[string]any)
	assert.Equal(t, float64(http.StatusTooManyRequests), result["status"])
	assert.Equal(t, plugin.CodeTestQuotaExceeded, result["error"].(map[string]any)["code"])

	// A live key is not counted and not limited.
	rec = e.do(http.MethodPost, p("/jobs"), e.key, mugSession(1))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	live := e.requireLedger(e.account.ID)
	assert.Zero(t, live.TestJobsToday)

	// At midnight the quota resets.
	e.withEngine(func(c *engine.Config) { c.Now = func() time.Time { return clock.Add(30 * time.Second) } })
	rec = e.do(http.MethodPost, p("/jobs"), testKey, mugSession(1))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	acc = e.requireLedger(twin.AccountID)
	assert.Equal(t, 1, acc.TestJobsToday)
	assert.Equal(t, models.TestDay(clock.Add(30*time.Second)), acc.TestDay)
}

// testSessionStatements is what a test key's session costs PostgreSQL: the key with its
// installation, the products, then the order's transaction: BEGIN, the day's quota (one
// conditional UPDATE of test_jobs_today), the order's statement, COMMIT. A live session's cost,
// acceptedSessionStatements, has none of them (TestAcceptedSessionRoundTrips).
const testSessionStatements = 6

func TestTestSessionRoundTrips(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onPostgres()).committing()
	testKey := e.issueTestKey(models.PluginScopes...)
	e.approvedIn(e.testTwin(), "p1")
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, p("/me"), testKey, nil).Code) // the key's use of the minute
	stop := e.recordStatements()
	rec := e.do(http.MethodPost, p("/jobs"), testKey, session(subject("p1")))
	statements := stop()
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.Len(t, statements, testSessionStatements, "statements of one test session:\n%s", strings.Join(statements, "\n"))
	require.Equal(t, 1, len(slices.DeleteFunc(statements, func(s string) bool { return !strings.Contains(s, "test_jobs_today") })),
		"one statement counts the quota")
}

// A plugin endpoint has no secret of its own; its deliveries are signed with its installation's
// whsec_ secret. A test key's endpoints are its test twin's, signed with the twin's secret, which
// the test key's issuance shows (webhook_secret): a client that verifies signatures can check
// test-mode webhooks (docs/test-mode.md).
func TestPluginTestWebhooksAreSignedWithASecretTheClientWasGiven(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	issued, err := e.handler.Engine.Accounts.IssueTestPluginKey(t.Context(), e.box, e.inst.ID, "test", nil, nil)
	require.NoError(t, err)

	// What the client was shown: the live installation's secret ("whsec" in this env, printed by
	// admin installation create) and whatever the test key's issuance printed.
	known := []string{"whsec"}
	printed, err := json.Marshal(issued)
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(printed, &fields))
	for _, v := range fields {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "whsec_") {
			known = append(known, s)
		}
	}

	// What signs the deliveries of the test key's endpoints (models.EndpointSecrets: an endpoint
	// without its own secret is signed with its installation's).
	twin := e.testTwin()
	signing, err := models.WebhookSecrets(e.box, twin, time.Now())
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(signing, func(s string) bool { return slices.Contains(known, s) }),
		"a test key's webhook deliveries are signed with %d secret(s), none of which the client was ever shown "+
			"(issuance printed %s; the live installation's secret does not sign them)", len(signing), printed)
}
