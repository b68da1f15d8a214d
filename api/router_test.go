package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

const docsURL = "https://docs.example.test"

type server struct {
	t      testing.TB
	db     *gorm.DB
	blobs  *blobstore.Store
	signer *urlsign.Signer
	router *api.Router
	inst   *models.Installation
	key    string
	logs   *observer.ObservedLogs
	ready  error
}

func newServer(t testing.TB) *server {
	t.Helper()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	d := apitest.NewDeps(t, db, apitest.Options{Log: log})
	s := &server{t: t, db: db, blobs: d.Blobs, signer: d.Signer, logs: logs}
	h := &plugin.Handler{
		Signer: d.Signer, Engine: d.Engine,
		Limiter:          d.Limiter,
		Slots:            d.Slots,
		Log:              log,
		DocsURL:          docsURL,
		DefaultRateLimit: 60,
		DownloadTTL:      168 * time.Hour,
		UploadTTL:        2 * time.Hour,
	}
	x := &external.Handler{Engine: d.Engine, Limiter: ratelimit.NewMemory(d.Clock.Now), Slots: d.Slots, Signer: d.Signer, Log: log, DownloadTTL: time.Hour}
	s.router = api.NewRouter(api.Deps{Engine: d.Engine, Blobs: d.Blobs, Signer: d.Signer, Log: log,
		Ready: func(context.Context) error { return s.ready }, External: x}, h)
	acc, err := models.CreateAccount(db, "Acme", 100)
	require.NoError(t, err)
	created, err := models.CreateInstallation(db, d.Box, models.NewInstallation{AccountID: acc.ID, Name: "shop"}, "whsec")
	require.NoError(t, err)
	s.inst, s.key = &created.Installation, created.APIKey.Secret
	return s
}

func (s *server) do(method, target string, headers ...string) *httptest.ResponseRecorder {
	s.t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	s.router.ServeHTTP(rec, req)
	return rec
}

// requireError checks the status and that the body is exactly the error envelope of code.
func requireError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) string {
	t.Helper()
	require.Equal(t, status, rec.Code, rec.Body.String())
	require.Contains(t, rec.Header().Get("Content-Type"), "application/json")
	var top map[string]map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &top), rec.Body.String())
	require.Len(t, top, 1, rec.Body.String())
	e, ok := top["error"]
	require.True(t, ok, rec.Body.String())
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Equal(t, []string{"code", "doc_url", "message_i18n", "retryable"}, keys, rec.Body.String())
	require.Equal(t, code, e["code"])
	require.Equal(t, status == http.StatusTooManyRequests || status >= 500, e["retryable"])
	require.Equal(t, docsURL+"/plugin-api/errors/"+code, e["doc_url"])
	en, _ := e["message_i18n"].(map[string]any)["en"].(string)
	require.NotEmpty(t, en)
	return en
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	generated := regexp.MustCompile(`^[A-Za-z0-9_-]{16,}$`)

	// A well-formed client ID is echoed, on success and on errors alike.
	for _, id := range []string{"abc-123", "req_01HZX!~", strings.Repeat("x", 128)} {
		assert.Equal(t, id, s.do(http.MethodGet, "/healthz", "X-Request-Id", id).Header().Get("X-Request-Id"))
		assert.Equal(t, id, s.do(http.MethodGet, plugin.Base+"/me", "X-Request-Id", id).Header().Get("X-Request-Id"))
		assert.Equal(t, id, s.do(http.MethodGet, plugin.Base+"/me", "X-Request-Id", id, "X-Api-Key", s.key).Header().Get("X-Request-Id"))
	}

	// Absent or invalid: a generated one, different each time.
	seen := map[string]bool{}
	for _, bad := range []string{"", "has space", "tab\there", strings.Repeat("x", 129), "caf\u00e9", "line\nbreak"} {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		if bad != "" {
			req.Header["X-Request-Id"] = []string{bad}
		}
		rec := httptest.NewRecorder()
		s.router.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		assert.NotEqual(t, bad, got)
		assert.Regexp(t, generated, got, "for %q", bad)
		assert.False(t, seen[got], "request ID %q repeated", got)
		seen[got] = true
	}
}

