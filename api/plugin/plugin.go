// Package plugin serves the plugin integration API (api/openapi.yaml) under /api/v1/plugin.
package plugin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/models/jobtype"
)

// Handler serves the plugin API.
type Handler struct {
	// Engine runs the use cases both APIs share, and holds the model catalog; one per process.
	Engine *engine.Engine
	Signer *urlsign.Signer
	// Files makes the download URLs of outputs and thumbnails (nil: the API's, signed by Signer).
	Files *fileurl.Maker
	// Uploads presigns upload URLs straight to the store (nil: the API's PUT route, signed by
	// Signer).
	Uploads          UploadSigner
	Limiter          ratelimit.Limiter
	Slots            ratelimit.Slots // caps the requests of a key open at once
	Log              *zap.Logger
	DocsURL          string
	DefaultRateLimit int
	DownloadTTL      time.Duration
	UploadTTL        time.Duration
	SubProcessors    []SubProcessor
	Secrets          engine.Sealer // seals webhook secrets at rest (rotate-hmac)
}

// Base is the path prefix of the plugin API.
const Base = "/api/v1/plugin"

// JobTypes are the job types the plugin API creates; its model list and prices show only these.
var JobTypes = []string{jobtype.PhotoShoot, jobtype.Packshot}

// Body limits of the plugin routes (413 payload_too_large beyond them); a route that takes no body
// accepts inputcheck.NoBodyLimit bytes and ignores them.
const (
	maxSmallJSONBytes   = 64 << 10 // POST /assets/upload: one short object
	maxCatalogBodyBytes = 1 << 20  // POST /images, POST /packshots: up to 100 short items
)

