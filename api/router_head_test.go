package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/plugin"
)

// headAsGetAllocs bounds what serving a HEAD as its GET adds to the GET's allocations: the GET
// request it is served as (reqctx.HeadAsGet: the request, its URL and header, the context).
const headAsGetAllocs = 8

// A HEAD costs what its GET costs, and a 405 what any answer does: neither lists the router's
// routes (gin's Engine.Routes walks every tree and names every handler), so what they allocate
// does not grow with the number of routes, and a route added after the first requests is matched
// and named in Allow like the others.
func TestHeadAndMethodNotAllowedDoNotListTheRoutes(t *testing.T) {
	// Not parallel: it counts the process's allocations (testing.AllocsPerRun).
	if raceDetector {
		t.Skip("the race detector's instrumentation allocates on its own")
	}
	s := newServer(t)
	allocs := func(method, target string, status int) float64 {
		t.Helper()
		require.Equal(t, status, s.do(method, target).Code, "%s %s", method, target)
		return testing.AllocsPerRun(100, func() { s.do(method, target) })
	}
	get := allocs(http.MethodGet, "/healthz", http.StatusOK)
	head := allocs(http.MethodHead, "/healthz", http.StatusOK)
	refused := allocs(http.MethodPatch, "/healthz", http.StatusMethodNotAllowed)
	headRefused := allocs(http.MethodHead, plugin.Base+"/assets/upload", http.StatusMethodNotAllowed)
	assert.LessOrEqual(t, head, get+headAsGetAllocs, "a HEAD allocates what its GET does (%v) and the GET it is served as", get)

	ok := func(c *gin.Context) { c.Status(http.StatusNoContent) }
	for i := range 200 {
		s.router.GET(fmt.Sprintf("/test-more/%d/:id", i), ok)
		s.router.POST(fmt.Sprintf("/test-more/%d/:id/action", i), ok)
	}
	assert.LessOrEqual(t, allocs(http.MethodHead, "/healthz", http.StatusOK), head+1, "HEAD with 400 routes more")
	assert.LessOrEqual(t, allocs(http.MethodPatch, "/healthz", http.StatusMethodNotAllowed), refused+1, "405 with 400 routes more")
	assert.LessOrEqual(t, allocs(http.MethodHead, plugin.Base+"/assets/upload", http.StatusMethodNotAllowed), headRefused+1,
		"HEAD of a POST route with 400 routes more")

	// The routes added after the first requests are served and named like the first ones.
	assert.Equal(t, http.StatusNoContent, s.do(http.MethodHead, "/test-more/7/x").Code)
	rec := s.do(http.MethodPatch, "/test-more/7/x")
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
	rec = s.do(http.MethodHead, "/test-more/7/x/action")
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "POST", rec.Header().Get("Allow"))
}

// A HEAD is served as the GET of its path; where the path takes no GET, or matches no route, the
// answer and its message name the HEAD the client sent, in the error body of the path's API.
func TestHeadWithoutGetNamesTheHead(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	rec := s.do(http.MethodHead, plugin.Base+"/assets/upload", "X-Api-Key", s.key)
	message := requireError(t, rec, http.StatusMethodNotAllowed, plugin.CodeMethodNotAllowed)
	assert.Equal(t, "Method HEAD is not allowed on this route.", message)
	assert.Equal(t, "POST", rec.Header().Get("Allow"))

	rec = s.do(http.MethodHead, external.Base+"/models/register-ideas")
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "POST", rec.Header().Get("Allow"))
	assert.JSONEq(t, `{"error":"Method HEAD is not allowed on this route."}`, rec.Body.String())

	rec = s.do(http.MethodHead, plugin.Base+"/nope", "X-Api-Key", s.key)
	message = requireError(t, rec, http.StatusNotFound, plugin.CodeNotFound)
	assert.Equal(t, "No such route: HEAD "+plugin.Base+"/nope", message)
	assert.Empty(t, rec.Header().Get("Allow"))

	rec = s.do(http.MethodHead, external.Base+"/nope")
	assert.Equal(t, http.StatusNotFound, rec.Code)
	assert.JSONEq(t, `{"error":"No such route."}`, rec.Body.String())
}

// BenchmarkHeadAgainstGet serves GET /healthz, its HEAD, a 405 (PATCH /healthz) and the HEAD of
// a route without GET (a 405) through the whole router, both APIs mounted (docs/benchmarks.md,
// "HEAD and 405 through the router").
func BenchmarkHeadAgainstGet(b *testing.B) {
	s := newServer(b)
	for _, tc := range []struct{ name, method, target string }{
		{"GET", http.MethodGet, "/healthz"},
		{"HEAD", http.MethodHead, "/healthz"},
		{"405", http.MethodPatch, "/healthz"},
		{"HEAD_405", http.MethodHead, plugin.Base + "/assets/upload"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.do(tc.method, tc.target)
			}
		})
	}
}

// Router.ServeHTTP serves every HEAD as the GET of its path, so a route of HEAD would never be
// reached: no route registers one.
func TestNoRouteRegistersHead(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, rt := range s.router.Routes() {
		assert.NotEqual(t, http.MethodHead, rt.Method, rt.Path)
	}
}

// api.MaxHeaderBytes bounds the request's line and headers as the client sent them: a HEAD, served
// as its GET without its Prefer (reqctx.HeadAsGet), is measured with its method and every header
// it carried, as its GET is.
func TestHeadIsMeasuredAsSent(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	// send sends method /healthz with a line and headers of exactly size bytes as headBytes counts
	// them (httptest.NewRequest's Host is example.com).
	send := func(method string, size int) int {
		req := httptest.NewRequest(method, "/healthz", nil)
		req.Header.Set("Prefer", "wait=5")
		fixed := len(method+" /healthz HTTP/1.1\r\n") + len("Host: example.com\r\n") + len("Prefer: wait=5\r\n") + len("X-Pad: \r\n") + len("\r\n")
		req.Header.Set("X-Pad", strings.Repeat("a", size-fixed))
		rec := httptest.NewRecorder()
		s.router.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		assert.Equal(t, http.StatusOK, send(method, api.MaxHeaderBytes), "%s of a head of MaxHeaderBytes", method)
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, send(method, api.MaxHeaderBytes+1), "%s of a head one byte longer", method)
	}
}
