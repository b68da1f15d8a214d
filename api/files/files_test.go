package files_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
	"github.com/shotflow/shotflow/models/status"
)

// fixture serves the file routes over a blob store, with assets looked up in a map.
type fixture struct {
	t      *testing.T
	router *gin.Engine
	signer *urlsign.Signer
	blobs  *blobstore.Store
	assets map[string]engine.FileAsset
}

func newFixture(t *testing.T, blobURL string) *fixture {
	t.Helper()
	blobs, err := blobstore.Open(context.Background(), blobURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	f := &fixture{t: t, blobs: blobs, signer: urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "http://files.test"),
		assets: map[string]engine.FileAsset{}}
	gin.SetMode(gin.TestMode)
	f.router = gin.New()
	h := &files.Handler{Signer: f.signer, Blobs: blobs, Errors: &plugin.Handler{DocsURL: "http://docs.test"},
		Asset: func(_ context.Context, id string) (engine.FileAsset, error) {
			a, ok := f.assets[id]
			if !ok {
				return engine.FileAsset{}, &engine.Error{Kind: engine.KindNotFound, Message: "No such file."}
			}
			return a, nil
		}}
	h.Register(f.router)
	return f
}

// store stores data as a ready file with a thumbnail and returns its ID.
func (f *fixture) store(data []byte, contentType string) string {
	f.t.Helper()
	id := fmt.Sprintf("asset-%d", len(f.assets))
	a := engine.FileAsset{Status: status.AssetReady, BlobKey: "outputs/" + id, ContentType: contentType,
		SHA256: fmt.Sprintf("%064x", len(f.assets)+1), ThumbnailBlobKey: "outputs/" + id + ".thumb.jpg"}
	if err := f.blobs.Put(context.Background(), a.BlobKey, data, contentType); err != nil {
		f.t.Fatal(err)
	}
	if err := f.blobs.Put(context.Background(), a.ThumbnailBlobKey, []byte("thumbnail bytes"), "image/jpeg"); err != nil {
		f.t.Fatal(err)
	}
	f.assets[id] = a
	return id
}

// get requests the signed URL of path with the headers (name, value, …).
func (f *fixture) get(path string, header ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	u, err := url.Parse(f.signer.URL(http.MethodGet, path, time.Now().Add(time.Hour)))
	if err != nil {
		f.t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, u.RequestURI(), nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.router.ServeHTTP(rec, req)
	return rec
}

// errorCode is the code of a plugin error envelope.
func errorCode(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("not an error envelope: %d %s", rec.Code, rec.Body)
	}
	return body.Error.Code
}

// stores are the stores the ranges are checked on: a directory and a real S3 server.
func stores(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"file": func(t *testing.T) string { return "file://" + t.TempDir() },
		"s3": func(t *testing.T) string {
			srv := s3server.Start(t)
			srv.Setenv(t)
			return srv.URL()
		},
	}
}

