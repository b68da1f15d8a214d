package external

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
)

const keyCtx = "shotflow.external.key"

// key returns the request's authenticated key.
func key(c *gin.Context) engine.APIKey { return c.MustGet(keyCtx).(engine.APIKey) }

// livemode is what every record the key sees says as livemode: false for a test key. Rows with no
// mode of their own (catalog photos, records, presets, webhook objects) are their account's, and
// a test key's account is its live account's test twin.
func livemode(c *gin.Context) bool { return !key(c).Test }

// rawKey reads the key from X-Api-Key, else from Authorization: Bearer; X-Api-Key wins.
func rawKey(c *gin.Context) string {
	if k := strings.TrimSpace(c.GetHeader("X-Api-Key")); k != "" {
		return k
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(c.GetHeader("Authorization")), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token)
	}
	return ""
}

// Authenticate resolves the key (401 when missing, malformed, unknown, expired or revoked; the
// database is read on every request, so a revocation holds at once in every API process), records
// its use at most once a minute (engine.KeyUseRecordedEvery), and applies its rate limit (429).
func (h *Handler) Authenticate(c *gin.Context) {
	raw := rawKey(c)
	if raw == "" {
		h.fail(c, http.StatusUnauthorized, "Missing API key: send it in the X-Api-Key header (or Authorization: Bearer).")
		return
	}
	k, err := h.Engine.Accounts.AuthenticateAccountKey(c.Request.Context(), raw, h.now())
	if err != nil {
		h.answer(c, err) // 401 for a key that is invalid, expired or revoked
		return
	}
	c.Set(keyCtx, k)
	reqctx.SetTenant(c, reqctx.Tenant{AccountID: k.AccountID})
	h.rateLimit(c, k.ID)
}

func (h *Handler) rateLimit(c *gin.Context, keyID string) {
	limit := h.RateLimit
	if limit <= 0 {
		limit = DefaultRateLimit
	}
	allowed, err := ratelimit.Admit(c.Request.Context(), h.Limiter, c.Writer.Header(), "external:"+keyID, limit)
	if err != nil {
		reqctx.Log(c, h.Log).Warn("shared rate limiter unavailable; the process's own limit applies, or none", zap.Error(err))
	}
	if !allowed {
		h.fail(c, http.StatusTooManyRequests, "Rate limit exceeded: "+strconv.Itoa(limit)+" requests per minute per key; retry after the Retry-After delay.")
	}
}

// Require answers 403 unless the key carries the scope.
func (h *Handler) Require(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !slices.Contains(key(c).Scopes, scope) {
			h.fail(c, http.StatusForbidden, "This API key lacks the scope "+scope+".")
		}
	}
}
