package plugin_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
)

func TestMe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(42))
	require.NoError(t, e.db.Model(&models.Account{}).Where("id = ?", e.account.ID).
		Updates(map[string]any{"credit_balance": 470, "credits_reserved": 30}).Error)

	rec := e.do(http.MethodGet, p("/me"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Header().Get("Content-Type"), "application/json")
	m := decode(t, rec)
	assert.Equal(t, e.inst.ID, m["installation_id"])
	assert.Equal(t, e.inst.Name, m["installation_name"])
	assert.Equal(t, e.account.ID, m["account_id"])
	assert.Equal(t, "standard", m["plan"])
	assert.Equal(t, map[string]any{"available": float64(470), "reserved": float64(30)}, m["credits"])
	assert.Equal(t, map[string]any{"per_minute": float64(42)}, m["request_limit"])
	scopes := make([]any, len(models.PluginScopes))
	for i, s := range models.PluginScopes {
		scopes[i] = s
	}
	assert.Equal(t, scopes, m["scopes"])
	perms := []any{}
	for _, s := range plugin.Permissions(models.PluginScopes) {
		perms = append(perms, s)
	}
	assert.Equal(t, perms, m["permissions"])
	assert.Len(t, perms, 9)
	subs, ok := m["sub_processors"].([]any)
	require.True(t, ok, "sub_processors is %T, want an array: %s", m["sub_processors"], rec.Body.String())
	assert.Empty(t, subs)
}

func TestMeCreditsFromAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := decode(t, e.do(http.MethodGet, p("/me"), e.key, nil))
	assert.Equal(t, map[string]any{"available": float64(500), "reserved": float64(0)}, m["credits"])
	assert.Equal(t, map[string]any{"per_minute": float64(60)}, m["request_limit"], "installation limit 0 means the default")
}

func TestMeSubProcessorsAndNarrowKey(t *testing.T) {
	t.Parallel()
	subs := []plugin.SubProcessor{{Name: "Acme Cloud", Purpose: "hosting", Location: "EU"}}
	e := newEnv(t, withSubProcessors(subs))
	key := e.issueKey("plugin.jobs:write", "unknown.scope")
	rec := e.do(http.MethodGet, p("/me"), key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	m := decode(t, rec)
	assert.Equal(t, []any{"plugin.jobs:write", "unknown.scope"}, m["scopes"])
	assert.Equal(t, []any{plugin.PermJobsCancel, plugin.PermJobsCreate}, m["permissions"])
	assert.Equal(t, []any{map[string]any{"name": "Acme Cloud", "purpose": "hosting", "location": "EU"}}, m["sub_processors"])
}

func TestAIModels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := e.do(http.MethodGet, p("/ai-models"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "private, max-age=300", rec.Header().Get("Cache-Control"))
	assert.Equal(t, "X-Api-Key", rec.Header().Get("Vary"))
	items, ok := decode(t, rec)["ai_models"].([]any)
	require.True(t, ok, rec.Body.String())
	var studio map[string]any
	for _, it := range items {
		if m := it.(map[string]any); m["id"] == "local/studio-v1" {
			studio = m
		}
	}
	require.NotNil(t, studio, "local/studio-v1 missing: %s", rec.Body.String())
	ids := make([]any, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.(map[string]any)["id"])
	}
	// Only configured providers (no API keys here) and only the plugin's job types: no video model.
	assert.Equal(t, []any{"local/studio-v1"}, ids)
	assert.Equal(t, []any{jobtype.PhotoShoot, jobtype.Packshot}, studio["job_types"])
	assert.Equal(t, "image", studio["output_type"])
	assert.Equal(t, float64(1), studio["base_credit_cost"])
	assert.Contains(t, studio["supported_aspect_ratios"], "1:1")
	assert.Contains(t, studio["job_types"], jobtype.PhotoShoot)
}

func TestAIModelsOnlyConfiguredProviders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withProviders(map[string]providers.Provider{}))
	rec := e.do(http.MethodGet, p("/ai-models"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"ai_models":[]}`, rec.Body.String())
	// A model of an unconfigured provider is not accepted in a session either.
	msg := e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, map[string]any{
		"session_config": map[string]any{},
		"subjects":       []any{map[string]any{"product_ref": "p1", "images_count": 1, "ai_model": "local/studio-v1"}},
	}), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "subjects[0].ai_model")
}

func TestAspectRatios(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := e.do(http.MethodGet, p("/aspect-ratios"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "public, max-age=3600", rec.Header().Get("Cache-Control"))
	items, ok := decode(t, rec)["aspect_ratios"].([]any)
	require.True(t, ok, rec.Body.String())
	require.NotEmpty(t, items)
	defaults := 0
	ids := map[any]bool{}
	for _, it := range items {
		m := it.(map[string]any)
		assert.False(t, ids[m["id"]], "duplicate %v", m["id"])
		ids[m["id"]] = true
		switch m["default"] {
		case true:
			defaults++
			assert.Equal(t, "1:1", m["id"])
		case false:
		default:
			t.Errorf("aspect ratio %v: default is %v, want a boolean", m["id"], m["default"])
		}
	}
	assert.Equal(t, 1, defaults)
}