func TestAccessLogCarriesRequestAndInstallation(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.do(http.MethodGet, plugin.Base+"/me", "X-Api-Key", s.key, "X-Request-Id", "trace-me")
	entries := s.logs.FilterMessage("request").FilterField(zap.String("request_id", "trace-me")).All()
	require.Len(t, entries, 1)
	fields := entries[0].ContextMap()
	assert.Equal(t, plugin.Base+"/me", fields["route"])
	assert.Equal(t, int64(http.StatusOK), fields["status"])
	assert.Equal(t, s.inst.ID, fields["installation_id"])
	assert.Equal(t, s.inst.AccountID, fields["account_id"])
	// The key itself is never logged.
	for _, e := range s.logs.All() {
		for _, v := range e.ContextMap() {
			if str, ok := v.(string); ok {
				assert.NotContains(t, str, s.key)
			}
		}
	}
}

// A request's ID is its correlation ID in both APIs: the client's well-formed X-Request-Id is
// kept, echoed, and on its access log line, with the tenant that made the request.
func TestAccessLogCarriesTheRequestsCorrelationID(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.router.GET("/test-correlated", func(c *gin.Context) {
		require.Equal(t, "corr-1", reqctx.CorrelationID(c))
		reqctx.SetTenant(c, reqctx.Tenant{AccountID: "acc-1", InstallationID: "inst-1"})
		c.Status(http.StatusNoContent)
	})
	rec := s.do(http.MethodGet, "/test-correlated", "X-Request-Id", "corr-1")
	require.Equal(t, "corr-1", rec.Header().Get("X-Request-Id"))
	entries := s.logs.FilterMessage("request").FilterField(zap.String("request_id", "corr-1")).All()
	require.Len(t, entries, 1)
	fields := entries[0].ContextMap()
	require.Equal(t, "acc-1", fields["account_id"])
	require.Equal(t, "inst-1", fields["installation_id"])
}

func TestUnknownRouteAndMethod(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, target := range []string{plugin.Base + "/nope", plugin.Base + "/", "/api/v2/plugin/me", "/nothing", "/files"} {
		requireError(t, s.do(http.MethodGet, target), http.StatusNotFound, plugin.CodeNotFound)
		requireError(t, s.do(http.MethodGet, target, "X-Api-Key", s.key), http.StatusNotFound, plugin.CodeNotFound)
	}
	rec := s.do(http.MethodDelete, plugin.Base+"/me", "X-Api-Key", s.key)
	requireError(t, rec, http.StatusMethodNotAllowed, plugin.CodeMethodNotAllowed)
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"), "a 405 names the methods the path takes")
	rec = s.do(http.MethodPut, plugin.Base+"/webhook-endpoints/"+models.NewID(), "X-Api-Key", s.key)
	requireError(t, rec, http.StatusMethodNotAllowed, plugin.CodeMethodNotAllowed)
	assert.Equal(t, "DELETE, GET, HEAD, PATCH", rec.Header().Get("Allow"))

	// The external API answers in its own error body: {"error": "<text>"}.
	for target, status := range map[string]int{external.Base + "/nope": http.StatusNotFound, external.Base + "/orders/x/y": http.StatusNotFound} {
		rec := s.do(http.MethodGet, target)
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		assert.Equal(t, status, rec.Code, target)
		assert.Len(t, body, 1, target)
		assert.IsType(t, "", body["error"], target)
	}
	rec = s.do(http.MethodDelete, external.Base+"/orders")
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
	assert.JSONEq(t, `{"error":"Method DELETE is not allowed on this route."}`, rec.Body.String())
}

