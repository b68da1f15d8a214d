package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models/testdb"
	"go.uber.org/zap/zaptest/observer"
)

// TestPanicLogLineCarriesTheRequestID: a panic is a defect an operator must trace to the
// request that hit it (docs/operations.md: "A 500 remains what it was: a defect, logged with the
// request ID"). The ERROR line that carries the panic must name the request ID the client got.
func TestPanicLogLineCarriesTheRequestID(t *testing.T) {
	s := newServer(t)
	s.router.GET(plugin.Base+"/test-panic-traced", func(c *gin.Context) { panic("boom") })
	rec := s.do(http.MethodGet, plugin.Base+"/test-panic-traced", "X-Request-Id", "trace-panic")
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Equal(t, "trace-panic", rec.Header().Get("X-Request-Id"))

	panics := s.logs.FilterMessage("panic in handler").All()
	require.Len(t, panics, 1)
	require.Equal(t, "trace-panic", panics[0].ContextMap()["request_id"],
		"the panic's log line does not carry the request ID: fields %v", panics[0].ContextMap())
}

// brokenBody sends some bytes and then fails as a client's connection that dropped mid-upload does.
type brokenBody struct{ r io.Reader }

func (b *brokenBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// TestClientAbortedUploadIsNoErrorLine: a client that drops its connection in the middle of
// a signed upload PUT is the client's affair; nothing is wrong with the service. It is answered
// 400, not counted and logged at ERROR as a 5xx "a service this request needs is unavailable":
// an ERROR in the log is meant to be something an operator must act on.
func TestClientAbortedUploadIsNoErrorLine(t *testing.T) {
	s := newServer(t)
	data := testimage.GradientPNG(t, 64, 64)
	body, _ := json.Marshal(map[string]any{"mode": "presigned", "filename": "shoe.png", "content_type": "image/png", "size_bytes": len(data)})
	req := httptest.NewRequest(http.MethodPost, plugin.Base+"/assets/upload", bytes.NewReader(body))
	req.Header.Set("X-Api-Key", s.key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.router.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var up struct {
		UploadURL string `json:"upload_url"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &up))
	u, err := url.Parse(up.UploadURL)
	require.NoError(t, err)

	// Half the bytes, then the connection drops.
	put := httptest.NewRequest(http.MethodPut, u.RequestURI(), &brokenBody{r: bytes.NewReader(data[:len(data)/2])})
	put.ContentLength = int64(len(data))
	put.Header.Set("Content-Type", "image/png")
	put.Header.Set("X-Request-Id", "trace-abort")
	rec = httptest.NewRecorder()
	s.router.ServeHTTP(rec, put)
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), "The body ended before its declared Content-Length")

	lines := s.logs.FilterMessage("request").FilterField(zap.String("request_id", "trace-abort")).All()
	require.Len(t, lines, 1)
	require.Less(t, lines[0].Level, zapcore.ErrorLevel,
		"a client's aborted upload is logged at %s with status %d: %v", lines[0].Level, rec.Code, lines[0].ContextMap())
	require.Less(t, rec.Code, 500, "a client's aborted upload is answered as a server failure")
}

// TestMultipartRefusalNamesNoGoInternals: a malformed multipart body is the client's mistake;
// its 400 should say what is wrong, not relay Go's mime/multipart error strings.
func TestMultipartRefusalNamesNoGoInternals(t *testing.T) {
	s := newServer(t)
	xk := allScopesExternalKey(t, s)
	for _, tc := range []struct{ contentType, body string }{
		{"multipart/form-data; boundary=xyz", "--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue"},
		{"multipart/form-data", "whatever"},
		{"multipart/form-data; boundary=xyz", "garbage without any boundary"},
	} {
		req := httptest.NewRequest(http.MethodPost, external.Base+"/products", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.contentType)
		req.Header.Set("X-Api-Key", xk)
		rec := httptest.NewRecorder()
		s.router.ServeHTTP(rec, req)
		t.Logf("%d %s", rec.Code, rec.Body.String())
		for _, internal := range []string{"multipart:", "NextPart", "mime:", "EOF", "bufio"} {
			if strings.Contains(rec.Body.String(), internal) {
				t.Errorf("Content-Type %q: the answer relays Go's error text (%q): %s", tc.contentType, internal, rec.Body.String())
				break
			}
		}
	}
}

// A 5xx answered after the client hung up is logged at WARN with client_left, not at ERROR: what
// failed then is no outage an operator must chase. A 5xx of a client still there stays ERROR.
func TestServerErrorAfterTheClientLeftIsAWarning(t *testing.T) {
	s := newServer(t)
	s.router.GET(plugin.Base+"/test-client-left", func(c *gin.Context) { c.AbortWithStatus(http.StatusServiceUnavailable) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		id    string
		ctx   context.Context
		level zapcore.Level
	}{{"trace-left", ctx, zapcore.WarnLevel}, {"trace-stayed", context.Background(), zapcore.ErrorLevel}} {
		req := httptest.NewRequestWithContext(tc.ctx, http.MethodGet, plugin.Base+"/test-client-left", nil)
		req.Header.Set("X-Request-Id", tc.id)
		s.router.ServeHTTP(httptest.NewRecorder(), req)
		lines := s.logs.FilterMessage("request").FilterField(zap.String("request_id", tc.id)).All()
		require.Len(t, lines, 1)
		require.Equal(t, tc.level, lines[0].Level, tc.id)
	}
}

// newTimedServer is newServer with the REQUEST_TIMEOUT every deployed API runs with (30s by
// default, at least 1s: internal/platform/config).
func newTimedServer(t *testing.T) (*api.Router, *observer.ObservedLogs) {
	t.Helper()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	d := apitest.NewDeps(t, db, apitest.Options{Log: log})
	h := &plugin.Handler{Signer: d.Signer, Engine: d.Engine, Limiter: d.Limiter, Slots: d.Slots, Log: log,
		DocsURL: docsURL, DefaultRateLimit: 60, DownloadTTL: 168 * time.Hour, UploadTTL: 2 * time.Hour}
	x := &external.Handler{Engine: d.Engine, Limiter: ratelimit.NewMemory(d.Clock.Now), Slots: d.Slots, Signer: d.Signer, Log: log, DownloadTTL: time.Hour}
	r := api.NewRouter(api.Deps{Engine: d.Engine, Blobs: d.Blobs, Signer: d.Signer, Log: log,
		Ready: func(context.Context) error { return nil }, External: x,
		RequestTimeout: 30 * time.Second, UploadTimeout: 15 * time.Minute}, h)
	return r, logs
}

// TestServerErrorOfAConnectedClientIsAnErrorLine: with REQUEST_TIMEOUT set (always, in a
// deployment), a 500 answered to a client that is still connected stays an ERROR line without
// client_left (docs/operations.md), although RequestTimeout cancels the request's own context when
// the handler returns: AccessLog reads the connection's.
func TestServerErrorOfAConnectedClientIsAnErrorLine(t *testing.T) {
	r, logs := newTimedServer(t)
	r.GET(plugin.Base+"/test-timed-500", func(c *gin.Context) { c.AbortWithStatus(http.StatusInternalServerError) })
	r.GET(plugin.Base+"/test-timed-panic", func(c *gin.Context) { panic("boom") })
	for _, path := range []string{"/test-timed-500", "/test-timed-panic"} {
		req := httptest.NewRequest(http.MethodGet, plugin.Base+path, nil)
		req.Header.Set("X-Request-Id", "timed"+path[len("/test-timed"):])
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		require.Equal(t, http.StatusInternalServerError, rec.Code)
		lines := logs.FilterMessage("request").FilterField(zap.String("request_id", "timed"+path[len("/test-timed"):])).All()
		require.Len(t, lines, 1)
		require.Equal(t, zapcore.ErrorLevel, lines[0].Level,
			"%s: a 500 to a connected client is logged at %s with %v", path, lines[0].Level, lines[0].ContextMap())
	}
}

// TestHeadIsLoggedAndCountedAsHead: a HEAD is served as its GET, but its access line and its
// request metrics say HEAD: an operator tells a monitor's HEADs from real downloads.
func TestHeadIsLoggedAndCountedAsHead(t *testing.T) {
	s := newServer(t)
	rec := s.do(http.MethodHead, plugin.Base+"/products", "X-Api-Key", s.key, "X-Request-Id", "trace-head")
	require.Equal(t, http.StatusOK, rec.Code)
	lines := s.logs.FilterMessage("request").FilterField(zap.String("request_id", "trace-head")).All()
	require.Len(t, lines, 1)
	require.Equal(t, http.MethodHead, lines[0].ContextMap()["method"], "the access line of a HEAD: %v", lines[0].ContextMap())
}

// The same with REQUEST_TIMEOUT set: a 5xx after the client left is a WARN.
func TestServerErrorAfterTheClientLeftIsAWarningUnderARequestTimeout(t *testing.T) {
	r, logs := newTimedServer(t)
	r.GET(plugin.Base+"/test-timed-left", func(c *gin.Context) { c.AbortWithStatus(http.StatusServiceUnavailable) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, plugin.Base+"/test-timed-left", nil)
	req.Header.Set("X-Request-Id", "timed-left")
	r.ServeHTTP(httptest.NewRecorder(), req)
	lines := logs.FilterMessage("request").FilterField(zap.String("request_id", "timed-left")).All()
	require.Len(t, lines, 1)
	require.Equal(t, zapcore.WarnLevel, lines[0].Level)
}

// TestPreflightGoesThroughTheMiddleware: the CORS preflight of a signed route is a request like
// any other: it carries its X-Request-Id, has its access line (method OPTIONS, the route's
// template, 204) and is counted in the request metrics, while answering as a preflight.
func TestPreflightGoesThroughTheMiddleware(t *testing.T) {
	s := newServer(t)
	a := s.storeFile([]byte("0123456789"), "image/png")
	for _, tc := range []struct{ target, route, allow string }{
		{files.Path(a.ID), "/files/:id", "GET, HEAD"},
		{files.ThumbnailPath(a.ID), "/files/:id/thumbnail", "GET, HEAD"},
		{plugin.Base + "/uploads/" + a.ID, files.UploadRoute, "PUT"},
	} {
		id := "trace-preflight-" + tc.route
		rec := s.do(http.MethodOptions, tc.target, "Origin", "https://admin.shopify.com",
			"Access-Control-Request-Method", "GET", "X-Request-Id", id)
		require.Equal(t, http.StatusNoContent, rec.Code, tc.target)
		require.Equal(t, id, rec.Header().Get("X-Request-Id"), "the preflight of %s carries no request ID", tc.target)
		require.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"), tc.target)
		require.Equal(t, tc.allow, rec.Header().Get("Access-Control-Allow-Methods"), tc.target)
		require.Equal(t, tc.allow+", OPTIONS", rec.Header().Get("Allow"), tc.target)
		require.Equal(t, "86400", rec.Header().Get("Access-Control-Max-Age"), tc.target)
		require.Empty(t, rec.Body.String(), tc.target)

		lines := s.logs.FilterMessage("request").FilterField(zap.String("request_id", id)).All()
		require.Len(t, lines, 1, "the access line of the preflight of %s", tc.target)
		fields := lines[0].ContextMap()
		require.Equal(t, http.MethodOptions, fields["method"], tc.target)
		require.Equal(t, tc.route, fields["route"], tc.target)
		require.Equal(t, int64(http.StatusNoContent), fields["status"], tc.target)
	}
	scraped := metricstest.Serve(t, s.router)
	for _, route := range []string{"/files/:id", "/files/:id/thumbnail", files.UploadRoute} {
		require.Equal(t, float64(1), scraped.Value(metrics.HTTPRequests,
			map[string]string{"route": route, "method": http.MethodOptions, "status": "2xx"}), "preflights of %s counted", route)
	}
}
