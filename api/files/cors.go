package files

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// The routes of signed URLs (the downloads here, the API's upload URL in FILE_URLS=api mode) are
// reached from browsers: a shop admin's page uploads a product photo to its upload_url and shows
// or fetches the outputs. Their URL's signature is the only credential (no key, no cookie), so
// any origin may use them, as a bucket's CORS rule lets it use the store's presigned URLs
// (docs/files.md): every answer allows any origin (AllowAnyOrigin), and the router answers a
// preflight (OPTIONS) of one with Preflight. SignedRoutes lists them.

// SignedRoutes are the route patterns reached with a signed URL and no key, with the methods a
// browser may send them: the router answers their CORS preflights (Preflight).
var SignedRoutes = map[string][]string{
	"/files/:id":                        {http.MethodGet, http.MethodHead},
	"/files/:id/thumbnail":              {http.MethodGet, http.MethodHead},
	RefPrefix + ":version/:group/:file": {http.MethodGet, http.MethodHead},
	UploadRoute:                         {http.MethodPut},
}

// UploadRoute is the plugin API's upload URL in FILE_URLS=api mode (a PUT of the bytes).
const UploadRoute = "/api/v1/plugin/uploads/:id"

// corsExposed are the headers of a signed route's answer a page's script may read.
const corsExposed = "Content-Length, Content-Range, Accept-Ranges, ETag, X-Request-Id, Retry-After"

// AllowAnyOrigin lets a page of any origin read the answer of a signed route (CORS, without
// credentials).
func AllowAnyOrigin(c *gin.Context) {
	c.Header("Access-Control-Allow-Origin", "*")
	c.Header("Access-Control-Expose-Headers", corsExposed)
	c.Next()
}

// Preflight answers the CORS preflight (OPTIONS) of a signed route that takes methods: 204,
// allowing any origin those methods and the headers a browser's upload or download sends, for a
// day. It checks no signature: a preflight carries none, and the request it clears is checked.
func Preflight(w http.ResponseWriter, methods []string) {
	allow := strings.Join(methods, ", ")
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", allow)
	h.Set("Access-Control-Allow-Headers", "Content-Type, Range, If-None-Match, If-Range")
	h.Set("Access-Control-Max-Age", "86400")
	h.Set("Allow", allow+", OPTIONS")
	w.WriteHeader(http.StatusNoContent)
}
