package contract_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// TestServiceAnswersMatchDocument drives the answers the plugin tests rarely reach through the
// production router and checks each against the document: the error documentation, the health
// checks, the metrics, the signed download's refusals, and the 401, 404, 405 and 429 every route can give.
func TestServiceAnswersMatchDocument(t *testing.T) {
	t.Parallel()
	s := newServer(t, 2)
	send := func(method, target, key string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, target, nil)
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		return contract.ServeAndCheck(t, s.router, req)
	}
	expect := func(rec *httptest.ResponseRecorder, status int, code string) {
		t.Helper()
		if rec.Code != status || (code != "" && !strings.Contains(rec.Body.String(), `"code":"`+code+`"`)) {
			t.Errorf("got %d %s, want %d %s", rec.Code, rec.Body.String(), status, code)
		}
	}

	for code := range plugin.ErrorDocs {
		expect(send(http.MethodGet, "/docs/plugin-api/errors/"+code, ""), http.StatusOK, "")
	}
	expect(send(http.MethodGet, "/docs/plugin-api/errors/no_such_code", ""), http.StatusNotFound, plugin.CodeNotFound)
	expect(send(http.MethodGet, "/healthz", ""), http.StatusOK, "")
	expect(send(http.MethodGet, "/metrics", ""), http.StatusOK, "")
	expect(send(http.MethodGet, "/readyz", ""), http.StatusOK, "")
	s.ready = &unavailable.DependencyError{Dependency: "database", Err: errors.New("dial tcp 10.0.0.5:5432: i/o timeout")}
	expect(send(http.MethodGet, "/readyz", ""), http.StatusServiceUnavailable, "")

	// Signed downloads: no signature, a signature for an unknown file, an expired signature.
	id := models.NewID()
	expect(send(http.MethodGet, files.Path(id), ""), http.StatusForbidden, plugin.CodeForbidden)
	signed := func(expires time.Time) string {
		u, err := url.Parse(s.signer.URL(http.MethodGet, files.Path(id), expires))
		if err != nil {
			t.Fatal(err)
		}
		return u.RequestURI()
	}
	expect(send(http.MethodGet, signed(time.Now().Add(time.Hour)), ""), http.StatusNotFound, plugin.CodeNotFound)
	expect(send(http.MethodGet, signed(time.Now().Add(-time.Hour)), ""), http.StatusGone, plugin.CodeURLExpired)

	// A stored file: whole, one range of it, and a range past its end.
	now := time.Now().UTC()
	file := models.Asset{ID: models.NewID(), AccountID: s.acc.ID, InstallationID: &s.inst.ID, Kind: models.AssetKindOutput,
		Status: status.AssetReady, ContentType: "image/png", SizeBytes: 10, BlobKey: "outputs/contract", SHA256: strings.Repeat("ab", 32),
		CreatedAt: now, UpdatedAt: now}
	if err := s.db.Create(&file).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.blobs.Put(context.Background(), file.BlobKey, []byte("0123456789"), "image/png"); err != nil {
		t.Fatal(err)
	}
	fileURL, err := url.Parse(s.signer.URL(http.MethodGet, files.Path(file.ID), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	sendRange := func(rangeHeader string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, fileURL.RequestURI(), nil)
		if rangeHeader != "" {
			req.Header.Set("Range", rangeHeader)
		}
		return contract.ServeAndCheck(t, s.router, req)
	}
	expect(sendRange(""), http.StatusOK, "")
	expect(sendRange("bytes=2-5"), http.StatusPartialContent, "")
	expect(sendRange("bytes=10-"), http.StatusRequestedRangeNotSatisfiable, plugin.CodeRangeNotSatisfiable)

	// Authentication, unknown routes and methods, and the rate limit (2 a minute here).
	expect(send(http.MethodGet, plugin.Base+"/me", "pk_live_nope.nope"), http.StatusUnauthorized, plugin.CodeUnauthorized)
	key := s.issue(models.PluginScopes...)
	expect(send(http.MethodGet, plugin.Base+"/no-such-route", key), http.StatusNotFound, plugin.CodeNotFound)
	expect(send(http.MethodPatch, plugin.Base+"/me", key), http.StatusMethodNotAllowed, plugin.CodeMethodNotAllowed)
	expect(send(http.MethodGet, plugin.Base+"/aspect-ratios", key), http.StatusOK, "")
	expect(send(http.MethodGet, plugin.Base+"/jobs?limit=1", key), http.StatusOK, "")
	rec := send(http.MethodGet, plugin.Base+"/orders/"+models.NewID(), key)
	expect(rec, http.StatusTooManyRequests, plugin.CodeRateLimited)
	if rec.Header().Get("Retry-After") == "" || rec.Header().Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("429 headers: %v", rec.Header())
	}
}