// usedCodes are the error codes the API answers with (conflict: an engine conflict without a more
// specific plugin code; TestEngineFailureMapsEveryKind covers it).
var usedCodes = []string{
	plugin.CodeConflict,
	plugin.CodeInvalidInput, plugin.CodeUnauthorized, plugin.CodeInsufficientCredits, plugin.CodeForbidden,
	plugin.CodeNotFound, plugin.CodeIdempotencyConflict, plugin.CodeJobNotCancelable, plugin.CodeJobNotCompleted,
	plugin.CodeUploadConflict, plugin.CodeOutputsPurged, plugin.CodePayloadTooLarge, plugin.CodePackshotNotApproved,
	plugin.CodeRateLimited, plugin.CodeTestQuotaExceeded, plugin.CodeSpendLimitExceeded, plugin.CodeInternal, plugin.CodeUnavailable, plugin.CodeURLExpired, plugin.CodeMethodNotAllowed,
	plugin.CodeRangeNotSatisfiable, plugin.CodeHeadersTooLarge,
}

func TestErrorDocs(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, code := range usedCodes {
		rec := s.do(http.MethodGet, "/docs/plugin-api/errors/"+code)
		require.Equal(t, http.StatusOK, rec.Code, "code %s: %s", code, rec.Body.String())
		var body map[string]string
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		assert.Equal(t, code, body["code"])
		assert.Equal(t, plugin.ErrorDocs[code], body["description"])
		assert.NotEmpty(t, body["description"])
	}
	// Every documented code is one the API uses.
	for code := range plugin.ErrorDocs {
		assert.Contains(t, usedCodes, code)
	}
	for _, code := range []string{"no_such_code", "INVALID_INPUT", "invalid_input ", "x"} {
		requireError(t, s.do(http.MethodGet, "/docs/plugin-api/errors/"+url.PathEscape(code)), http.StatusNotFound, plugin.CodeNotFound)
	}
}

func TestRecoveredPanicAnswersEnvelope(t *testing.T) {
	t.Parallel()
	// gin's recovery prints the stack to DefaultErrorWriter, read when the router is built.
	saved := gin.DefaultErrorWriter
	gin.DefaultErrorWriter = io.Discard
	t.Cleanup(func() { gin.DefaultErrorWriter = saved })
	s := newServer(t)
	s.router.GET("/test-panic", func(*gin.Context) { panic("secret detail") })
	rec := s.do(http.MethodGet, "/test-panic")
	msg := requireError(t, rec, http.StatusInternalServerError, plugin.CodeInternal)
	assert.NotContains(t, msg, "secret detail")
	assert.NotContains(t, rec.Body.String(), "secret detail")
	assert.NotEmpty(t, rec.Header().Get("X-Request-Id"))
	// The panic is logged, and the access log line is at error level.
	assert.Len(t, s.logs.FilterMessage("panic in handler").All(), 1)
	access := s.logs.FilterMessage("request").FilterField(zap.Int("status", http.StatusInternalServerError)).All()
	require.Len(t, access, 1)
	assert.Equal(t, zapcore.ErrorLevel, access[0].Level)
}

