package plugin

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
)

// Permissions named per route in api/openapi.yaml (x-permissions).
const (
	PermJobsCreate          = "plugin.jobs:create"
	PermJobsRead            = "plugin.jobs:read"
	PermJobsCancel          = "plugin.jobs:cancel"
	PermAssetsUpload        = "plugin.assets:upload"
	PermCatalogRead         = "plugin.catalog:read"
	PermCatalogWrite        = "plugin.catalog:write"
	PermInstallationsManage = "plugin.installations.manage"
	PermWebhooksManage      = "plugin.webhooks:manage"
	PermPresetsRead         = "plugin.presets:read"
)

// ScopePermissions maps each key scope to the route permissions it grants. A scope that is itself
// a permission name grants that permission, so keys can also be issued with permission names.
var ScopePermissions = map[string][]string{
	"plugin.jobs:write":           {PermJobsCreate, PermJobsCancel},
	"plugin.jobs:read":            {PermJobsRead},
	"plugin.assets:write":         {PermAssetsUpload},
	"plugin.installations.manage": {PermInstallationsManage},
	"plugin.webhooks:manage":      {PermWebhooksManage},
	"plugin.presets:read":         {PermPresetsRead},
	"plugin.catalog:read":         {PermCatalogRead},
	"plugin.catalog:write":        {PermCatalogWrite},
}

// Permissions returns the sorted, de-duplicated permissions that a list of scopes grants.
func Permissions(scopes []string) []string {
	out := []string{}
	for _, s := range scopes {
		if perms, ok := ScopePermissions[s]; ok {
			out = append(out, perms...)
			continue
		}
		for _, perms := range ScopePermissions {
			if slices.Contains(perms, s) {
				out = append(out, s)
				break
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Caller is the authenticated installation of a request.
type Caller struct {
	Key          engine.APIKey
	Installation engine.Installation
	Permissions  []string
}

const callerKey = "shotflow.plugin.caller"

// caller returns the request's authenticated installation.
func caller(c *gin.Context) *Caller { return c.MustGet(callerKey).(*Caller) }

// Authenticate resolves X-Api-Key to an active installation (401 otherwise) and applies the key's
// rate limit (429 with X-RateLimit-* and Retry-After headers).
func (h *Handler) Authenticate(c *gin.Context) {
	raw := c.GetHeader("X-Api-Key")
	if raw == "" {
		h.Fail(c, http.StatusUnauthorized, CodeUnauthorized, "The X-Api-Key header is missing.")
		return
	}
	who, err := h.Engine.Accounts.AuthenticatePluginKey(c.Request.Context(), raw, time.Now())
	if err != nil {
		h.fail(c, err)
		return
	}
	key, inst := who.Key, who.Installation
	c.Set(callerKey, &Caller{Key: key, Installation: inst, Permissions: Permissions(key.Scopes)})
	reqctx.SetTenant(c, reqctx.Tenant{AccountID: inst.AccountID, InstallationID: inst.ID})
	h.rateLimit(c, key.ID, inst.RateLimitPerMin)
}

func (h *Handler) rateLimit(c *gin.Context, keyID string, limit int) {
	if limit <= 0 {
		limit = h.DefaultRateLimit
	}
	allowed, err := ratelimit.Admit(c.Request.Context(), h.Limiter, c.Writer.Header(), "plugin:"+keyID, limit)
	if err != nil {
		reqctx.Log(c, h.Log).Warn("shared rate limiter unavailable; the process's own limit applies, or none", zap.Error(err))
	}
	if !allowed {
		h.Fail(c, http.StatusTooManyRequests, CodeRateLimited, "Too many requests for this API key; retry after the Retry-After delay.")
	}
}

// Require answers 403 unless the key has at least one of the permissions.
func (h *Handler) Require(perms ...string) gin.HandlerFunc {
	return func(c *gin.Context) {
		have := caller(c).Permissions
		for _, p := range perms {
			if slices.Contains(have, p) {
				return
			}
		}
		h.Fail(c, http.StatusForbidden, CodeForbidden, "This API key lacks the permission "+strings.Join(perms, " or ")+".")
	}
}
