package plugin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models"
)

// Text PostgreSQL cannot store is refused with 400 invalid_input naming the field, on PostgreSQL
// (where it used to be a 500), and nothing is created: path parameters of every route that has
// one, every JSON string field (keys included), query parameters and the Idempotency-Key and
// X-Api-Key headers.
func TestTextPostgreSQLRefusesIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onPostgres(), withRateLimit(100000)).committing()
	e.approved("shirt")
	asset := e.readyAsset(e.inst)
	order, _, _ := e.storeJob(e.inst)
	assets := e.count(&models.Asset{}, "1 = 1")
	products := e.count(&models.Product{}, "1 = 1")

	routes := 0
	for _, bad := range apitest.HostileTexts {
		targets := apitest.WithBadParams(e.router.Routes(), bad.Path)
		routes = len(targets)
		for _, r := range targets {
			msg := e.requireError(e.do(r.Method, r.Target, e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Contains(t, msg, "The path parameter "+r.Param+" "+bad.Want, "%s %s", r.Method, r.Target)
		}
	}
	assert.Equal(t, 25, routes, "routes with path parameters: 21 of the plugin API, its reference files and 3 of the router")

	subj := func(ref string) string {
		return `{"product_ref":"` + ref + `","images_count":1,"ai_model":"local/studio-v1"}`
	}
	for _, bad := range apitest.HostileTexts {
		b := bad.JSON
		for _, c := range []struct{ path, body, field string }{
			{"/assets/upload", `{"mode":"presigned","filename":"a` + b + `.png","content_type":"image/png","size_bytes":10}`, "filename"},
			{"/images", `{"images":[{"external_ref":"e` + b + `","product_ref":"p","asset_id":"` + asset.ID + `"}]}`, "images[0].external_ref"},
			{"/images", `{"images":[{"external_ref":"e","product_ref":"` + b + `","asset_id":"` + asset.ID + `"}]}`, "images[0].product_ref"},
			{"/images", `{"images":[{"external_ref":"e","product_ref":"p","asset_id":"` + asset.ID + `","product_metadata":{"display_name":"` + b + `"}}]}`, "images[0].product_metadata.display_name"},
			{"/packshots", `{"packshots":[{"asset_id":"` + asset.ID + `","product_ref":"` + b + `"}]}`, "packshots[0].product_ref"},
			{"/packshots", `{"packshots":[{"asset_id":"` + asset.ID + `","product_ref":"p","external_ref":"` + b + `"}]}`, "packshots[0].external_ref"},
			{"/jobs", `{"session_config":{},"subjects":[` + subj("shirt") + `,` + subj(b) + `]}`, "subjects[1].product_ref"},
			{"/jobs", `{"session_config":{"aspect_ratio":"` + b + `"},"subjects":[` + subj("shirt") + `]}`, "session_config.aspect_ratio"},
			{"/jobs", `{"session_config":{"style":"` + b + `"},"subjects":[` + subj("shirt") + `]}`, "session_config.style"},
			{"/jobs", `{"session_config":{"suggestions":"` + b + `"},"subjects":[` + subj("shirt") + `]}`, "session_config.suggestions"},
			{"/jobs", `{"session_config":{"scenery_id":"` + b + `"},"subjects":[` + subj("shirt") + `]}`, "session_config.scenery_id"},
			{"/jobs", `{"session_config":{"model_id":"` + b + `"},"subjects":[` + subj("shirt") + `]}`, "session_config.model_id"},
			{"/jobs", `{"session_config":{"sty` + b + `le":"x"},"subjects":[` + subj("shirt") + `]}`, `The key "sty`},
			{"/jobs/batch", `{"batches":[{"session_config":{},"subjects":[` + subj("shirt") + `]},{"session_config":{"scenery_id":"` + b + `"},"subjects":[` + subj("shirt") + `]}]}`, "batches[1].session_config.scenery_id"},
			{"/orders/" + order.ID + "/clone", `{"subjects":[` + subj(b) + `]}`, "subjects[0].product_ref"},
			{"/webhook-endpoints", `{"url":"https://93.184.216.34/h","description":"` + b + `"}`, "description"},
		} {
			rec := e.do(http.MethodPost, p(c.path), e.key, c.body, keyHeader, "key-1")
			msg := e.requireError(rec, http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Contains(t, msg, c.field, "POST %s %s", c.path, c.body)
			assert.Contains(t, msg, bad.Want, "POST %s %s", c.path, c.body)
		}
		for _, q := range []string{"/jobs?cursor=", "/jobs?status=", "/packshots?product_ref=", "/products?cursor="} {
			msg := e.requireError(e.do(http.MethodGet, p(q+bad.Path), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
			name := q[strings.Index(q, "?")+1 : len(q)-1]
			assert.Contains(t, msg, "The query parameter "+name+" "+bad.Want)
		}
		if bad.Path == "%00" {
			continue // NUL cannot be in a header
		}
		for _, path := range []string{"/jobs", "/orders/" + order.ID + "/clone"} {
			rec := e.do(http.MethodPost, p(path), e.key, `{"session_config":{},"subjects":[`+subj("shirt")+`]}`, keyHeader, "k-"+b)
			msg := e.requireError(rec, http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Equal(t, "The Idempotency-Key header is not valid UTF-8.", msg)
		}
		key := models.PluginKeyPrefix + b + strings.Repeat("a", 16-len(b)) + ".secret"
		msg := e.requireError(e.do(http.MethodGet, p("/me"), key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Equal(t, "The X-Api-Key header is not valid UTF-8.", msg)
	}
	e.noOrdersOf(1) // the stored job's
	require.Equal(t, assets, e.count(&models.Asset{}, "1 = 1"), "no upload was created")
	require.Equal(t, products, e.count(&models.Product{}, "1 = 1"), "no product was created")
	require.Equal(t, int64(0), e.count(&models.WebhookEndpoint{}, "1 = 1"), "no webhook endpoint was created")
}
