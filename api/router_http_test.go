package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allScopesExternalKey issues an external key of every scope on the server's account.
func allScopesExternalKey(t *testing.T, s *server) string {
	t.Helper()
	k, err := models.IssueKey(s.db, models.KeyKindExternal, s.inst.AccountID, nil, "k",
		[]string{external.ScopeRegister, external.ScopeRead, external.ScopeWebhooks, external.ScopeBilling}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k.Secret
}

// A query parameter whose value is not valid percent-encoding (or a pair with a ';') is not text
// the service can read: it answers 400 rather than as though the filter had not been sent (an
// unfiltered list, the default usage range), which url.ParseQuery's dropping of the pair did.
func TestMalformedQueryStringIsRefused(t *testing.T) {
	s := newServer(t)
	xk := allScopesExternalKey(t, s)
	for _, tc := range []struct{ target, key string }{
		{plugin.Base + "/jobs?status=%zz", s.key},       // every job instead of a 400
		{plugin.Base + "/jobs?limit=%zz", s.key},        // "anything else answers 400"
		{plugin.Base + "/jobs?limit=5;x=1", s.key},      // ';' drops the whole pair
		{plugin.Base + "/usage?from=%zz", s.key},        // the default month instead of a 400
		{external.Base + "/orders?status=%zz", xk},      // every order instead of a 400
		{external.Base + "/orders?since=%zz", xk},       // every order instead of a 400
		{external.Base + "/usage?from=2026-01-01%", xk}, // the default month instead of a 400
		{external.Base + "/webhook-endpoints?limit=%zz", xk},
	} {
		rec := s.do(http.MethodGet, tc.target, "X-Api-Key", tc.key)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "query string is malformed") {
			t.Errorf("GET %s = %d %s; want 400: the query string is malformed", tc.target, rec.Code, rec.Body)
		}
	}
}

// A 405 names the methods the path takes (RFC 9110 §15.5.6), matched on the raw path as the routes
// are, where a %2F (a merchant reference with a '/') stays inside its segment.
func TestMethodNotAllowedOfAnEncodedSlashNamesAllow(t *testing.T) {
	s := newServer(t)
	xk := allScopesExternalKey(t, s)
	for _, tc := range []struct{ method, target, key, allow string }{
		{http.MethodPut, plugin.Base + "/products/a%2Fb", s.key, "DELETE, GET, HEAD"},
		{http.MethodPost, plugin.Base + "/packshots/a%2Fb", s.key, "DELETE"},
		{http.MethodPut, external.Base + "/orders/a%2Fb", xk, "DELETE, GET, HEAD"},
	} {
		rec := s.do(tc.method, tc.target, "X-Api-Key", tc.key)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d, Allow %q; want 405 with Allow %q", tc.method, tc.target, rec.Code, rec.Header().Get("Allow"), tc.allow)
		}
	}
}

// A signed route answers its CORS preflight (OPTIONS), so a 405 of another method names OPTIONS
// among the methods the path takes, as the preflight's own Allow does (RFC 9110 §10.2.1).
func TestMethodNotAllowedOfASignedRouteNamesOptions(t *testing.T) {
	s := newServer(t)
	id := models.NewID()
	for _, tc := range []struct{ method, target, allow string }{
		{http.MethodPost, files.Path(id), "GET, HEAD, OPTIONS"},
		{http.MethodDelete, files.ThumbnailPath(id), "GET, HEAD, OPTIONS"},
		{http.MethodPut, files.RefPrefix + "v1/models/" + id + ".jpg", "GET, HEAD, OPTIONS"},
		{http.MethodGet, plugin.Base + "/uploads/" + id, "OPTIONS, PUT"},
		{http.MethodHead, plugin.Base + "/uploads/" + id, "OPTIONS, PUT"},
	} {
		rec := s.do(tc.method, tc.target)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d, Allow %q; want 405 with Allow %q", tc.method, tc.target, rec.Code, rec.Header().Get("Allow"), tc.allow)
		}
	}
}

// RFC 9110 §9.1: "All general-purpose servers MUST support the methods GET and HEAD." Every GET
// route answers HEAD as its GET, the signed file downloads included (whose Accept-Ranges and
// Content-Length a download manager reads with a HEAD before ranged GETs), over a real server
// without the body; a route without GET still answers 405.
func TestHeadIsServedOnGetRoutes(t *testing.T) {
	s := newServer(t)
	data := []byte("0123456789abcdefghij")
	a := s.storeFile(data, "image/png")
	file := requestURI(t, s.signer.URL(http.MethodGet, files.Path(a.ID), time.Now().Add(time.Hour)))
	srv := httptest.NewServer(s.router)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		target, key string
		length      string
	}{
		{"/healthz", "", ""},
		{file, "", strconv.Itoa(len(data))},
		{plugin.Base + "/me", s.key, ""},
	} {
		req, err := http.NewRequest(http.MethodHead, srv.URL+tc.target, nil)
		require.NoError(t, err)
		req.Header.Set("X-Api-Key", tc.key)
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, "HEAD %s (Allow %q)", tc.target, res.Header.Get("Allow"))
		assert.Empty(t, body, tc.target)
		if tc.length != "" {
			assert.Equal(t, tc.length, res.Header.Get("Content-Length"), tc.target)
			assert.Equal(t, "bytes", res.Header.Get("Accept-Ranges"), tc.target)
		}
	}
	rec := s.do(http.MethodHead, plugin.Base+"/assets/upload", "X-Api-Key", s.key)
	requireError(t, rec, http.StatusMethodNotAllowed, plugin.CodeMethodNotAllowed)
	assert.Equal(t, "POST", rec.Header().Get("Allow"))
}

