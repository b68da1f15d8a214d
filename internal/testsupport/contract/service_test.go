package contract_test

import (
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
