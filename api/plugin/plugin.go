// Package plugin serves the plugin integration API (plugin-api-v1.md) under /api/v1/plugin.
package plugin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities/generate"
	"github.com/shotflow/shotflow/internal/blobstore"
	"github.com/shotflow/shotflow/internal/intake"
	"github.com/shotflow/shotflow/internal/ratelimit"
	"github.com/shotflow/shotflow/internal/urlsign"
	"github.com/shotflow/shotflow/models"
)

// Handler serves the plugin API.
type Handler struct {
	DB               *gorm.DB
	Intake           *intake.Starter
	Blobs            *blobstore.Store
	Signer           *urlsign.Signer
	Generator        *generate.Registry
	Limiter          ratelimit.Limiter
	Log              *zap.Logger
	DocsURL          string
	DefaultRateLimit int
	DownloadTTL      time.Duration
	UploadTTL        time.Duration
	SubProcessors    []SubProcessor
	Secrets          models.Sealer // seals webhook secrets at rest (rotate-hmac)
}

// Base is the path prefix of the plugin API.
const Base = "/api/v1/plugin"

// Register mounts the plugin API routes on r.
func (h *Handler) Register(r *gin.Engine) {
	useJSONFieldNames()
	// Signed upload URLs authenticate by their signature, not by API key.
	r.PUT(Base+"/uploads/:id", h.receiveUpload)

	g := r.Group(Base, h.Authenticate)
	g.GET("/me", h.me)
	g.GET("/ai-models", h.Require(PermCatalogRead), h.aiModels)
	g.GET("/aspect-ratios", h.Require(PermCatalogRead), h.aspectRatios)
	g.POST("/assets/upload", h.Require(PermAssetsUpload), h.createUpload)
	g.POST("/packshots", h.Require(PermCatalogWrite), h.registerPackshots)
	g.POST("/jobs", h.Require(PermJobsCreate), h.createSession)
	g.GET("/jobs/:id", h.Require(PermJobsRead), h.getJob)
	g.DELETE("/jobs/:id", h.Require(PermJobsCancel), h.cancelJob)
	g.GET("/orders/:id", h.Require(PermJobsRead), h.getOrder)
	g.POST("/webhooks/:delivery_id/replay", h.Require(PermWebhooksManage), h.replayWebhook)
	g.POST("/installations/:id/rotate-hmac", h.Require(PermInstallationsManage), h.rotateHMAC)
}

// NotFound answers an unknown route of the plugin API with the envelope.
func (h *Handler) NotFound(c *gin.Context) {
	h.Fail(c, http.StatusNotFound, CodeNotFound, "No such route: "+c.Request.Method+" "+c.Request.URL.Path)
}

// Recover answers a panic with the 500 envelope.
func (h *Handler) Recover(c *gin.Context, err any) {
	h.Log.Error("panic in handler", zap.Any("panic", err), zap.String("path", c.Request.URL.Path))
	h.Fail(c, http.StatusInternalServerError, CodeInternal, "An unexpected error occurred.")
}