// GET /files/{id} with If-None-Match: RFC 9110 §13.1.2 compares entity tags weakly and takes a
// list (or "*"), and §15.4.5 says a 304 carries the ETag and Cache-Control a 200 would.
func TestDownloadConditionalRequests(t *testing.T) {
	s := newServer(t)
	a := s.storeFile([]byte("0123456789abcdefghij"), "image/png")
	file := requestURI(t, s.signer.URL(http.MethodGet, files.Path(a.ID), time.Now().Add(time.Hour)))

	rec := s.do(http.MethodGet, file, "If-None-Match", `"abc123"`)
	if rec.Code != http.StatusNotModified || rec.Header().Get("ETag") != `"abc123"` || rec.Header().Get("Cache-Control") != "private, max-age=86400" {
		t.Errorf("304 headers = %v; want ETag \"abc123\" and Cache-Control private, max-age=86400 as on the 200", rec.Header())
	}
	for _, inm := range []string{`W/"abc123"`, `"other", "abc123"`, `*`} {
		if rec := s.do(http.MethodGet, file, "If-None-Match", inm); rec.Code != http.StatusNotModified {
			t.Errorf("If-None-Match %s = %d; want 304 (the client's copy is current)", inm, rec.Code)
		}
	}
	for _, inm := range []string{`"other"`, `"abc12"`, `abc123`, `W/"other", "x"`} {
		if rec := s.do(http.MethodGet, file, "If-None-Match", inm); rec.Code != http.StatusOK {
			t.Errorf("If-None-Match %s = %d; want 200 (another copy)", inm, rec.Code)
		}
	}
}

// A last-pos or first-pos too large for int64 is still one valid range (RFC 9110 §14.1.2: last-pos
// past the end means "to the end"): 206, or 416 when it starts past the end; not the whole file.
func TestDownloadRangeWithLargeNumbers(t *testing.T) {
	s := newServer(t)
	data := []byte("0123456789abcdefghij")
	a := s.storeFile(data, "image/png")
	file := requestURI(t, s.signer.URL(http.MethodGet, files.Path(a.ID), time.Now().Add(time.Hour)))
	for _, tc := range []struct {
		rng    string
		status int
	}{
		{"bytes=5-99999999999999999999", http.StatusPartialContent},
		{"bytes=-99999999999999999999", http.StatusPartialContent},
		{"bytes=99999999999999999999-", http.StatusRequestedRangeNotSatisfiable},
	} {
		rec := s.do(http.MethodGet, file, "Range", tc.rng)
		if rec.Code != tc.status {
			t.Errorf("Range %s = %d (Content-Range %q); want %d", tc.rng, rec.Code, rec.Header().Get("Content-Range"), tc.status)
		}
		if tc.status == http.StatusPartialContent {
			assert.Equal(t, data[len(data)-int(rec.Result().ContentLength):], rec.Body.Bytes(), tc.rng)
		}
	}
}

// A browser on the shop admin's origin may PUT to the API's upload URL (FILE_URLS=api) and read
// the signed downloads: their preflight is 204 allowing the method, and their answers allow any
// origin (the signature is the credential). Other routes take a key, and no preflight.
func TestSignedRoutesAllowAnyOrigin(t *testing.T) {
	s := newServer(t)
	require.Equal(t, plugin.Base+"/uploads/:id", files.UploadRoute)
	upload := requestURI(t, s.signer.URL(http.MethodPut, plugin.Base+"/uploads/"+models.NewID(), time.Now().Add(time.Hour)))
	a := s.storeFile([]byte("0123456789"), "image/png")
	file := requestURI(t, s.signer.URL(http.MethodGet, files.Path(a.ID), time.Now().Add(time.Hour)))
	for target, method := range map[string]string{upload: "PUT", file: "GET"} {
		rec := s.do(http.MethodOptions, target, "Origin", "https://admin.shopify.com",
			"Access-Control-Request-Method", method, "Access-Control-Request-Headers", "content-type")
		assert.Equal(t, http.StatusNoContent, rec.Code, target)
		assert.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"), target)
		assert.Contains(t, rec.Header().Get("Access-Control-Allow-Methods"), method, target)
		assert.Contains(t, rec.Header().Get("Access-Control-Allow-Headers"), "Content-Type", target)
	}
	rec := s.do(http.MethodGet, file, "Origin", "https://admin.shopify.com")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
	assert.Contains(t, rec.Header().Get("Access-Control-Expose-Headers"), "Content-Range")
	rec = s.do(http.MethodPut, upload, "Origin", "https://admin.shopify.com")
	assert.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"), "even a refused upload tells the page why")

	rec = s.do(http.MethodOptions, plugin.Base+"/me", "Origin", "https://admin.shopify.com", "Access-Control-Request-Method", "GET")
	requireError(t, rec, http.StatusMethodNotAllowed, plugin.CodeMethodNotAllowed)
	assert.Empty(t, rec.Header().Get("Access-Control-Allow-Origin"), "a keyed route allows no other origin")
}

// Unknown routes answer in the error body of the API whose prefix they carry, the external API's
// base path itself included.
func TestExternalBasePathAnswersInTheExternalBody(t *testing.T) {
	s := newServer(t)
	for _, target := range []string{external.Base, external.Base + "?x=1"} {
		rec := s.do(http.MethodGet, target)
		if rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), `"code"`) {
			t.Errorf("GET %s = %d %s; want 404 {\"error\": \"…\"} (the external body)", target, rec.Code, rec.Body)
		}
	}
}
