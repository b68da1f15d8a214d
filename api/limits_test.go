package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models"
)

// routeBodies are the body limits of the routes that take a body (api/openapi.yaml and
// api/external/openapi.yaml document them); every other route takes none.
var routeBodies = map[string]struct {
	limit     int64
	multipart bool
}{
	"POST " + plugin.Base + "/assets/upload":                  {64 << 10, false},
	"POST " + plugin.Base + "/images":                         {1 << 20, false},
	"POST " + plugin.Base + "/packshots":                      {1 << 20, false},
	"POST " + plugin.Base + "/jobs":                           {1 << 20, false},
	"POST " + plugin.Base + "/jobs/batch":                     {16 << 20, false},
	"POST " + plugin.Base + "/orders/:id/clone":               {1 << 20, false},
	"PUT " + plugin.Base + "/test/credits":                    {64 << 10, false},
	"PUT " + plugin.Base + "/spend-limit":                     {64 << 10, false},
	"PUT " + plugin.Base + "/alerts":                          {64 << 10, false},
	"POST " + external.Base + "/presets":                      {141 << 20, true},
	"PUT " + external.Base + "/presets":                       {141 << 20, true},
	"POST " + external.Base + "/products":                     {21 << 20, true},
	"POST " + external.Base + "/models/register-ideas":        {64 << 10, false},
	"POST " + external.Base + "/sceneries/register-ideas":     {64 << 10, false},
	"POST " + external.Base + "/packshots/register-ideas":     {64 << 10, false},
	"POST " + external.Base + "/image-picker/register-ideas":  {64 << 10, false},
	"POST " + external.Base + "/video-picker/register-videos": {64 << 10, false},
	"POST " + external.Base + "/reel/register-reel":           {64 << 10, false},
	"POST " + external.Base + "/packshots/update-packshot":    {64 << 10, false},
	"POST " + external.Base + "/image-picker/review":          {64 << 10, false},
	"PUT " + external.Base + "/test/credits":                  {64 << 10, false},
	"PUT " + external.Base + "/spend-limit":                   {64 << 10, false},
	"PUT " + external.Base + "/alerts":                        {64 << 10, false},

	// The plugin API's webhook routes.
	"POST " + plugin.Base + "/webhook-endpoints":             {64 << 10, false},
	"PATCH " + plugin.Base + "/webhook-endpoints/:id":        {64 << 10, false},
	"POST " + plugin.Base + "/webhook-endpoints/:id/test":    {64 << 10, false},
	"POST " + plugin.Base + "/webhook-endpoints/:id/recover": {64 << 10, false},

	// The external API's webhook routes.
	"POST " + external.Base + "/webhook-endpoints":             {64 << 10, false},
	"PATCH " + external.Base + "/webhook-endpoints/:id":        {64 << 10, false},
	"POST " + external.Base + "/webhook-endpoints/:id/test":    {64 << 10, false},
	"POST " + external.Base + "/webhook-endpoints/:id/recover": {64 << 10, false},
}

// lazyBody is a request body that makes its bytes when they are read (so a test can send
// gigabytes without holding them) and counts them.
type lazyBody struct {
	prefix string
	size   int64
	read   int64
}

func (b *lazyBody) Read(p []byte) (int, error) {
	if b.read >= b.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), b.size-b.read))
	for i := range n {
		if pos := b.read + int64(i); pos < int64(len(b.prefix)) {
			p[i] = b.prefix[pos]
		} else {
			p[i] = 'a'
		}
	}
	b.read += int64(n)
	return n, nil
}