func TestRecoveredPanicOfExternalRouteAnswersItsBody(t *testing.T) {
	t.Parallel()
	saved := gin.DefaultErrorWriter
	gin.DefaultErrorWriter = io.Discard
	t.Cleanup(func() { gin.DefaultErrorWriter = saved })
	s := newServer(t)
	s.router.GET(external.Base+"/test-panic", func(*gin.Context) { panic("secret detail") })
	rec := s.do(http.MethodGet, external.Base+"/test-panic")
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Len(t, body, 1, "the external error body is {error} alone: %s", rec.Body)
	assert.NotContains(t, rec.Body.String(), "secret detail")
	assert.Len(t, s.logs.FilterMessage("panic in handler").All(), 1)
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	rec := s.do(http.MethodGet, "/healthz")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"status":"ok"}`, rec.Body.String())
	rec = s.do(http.MethodGet, "/readyz")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"status":"ready"}`, rec.Body.String())
	// The answer names the dependency alone; the detail (here an address, a user and a database
	// name, as a driver error has them) goes to the log.
	detail := errors.New(`failed to connect to host=10.1.2.3 user=shotflow_app database=shotflow_prod: dial tcp 10.1.2.3:5432: i/o timeout`)
	s.ready = fmt.Errorf("ready: %w", &unavailable.DependencyError{Dependency: "database", Err: detail})
	rec = s.do(http.MethodGet, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.JSONEq(t, `{"status":"unavailable","dependency":"database"}`, rec.Body.String())
	assert.Equal(t, strconv.Itoa(unavailable.RetryAfterSeconds), rec.Header().Get("Retry-After"))
	logged := s.logs.FilterMessage("not ready").All()
	require.Len(t, logged, 1)
	assert.Equal(t, "database", logged[0].ContextMap()["dependency"])
	assert.Contains(t, logged[0].ContextMap()["error"], "10.1.2.3:5432")

	// An error that names no dependency says so, and still leaks nothing.
	s.ready = errors.New("temporal down at 10.1.2.3:7233")
	rec = s.do(http.MethodGet, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.JSONEq(t, `{"status":"unavailable","dependency":"unknown"}`, rec.Body.String())
}

// storeFile stores a ready output asset with its bytes.
func (s *server) storeFile(data []byte, contentType string) models.Asset {
	s.t.Helper()
	now := time.Now().UTC()
	id := models.NewID()
	a := models.Asset{ID: id, AccountID: s.inst.AccountID, InstallationID: &s.inst.ID, Kind: models.AssetKindOutput,
		Status: status.AssetReady, ContentType: contentType, SizeBytes: int64(len(data)), BlobKey: "outputs/" + id,
		SHA256: "abc123", CreatedAt: now, UpdatedAt: now}
	require.NoError(s.t, s.db.Create(&a).Error)
	require.NoError(s.t, s.blobs.Put(context.Background(), a.BlobKey, data, contentType))
	return a
}

// requestURI turns a signed URL into the target of a request to the router.
func requestURI(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.RequestURI()
}

func TestSignedDownload(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	data := []byte("\x89PNG\r\n\x1a\nnot really but bytes")
	a := s.storeFile(data, "image/webp")
	valid := s.signer.URL(http.MethodGet, files.Path(a.ID), time.Now().Add(time.Hour))

	rec := s.do(http.MethodGet, requestURI(t, valid))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, data, rec.Body.Bytes())
	assert.Equal(t, "image/webp", rec.Header().Get("Content-Type"))
	assert.Equal(t, `"abc123"`, rec.Header().Get("ETag"))
	assert.Equal(t, "private, max-age=86400", rec.Header().Get("Cache-Control"))
	assert.Equal(t, strconv.Itoa(len(data)), rec.Header().Get("Content-Length"))

	// Conditional request.
	rec = s.do(http.MethodGet, requestURI(t, valid), "If-None-Match", `"abc123"`)
	assert.Equal(t, http.StatusNotModified, rec.Code)
	assert.Empty(t, rec.Body.Bytes())

	// No API key is needed, and one does not replace the signature.
	requireError(t, s.do(http.MethodGet, files.Path(a.ID), "X-Api-Key", s.key), http.StatusForbidden, plugin.CodeForbidden)
}

