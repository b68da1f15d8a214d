package plugin_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// GET /usage sums the installation's ledger: a session of two jobs, one completed and one failed,
// shows in its figures as the ledger has it; the order records the key that created it; another
// installation, another tenant and the test twin see none of it.
func TestUsageOfTheInstallation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withTemporal().On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil).Maybe()
	e.approved("shirt")
	session := `{"session_config":{"aspect_ratio":"1:1"},"subjects":[{"product_ref":"shirt","images_count":2,"ai_model":"local/studio-v1"}]}`
	rec := e.do(http.MethodPost, p("/jobs"), e.key, session)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	created := decode(t, rec)
	jobs := created["subjects"].([]any)[0].(map[string]any)["job_ids"].([]any)
	var order models.Order
	require.NoError(t, e.db.Take(&order, "id = ?", created["order_id"]).Error)
	require.NotNil(t, order.APIKeyID)
	assert.Equal(t, e.keyID, *order.APIKeyID, "the order records its key")
	_, err := models.CompleteJob(e.db, jobs[0].(string), 1, nil)
	require.NoError(t, err)
	_, err = models.EndJob(e.db, jobs[1].(string), 1, status.JobFailed, "", "", "")
	require.NoError(t, err)

	var ledger struct{ Reserved, Consumed, Released int64 }
	require.NoError(t, e.db.Raw(`SELECT
		SUM(CASE WHEN kind = 'reserve' THEN reserved_delta ELSE 0 END) AS reserved,
		SUM(CASE WHEN kind = 'consume' THEN -reserved_delta ELSE 0 END) AS consumed,
		SUM(CASE WHEN kind = 'release' THEN balance_delta ELSE 0 END) AS released
		FROM credit_ledger WHERE order_id = ?`, order.ID).Scan(&ledger).Error)
	require.Positive(t, ledger.Consumed)

	rec = e.do(http.MethodGet, p("/usage?group_by=ai_model"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	u := decode(t, rec)
	assert.ElementsMatch(t, []string{"from", "to", "totals", "groups"}, keysOf(u))
	want := map[string]any{"credits_reserved": float64(ledger.Reserved), "credits_consumed": float64(ledger.Consumed),
		"credits_released": float64(ledger.Released), "jobs_completed": float64(1), "jobs_failed": float64(1), "jobs_cancelled": float64(0)}
	assert.Equal(t, want, u["totals"])
	want["key"] = "local/studio-v1"
	assert.Equal(t, []any{want}, u["groups"])

	for _, g := range []string{"day", "job_type"} {
		u = decode(t, e.do(http.MethodGet, p("/usage?group_by="+g), e.key, nil))
		assert.Len(t, u["groups"], 1, g)
		assert.Equal(t, float64(ledger.Consumed), u["totals"].(map[string]any)["credits_consumed"], g)
	}

	_, sibling := e.addInstallation(e.account.ID, 0)
	_, other := e.otherInstallation()
	for name, key := range map[string]string{"another installation": sibling, "another tenant": other,
		"the test twin": e.issueTestKey(models.PluginScopes...)} {
		rec = e.do(http.MethodGet, p("/usage"), key, nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		u = decode(t, rec)
		assert.Empty(t, u["groups"], name)
		assert.Equal(t, float64(0), u["totals"].(map[string]any)["credits_reserved"], name)
	}
}

// Bad ranges and groupings are 400 naming the parameter; the key grouping is the external API's.
func TestUsageRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for query, field := range map[string]string{
		"from=yesterday":                                "from",
		"to=2026-02-30":                                 "to",
		"from=2026-01-01T00:00:00":                      "from",
		"from=2025-01-01&to=2026-02-06":                 "to", // 401 days
		"from=2026-01-02&to=2026-01-02":                 "to",
		"from=2026-01-03&to=2026-01-02T23:59:59Z":       "to",
		"group_by=key":                                  "group_by",
		"group_by=week":                                 "group_by",
		"group_by=day&group_by=day":                     "group_by",
		"from=2026-01-01&from=2026-01-02&to=2026-02-01": "from",
	} {
		msg := e.requireError(e.do(http.MethodGet, p("/usage?"+query), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, field, query)
	}
	rec := e.do(http.MethodGet, p("/usage?from=2025-01-01&to=2026-02-05&group_by=job_type"), e.key, nil) // 400 days
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	u := decode(t, rec)
	assert.Equal(t, "2025-01-01T00:00:00Z", u["from"])
	assert.Equal(t, "2026-02-05T00:00:00Z", u["to"])
	rec = e.do(http.MethodGet, p("/usage?from="+url.QueryEscape("2026-01-01T02:00:00+02:00")+"&to=2026-01-02"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "2026-01-01T00:00:00Z", decode(t, rec)["from"])
	rec = e.do(http.MethodGet, p("/usage?from=2026-01-01T00:00:00.25Z&to=2026-01-02"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "2026-01-01T00:00:00.25Z", decode(t, rec)["from"], "the range as it was given, to the fraction")
}