// TestEveryRouteRefusesOversizedBodies sends every route of the router (both APIs and the routes
// around them) a body over its limit, with a key that may use the route, and checks the answer is
// 413 in the route's error body: at once, reading nothing, when Content-Length says so; and when
// the body comes in chunks, after reading no more than the limit and allocating memory in
// proportion to the limit, not to the 1 GiB body.
func TestEveryRouteRefusesOversizedBodies(t *testing.T) {
	// Not parallel: it measures the process's allocations (runtime.MemStats), which other tests would add to.
	s := newServer(t)
	ext, err := models.IssueKey(s.db, models.KeyKindExternal, s.inst.AccountID, nil, "k", models.ExternalScopes, nil)
	require.NoError(t, err)
	// A signed upload declared 1 MiB long: its limit is the declared size.
	const declared = 1 << 20
	uploadURL := createUpload(t, s, declared)

	const pngMagic = "\x89PNG\r\n\x1a\n"
	routes := s.router.Routes()
	require.Greater(t, len(routes), 40, "both APIs are mounted")
	seen := map[string]bool{}
	for _, route := range routes {
		name := route.Method + " " + route.Path
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			body, declaredBody := routeBodies[name]
			limit := body.limit
			if !declaredBody {
				limit = inputcheck.NoBodyLimit
			}
			target := route.Path
			for _, p := range []string{":id_or_ref", ":delivery_id", ":id", ":code", ":version", ":group", ":file"} {
				target = strings.ReplaceAll(target, p, models.NewID())
			}
			isExternal := strings.HasPrefix(route.Path, external.Base+"/")
			prefix, contentType := `{"a":"`, "application/json"
			if body.multipart {
				prefix = "--b\r\nContent-Disposition: form-data; name=\"cover\"; filename=\"c.png\"\r\nContent-Type: image/png\r\n\r\n" + pngMagic
				contentType = "multipart/form-data; boundary=b"
			}
			upload := route.Path == plugin.Base+"/uploads/:id"
			if upload {
				target, limit = uploadURL, declared
				prefix, contentType = pngMagic, "image/png"
			}
			for _, chunked := range []bool{false, true} {
				lazy := &lazyBody{prefix: prefix, size: 1 << 30}
				req := httptest.NewRequest(route.Method, target, lazy)
				req.Header.Set("Content-Type", contentType)
				req.Header.Set("X-Api-Key", s.key)
				if isExternal {
					req.Header.Set("X-Api-Key", ext.Secret)
				}
				req.ContentLength = limit + 1
				if chunked {
					req.ContentLength = -1
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				rec := httptest.NewRecorder()
				s.router.ServeHTTP(rec, req)
				runtime.ReadMemStats(&after)
				allocated := after.TotalAlloc - before.TotalAlloc

				how := "with Content-Length"
				if chunked {
					how = "chunked"
				}
				if isExternal {
					var got map[string]any
					require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got), "%s: %s", how, rec.Body)
					require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, "%s: %s", how, rec.Body)
					require.Len(t, got, 1, rec.Body.String())
					require.IsType(t, "", got["error"], rec.Body.String())
				} else {
					msg := requireError(t, rec, http.StatusRequestEntityTooLarge, plugin.CodePayloadTooLarge)
					if !upload {
						require.Contains(t, msg, "("+inputcheck.Size(limit)+")")
					}
				}
				doc := contract.Plugin
				if isExternal {
					doc = contract.External
				}
				if route.Path != external.OpenAPIPath { // the one route no document describes
					res := rec.Result()
					require.NoError(t, doc.Validate(req, []byte{}, res.StatusCode, res.Header, rec.Body.Bytes()))
				}
				if !chunked {
					require.Zero(t, lazy.read, "bytes read of a body whose Content-Length is over the limit")
					continue
				}
				// The upload is read through a 64 KiB buffer that sniffs its type.
				require.LessOrEqual(t, lazy.read, limit+64<<10+1, "bytes read of a chunked body, limit %d", limit)
				require.Greater(t, lazy.read, limit, "the body was read up to its limit")
				// A JSON body is held in memory up to its limit, read into a buffer that doubles (at
				// most twice the limit in all); a multipart one up to 4 MiB of files, in a buffer
				// that doubles past it (the rest of the files goes to temporary files).
				bound := 2*limit + 4<<20
				if body.multipart {
					bound = 4*(4<<20) + 4<<20
				}
				if !raceDetector {
					require.Less(t, allocated, uint64(bound), "bytes allocated for a %d-byte limit", limit)
				}
				t.Logf("chunked: read %d bytes, allocated %d", lazy.read, allocated)
			}
		})
	}
	for name := range routeBodies {
		require.True(t, seen[name], "%s has a limit but is not routed", name)
	}
}

// createUpload asks the plugin API for an upload URL of a PNG of size bytes and returns its path
// and query.
func createUpload(t *testing.T, s *server, size int) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, plugin.Base+"/assets/upload", strings.NewReader(
		`{"mode":"presigned","filename":"p.png","content_type":"image/png","size_bytes":`+strconv.Itoa(size)+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", s.key)
	rec := httptest.NewRecorder()
	s.router.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var resp plugin.UploadResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
	u, err := url.Parse(resp.UploadURL)
	require.NoError(t, err)
	return u.RequestURI()
}
