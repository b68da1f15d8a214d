// Package external serves the external content API (external-content-api.md) under
// /api/external: team accounts' keys (mk_live_…), scopes, rate limits and the {error} envelope,
// over the same order engine and read model as the plugin API.
package external

import (
	_ "embed"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities/generate"
	"github.com/shotflow/shotflow/internal/blobstore"
	"github.com/shotflow/shotflow/internal/intake"
	"github.com/shotflow/shotflow/internal/ratelimit"
	"github.com/shotflow/shotflow/internal/unavailable"
	"github.com/shotflow/shotflow/internal/urlsign"
)

// Base is the path prefix of every external route.
const Base = "/api/external"

// Scopes the routes require (external-content-api.md, Authentication); models.ExternalScopeNames
// lists every scope a key may carry, including the reserved queue.nudge.
const (
	ScopeRegister = "content.register" // POST routes: create orders, trigger generation
	ScopeRead     = "content.read"     // GET routes; required by /orders
)

// DefaultRateLimit is the request budget of a key per minute.
const DefaultRateLimit = 60

// Handler serves the external API.
type Handler struct {
	DB          *gorm.DB
	Intake      *intake.Starter    // creates orders on the engine and starts input preparation
	Blobs       *blobstore.Store   // uploaded product photos and preset images
	Generator   *generate.Registry // the configured generation models
	Limiter     ratelimit.Limiter
	Signer      *urlsign.Signer
	Log         *zap.Logger
	DownloadTTL time.Duration // validity of the output URLs it signs
	RateLimit   int           // requests per minute per key; 0 means DefaultRateLimit
	Now         func() time.Time

	generatorCache // providers recently seen with an active generator
}

// Register mounts the external routes on r.
func (h *Handler) Register(r gin.IRouter) {
	r.GET(OpenAPIPath, serveOpenAPI)
	g := r.Group(Base, h.Authenticate)
	read, register := h.Require(ScopeRead), h.Require(ScopeRegister)
	g.GET("/orders", read, h.listOrders)
	g.GET("/orders/:id", read, h.getOrder)
	h.registerProducts(g, read, register)
	h.registerRecords(g, read, register)
	h.registerPresets(g, read, register)
	h.registerGeneration(g, register)
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// fail answers the external error body {error: message} and stops the chain. A 503 always
// carries Retry-After (unavailable.RetryAfterSeconds unless the handler chose another delay).
func (h *Handler) fail(c *gin.Context, status int, message string) {
	if status == http.StatusServiceUnavailable && c.Writer.Header().Get("Retry-After") == "" {
		c.Header("Retry-After", strconv.Itoa(unavailable.RetryAfterSeconds))
	}
	c.AbortWithStatusJSON(status, gin.H{"error": message})
}

// NotFound answers an unknown external route.
func (h *Handler) NotFound(c *gin.Context) { h.fail(c, http.StatusNotFound, "No such route.") }

// MethodNotAllowed answers a known external path with another method.
func (h *Handler) MethodNotAllowed(c *gin.Context) {
	h.fail(c, http.StatusMethodNotAllowed, "Method "+c.Request.Method+" is not allowed on this route.")
}

// Recover answers a panic in an external route with a 500 in the external error body.
func (h *Handler) Recover(c *gin.Context, err any) {
	h.Log.Error("panic in handler", zap.Any("panic", err), zap.String("path", c.Request.URL.Path))
	h.fail(c, http.StatusInternalServerError, "Internal error; retry after a short delay.")
}

// internal logs err and answers it without detail: 503 when a dependency is unavailable or the
// request ran out of time, else 500 (a bug).
func (h *Handler) internal(c *gin.Context, err error) {
	_ = c.Error(err)
	if unavailable.InRequest(c.Request.Context(), err) {
		h.fail(c, http.StatusServiceUnavailable, "A service this request needs is unavailable or did not answer in time; retry after the Retry-After delay.")
		return
	}
	h.fail(c, http.StatusInternalServerError, "Internal error; retry after a short delay.")
}

// OpenAPIDocument is the OpenAPI 3.1 description of the external API (api/external/openapi.yaml);
// internal/contract validates the external tests' exchanges against it.
//
//go:embed openapi.yaml
var OpenAPIDocument []byte

// OpenAPIPath is where the API serves OpenAPIDocument; it needs no API key.
const OpenAPIPath = Base + "/openapi.yaml"

func serveOpenAPI(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "application/yaml; charset=utf-8", OpenAPIDocument)
}
