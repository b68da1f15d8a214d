package plugin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // reads dimensions of JPEG uploads
	_ "image/png"  // reads dimensions of PNG uploads
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	_ "golang.org/x/image/webp" // reads dimensions of WebP uploads
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/blobstore"
	"github.com/shotflow/shotflow/internal/urlsign"
	"github.com/shotflow/shotflow/models"
)

// MaxUploadBytes is the largest file POST /assets/upload accepts: 50 MiB.
const MaxUploadBytes = 50 << 20

// UploadContentTypes are the image types an upload may declare.
var UploadContentTypes = []string{"image/png", "image/jpeg", "image/webp"}

// UploadRequest is the body of POST /assets/upload.
type UploadRequest struct {
	Mode        string `json:"mode" binding:"required,oneof=presigned"`
	Filename    string `json:"filename" binding:"required,max=255"`
	ContentType string `json:"content_type" binding:"required,oneof=image/png image/jpeg image/webp"`
	SizeBytes   int64  `json:"size_bytes" binding:"required,min=1,max=52428800"`
}

// UploadResponse tells the client where and how to PUT the bytes.
type UploadResponse struct {
	AssetID      string            `json:"asset_id"`
	UploadURL    string            `json:"upload_url"`
	Method       string            `json:"method"`
	Headers      map[string]string `json:"headers"`
	ExpiresAt    time.Time         `json:"expires_at"`
	MaxSizeBytes int64             `json:"max_size_bytes"`
}

