// Package external serves the external content API (api/external/openapi.yaml) under
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

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/models/presetspec"
)

// Base is the path prefix of every external route.
const Base = "/api/external"

// Scopes the routes require (api/external/openapi.yaml, Authentication and scopes); a key may also
// carry the reserved queue.nudge.
const (
	ScopeRegister = "content.register" // POST routes: create orders, trigger generation
	ScopeRead     = "content.read"     // GET routes; required by /orders
	ScopeWebhooks = "content.webhooks" // every /webhook-endpoints, /webhook-deliveries and /events route
	ScopeBilling  = "content.billing"  // GET, PUT and DELETE /spend-limit; GET and PUT /alerts
)

// DefaultRateLimit is the request budget of a key per minute.
const DefaultRateLimit = 60

// Handler serves the external API.
type Handler struct {
	Limiter ratelimit.Limiter
	Slots   ratelimit.Slots // caps the requests of a key open at once
	Signer  *urlsign.Signer
	// Files makes the download URLs of outputs and thumbnails (nil: the API's, signed by Signer).
	Files       *fileurl.Maker
	Log         *zap.Logger
	DownloadTTL time.Duration // validity of the output URLs it signs
	RateLimit   int           // requests per minute per key; 0 means DefaultRateLimit
	Now         func() time.Time
	// Engine runs the use cases both APIs share; one per process.
	Engine *engine.Engine
	// Secrets seals the answers an Idempotency-Key records that show a webhook endpoint's signing
	// secret (idempotency.go).
	Secrets engine.Sealer
}

// Body limits of the external routes (413 beyond them); a route that takes no body accepts
// inputcheck.NoBodyLimit bytes and ignores them.
const (
	maxJSONBody        = 64 << 10                                        // register-* and review routes: one short object
	maxProductFormBody = MaxImageBytes + 1<<20                           // POST /products: one image and two short fields
	maxPresetFormBody  = (1+presetspec.MaxGallery)*MaxImageBytes + 1<<20 // POST and PUT /presets: a cover, a gallery and text fields
)

// route mounts one route under Base that needs scope: its input check (Input, with the body it
// declares) around the key and the scope — parameters and headers before the key, the body just
// before the handler.
type route func(method, path string, body inputcheck.Body, scope string, handler gin.HandlerFunc)

// Register mounts the external routes on r.
func (h *Handler) Register(r gin.IRouter) {
	doc := h.Input(inputcheck.NoBody)
	r.GET(OpenAPIPath, doc.Head, doc.Content, serveOpenAPI)
	g := r.Group(Base)
	add := func(method, path string, body inputcheck.Body, scope string, handler gin.HandlerFunc) {
		in := h.Input(body)
		if method == http.MethodPost { // every POST honours Idempotency-Key (idempotency.go)
			handler = h.keyed(path, body.Kind != inputcheck.None, handler)
		}
		g.Handle(method, path, in.Head, h.Authenticate, h.Require(scope), in.Content, handler)
	}
	add(http.MethodGet, "/orders", inputcheck.NoBody, ScopeRead, h.listOrders)
	add(http.MethodGet, "/orders/:id", inputcheck.NoBody, ScopeRead, h.getOrder)
	add(http.MethodGet, "/orders/:id/events", inputcheck.NoBody, ScopeRead, h.orderEvents)
	add(http.MethodDelete, "/orders/:id", inputcheck.NoBody, ScopeRegister, h.cancelOrder)
	h.registerProducts(add)
	h.registerRecords(add)
	h.registerPresets(add)
	h.registerGeneration(add)
	h.registerWebhooks(add)
	h.registerAccount(add)
	h.registerUsage(add)
	h.registerSpendLimit(add)
	h.registerAlerts(add)
}

// Input is the external API's input check of a route that accepts body (inputcheck): 413 for a
// body over its limit, 400 naming the field for text PostgreSQL cannot store (NUL, invalid UTF-8).
func (h *Handler) Input(body inputcheck.Body) inputcheck.Checks {
	return inputcheck.New(body, func(c *gin.Context, r *inputcheck.Refusal) { h.fail(c, r.Status, r.Message) })
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
	h.fail(c, http.StatusMethodNotAllowed, "Method "+reqctx.Method(c)+" is not allowed on this route.")
}

// HeadersTooLarge answers an external request whose line and headers are longer than the router
// accepts (431).
func (h *Handler) HeadersTooLarge(c *gin.Context, message string) {
	h.fail(c, http.StatusRequestHeaderFieldsTooLarge, message)
}

// Recover answers a panic in an external route with a 500 in the external error body.
func (h *Handler) Recover(c *gin.Context, err any) {
	reqctx.Log(c, h.Log).Error("panic in handler", zap.Any("panic", err), zap.String("path", c.Request.URL.Path))
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
// internal/testsupport/contract validates the external tests' exchanges against it.
//
//go:embed openapi.yaml
var OpenAPIDocument []byte

// OpenAPIPath is where the API serves OpenAPIDocument; it needs no API key.
const OpenAPIPath = Base + "/openapi.yaml"

func serveOpenAPI(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "application/yaml; charset=utf-8", OpenAPIDocument)
}

// fileURLs makes the download URLs of the handler's answers.
func (h *Handler) fileURLs() *fileurl.Maker { return fileurl.Of(h.Files, h.Signer) }
