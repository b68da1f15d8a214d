package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/plugin"
)

// OpenAPIDocument is the OpenAPI 3.1 description of the plugin API (api/openapi.yaml): every route
// under /api/v1/plugin, the signed upload and download URLs and the webhooks. internal/testsupport/contract
// validates every request and response of the plugin and end-to-end tests against it.
//
//go:embed openapi.yaml
var OpenAPIDocument []byte

// OpenAPIPath is where the API serves OpenAPIDocument; it needs no API key.
const OpenAPIPath = plugin.Base + "/openapi.yaml"

// serveOpenAPI answers GET /api/v1/plugin/openapi.yaml with the embedded document.
func serveOpenAPI(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "application/yaml; charset=utf-8", OpenAPIDocument)
}