func TestSignedDownloadRefusals(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	a := s.storeFile([]byte("bytes"), "image/png")
	b := s.storeFile([]byte("other"), "image/png")
	u, err := url.Parse(s.signer.URL(http.MethodGet, files.Path(a.ID), time.Now().Add(time.Hour)))
	require.NoError(t, err)
	q := u.Query()
	sig := q.Get("signature")
	flipped := "A" + sig[1:]
	if sig[0] == 'A' {
		flipped = "B" + sig[1:]
	}
	tampered := map[string]string{
		"signature changed": files.Path(a.ID) + "?" + url.Values{"expires": {q.Get("expires")}, "signature": {flipped}}.Encode(),
		"expiry extended":   files.Path(a.ID) + "?" + url.Values{"expires": {"9999999999"}, "signature": {sig}}.Encode(),
		"no signature":      files.Path(a.ID) + "?" + url.Values{"expires": {q.Get("expires")}}.Encode(),
		"no query":          files.Path(a.ID),
		"other file":        files.Path(b.ID) + "?" + u.RawQuery,
		"upload signature":  requestURI(t, s.signer.URL(http.MethodPut, files.Path(a.ID), time.Now().Add(time.Hour))),
	}
	for name, target := range tampered {
		t.Run(name, func(t *testing.T) {
			rec := s.do(http.MethodGet, target)
			requireError(t, rec, http.StatusForbidden, plugin.CodeForbidden)
			assert.NotContains(t, rec.Body.String(), "bytes")
		})
	}

	t.Run("expired", func(t *testing.T) {
		expired := s.signer.URL(http.MethodGet, files.Path(a.ID), time.Now().Add(-time.Second))
		rec := s.do(http.MethodGet, requestURI(t, expired))
		require.Equal(t, http.StatusGone, rec.Code, rec.Body.String())
		var top map[string]map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &top))
		requireError(t, rec, http.StatusGone, plugin.CodeURLExpired)
	})

	t.Run("signed URL of an unknown file", func(t *testing.T) {
		target := requestURI(t, s.signer.URL(http.MethodGet, files.Path(models.NewID()), time.Now().Add(time.Hour)))
		requireError(t, s.do(http.MethodGet, target), http.StatusNotFound, plugin.CodeNotFound)
	})

	t.Run("upload not finished", func(t *testing.T) {
		c := s.storeFile([]byte("partial"), "image/png")
		require.NoError(t, s.db.Model(&c).Update("status", status.AssetAwaitingUpload).Error)
		target := requestURI(t, s.signer.URL(http.MethodGet, files.Path(c.ID), time.Now().Add(time.Hour)))
		requireError(t, s.do(http.MethodGet, target), http.StatusNotFound, plugin.CodeNotFound)
	})

	t.Run("purged", func(t *testing.T) {
		c := s.storeFile([]byte("gone"), "image/png")
		require.NoError(t, s.db.Model(&c).Update("purged_at", time.Now().UTC()).Error)
		target := requestURI(t, s.signer.URL(http.MethodGet, files.Path(c.ID), time.Now().Add(time.Hour)))
		requireError(t, s.do(http.MethodGet, target), http.StatusGone, plugin.CodeOutputsPurged)
	})

	t.Run("blob missing", func(t *testing.T) {
		c := s.storeFile([]byte("lost"), "image/png")
		require.NoError(t, s.blobs.Delete(context.Background(), c.BlobKey))
		target := requestURI(t, s.signer.URL(http.MethodGet, files.Path(c.ID), time.Now().Add(time.Hour)))
		requireError(t, s.do(http.MethodGet, target), http.StatusGone, plugin.CodeOutputsPurged)
	})
}

