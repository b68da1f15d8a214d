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
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	_ "golang.org/x/image/webp" // reads dimensions of WebP uploads

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/models/status"
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
	inst := caller(c).Installation
	expires := time.Now().UTC().Add(h.UploadTTL)
	asset, err := h.Engine.Uploads.DeclareUpload(c.Request.Context(), engine.UploadDeclaration{
		AccountID: inst.AccountID, InstallationID: inst.ID, Filename: req.Filename,
		ContentType: req.ContentType, SizeBytes: req.SizeBytes, ExpiresAt: expires})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusCreated, UploadResponse{
		AssetID:      asset.ID,
		UploadURL:    h.Signer.URL(http.MethodPut, uploadPath(asset.ID), expires),
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
	asset, err := h.Engine.Uploads.FindUpload(ctx, id)
	if err != nil {
		h.fail(c, err)
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
	if err := h.Engine.Uploads.ClaimUpload(ctx, id); err != nil {
		h.fail(c, err)
		return
	}
	// Cleanup runs also when the request ran out of time or its client left: an upload left
	// claimed could never be sent again.
	cleanup, cancelCleanup := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelCleanup()
	release := func() { h.Engine.Uploads.ReleaseUpload(ctx, id) }

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
	// The bytes are stored: PrepareInputWorkflow checks and prepares them, then wakes the jobs
	// waiting for them.
	if err := h.Engine.Uploads.CompleteUpload(ctx, asset, engine.StoredUpload{SHA256: sum, Width: width, Height: height}); err != nil {
		release()
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, AssetResponse{AssetID: id, Status: status.AssetProcessing, ContentType: asset.ContentType,
		SizeBytes: n, Width: width, Height: height, SHA256: sum})
}
