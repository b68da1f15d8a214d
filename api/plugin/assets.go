package plugin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
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
	Livemode     bool              `json:"livemode"` // false for a test key's upload
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
	Livemode    bool   `json:"livemode"` // false for an upload a test key declared
}

func uploadPath(assetID string) string { return Base + "/uploads/" + assetID }

// UploadSigner presigns the PUT of an upload straight to the store (*blobstore.Store), bound to
// its type and length.
type UploadSigner interface {
	SignedPut(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (string, error)
}

func (h *Handler) createUpload(c *gin.Context) {
	var req UploadRequest
	if !h.bindJSON(c, &req) {
		return
	}
	inst := caller(c).Installation
	expires := time.Now().UTC().Add(h.UploadTTL)
	id, err := h.Engine.Uploads.DeclareUpload(c.Request.Context(), engine.UploadDeclaration{
		AccountID: inst.AccountID, InstallationID: inst.ID, Filename: req.Filename,
		ContentType: req.ContentType, SizeBytes: req.SizeBytes, ExpiresAt: expires})
	if err != nil {
		h.fail(c, err)
		return
	}
	// The bytes go to the API's PUT route, or straight to the store under the upload's incoming
	// key (engine.CollectUpload takes them from there when the upload is first used).
	uploadURL := h.Signer.URL(http.MethodPut, uploadPath(id), expires)
	if h.Uploads != nil {
		uploadURL, err = h.Uploads.SignedPut(c.Request.Context(), engine.IncomingKey(inst.AccountID, id), req.ContentType, req.SizeBytes, h.UploadTTL)
		if err != nil {
			h.fail(c, err)
			return
		}
	}
	c.PureJSON(http.StatusCreated, UploadResponse{
		AssetID:      id,
		UploadURL:    uploadURL,
		Method:       http.MethodPut,
		Headers:      map[string]string{"Content-Type": req.ContentType},
		ExpiresAt:    expires.Truncate(time.Second),
		MaxSizeBytes: req.SizeBytes,
		Livemode:     livemode(c),
	})
}

// receiveUpload accepts the PUT to a signed upload URL and streams its bytes into the upload
// (engine.ReceiveUpload). The bytes must match the declared size and type and arrive before the
// URL expires; otherwise nothing is stored and the asset stays unusable.
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
	body := &bodyReader{r: c.Request.Body}
	// The media type without its parameters, in lower case: its type and subtype are
	// case-insensitive (RFC 9110, 8.3.1), and the declared one is lower case.
	contentType := strings.ToLower(c.ContentType())
	up, err := h.Engine.Uploads.ReceiveUpload(c.Request.Context(), engine.UploadBytes{
		ID: id, ContentType: contentType, ContentLength: c.Request.ContentLength, Body: body})
	if _, refused := engine.As(err); err != nil && !refused && body.clientFailed(c.Request.Context()) {
		// The client's connection ended mid-body: its affair, not an outage of the service (a body
		// over its declared size is the engine's refusal, 413).
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, "The body ended before its declared Content-Length; PUT the whole file again while the upload URL is valid.")
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, AssetResponse{AssetID: up.AssetID, Status: up.Status, ContentType: up.ContentType,
		SizeBytes: up.SizeBytes, Width: up.Width, Height: up.Height, SHA256: up.SHA256, Livemode: !up.TestMode})
}

// bodyReader is a request body that remembers how reading it failed.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// clientFailed reports whether reading the body failed because of the client (its connection
// ended or broke before the body did), not because the request ran out of its time (a body too
// slow to arrive is the REQUEST_TIMEOUT's 503).
func (b *bodyReader) clientFailed(ctx context.Context) bool {
	return b.err != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) &&
		!errors.Is(b.err, context.DeadlineExceeded) && !errors.Is(b.err, os.ErrDeadlineExceeded)
}