// A request that runs out of time on its database calls answers 503 with Retry-After in the body
// of its API (retryable in the plugin envelope), and logs the cause; it is not a 500.
func TestOutageAnswers503InEachAPIsBody(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ext, err := models.IssueKey(s.db, models.KeyKindExternal, s.inst.AccountID, nil, "k", models.ExternalScopes, nil)
	require.NoError(t, err)
	a := s.storeFile([]byte("bytes"), "image/png")
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	send := func(target string, headers ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(expired, http.MethodGet, target, nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		rec := httptest.NewRecorder()
		s.router.ServeHTTP(rec, req)
		return rec
	}

	for name, rec := range map[string]*httptest.ResponseRecorder{
		"plugin route":    send(plugin.Base+"/me", "X-Api-Key", s.key),
		"signed download": send(requestURI(t, s.signer.URL(http.MethodGet, files.Path(a.ID), time.Now().Add(time.Hour)))),
	} {
		requireError(t, rec, http.StatusServiceUnavailable, plugin.CodeUnavailable)
		assert.Equal(t, strconv.Itoa(unavailable.RetryAfterSeconds), rec.Header().Get("Retry-After"), name)
	}

	rec := send(external.Base+"/orders", "X-Api-Key", ext.Secret)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	assert.Equal(t, strconv.Itoa(unavailable.RetryAfterSeconds), rec.Header().Get("Retry-After"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Len(t, body, 1, "the external error body is {error} alone: %s", rec.Body)
	assert.NotEmpty(t, body["error"])

	logged := s.logs.FilterMessage("request").FilterField(zap.Int("status", http.StatusServiceUnavailable)).All()
	require.Len(t, logged, 3)
	for _, l := range logged {
		assert.Contains(t, l.ContextMap()["error"], "context deadline exceeded")
	}
}

// TestMetricsCountRequestsByRouteTemplate checks GET /metrics: no key, no rate limit, the
// Prometheus text format, and every request counted under its route template (never its path),
// with unknown paths, methods and method names folded into bounded label values.
func TestMetricsCountRequestsByRouteTemplate(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for range 2 {
		require.Equal(t, http.StatusOK, s.do(http.MethodGet, "/healthz").Code)
	}
	require.Equal(t, http.StatusOK, s.do(http.MethodGet, plugin.Base+"/me", "X-Api-Key", s.key).Code)
	var ids []string
	for range 3 {
		ids = append(ids, models.NewID())
		require.Equal(t, http.StatusNotFound, s.do(http.MethodGet, plugin.Base+"/jobs/"+ids[len(ids)-1], "X-Api-Key", s.key).Code)
	}
	require.Equal(t, http.StatusNotFound, s.do(http.MethodGet, "/no/such/"+models.NewID()).Code)
	require.Equal(t, http.StatusMethodNotAllowed, s.do(http.MethodPatch, "/healthz").Code)
	require.Equal(t, http.StatusMethodNotAllowed, s.do("BREW", "/healthz").Code)

	// More scrapes than the default rate limit allows a key in a minute, without a key.
	var rec *httptest.ResponseRecorder
	for range 70 {
		rec = s.do(http.MethodGet, api.MetricsPath)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	}
	assert.NotEmpty(t, rec.Header().Get("X-Request-Id"))
	scraped := metricstest.Serve(t, s.router)
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"route": "/healthz", "method": "GET", "status": "2xx"}, 2},
		{map[string]string{"route": plugin.Base + "/me", "method": "GET", "status": "2xx"}, 1},
		{map[string]string{"route": plugin.Base + "/jobs/:id", "method": "GET", "status": "4xx"}, 3},
		{map[string]string{"route": "unmatched", "method": "GET", "status": "4xx"}, 1},
		{map[string]string{"route": "unmatched", "method": "PATCH", "status": "4xx"}, 1},
		{map[string]string{"route": "unmatched", "method": "other", "status": "4xx"}, 1},
		{map[string]string{"route": api.MetricsPath, "method": "GET", "status": "2xx"}, 70},
	} {
		assert.Equal(t, c.want, scraped.Value(metrics.HTTPRequests, c.labels), "%s%v", metrics.HTTPRequests, c.labels)
		delete(c.labels, "status")
		assert.Equal(t, c.want, scraped.Value(metrics.HTTPRequestDuration, c.labels), "%s%v", metrics.HTTPRequestDuration, c.labels)
	}
	assert.Equal(t, float64(2+1+3+1+1+1+70), scraped.Value(metrics.HTTPRequests, nil), "requests in all")
	for _, labels := range scraped.Labels(metrics.HTTPRequests) {
		for _, id := range ids {
			assert.NotContains(t, labels["route"], id, "a path, not a route template, became a label")
		}
	}
}
