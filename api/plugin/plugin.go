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

// JobTypes are the job types the plugin API creates; its model list and prices show only these.
var JobTypes = []string{models.JobTypePhotoShoot, models.JobTypePackshot}

// Register mounts the plugin API routes on r.
func (h *Handler) Register(r *gin.Engine) {
	useJSONFieldNames()
	// Signed upload URLs authenticate by their signature, not by API key.
	r.PUT(Base+"/uploads/:id", h.receiveUpload)
	// Signed download URLs of seeded reference images (thumbnails, preset covers and galleries).
	r.GET(referenceFileRoute, h.referenceFile)

	g := r.Group(Base, h.Authenticate)
	g.GET("/me", h.me)
	g.GET("/ai-models", h.Require(PermCatalogRead), h.aiModels)
	g.GET("/aspect-ratios", h.Require(PermCatalogRead), h.aspectRatios)
	g.GET("/pricing", h.Require(PermCatalogRead), h.pricing)
	g.GET("/models", h.Require(PermCatalogRead), h.listModels)
	g.GET("/sceneries", h.Require(PermCatalogRead), h.listSceneries)
	g.GET("/presets", h.Require(PermCatalogRead, PermJobsRead, PermPresetsRead), h.listPresets)
	g.POST("/assets/upload", h.Require(PermAssetsUpload), h.createUpload)
	g.POST("/packshots", h.Require(PermCatalogWrite), h.registerPackshots)
	g.GET("/packshots", h.Require(PermCatalogRead), h.listPackshots)
	g.DELETE("/packshots/:id_or_ref", h.Require(PermCatalogWrite), h.deletePackshot)
	g.POST("/images", h.Require(PermCatalogWrite), h.registerImages)
	g.GET("/products", h.Require(PermCatalogRead), h.listProducts)
	g.GET("/products/:id_or_ref", h.Require(PermCatalogRead), h.getProduct)
	g.DELETE("/products/:id_or_ref", h.Require(PermCatalogWrite), h.deleteProduct)
	g.POST("/jobs", h.Require(PermJobsCreate), h.createSession)
	g.POST("/jobs/batch", h.Require(PermJobsCreate), h.createBatch)
	g.GET("/jobs/:id", h.Require(PermJobsRead), h.getJob)
	g.GET("/jobs", h.Require(PermJobsRead), h.listJobs)
	g.DELETE("/jobs/:id", h.Require(PermJobsCancel), h.cancelJob)
	g.POST("/jobs/:id/refresh-url", h.Require(PermJobsRead), h.refreshURL)
	g.POST("/jobs/:id/accept", h.Require(PermJobsRead), h.acceptJob)
	g.POST("/jobs/:id/reject", h.Require(PermJobsRead), h.rejectJob)
	g.GET("/orders/:id", h.Require(PermJobsRead), h.getOrder)
	g.POST("/orders/:id/clone", h.Require(PermJobsCreate), h.cloneOrder)
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
