package plugin_test

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
)

func TestAuthenticationRejectsBadKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, otherSecret, _, _ := models.ParseKey(e.issueKey("plugin.jobs:read"))

	extKey, err := models.IssueKey(e.db, models.KeyKindExternal, e.account.ID, nil, "ext", models.ExternalScopes, nil)
	require.NoError(t, err)
	unbound, err := models.IssueKey(e.db, models.KeyKindPlugin, e.account.ID, nil, "unbound", models.PluginScopes, nil)
	require.NoError(t, err)
	past := time.Now().Add(-time.Minute)
	expired, err := models.IssueKey(e.db, models.KeyKindPlugin, e.account.ID, &e.inst.ID, "expired", models.PluginScopes, &past)
	require.NoError(t, err)
	// The same key ID and secret, but presented as an external key.
	_, _, secret, _ := models.ParseKey(e.key)

	cases := map[string]string{
		"missing":                 "",
		"no prefix":               "garbage",
		"prefix only":             models.PluginKeyPrefix,
		"no secret separator":     models.PluginKeyPrefix + e.keyID,
		"empty secret":            models.PluginKeyPrefix + e.keyID + ".",
		"short key id":            models.PluginKeyPrefix + "abc." + secret,
		"secret too long":         models.PluginKeyPrefix + e.keyID + "." + strings.Repeat("a", 129),
		"unknown key id":          models.PluginKeyPrefix + "0123456789abcdef." + secret,
		"right id, wrong secret":  models.PluginKeyPrefix + e.keyID + "." + otherSecret,
		"right id, secret suffix": e.key + "x",
		"external prefix":         models.ExternalKeyPrefix + e.keyID + "." + secret,
		"external key":            extKey.Secret,
		"plugin key without inst": unbound.Secret,
		"expired key":             expired.Secret,
		"bearer prefix":           "Bearer " + e.key,
	}
	for name, key := range cases {
		t.Run(name, func(t *testing.T) {
			rec := e.do(http.MethodGet, p("/me"), key, nil)
			e.requireError(rec, http.StatusUnauthorized, plugin.CodeUnauthorized)
			// Unauthenticated requests are not rate-limited per key.
			assert.Empty(t, rec.Header().Get("X-RateLimit-Limit"))
		})
	}

	// The main key itself works.
	rec := e.do(http.MethodGet, p("/me"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}

func TestAuthenticationBeforePermission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A route that needs a permission answers 401, not 403, without a valid key.
	for _, target := range []string{p("/ai-models"), p("/jobs/" + models.NewID())} {
		e.requireError(e.do(http.MethodGet, target, "", nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
		e.requireError(e.do(http.MethodGet, target, "pk_live_nope", nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
	}
	e.requireError(e.do(http.MethodPost, p("/assets/upload"), "", map[string]any{}), http.StatusUnauthorized, plugin.CodeUnauthorized)
	require.Zero(t, e.count(&models.Asset{}, "1 = 1"))
}

func TestRevokedKeyIsRefusedOnTheNextRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.issueKey(models.PluginScopes...)
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, p("/me"), key, nil).Code)
	require.NoError(t, models.RevokeKey(e.db, keyID(t, key)))
	e.requireError(e.do(http.MethodGet, p("/me"), key, nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
	// Other keys of the installation keep working.
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, p("/me"), e.key, nil).Code)
}

func TestInactiveInstallationIsUnauthorized(t *testing.T) {
	t.Parallel()
	for _, status := range []string{"suspended", "uninstalled", ""} {
		t.Run("status="+status, func(t *testing.T) {
			e := newEnv(t)
			require.Equal(t, http.StatusOK, e.do(http.MethodGet, p("/me"), e.key, nil).Code)
			require.NoError(t, e.db.Model(&models.Installation{}).Where("id = ?", e.inst.ID).Update("status", status).Error)
			e.requireError(e.do(http.MethodGet, p("/me"), e.key, nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
			e.requireError(e.do(http.MethodGet, p("/ai-models"), e.key, nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
		})
	}
}

func TestPermissionsMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scopes []string
		want   []string
	}{
		{nil, nil},
		{[]string{}, nil},
		{[]string{"plugin.jobs:write"}, []string{plugin.PermJobsCancel, plugin.PermJobsCreate}},
		{[]string{"plugin.jobs:read"}, []string{plugin.PermJobsRead}},
		{[]string{"plugin.assets:write"}, []string{plugin.PermAssetsUpload}},
		{[]string{"plugin.catalog:read"}, []string{plugin.PermCatalogRead}},
		{[]string{"plugin.catalog:write"}, []string{plugin.PermCatalogWrite}},
		{[]string{"plugin.installations.manage"}, []string{plugin.PermInstallationsManage}},
		{[]string{"plugin.webhooks:manage"}, []string{plugin.PermWebhooksManage}},
		{[]string{"plugin.presets:read"}, []string{plugin.PermPresetsRead}},
		// A permission name used as a scope grants just itself.
		{[]string{plugin.PermJobsCreate}, []string{plugin.PermJobsCreate}},
		{[]string{plugin.PermJobsCancel}, []string{plugin.PermJobsCancel}},
		{[]string{plugin.PermAssetsUpload}, []string{plugin.PermAssetsUpload}},
		// Unknown scopes grant nothing.
		{[]string{"plugin.jobs:*"}, nil},
		{[]string{"plugin.jobs"}, nil},
		{[]string{"PLUGIN.JOBS:READ"}, nil},
		{[]string{"content.register", "content.read"}, nil},
		{[]string{"plugin.assets:upload "}, nil},
		// Sorted and de-duplicated.
		{[]string{"plugin.jobs:write", plugin.PermJobsCreate, "plugin.jobs:read", "plugin.jobs:write"},
			[]string{plugin.PermJobsCancel, plugin.PermJobsCreate, plugin.PermJobsRead}},
		{[]string{"nope", "plugin.catalog:write", "plugin.assets:write"}, []string{plugin.PermAssetsUpload, plugin.PermCatalogWrite}},
		{models.PluginScopes, []string{
			plugin.PermAssetsUpload, plugin.PermCatalogRead, plugin.PermCatalogWrite, plugin.PermInstallationsManage,
			plugin.PermJobsCancel, plugin.PermJobsCreate, plugin.PermJobsRead, plugin.PermPresetsRead, plugin.PermWebhooksManage,
		}},
	}
	for _, c := range cases {
		got := plugin.Permissions(c.scopes)
		assert.Equal(t, len(c.want), len(got), "Permissions(%q) = %q, want %q", c.scopes, got, c.want)
		if len(c.want) > 0 {
			assert.Equal(t, c.want, got, "Permissions(%q)", c.scopes)
		}
	}
	// The scope table of api/openapi.yaml: every scope it names is mapped.
	for _, s := range []string{"plugin.jobs:write", "plugin.jobs:read", "plugin.assets:write", "plugin.installations.manage",
		"plugin.webhooks:manage", "plugin.presets:read", "plugin.catalog:read", "plugin.catalog:write"} {
		assert.NotEmpty(t, plugin.ScopePermissions[s], "scope %s grants nothing", s)
	}
}

// specRoutes is the plugin API's endpoint table (api/openapi.yaml): method and path (parameters written ":")
// to the permissions of which any one is enough; an empty list means any valid key.
var specRoutes = map[string][]string{
	"GET /me":                           {},
	"PUT /test/credits":                 {plugin.PermJobsCreate},
	"POST /jobs":                        {plugin.PermJobsCreate},
	"POST /jobs/batch":                  {plugin.PermJobsCreate},
	"GET /jobs":                         {plugin.PermJobsRead},
	"GET /jobs/:":                       {plugin.PermJobsRead},
	"GET /orders/:/events":              {plugin.PermJobsRead},
	"DELETE /jobs/:":                    {plugin.PermJobsCancel},
	"POST /jobs/:/refresh-url":          {plugin.PermJobsRead},
	"POST /jobs/:/accept":               {plugin.PermJobsRead},
	"POST /jobs/:/reject":               {plugin.PermJobsRead},
	"GET /orders/:":                     {plugin.PermJobsRead},
	"GET /usage":                        {plugin.PermJobsRead},
	"POST /orders/:/clone":              {plugin.PermJobsCreate},
	"POST /assets/upload":               {plugin.PermAssetsUpload},
	"GET /presets":                      {plugin.PermCatalogRead, plugin.PermJobsRead, plugin.PermPresetsRead},
	"GET /models":                       {plugin.PermCatalogRead},
	"GET /sceneries":                    {plugin.PermCatalogRead},
	"GET /ai-models":                    {plugin.PermCatalogRead},
	"GET /aspect-ratios":                {plugin.PermCatalogRead},
	"GET /pricing":                      {plugin.PermCatalogRead},
	"POST /images":                      {plugin.PermCatalogWrite},
	"POST /packshots":                   {plugin.PermCatalogWrite},
	"GET /products":                     {plugin.PermCatalogRead},
	"GET /products/:":                   {plugin.PermCatalogRead},
	"DELETE /products/:":                {plugin.PermCatalogWrite},
	"GET /packshots":                    {plugin.PermCatalogRead},
	"DELETE /packshots/:":               {plugin.PermCatalogWrite},
	"POST /installations/:/rotate-hmac": {plugin.PermInstallationsManage},
	"GET /spend-limit":                  {plugin.PermInstallationsManage},
	"PUT /spend-limit":                  {plugin.PermInstallationsManage},
	"DELETE /spend-limit":               {plugin.PermInstallationsManage},
	"GET /alerts":                       {plugin.PermInstallationsManage},
	"PUT /alerts":                       {plugin.PermInstallationsManage},
	"POST /webhooks/:/replay":           {plugin.PermWebhooksManage},
	"POST /webhook-endpoints":           {plugin.PermWebhooksManage},
	"GET /webhook-endpoints":            {plugin.PermWebhooksManage},
	"GET /webhook-endpoints/:":          {plugin.PermWebhooksManage},
	"PATCH /webhook-endpoints/:":        {plugin.PermWebhooksManage},
	"DELETE /webhook-endpoints/:":       {plugin.PermWebhooksManage},
	"POST /webhook-endpoints/:/test":    {plugin.PermWebhooksManage},
	"POST /webhook-endpoints/:/recover": {plugin.PermWebhooksManage},
	"GET /webhook-deliveries":           {plugin.PermWebhooksManage},
	"GET /webhook-deliveries/:":         {plugin.PermWebhooksManage},
	"GET /events":                       {plugin.PermWebhooksManage},
	"GET /events/:":                     {plugin.PermWebhooksManage},
	"PUT /uploads/:":                    nil, // signed URL, no key
	"GET /openapi.yaml":                 nil, // the public API document, no key
}

var paramSegment = regexp.MustCompile(`/[:*][^/]*`)

// scopesGranting lists the scopes (scope names and permission names) that grant perm.
func scopesGranting(perm string) []string {
	out := []string{perm}
	for scope, perms := range plugin.ScopePermissions {
		if slices.Contains(perms, perm) && scope != perm {
			out = append(out, scope)
		}
	}
	return out
}

// TestEveryRouteChecksItsPermission walks the routes the router actually registers under the
// plugin base and checks each against the spec's permission table.
func TestEveryRouteChecksItsPermission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noScopes := e.issueKey()
	unknownScopes := e.issueKey("plugin.everything", "admin")

	seen := 0
	for _, r := range e.router.Routes() {
		if !strings.HasPrefix(r.Path, plugin.Base+"/") {
			continue
		}
		rel := strings.TrimPrefix(r.Path, plugin.Base)
		norm := r.Method + " " + paramSegment.ReplaceAllString(rel, "/:")
		perms, inSpec := specRoutes[norm]
		if !inSpec {
			t.Errorf("route %s %s is not in specRoutes (api/openapi.yaml)", r.Method, r.Path)
			continue
		}
		if norm == "PUT /uploads/:" || norm == "GET /openapi.yaml" {
			continue
		}
		seen++
		target := paramSegment.ReplaceAllString(r.Path, "/"+models.NewID())
		t.Run(norm, func(t *testing.T) {
			if len(perms) == 0 { // any valid key
				for _, key := range []string{noScopes, unknownScopes} {
					rec := e.do(r.Method, target, key, map[string]any{})
					assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
				}
				return
			}
			// Without the permission: 403 forbidden naming it.
			var others []string
			for _, s := range models.PluginScopes {
				if !slices.ContainsFunc(perms, func(perm string) bool { return slices.Contains(plugin.Permissions([]string{s}), perm) }) {
					others = append(others, s)
				}
			}
			for _, key := range []string{noScopes, unknownScopes, e.issueKey(others...)} {
				msg := e.requireError(e.do(r.Method, target, key, map[string]any{}), http.StatusForbidden, plugin.CodeForbidden)
				assert.Contains(t, msg, perms[0])
			}
			// With any scope granting it: not 403 (nor 401).
			for _, perm := range perms {
				for _, scope := range scopesGranting(perm) {
					rec := e.do(r.Method, target, e.issueKey(scope), map[string]any{})
					assert.NotEqual(t, http.StatusForbidden, rec.Code, "scope %s on %s: %s", scope, norm, rec.Body.String())
					assert.NotEqual(t, http.StatusUnauthorized, rec.Code, "scope %s on %s: %s", scope, norm, rec.Body.String())
				}
			}
		})
	}
	// The routes of this stage of the API are all there.
	require.GreaterOrEqual(t, seen, 8)
	for _, want := range []string{"GET /me", "GET /ai-models", "GET /aspect-ratios", "POST /assets/upload",
		"POST /packshots", "POST /jobs", "GET /jobs/:id", "GET /orders/:id"} {
		method, path, _ := strings.Cut(want, " ")
		assert.True(t, slices.ContainsFunc(e.router.Routes(), func(r gin.RouteInfo) bool {
			return r.Method == method && r.Path == plugin.Base+path
		}), "route %s not registered", want)
	}
}

func TestPermissionOutcomesPerRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Explicit expectations for the routes of plugin.go, with the status each gets once allowed.
	cases := []struct {
		method, path string
		body         any
		scope        string
		allowed      int
	}{
		{http.MethodGet, "/ai-models", nil, "plugin.catalog:read", http.StatusOK},
		{http.MethodGet, "/aspect-ratios", nil, "plugin.catalog:read", http.StatusOK},
		{http.MethodPost, "/assets/upload", map[string]any{}, "plugin.assets:write", http.StatusBadRequest},
		{http.MethodPost, "/assets/upload", map[string]any{}, plugin.PermAssetsUpload, http.StatusBadRequest},
		{http.MethodPost, "/packshots", map[string]any{}, "plugin.catalog:write", http.StatusBadRequest},
		{http.MethodPost, "/jobs", map[string]any{}, "plugin.jobs:write", http.StatusBadRequest},
		{http.MethodPost, "/jobs", map[string]any{}, plugin.PermJobsCreate, http.StatusBadRequest},
		{http.MethodGet, "/jobs/" + models.NewID(), nil, "plugin.jobs:read", http.StatusNotFound},
		{http.MethodGet, "/orders/" + models.NewID(), nil, "plugin.jobs:read", http.StatusNotFound},
	}
	for _, c := range cases {
		rec := e.do(c.method, p(c.path), e.issueKey(c.scope), c.body)
		assert.Equal(t, c.allowed, rec.Code, "%s %s with %s: %s", c.method, c.path, c.scope, rec.Body.String())
	}
	// Near misses do not grant.
	for _, c := range []struct{ method, path, scope string }{
		{http.MethodPost, "/jobs", "plugin.jobs:read"},
		{http.MethodPost, "/jobs", plugin.PermJobsCancel},
		{http.MethodGet, "/jobs/" + models.NewID(), "plugin.jobs:write"},
		{http.MethodGet, "/ai-models", "plugin.catalog:write"},
		{http.MethodGet, "/ai-models", "plugin.presets:read"},
		{http.MethodPost, "/packshots", "plugin.catalog:read"},
		{http.MethodPost, "/assets/upload", "plugin.catalog:write"},
	} {
		e.requireError(e.do(c.method, p(c.path), e.issueKey(c.scope), map[string]any{}), http.StatusForbidden, plugin.CodeForbidden)
	}
	// A 403 does not run the handler.
	e.requireError(e.do(http.MethodPost, p("/assets/upload"), e.issueKey("plugin.jobs:read"), map[string]any{
		"mode": "presigned", "filename": "a.png", "content_type": "image/png", "size_bytes": 10,
	}), http.StatusForbidden, plugin.CodeForbidden)
	require.Zero(t, e.count(&models.Asset{}, "1 = 1"))
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(3))
	for i, remaining := range []string{"2", "1", "0"} {
		rec := e.do(http.MethodGet, p("/me"), e.key, nil)
		require.Equal(t, http.StatusOK, rec.Code, "request %d: %s", i+1, rec.Body.String())
		assert.Equal(t, "3", rec.Header().Get("X-RateLimit-Limit"))
		assert.Equal(t, remaining, rec.Header().Get("X-RateLimit-Remaining"), "request %d", i+1)
		reset, err := strconv.Atoi(rec.Header().Get("X-RateLimit-Reset"))
		require.NoError(t, err)
		assert.True(t, reset >= 1 && reset <= 60, "X-RateLimit-Reset %d", reset)
		assert.Empty(t, rec.Header().Get("Retry-After"))
	}
	rec := e.do(http.MethodGet, p("/me"), e.key, nil)
	e.requireError(rec, http.StatusTooManyRequests, plugin.CodeRateLimited)
	retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", rec.Header().Get("Retry-After"))
	assert.True(t, retry >= 1 && retry <= 60, "Retry-After %d", retry)
	assert.Equal(t, "3", rec.Header().Get("X-RateLimit-Limit"))
	assert.Equal(t, "0", rec.Header().Get("X-RateLimit-Remaining"))
	reset, err := strconv.Atoi(rec.Header().Get("X-RateLimit-Reset"))
	require.NoError(t, err)
	assert.True(t, reset >= retry && reset <= 60, "X-RateLimit-Reset %d, Retry-After %d", reset, retry)

	// A refused request does not reach the handler: no asset is created.
	e.requireError(e.do(http.MethodPost, p("/assets/upload"), e.key, map[string]any{
		"mode": "presigned", "filename": "a.png", "content_type": "image/png", "size_bytes": 10,
	}), http.StatusTooManyRequests, plugin.CodeRateLimited)
	require.Zero(t, e.count(&models.Asset{}, "1 = 1"))

	// Another key of the same installation has its own budget.
	other := e.issueKey(models.PluginScopes...)
	rec = e.do(http.MethodGet, p("/me"), other, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "2", rec.Header().Get("X-RateLimit-Remaining"))

	// Just before Retry-After it is still refused; at Retry-After it passes, and the three
	// requests made together have left the window together.
	e.clock.Advance(time.Duration(retry)*time.Second - 2*time.Second)
	e.requireError(e.do(http.MethodGet, p("/me"), e.key, nil), http.StatusTooManyRequests, plugin.CodeRateLimited)
	e.clock.Advance(2 * time.Second)
	rec = e.do(http.MethodGet, p("/me"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "2", rec.Header().Get("X-RateLimit-Remaining"))

	// After a full minute the whole budget is back.
	e.clock.Advance(time.Minute)
	rec = e.do(http.MethodGet, p("/me"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "2", rec.Header().Get("X-RateLimit-Remaining"))
}

func TestRateLimitDefaultsAndErrorsCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // installation limit 0: the handler's default of 60 applies
	rec := e.do(http.MethodGet, p("/me"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "60", rec.Header().Get("X-RateLimit-Limit"))
	assert.Equal(t, "59", rec.Header().Get("X-RateLimit-Remaining"))
	// Authenticated requests that fail later (403, 404) still carry the headers and count.
	rec = e.do(http.MethodGet, p("/jobs/"+models.NewID()), e.issueKey("plugin.catalog:read"), nil)
	e.requireError(rec, http.StatusForbidden, plugin.CodeForbidden)
	assert.Equal(t, "60", rec.Header().Get("X-RateLimit-Limit"))
	assert.Equal(t, "59", rec.Header().Get("X-RateLimit-Remaining"))
	rec = e.do(http.MethodGet, p("/jobs/"+models.NewID()), e.key, nil)
	e.requireError(rec, http.StatusNotFound, plugin.CodeNotFound)
	assert.Equal(t, "58", rec.Header().Get("X-RateLimit-Remaining"))
}

func TestRateLimitPerInstallationSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inst, key := e.addInstallation(e.account.ID, 2)
	require.Equal(t, 2, inst.RateLimitPerMin)
	for range 2 {
		require.Equal(t, http.StatusOK, e.do(http.MethodGet, p("/me"), key, nil).Code)
	}
	e.requireError(e.do(http.MethodGet, p("/me"), key, nil), http.StatusTooManyRequests, plugin.CodeRateLimited)
	// The first installation (default 60) is unaffected.
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, p("/me"), e.key, nil).Code)
}