// Register mounts the plugin API routes on r. Each route checks its input (Input, with the body it
// declares) around the key and the key's permission: parameters and headers before the key, the
// body after the permission, just before the handler. The mutating routes (all but
// POST /jobs/batch) honour Idempotency-Key, in the handler's place (keyed, idempotency.go).
func (h *Handler) Register(r *gin.Engine) {
	// Signed upload URLs authenticate by their signature, not by API key; the handler holds the
	// bytes to the size the upload declared.
	upload := h.Input(inputcheck.StreamBody(MaxUploadBytes))
	r.PUT(files.UploadRoute, files.AllowAnyOrigin, upload.Head, upload.Content, h.receiveUpload)

	g := r.Group(Base)
	// route mounts a handler that needs one of perms (none: any valid key).
	route := func(method, path string, body inputcheck.Body, handler gin.HandlerFunc, perms ...string) {
		in := h.Input(body)
		chain := []gin.HandlerFunc{in.Head, h.Authenticate}
		if len(perms) > 0 {
			chain = append(chain, h.Require(perms...))
		}
		g.Handle(method, path, append(chain, in.Content, handler)...)
	}
	// mutation mounts a route that honours Idempotency-Key under rule (idempotency.go).
	mutation := func(rule keyRule, method, path string, body inputcheck.Body, handler gin.HandlerFunc, perms ...string) {
		route(method, path, body, h.keyed(rule, body.Kind == inputcheck.JSON, handler), perms...)
	}
	get, post, put, patch, del := http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	noBody, jsonBody := inputcheck.NoBody, inputcheck.JSONBody
	route(get, "/me", noBody, h.me)
	mutation(keyOptional, put, "/test/credits", jsonBody(maxSmallJSONBytes), h.setTestCredits, PermJobsCreate)
	route(get, "/ai-models", noBody, h.aiModels, PermCatalogRead)
	route(get, "/aspect-ratios", noBody, h.aspectRatios, PermCatalogRead)
	route(get, "/pricing", noBody, h.pricing, PermCatalogRead)
	route(get, "/models", noBody, h.listModels, PermCatalogRead)
	route(get, "/sceneries", noBody, h.listSceneries, PermCatalogRead)
	route(get, "/presets", noBody, h.listPresets, PermCatalogRead, PermJobsRead, PermPresetsRead)
	mutation(keyOptional, post, "/assets/upload", jsonBody(maxSmallJSONBytes), h.createUpload, PermAssetsUpload)
	mutation(keyOptional, post, "/packshots", jsonBody(maxCatalogBodyBytes), h.registerPackshots, PermCatalogWrite)
	route(get, "/packshots", noBody, h.listPackshots, PermCatalogRead)
	mutation(keyOptional, del, "/packshots/:id_or_ref", noBody, h.deletePackshot, PermCatalogWrite)
	mutation(keyOptional, post, "/images", jsonBody(maxCatalogBodyBytes), h.registerImages, PermCatalogWrite)
	route(get, "/products", noBody, h.listProducts, PermCatalogRead)
	route(get, "/products/:id_or_ref", noBody, h.getProduct, PermCatalogRead)
	mutation(keyOptional, del, "/products/:id_or_ref", noBody, h.deleteProduct, PermCatalogWrite)
	mutation(keySession, post, "/jobs", jsonBody(maxSessionBodyBytes), h.createSession, PermJobsCreate)
	route(post, "/jobs/batch", jsonBody(maxBatchBodyBytes), h.createBatch, PermJobsCreate)
	route(get, "/jobs/:id", noBody, h.getJob, PermJobsRead)
	route(get, "/jobs", noBody, h.listJobs, PermJobsRead)
	mutation(keyOptional, del, "/jobs/:id", noBody, h.cancelJob, PermJobsCancel)
	mutation(keyOptional, post, "/jobs/:id/refresh-url", noBody, h.refreshURL, PermJobsRead)
	mutation(keyOptional, post, "/jobs/:id/accept", noBody, h.acceptJob, PermJobsRead)
	mutation(keyOptional, post, "/jobs/:id/reject", noBody, h.rejectJob, PermJobsRead)
	route(get, "/usage", noBody, h.usage, PermJobsRead)
	route(get, "/orders/:id", noBody, h.getOrder, PermJobsRead)
	route(get, "/orders/:id/events", noBody, h.orderEvents, PermJobsRead)
	mutation(keyRequiredSession, post, "/orders/:id/clone", jsonBody(maxSessionBodyBytes), h.cloneOrder, PermJobsCreate)
	mutation(keyOptional, post, "/webhooks/:delivery_id/replay", noBody, h.replayWebhook, PermWebhooksManage)
	mutation(keyOptional, post, "/webhook-endpoints", jsonBody(maxSmallJSONBytes), h.createEndpoint, PermWebhooksManage)
	route(get, "/webhook-endpoints", noBody, h.listEndpoints, PermWebhooksManage)
	route(get, "/webhook-endpoints/:id", noBody, h.getEndpoint, PermWebhooksManage)
	mutation(keyOptional, patch, "/webhook-endpoints/:id", jsonBody(maxSmallJSONBytes), h.updateEndpoint, PermWebhooksManage)
	mutation(keyOptional, del, "/webhook-endpoints/:id", noBody, h.deleteEndpoint, PermWebhooksManage)
	mutation(keyOptional, post, "/webhook-endpoints/:id/test", jsonBody(maxSmallJSONBytes), h.testEndpoint, PermWebhooksManage)
	mutation(keyOptional, post, "/webhook-endpoints/:id/recover", jsonBody(maxSmallJSONBytes), h.recoverEndpoint, PermWebhooksManage)
	route(get, "/webhook-deliveries", noBody, h.listDeliveries, PermWebhooksManage)
	route(get, "/webhook-deliveries/:id", noBody, h.getDelivery, PermWebhooksManage)
	route(get, "/events", noBody, h.listEvents, PermWebhooksManage)
	route(get, "/events/:id", noBody, h.getEvent, PermWebhooksManage)
	mutation(keySealed, post, "/installations/:id/rotate-hmac", noBody, h.rotateHMAC, PermInstallationsManage)
	route(get, "/spend-limit", noBody, h.getSpendLimit, PermInstallationsManage)
	mutation(keyOptional, put, "/spend-limit", jsonBody(maxSmallJSONBytes), h.setSpendLimit, PermInstallationsManage)
	mutation(keyOptional, del, "/spend-limit", noBody, h.clearSpendLimit, PermInstallationsManage)
	route(get, "/alerts", noBody, h.getAlerts, PermInstallationsManage)
	mutation(keyOptional, put, "/alerts", jsonBody(maxSmallJSONBytes), h.setAlerts, PermInstallationsManage)
}

// Input is the plugin API's input check of a route that accepts body (inputcheck): 413
// payload_too_large for a body over its limit, 400 invalid_input naming the field for text
// PostgreSQL cannot store (NUL, invalid UTF-8).
func (h *Handler) Input(body inputcheck.Body) inputcheck.Checks {
	return inputcheck.New(body, func(c *gin.Context, r *inputcheck.Refusal) {
		code := CodeInvalidInput
		if r.Status == http.StatusRequestEntityTooLarge {
			code = CodePayloadTooLarge
		}
		h.Fail(c, r.Status, code, r.Message)
	})
}

// NotFound answers an unknown route of the plugin API with the envelope.
func (h *Handler) NotFound(c *gin.Context) {
	h.Fail(c, http.StatusNotFound, CodeNotFound, "No such route: "+reqctx.Method(c)+" "+c.Request.URL.Path)
}

// Recover answers a panic with the 500 envelope.
func (h *Handler) Recover(c *gin.Context, err any) {
	reqctx.Log(c, h.Log).Error("panic in handler", zap.Any("panic", err), zap.String("path", c.Request.URL.Path))
	h.Fail(c, http.StatusInternalServerError, CodeInternal, "An unexpected error occurred.")
}
