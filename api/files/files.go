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
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/reqctx"
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
	// FileRangeNotSatisfiable answers 416: no byte of the requested range exists (the handler has
	// set Content-Range: bytes */{size}).
	FileRangeNotSatisfiable(c *gin.Context, message string)
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

// Register mounts the file routes on r, each behind mw (the input check); their answers allow any
// origin (AllowAnyOrigin, and the router's Preflight).
func (h *Handler) Register(r gin.IRoutes, mw ...gin.HandlerFunc) {
	mw = append([]gin.HandlerFunc{AllowAnyOrigin}, mw...)
	for _, route := range []struct {
		path  string
		serve gin.HandlerFunc
	}{
		{"/files/:id", h.download(false)},
		{"/files/:id/thumbnail", h.download(true)},
		{RefPrefix + ":version/:group/:file", h.reference},
	} {
		r.GET(route.path, append(slices.Clone(mw), route.serve)...)
	}
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
		if etag != "" && noneMatchHolds(c.GetHeader("If-None-Match"), `"`+etag+`"`) {
			fileHeaders(c, etag) // a 304 carries the ETag and Cache-Control of the 200 (RFC 9110, 15.4.5)
			c.Status(http.StatusNotModified)
			return
		}
		if !thumbnail && c.GetHeader("Range") != "" && ifRangeHolds(c.GetHeader("If-Range"), etag) {
			if h.serveRange(c, key, contentType, etag) {
				return
			}
		}
		var (
			r    io.ReadCloser
			size int64
		)
		if reqctx.IsHead(c) { // the headers of the GET, without reading the file from the store
			size, err = h.Blobs.Size(c.Request.Context(), key)
		} else {
			r, size, err = h.Blobs.Open(c.Request.Context(), key)
		}
		if h.storeFailed(c, err) {
			return
		}
		fileHeaders(c, etag)
		if !thumbnail {
			c.Header("Accept-Ranges", "bytes")
		}
		send(c, http.StatusOK, size, contentType, r)
	}
}

// send answers status with length bytes of contentType read from r, or, when r is nil (a HEAD
// served as its GET), the same headers without the bytes.
func send(c *gin.Context, status int, length int64, contentType string, r io.ReadCloser) {
	if r == nil {
		c.Header("Content-Type", contentType)
		c.Header("Content-Length", strconv.FormatInt(length, 10))
		c.Status(status)
		return
	}
	defer r.Close()
	c.DataFromReader(status, length, contentType, r, nil)
}

// storeFailed answers a failed read of a file from the store, and reports whether it did: a file
// no longer stored is 410, anything else unexpected.
func (h *Handler) storeFailed(c *gin.Context, err error) bool {
	switch {
	case errors.Is(err, blobstore.ErrNotFound):
		h.Errors.FilePurged(c, "This file is no longer stored.")
	case err != nil:
		h.Errors.Unexpected(c, err)
	}
	return err != nil
}

// fileHeaders sets the headers of every answer that carries a file's bytes.
func fileHeaders(c *gin.Context, etag string) {
	if etag != "" {
		c.Header("ETag", `"`+etag+`"`)
	}
	c.Header("Cache-Control", cacheFiles)
}

// serveRange answers a request for one byte range of the file under key: 206 with the range and
// its Content-Range, or 416 when no byte of it exists. It returns false, having answered nothing,
// when the Range header is not one range of bytes (several ranges, another unit, malformed): the
// whole file is then served, as RFC 9110 allows.
func (h *Handler) serveRange(c *gin.Context, key, contentType, etag string) bool {
	ctx := c.Request.Context()
	size, err := h.Blobs.Size(ctx, key)
	if h.storeFailed(c, err) {
		return true
	}
	rg, ok, satisfiable := parseRange(c.GetHeader("Range"), size)
	if !ok {
		return false
	}
	if !satisfiable {
		c.Header("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		h.Errors.FileRangeNotSatisfiable(c, "The requested range starts beyond the file's "+strconv.FormatInt(size, 10)+" bytes.")
		return true
	}
	var r io.ReadCloser
	if !reqctx.IsHead(c) {
		if r, _, err = h.Blobs.OpenRange(ctx, key, rg.start, rg.length); h.storeFailed(c, err) {
			return true
		}
	}
	fileHeaders(c, etag)
	c.Header("Accept-Ranges", "bytes")
	c.Header("Content-Range", fmt.Sprintf("bytes %d-%d/%d", rg.start, rg.start+rg.length-1, size))
	send(c, http.StatusPartialContent, rg.length, contentType, r)
	return true
}

// byteRange is a range of bytes resolved against a file's size: length bytes from start.
type byteRange struct{ start, length int64 }

// parseRange resolves a Range header against a file of size bytes (RFC 9110, section 14.1.2).
// ok is false when the header is not exactly one range of bytes: "bytes=first-last",
// "bytes=first-" or "bytes=-suffix". satisfiable is false when it is one, but no byte of it exists
// (its first byte is past the end, or a suffix of zero bytes).
func parseRange(header string, size int64) (r byteRange, ok, satisfiable bool) {
	unit, spec, found := strings.Cut(header, "=")
	if !found || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(spec, ",") {
		return byteRange{}, false, false
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return byteRange{}, false, false
	}
	if first == "" { // the last n bytes
		n, ok := position(last)
		if !ok {
			return byteRange{}, false, false
		}
		if n == 0 || size == 0 {
			return byteRange{}, true, false
		}
		n = min(n, size)
		return byteRange{start: size - n, length: n}, true, true
	}
	start, ok := position(first)
	if !ok {
		return byteRange{}, false, false
	}
	end := size - 1
	if last != "" {
		if end, ok = position(last); !ok || end < start {
			return byteRange{}, false, false
		}
		end = min(end, size-1)
	}
	if start >= size {
		return byteRange{}, true, false
	}
	return byteRange{start: start, length: end - start + 1}, true, true
}

// position reads a byte position or count of a Range: a non-empty run of ASCII digits
// (ParseInt also takes a sign). One too large for int64 lies past the end of any file, and is read
// as the largest int64: "to the end", or past it.
func position(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return math.MaxInt64, true
	}
	return n, err == nil
}

// noneMatchHolds reports whether an If-None-Match header names the entity tag etag (quoted, strong)
// as the client's current copy: "*", or a comma-separated list of tags one of which is etag,
// compared weakly (W/"x" matches "x"), as RFC 9110, section 13.1.2 asks of a GET.
func noneMatchHolds(header, etag string) bool {
	if header == "" {
		return false
	}
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}

// ifRangeHolds reports whether a request's If-Range (RFC 9110, section 13.1.5) lets its Range
// apply: there is none, or it is the file's strong entity tag. A date, a weak tag or another tag
// asks for the whole file (the service sends no Last-Modified, so a date cannot be checked).
func ifRangeHolds(ifRange, etag string) bool {
	return ifRange == "" || (etag != "" && ifRange == `"`+etag+`"`)
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
	if noneMatchHolds(c.GetHeader("If-None-Match"), etag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, reference.ContentType, data)
}
