// Package files serves the signed download routes both APIs link to: /files/{id} (generated outputs
// and uploads), /files/{id}/thumbnail (the thumbnail of a prepared upload) and /files/ref/…
// (seeded reference images). They need no API key, only a valid signature, and answer errors in
// the plugin envelope through a Responder.
package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/reference"
	"github.com/shotflow/shotflow/models/refblob"
	"github.com/shotflow/shotflow/models/status"
)

// RefPrefix prefixes the signed download URLs of seeded reference images (thumbnails of the
// marketplace and the system presets' covers and galleries). The rest of the path is the blob key
// without its "reference/" prefix: {version}/{group}/{file}.
const RefPrefix = "/files/ref/"

// RefPath is the download path of the reference image stored under a blob key.
func RefPath(key string) string {
	return RefPrefix + strings.TrimPrefix(key, refblob.Prefix)
}

// Path is the download path of an asset.
func Path(assetID string) string { return jobview.FilePath(assetID) }

// ThumbnailPath is the download path of the thumbnail of a prepared upload.
func ThumbnailPath(assetID string) string { return jobview.ThumbnailPath(assetID) }

// cacheFiles is the Cache-Control of every file: private to the URL's holder, a day.
const cacheFiles = "private, max-age=86400"

var (
	refVersionRE = regexp.MustCompile(`^v[0-9]+$`)
	refFileRE    = regexp.MustCompile(`^[0-9a-f-]{36}\.jpg$`)
	refGroups    = []string{"models", "sceneries", "presets"}
)

// Responder answers the file routes' refusals in the API envelope.
type Responder interface {
	// FileNotFound answers 404: no such file.
	FileNotFound(c *gin.Context, message string)
	// FileForbidden answers 403: the signature is invalid.
	FileForbidden(c *gin.Context, message string)
	// FileURLExpired answers 410: the signed URL has expired.
	FileURLExpired(c *gin.Context, message string)
	// FilePurged answers 410: the file was removed by the retention policy.
	FilePurged(c *gin.Context, message string)
	// Unexpected answers an error that is not a refusal (503 for an outage, else 500).
	Unexpected(c *gin.Context, err error)
}

// Handler serves the file routes.
type Handler struct {
	Signer *urlsign.Signer
	Blobs  *blobstore.Store
	// Asset loads an asset by ID; an engine refusal of KindNotFound when there is none.
	Asset func(ctx context.Context, id string) (engine.FileAsset, error)
	// Errors answers refusals.
	Errors Responder
}

// Register mounts the file routes on r, each behind mw (the input check).
func (h *Handler) Register(r gin.IRoutes, mw ...gin.HandlerFunc) {
	r.GET("/files/:id", append(slices.Clone(mw), h.download(false))...)
	r.GET("/files/:id/thumbnail", append(slices.Clone(mw), h.download(true))...)
	r.GET(RefPrefix+":version/:group/:file", append(slices.Clone(mw), h.reference)...)
}

// verify checks the request's signature for path, answering when it fails.
func (h *Handler) verify(c *gin.Context, path, expiredMessage string) bool {
	err := h.Signer.Verify(http.MethodGet, path, c.Request.URL.Query(), time.Now())
	switch {
	case err == nil:
		return true
	case errors.Is(err, urlsign.ErrExpired):
		h.Errors.FileURLExpired(c, expiredMessage)
	default:
		h.Errors.FileForbidden(c, "The download URL signature is invalid.")
	}
	return false
}

// download streams a stored file, or the thumbnail of a prepared upload, to the holder of a
// signed URL.
func (h *Handler) download(thumbnail bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.Param("id")
		path := Path(id)
		if thumbnail {
			path = ThumbnailPath(id)
		}
		if !h.verify(c, path, "This download URL has expired; ask the API for a fresh one.") {
			return
		}
		asset, err := h.Asset(c.Request.Context(), id)
		if r, refused := engine.As(err); err != nil && (!refused || r.Kind != engine.KindNotFound) {
			h.Errors.Unexpected(c, err)
			return
		}
		if err != nil || asset.Status != status.AssetReady {
			h.Errors.FileNotFound(c, "No such file.")
			return
		}
		if asset.Purged {
			h.Errors.FilePurged(c, "This file was removed by the retention policy.")
			return
		}
		key, contentType, etag := asset.BlobKey, asset.ContentType, asset.SHA256
		if thumbnail {
			if asset.ThumbnailBlobKey == "" {
				h.Errors.FileNotFound(c, "This file has no thumbnail.")
				return
			}
			key, contentType, etag = asset.ThumbnailBlobKey, "image/jpeg", ""
		}
		if etag != "" && c.GetHeader("If-None-Match") == `"`+etag+`"` {
			c.Status(http.StatusNotModified)
			return
		}
		r, size, err := h.Blobs.Open(c.Request.Context(), key)
		if errors.Is(err, blobstore.ErrNotFound) {
			h.Errors.FilePurged(c, "This file is no longer stored.")
			return
		}
		if err != nil {
			h.Errors.Unexpected(c, err)
			return
		}
		defer r.Close()
		if etag != "" {
			c.Header("ETag", `"`+etag+`"`)
		}
		c.Header("Cache-Control", cacheFiles)
		c.DataFromReader(http.StatusOK, size, contentType, r, nil)
	}
}

// reference serves a seeded reference image to the holder of a signed URL, rendering it first if
// the blob store lacks it.
func (h *Handler) reference(c *gin.Context) {
	// A name that no reference file has is not found, whatever its signature: the router decodes
	// parameters after matching, so "..%2F" arrives here as "../", and the path rebuilt from it
	// is not the one that was signed.
	if !refVersionRE.MatchString(c.Param("version")) || !slices.Contains(refGroups, c.Param("group")) || !refFileRE.MatchString(c.Param("file")) {
		h.Errors.FileNotFound(c, "No such file.")
		return
	}
	key := refblob.Prefix + c.Param("version") + "/" + c.Param("group") + "/" + c.Param("file")
	if !h.verify(c, RefPath(key), "This download URL has expired; list the items again for a fresh one.") {
		return
	}
	data, err := reference.Image(c.Request.Context(), h.Blobs, key)
	if errors.Is(err, blobstore.ErrNotFound) {
		h.Errors.FileNotFound(c, "No such file.")
		return
	}
	if err != nil {
		h.Errors.Unexpected(c, err)
		return
	}
	sum := sha256.Sum256(data)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	c.Header("ETag", etag)
	c.Header("Cache-Control", cacheFiles)
	if c.GetHeader("If-None-Match") == etag {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, reference.ContentType, data)
}