// AssetResponse describes a stored upload.
type AssetResponse struct {
	AssetID     string `json:"asset_id"`
	Status      string `json:"status"`
	ContentType string `json:"content_type"`
	SizeBytes   int64  `json:"size_bytes"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	SHA256      string `json:"sha256"`
}

func uploadPath(assetID string) string { return Base + "/uploads/" + assetID }

func (h *Handler) createUpload(c *gin.Context) {
	var req UploadRequest
	if !h.bindJSON(c, &req) {
		return
	}
	who := caller(c)
	now := time.Now().UTC()
	expires := now.Add(h.UploadTTL)
	id := models.NewID()
	asset := models.Asset{
		ID: id, AccountID: who.Installation.AccountID, InstallationID: &who.Installation.ID,
		Kind: models.AssetKindUpload, Status: models.AssetAwaitingUpload, Filename: path.Base(req.Filename),
		ContentType: req.ContentType, SizeBytes: req.SizeBytes,
		BlobKey:         fmt.Sprintf("uploads/%s/%s", who.Installation.AccountID, id),
		UploadExpiresAt: &expires, CreatedAt: now, UpdatedAt: now,
	}
	if err := h.DB.WithContext(c.Request.Context()).Create(&asset).Error; err != nil {
		h.internal(c, err)
		return
	}
	c.PureJSON(http.StatusCreated, UploadResponse{
		AssetID:      id,
		UploadURL:    h.Signer.URL(http.MethodPut, uploadPath(id), expires),
		Method:       http.MethodPut,
		Headers:      map[string]string{"Content-Type": req.ContentType},
		ExpiresAt:    expires.Truncate(time.Second),
		MaxSizeBytes: req.SizeBytes,
	})
}

// receiveUpload accepts the PUT to a signed upload URL. The bytes must match the declared size and
// type and arrive before the URL expires; otherwise nothing is stored and the asset stays unusable.
func (h *Handler) receiveUpload(c *gin.Context) {
	id := c.Param("id")
	err := h.Signer.Verify(http.MethodPut, uploadPath(id), c.Request.URL.Query(), time.Now())
	if errors.Is(err, urlsign.ErrExpired) {
		h.Fail(c, http.StatusConflict, CodeUploadConflict, "The upload URL has expired; request a new one with POST /assets/upload.")
		return
	}
	if err != nil {
		h.Fail(c, http.StatusForbidden, CodeForbidden, "The upload URL signature is invalid.")
		return
	}
	ctx := c.Request.Context()
	db := h.DB.WithContext(ctx)
	var asset models.Asset
	err = db.Take(&asset, "id = ? AND kind = ?", id, models.AssetKindUpload).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		h.Fail(c, http.StatusNotFound, CodeNotFound, "No such upload.")
		return
	}
	if err != nil {
		h.internal(c, err)
		return
	}
	if ct := c.ContentType(); ct != asset.ContentType {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, fmt.Sprintf("Content-Type is %q but the upload was declared as %q.", ct, asset.ContentType))
		return
	}
	if cl := c.Request.ContentLength; cl >= 0 && cl != asset.SizeBytes {
		status, code := http.StatusBadRequest, CodeInvalidInput
		if cl > asset.SizeBytes {
			status, code = http.StatusRequestEntityTooLarge, CodePayloadTooLarge
		}
		h.Fail(c, status, code, fmt.Sprintf("Content-Length is %d but the upload was declared as %d bytes.", cl, asset.SizeBytes))
		return
	}
	// Claim the upload so two concurrent PUTs cannot both write it.
	claim := db.Model(&models.Asset{}).
		Where("id = ? AND status = ? AND upload_expires_at > ?", id, models.AssetAwaitingUpload, time.Now().UTC()).
		Update("status", models.AssetUploading)
	if claim.Error != nil {
		h.internal(c, claim.Error)
		return
	}
	if claim.RowsAffected == 0 {
		h.Fail(c, http.StatusConflict, CodeUploadConflict, "This upload URL was already used or has expired.")
		return
	}
	// Cleanup runs also when the request ran out of time or its client left: an upload left
	// claimed could never be sent again.
	cleanup, cancelCleanup := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelCleanup()
	release := func() {
		if err := h.DB.WithContext(cleanup).Model(&models.Asset{}).Where("id = ? AND status = ?", id, models.AssetUploading).
			Update("status", models.AssetAwaitingUpload).Error; err != nil {
			h.Log.Warn("release upload claim", zap.String("asset_id", id), zap.Error(err))
		}
	}

	body := bufio.NewReaderSize(c.Request.Body, 64<<10)
	head, _ := body.Peek(64 << 10)
	if sniffed := http.DetectContentType(head); sniffed != asset.ContentType {
		release()
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, fmt.Sprintf("The bytes are %s, not the declared %s.", sniffed, asset.ContentType))
		return
	}
	var width, height int
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(head)); err == nil {
		width, height = cfg.Width, cfg.Height
	}
	n, sum, err := h.Blobs.PutReader(ctx, asset.BlobKey, body, asset.ContentType, asset.SizeBytes)
	if err == nil && n != asset.SizeBytes {
		_ = h.Blobs.Delete(cleanup, asset.BlobKey)
		err = fmt.Errorf("received %d bytes but the upload was declared as %d", n, asset.SizeBytes)
		release()
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, "The upload is incomplete: "+err.Error()+".")
		return
	}
	if err != nil {
		release()
		if errors.Is(err, blobstore.ErrTooLarge) {
			h.Fail(c, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "The upload is larger than declared ("+strconv.FormatInt(asset.SizeBytes, 10)+" bytes).")
			return
		}
		h.internal(c, err)
		return
	}
	now := time.Now().UTC()
	if err := db.Model(&asset).Updates(map[string]any{
		"status": models.AssetProcessing, "sha256": sum, "width": width, "height": height, "updated_at": now,
	}).Error; err != nil {
		release()
		h.internal(c, err)
		return
	}
	// The bytes are stored: PrepareInputWorkflow checks and prepares them, then wakes the jobs
	// waiting for them. Should this start fail, the worker's sweep starts it.
	asset.Status = models.AssetProcessing
	if err := h.Engine.StartPrepare(ctx, &asset); err != nil {
		h.Log.Warn("input preparation not started; the sweep will start it", zap.String("asset_id", id), zap.Error(err))
	}
	c.PureJSON(http.StatusOK, AssetResponse{AssetID: id, Status: models.AssetProcessing, ContentType: asset.ContentType,
		SizeBytes: n, Width: width, Height: height, SHA256: sum})
}
