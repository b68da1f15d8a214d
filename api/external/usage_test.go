package external_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// GET /usage sums the account's ledger, grouped by the key whose request created each order; the
// figures are the ledger's; another account and the test twin see none of it.
func TestUsageByKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.Open(t, testdb.SQLiteURL(t)), 0)
	second := e.issue(e.account, nil, external.ScopeRegister, external.ScopeRead)
	for _, key := range []string{e.key, second, second} {
		code, body := e.post(key, "/sceneries/register-ideas", map[string]any{"preferences": "dunes", "count": 1})
		require.Equal(t, http.StatusOK, code, body)
	}
	var jobs []models.Job
	require.NoError(t, e.db.Where("account_id = ?", e.account).Order("created_at").Find(&jobs).Error)
	require.Len(t, jobs, 3)
	_, err := models.CompleteJob(e.db, jobs[0].ID, 1, nil)
	require.NoError(t, err)
	_, err = models.EndJob(e.db, jobs[1].ID, 1, status.JobCancelled, "", "", "")
	require.NoError(t, err)

	keyOf := func(full string) string { _, id, _, _ := models.ParseKey(full); return id }
	perKey := map[string]map[string]any{}
	for _, j := range jobs {
		var o models.Order
		require.NoError(t, e.db.Take(&o, "id = ?", j.OrderID).Error)
		require.NotNil(t, o.APIKeyID, "the order records its key")
		var l struct{ Reserved, Consumed, Released, Completed, Cancelled int64 }
		require.NoError(t, e.db.Raw(`SELECT
			SUM(CASE WHEN kind = 'reserve' THEN reserved_delta ELSE 0 END) AS reserved,
			SUM(CASE WHEN kind = 'consume' THEN -reserved_delta ELSE 0 END) AS consumed,
			SUM(CASE WHEN kind = 'release' THEN balance_delta ELSE 0 END) AS released,
			SUM(CASE WHEN kind = 'consume' THEN 1 ELSE 0 END) AS completed,
			SUM(CASE WHEN kind = 'release' THEN 1 ELSE 0 END) AS cancelled
			FROM credit_ledger WHERE order_id = ?`, o.ID).Scan(&l).Error)
		g := perKey[*o.APIKeyID]
		if g == nil {
			g = map[string]any{"key": *o.APIKeyID, "creditsReserved": 0.0, "creditsConsumed": 0.0, "creditsReleased": 0.0,
				"jobsCompleted": 0.0, "jobsFailed": 0.0, "jobsCancelled": 0.0}
			perKey[*o.APIKeyID] = g
		}
		for name, v := range map[string]int64{"creditsReserved": l.Reserved, "creditsConsumed": l.Consumed,
			"creditsReleased": l.Released, "jobsCompleted": l.Completed, "jobsCancelled": l.Cancelled} {
			g[name] = g[name].(float64) + float64(v)
		}
	}
	require.Len(t, perKey, 2)
	first, other := perKey[keyOf(e.key)], perKey[keyOf(second)]
	require.NotNil(t, first)
	require.NotNil(t, other)
	want := []any{first, other}
	if keyOf(second) < keyOf(e.key) {
		want = []any{other, first}
	}

	from := url.QueryEscape(time.Now().UTC().Add(-time.Hour).Format(time.RFC3339))
	to := url.QueryEscape(time.Now().UTC().Add(time.Hour).Format(time.RFC3339))
	code, u, _ := e.get("/usage?group_by=key&from="+from+"&to="+to, "X-Api-Key", e.key)
	require.Equal(t, http.StatusOK, code, u)
	assert.ElementsMatch(t, []string{"from", "to", "totals", "groups"}, mapKeys(u))
	assert.Equal(t, want, u["groups"])
	totals := u["totals"].(map[string]any)
	assert.Equal(t, 1.0, totals["jobsCompleted"])
	assert.Equal(t, 1.0, totals["jobsCancelled"])
	assert.Equal(t, 0.0, totals["jobsFailed"])

	_, otherKey := e.newAccount(external.ScopeRead)
	_, testKey := e.testKey(external.ScopeRead)
	for name, key := range map[string]string{"another account": otherKey, "the test twin": testKey} {
		code, u, _ = e.get("/usage?group_by=key&from="+from+"&to="+to, "X-Api-Key", key)
		require.Equal(t, http.StatusOK, code, u)
		assert.Empty(t, u["groups"], name)
	}

	for query, field := range map[string]string{"from=x": "from", "to=2026-11-31": "to", "group_by=week": "group_by",
		"from=2025-01-01&to=2026-02-06": "to", "from=2026-01-02&to=2026-01-01": "to", "group_by=": "group_by",
		"to=2026-12-01&to=2026-12-02": "to"} {
		code, u, _ = e.get("/usage?"+query, "X-Api-Key", e.key)
		assert.Equal(t, http.StatusBadRequest, code, query)
		assert.True(t, strings.HasPrefix(errorOf(t, u), field), "%s: %s", query, errorOf(t, u))
	}
}

func mapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
