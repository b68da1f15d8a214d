package external

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
	_ "golang.org/x/image/webp" // decodes WebP uploads

	"github.com/shotflow/shotflow/internal/media/imageprep"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// MaxImageBytes is the largest image file a multipart route accepts (product photos, preset
// covers and galleries): 20 MiB.
const MaxImageBytes = 20 << 20

// cleanupTimeout bounds removing the files of a request that failed: the cleanup outlives the
// request's own deadline, but must not hang on an unreachable file store.
const cleanupTimeout = 5 * time.Second

// ImageTypes are the image types multipart routes accept, sniffed from the bytes.
var ImageTypes = []string{"image/png", "image/jpeg", "image/webp"}

// badRequest is a client error of a multipart route; its text names the field.
type badRequest struct{ message string }

func (e *badRequest) Error() string { return e.message }

func badField(format string, args ...any) error { return &badRequest{fmt.Sprintf(format, args...)} }

// parseForm returns the multipart/form-data body, which Input has parsed, bounded and checked;
// the error is a badRequest.
func parseForm(c *gin.Context) (*multipart.Form, error) {
	form, err := c.MultipartForm()
	if err != nil {
		return nil, badField("The body must be multipart/form-data: %v.", err)
	}
	return form, nil
}

// storeImage checks an uploaded file of the form field (an image of ImageTypes, at most
// MaxImageBytes, readable, at most imageprep.DefaultMaxPixels pixels), stores it and returns its
// asset row, not yet inserted: status ready, or processing when prepare is set (the caller then
// starts its PrepareInputWorkflow). A bad file is a badRequest naming the field.
func (h *Handler) storeImage(c *gin.Context, accountID, field string, fh *multipart.FileHeader, prepare bool) (*models.Asset, error) {
	if fh.Size > MaxImageBytes {
		return nil, badField("%s: %q is %d bytes; images may be at most %d MiB.", field, fh.Filename, fh.Size, MaxImageBytes>>20)
	}
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, badField("%s: %q is empty.", field, fh.Filename)
	}
	if len(data) > MaxImageBytes {
		return nil, badField("%s: %q is larger than %d MiB.", field, fh.Filename, MaxImageBytes>>20)
	}
	contentType := http.DetectContentType(data)
	if !slices.Contains(ImageTypes, contentType) {
		return nil, badField("%s: %q is %s; send a PNG, JPEG or WebP image.", field, fh.Filename, contentType)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, badField("%s: %q is not a readable image.", field, fh.Filename)
	}
	if cfg.Width*cfg.Height > imageprep.DefaultMaxPixels {
		return nil, badField("%s: %q is %dx%d pixels, more than %d in all.", field, fh.Filename, cfg.Width, cfg.Height, imageprep.DefaultMaxPixels)
	}
	now := time.Now().UTC()
	id := models.NewID()
	sum := sha256.Sum256(data)
	a := &models.Asset{
		ID: id, AccountID: accountID, Kind: models.AssetKindUpload, Status: status.AssetReady,
		Filename: path.Base(fh.Filename), ContentType: contentType, SizeBytes: int64(len(data)),
		BlobKey: fmt.Sprintf("uploads/%s/%s", accountID, id), Width: cfg.Width, Height: cfg.Height,
		SHA256: hex.EncodeToString(sum[:]), CreatedAt: now, UpdatedAt: now,
	}
	if prepare {
		a.Status = status.AssetProcessing
	}
	if err := h.Blobs.Put(c.Request.Context(), a.BlobKey, data, contentType); err != nil {
		return nil, &storeError{err}
	}
	return a, nil
}

// storeError is a failure of the file store (an external service when BLOB_URL names S3 or GCS).
type storeError struct{ err error }

func (e *storeError) Error() string { return "store file: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// failUpload answers a storeImage or parseForm error: 400 for a badRequest, 503 when the file
// store was unreachable or too slow (see internal), 502 when it refused the file, else 500.
func (h *Handler) failUpload(c *gin.Context, err error) {
	var br *badRequest
	var se *storeError
	switch {
	case errors.As(err, &br):
		h.fail(c, http.StatusBadRequest, br.message)
	case unavailable.InRequest(c.Request.Context(), err):
		h.internal(c, err)
	case errors.As(err, &se):
		_ = c.Error(err)
		h.fail(c, http.StatusBadGateway, "The file store did not accept the file; retry after a short delay.")
	default:
		h.internal(c, err)
	}
}
