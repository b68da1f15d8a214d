package external_test

import (
	"image/color"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// Text PostgreSQL cannot store is refused with a 400 that names the field, on PostgreSQL (where
// it used to be a 500), and nothing is created: JSON strings of every register-* and review
// route (keys included), path and query parameters, the key headers and multipart text fields
// and file names.
func TestTextPostgreSQLRefusesIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.Open(t, testdb.MigratedPostgresURL(t)), 1000)
	account, key := e.newAccount(external.ScopeRegister, external.ScopeRead)
	valid := e.validBodies(account)
	photo := valid["/image-picker/register-ideas"]["config"].(map[string]any)["product"].(map[string]any)["id"].(string)
	shoot := valid["/video-picker/register-videos"]["generatedImageId"].(string)

	refused := func(what string, code int, body map[string]any, want ...string) {
		t.Helper()
		msg := ""
		if code == http.StatusBadRequest {
			msg = errorOf(t, body)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %d %q, want 400 containing %q", what, code, msg, w)
			}
		}
	}
	for _, bad := range apitest.HostileTexts {
		for _, c := range []struct{ path, body, field string }{
			{"/models/register-ideas", `{"preferences":"a` + bad.JSON + `","count":1}`, "preferences"},
			{"/sceneries/register-ideas", `{"preferences":"` + bad.JSON + `"}`, "preferences"},
			{"/packshots/register-ideas", `{"config":{"product":{"id":"` + photo + `"},"suggestions":"` + bad.JSON + `"}}`, "config.suggestions"},
			{"/image-picker/register-ideas", `{"config":{"product":{"id":"` + photo + `"},"industry":"` + bad.JSON + `"}}`, "config.industry"},
			{"/image-picker/register-ideas", `{"config":{"product":{"id":"` + bad.JSON + `"}}}`, "config.product.id"},
			{"/video-picker/register-videos", `{"generatedImageId":"` + shoot + `","suggestion":"` + bad.JSON + `"}`, "suggestion"},
			{"/video-picker/register-videos", `{"imageId":"` + bad.JSON + `"}`, "imageId"},
			{"/reel/register-reel", `{"imagesIds":["` + photo + `","` + bad.JSON + `"]}`, "imagesIds[1]"},
			{"/image-picker/review", `{"recordId":"` + bad.JSON + `","verdict":"accepted"}`, "recordId"},
			{"/packshots/update-packshot", `{"recordId":"` + shoot + `","status":"` + bad.JSON + `"}`, "status"},
			{"/models/register-ideas", `{"count":1,"pref` + bad.JSON + `":"x"}`, `The key "pref`},
		} {
			code, body := e.post(key, c.path, c.body)
			refused(c.path+" "+c.body, code, body, c.field, bad.Want)
		}
		params := apitest.WithBadParams(e.router.Routes(), bad.Path)
		if len(params) != 12 || !slices.ContainsFunc(params, func(p apitest.ParamTarget) bool { return p.Route == external.Base+"/orders/:id/events" }) {
			t.Fatalf("routes with path parameters: %+v, want GET and DELETE /orders/:id, GET /orders/:id/events and the 9 webhook routes with an id", params)
		}
		for _, r := range params {
			req := httptest.NewRequest(r.Method, r.Target, nil)
			req.Header.Set("X-Api-Key", key)
			code, body, _ := e.serve(req)
			refused(r.Method+" "+r.Target, code, body, "The path parameter "+r.Param, bad.Want)
		}
		for _, q := range []string{"/image-picker?productId=", "/packshots?statusFilter=", "/presets?maxRecords=", "/orders?since="} {
			code, body, _ := e.get(q+bad.Path, "X-Api-Key", key)
			name := q[strings.Index(q, "?")+1 : len(q)-1]
			refused("GET "+q+bad.Path, code, body, "The query parameter "+name, bad.Want)
		}
		if bad.Path == "%00" {
			continue // NUL cannot be in a header, nor in a multipart part's header
		}
		raw := bad.JSON
		code, body, _ := e.get("/orders", "X-Api-Key", "mk_live_"+raw+strings.Repeat("a", 16-len(raw))+".secret")
		refused("X-Api-Key "+bad.Path, code, body, "The X-Api-Key header is not valid UTF-8")
		code, body, _ = e.get("/orders", "Authorization", "Bearer "+raw)
		refused("Authorization "+bad.Path, code, body, "The Authorization header is not valid UTF-8")
		image := formFile{"file", "photo.png", testimage.SolidPNG(t, 8, 8, color.NRGBA{255, 255, 255, 255})}
		code, body = e.multipart(key, http.MethodPost, "/products", []string{"name", "Shirt", "sku", "s" + raw}, image)
		refused("POST /products sku", code, body, "The form field sku is not valid UTF-8")
		code, body = e.multipart(key, http.MethodPost, "/products", []string{"name", "Shirt"}, formFile{"file", "p" + raw + ".png", image.data})
		refused("POST /products file name", code, body, "The file name of form field file is not valid UTF-8")
		code, body = e.multipart(key, http.MethodPost, "/presets", append(requiredFields("Preset"), "heroIntro", raw))
		refused("POST /presets heroIntro", code, body, "The form field heroIntro is not valid UTF-8")
	}
	code, body := e.multipart(key, http.MethodPost, "/products", []string{"name", "Sh\x00irt"}, formFile{"file", "photo.png", testimage.SolidPNG(t, 8, 8, color.NRGBA{0, 0, 0, 255})})
	refused("POST /products name with NUL", code, body, "The form field name must not contain the NUL character")
	code, body = e.multipart(key, http.MethodPut, "/presets", []string{"presetId", models.NewID(), "do", "\x00"})
	refused("PUT /presets do with NUL", code, body, "The form field do must not contain the NUL character")

	// validBodies' fixtures are the account's one order (a completed shoot) and one product.
	for _, c := range []struct {
		model any
		want  int64
	}{{&models.Order{}, 1}, {&models.Product{}, 1}, {&models.Asset{}, 3}, {&models.Preset{}, 0}} {
		var n int64
		if err := e.db.Model(c.model).Where("account_id = ?", account).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("%T: %d rows of the account, want %d: a refused request created one", c.model, n, c.want)
		}
	}
}

// The checks come before the key: a request without one is refused for its bad path all the same.
func TestTextIsCheckedBeforeTheKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.Open(t, testdb.SQLiteURL(t)), 0)
	req := httptest.NewRequest(http.MethodGet, external.Base+"/orders/%ff", nil)
	code, body, _ := e.serve(req)
	if msg := errorOf(t, body); code != http.StatusBadRequest || !strings.Contains(msg, "The path parameter id is not valid UTF-8") {
		t.Fatalf("GET /orders/%%ff without a key: %d %q, want 400 naming the path parameter", code, msg)
	}
}