// TestDownloadRanges asks for byte ranges of a stored file: one satisfiable range answers 206 with
// its bytes and Content-Range, one past the end 416 with the file's size in the plugin envelope,
// and a header that is not one byte range (several ranges, another unit, malformed) or whose
// If-Range does not match the whole file with Accept-Ranges: bytes.
func TestDownloadRanges(t *testing.T) {
	for name, blobURL := range stores(t) {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, blobURL(t))
			data := make([]byte, 1000)
			for i := range data {
				data[i] = byte(rand.Uint32())
			}
			id := f.store(data, "video/mp4")
			etag := `"` + f.assets[id].SHA256 + `"`
			size := strconv.Itoa(len(data))

			full := f.get(files.Path(id))
			if full.Code != http.StatusOK || full.Body.String() != string(data) || full.Header().Get("Accept-Ranges") != "bytes" ||
				full.Header().Get("Content-Length") != size || full.Header().Get("ETag") != etag {
				t.Fatalf("GET = %d, %d bytes, headers %v; want 200, the file and Accept-Ranges: bytes", full.Code, full.Body.Len(), full.Header())
			}

			for _, tc := range []struct {
				rangeHeader, ifRange string
				start, end           int // the bytes served, end inclusive
			}{
				{"bytes=0-9", "", 0, 9},
				{"bytes=10-", "", 10, 999},
				{"bytes=-5", "", 995, 999},
				{"bytes=990-2000", "", 990, 999},
				{"bytes=-5000", "", 0, 999},
				{"bytes=999-999", "", 999, 999},
				{"bytes=100-199", etag, 100, 199},
				{" bytes = 5-6", "", 5, 6},
			} {
				rec := f.get(files.Path(id), "Range", tc.rangeHeader, "If-Range", tc.ifRange)
				want := fmt.Sprintf("bytes %d-%d/%d", tc.start, tc.end, len(data))
				if rec.Code != http.StatusPartialContent || rec.Body.String() != string(data[tc.start:tc.end+1]) ||
					rec.Header().Get("Content-Range") != want || rec.Header().Get("Content-Length") != strconv.Itoa(tc.end-tc.start+1) ||
					rec.Header().Get("Content-Type") != "video/mp4" || rec.Header().Get("ETag") != etag {
					t.Errorf("Range %q = %d, %d bytes, headers %v; want 206 with %s", tc.rangeHeader, rec.Code, rec.Body.Len(), rec.Header(), want)
				}
			}

			for _, unsatisfiable := range []string{"bytes=1000-", "bytes=5000-6000", "bytes=-0"} {
				rec := f.get(files.Path(id), "Range", unsatisfiable)
				if rec.Code != http.StatusRequestedRangeNotSatisfiable || rec.Header().Get("Content-Range") != "bytes */"+size ||
					errorCode(t, rec) != plugin.CodeRangeNotSatisfiable {
					t.Errorf("Range %q = %d %s, headers %v; want 416 %s with Content-Range bytes */%s",
						unsatisfiable, rec.Code, rec.Body, rec.Header(), plugin.CodeRangeNotSatisfiable, size)
				}
			}

			for _, tc := range []struct{ rangeHeader, ifRange string }{
				{"bytes=0-1,5-6", ""},      // several ranges
				{"items=0-5", ""},          // another unit
				{"bytes=9-2", ""},          // last before first
				{"bytes=abc", ""},          // not a range
				{"bytes=+1-2", ""},         // a sign is not a digit
				{"bytes=0-9", `"other"`},   // the client's copy is another file
				{"bytes=0-9", "W/" + etag}, // a weak tag never matches
				{"bytes=0-9", time.Now().UTC().Format(http.TimeFormat)},
			} {
				rec := f.get(files.Path(id), "Range", tc.rangeHeader, "If-Range", tc.ifRange)
				if rec.Code != http.StatusOK || rec.Body.String() != string(data) || rec.Header().Get("Content-Range") != "" {
					t.Errorf("Range %q If-Range %q = %d, %d bytes, headers %v; want 200 with the whole file",
						tc.rangeHeader, tc.ifRange, rec.Code, rec.Body.Len(), rec.Header())
				}
			}

			// A range of a file the store lost is the file being gone, as for a whole download.
			if err := f.blobs.Delete(context.Background(), f.assets[id].BlobKey); err != nil {
				t.Fatal(err)
			}
			if rec := f.get(files.Path(id), "Range", "bytes=0-9"); rec.Code != http.StatusGone || errorCode(t, rec) != plugin.CodeOutputsPurged {
				t.Errorf("a range of a lost file = %d %s, want 410 %s", rec.Code, rec.Body, plugin.CodeOutputsPurged)
			}

			// Thumbnails are small and served whole.
			thumb := f.get(files.ThumbnailPath(id), "Range", "bytes=0-1")
			if thumb.Code != http.StatusOK || thumb.Body.String() != "thumbnail bytes" || thumb.Header().Get("Accept-Ranges") != "" {
				t.Errorf("a thumbnail with a Range = %d %q, headers %v; want 200 with the whole thumbnail", thumb.Code, thumb.Body, thumb.Header())
			}
		})
	}
}

// TestDownloadWhileTheStoreIsDown kills the S3 server: a download, whole or a range, answers 503
// with Retry-After in the plugin envelope (retryable), not 500; after the restart it is served.
func TestDownloadWhileTheStoreIsDown(t *testing.T) {
	srv := s3server.Start(t)
	srv.Setenv(t)
	f := newFixture(t, srv.URL())
	id := f.store([]byte("0123456789"), "image/png")
	srv.Kill()
	for _, header := range [][]string{nil, {"Range", "bytes=2-5"}} {
		rec := f.get(files.Path(id), header...)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != strconv.Itoa(unavailable.RetryAfterSeconds) ||
			errorCode(t, rec) != plugin.CodeUnavailable {
			t.Errorf("GET %v with the store down = %d %s, headers %v; want 503 %s with Retry-After", header, rec.Code, rec.Body, rec.Header(), plugin.CodeUnavailable)
		}
	}
	srv.Restart(t)
	if rec := f.get(files.Path(id), "Range", "bytes=2-5"); rec.Code != http.StatusPartialContent || rec.Body.String() != "2345" {
		t.Fatalf("after the restart = %d %q", rec.Code, rec.Body)
	}
}
