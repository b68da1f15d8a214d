package external_test

import (
	"bytes"
	"encoding/json"
	"image/color"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/routefuzz"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// fuzzBoundary is the boundary of the multipart seeds; the fuzz target sends every multipart
// route's body with it.
const fuzzBoundary = "fuzzboundary"

// FuzzExternalAPI sends every route of the external API requests built from fuzzed path
// parameters, query, one header and body, on PostgreSQL, and fails on any 5xx answer or any
// error answer that is not the {error} body. The seeds are a valid request of every route and,
// derived from it, the hostile text of the fuzzing run that found 500s: NUL and invalid UTF-8 in
// path and query parameters, the X-Api-Key header, each string of each JSON body and multipart
// text fields and file names.
func FuzzExternalAPI(f *testing.F) {
	e := newEnv(f, testdb.Open(f, testdb.MigratedPostgresURL(f)), 1<<30)
	if err := e.db.Model(&models.Account{}).Where("id = ?", e.account).Update("credit_balance", int64(1)<<40).Error; err != nil {
		f.Fatal(err)
	}
	routes := routefuzz.Routes(e.router)
	valid := e.fuzzSeeds()
	for _, rt := range routes {
		seeds := valid[rt.Method+" "+rt.Path]
		if len(seeds) == 0 {
			f.Fatalf("no valid seed for %s %s", rt.Method, rt.Path)
		}
		i := routefuzz.Index(routes, rt.Method, rt.Path)
		for _, s := range append(seeds, routefuzz.Hostile(rt, seeds[0])...) {
			f.Add(i, s.Params, s.Query, s.Header, []byte(s.Body))
		}
	}
	orders := routefuzz.Index(routes, http.MethodGet, external.Base+"/orders")
	products := routefuzz.Index(routes, http.MethodPost, external.Base+"/products")
	for _, bad := range routefuzz.HostileText[1:] { // NUL cannot be in a header
		f.Add(orders, "", "", "X-Api-Key: "+models.ExternalKeyPrefix+bad+strings.Repeat("a", 16-len(bad))+".x", []byte{})
		f.Add(products, "", "", "", e.productForm("Shirt"+bad, "p.png"))
		f.Add(products, "", "", "", e.productForm("Shirt", "p"+bad+".png"))
	}
	f.Add(products, "", "", "", e.productForm("Sh\x00irt", "p.png"))

	jsonBody := http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {e.key}}
	form := http.Header{"Content-Type": {"multipart/form-data; boundary=" + fuzzBoundary}, "X-Api-Key": {e.key}}
	f.Fuzz(func(t *testing.T, route uint8, params, query, header string, body []byte) {
		rt := routefuzz.Pick(routes, route)
		h := jsonBody
		if isForm(rt.Path) && rt.Method != http.MethodGet {
			h = form
		}
		req := routefuzz.Request(rt, h, params, query, header, body)
		rec := httptest.NewRecorder()
		e.router.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q?%q %q → %d: %s", rt.Method, req.URL.Path, query, header, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var answer map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil || answer["error"] == nil {
				t.Fatalf("%s %q → %d without the {error} body: %s", rt.Method, req.URL.Path, rec.Code, rec.Body)
			}
		}
	})
}

// isForm reports whether the route's POST and PUT take a multipart form.
func isForm(path string) bool {
	return path == external.Base+"/products" || path == external.Base+"/presets"
}

// form encodes a multipart form with the fixed boundary: text fields (name, value pairs) and
// files (field, file name, bytes triples).
func (e *env) form(fields []string, files ...formFile) []byte {
	e.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(fuzzBoundary); err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, f := range files {
		part, err := w.CreateFormFile(f.field, f.name)
		if err != nil {
			e.t.Fatal(err)
		}
		part.Write(f.data)
	}
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
	return buf.Bytes()
}

// productForm is a POST /products form with the name and the image's file name.
func (e *env) productForm(name, fileName string) []byte {
	return e.form([]string{"name", name, "sku", "S-1"}, formFile{"file", fileName, testimage.SolidPNG(e.t, 8, 8, color.NRGBA{200, 100, 50, 255})})
}

// fuzzSeeds creates the records the valid requests name and returns them by route ("METHOD
// path" as the router registers it).
func (e *env) fuzzSeeds() map[string][]routefuzz.Seed {
	e.t.Helper()
	bodies := e.validBodies(e.account)
	photo := bodies["/image-picker/register-ideas"]["config"].(map[string]any)["product"].(map[string]any)["id"].(string)
	shoot := bodies["/video-picker/register-videos"]["generatedImageId"].(string)
	packshot := e.packshotFixture(e.account, photo, models.VotingPending)
	order := e.order(e.account, time.Now().Add(-time.Hour), status.OrderCompleted)
	cover := formFile{"cover", "cover.png", testimage.SolidPNG(e.t, 8, 6, color.NRGBA{10, 100, 200, 255})}
	created := e.createPreset(e.key, requiredFields("Studio"), cover)

	endpoint := e.createEndpoint(e.key, map[string]any{"url": hookURL, "events": []string{"record.done", "webhook.test"}})["id"].(string)
	deleted := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
	_, sent, _ := e.send(e.key, http.MethodPost, "/webhook-endpoints/"+endpoint+"/test", nil)
	delivery, event := sent["delivery_id"].(string), sent["event_id"].(string)
	since := time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	_, testKey := e.testKey(external.ScopeRegister, external.ScopeRead)

	b := external.Base
	seeds := map[string][]routefuzz.Seed{
		"GET " + external.OpenAPIPath:              {{}},
		"GET " + b + "/orders":                     {{Query: "status=completed&limit=10&since=2026-01-01T00:00:00Z"}},
		"GET " + b + "/account":                    {{}},
		"GET " + b + "/usage":                      {{}, {Query: "from=2026-01-01T00:00:00Z&to=2026-03-01&group_by=key"}},
		"PUT " + b + "/test/credits":               {{Body: `{"available":5}`}, {Header: "X-Api-Key: " + testKey, Body: `{"available":5}`}},
		"GET " + b + "/spend-limit":                {{}},
		"PUT " + b + "/spend-limit":                {{Body: `{"monthlyCredits":5000,"alertAtPercent":80}`}},
		"DELETE " + b + "/spend-limit":             {{}},
		"GET " + b + "/alerts":                     {{}},
		"PUT " + b + "/alerts":                     {{Body: `{"low_balance_threshold":100}`}},
		"GET " + b + "/orders/:id":                 {{Params: order.ID}, {Params: order.ID, Header: "Prefer: wait=1"}},
		"GET " + b + "/orders/:id/events":          {{Params: order.ID}, {Params: order.ID, Header: "Last-Event-ID: 0"}},
		"DELETE " + b + "/orders/:id":              {{Params: order.ID}},
		"GET " + b + "/products":                   {{}, {Query: "limit=2&starting_after=" + photo}},
		"POST " + b + "/products":                  {{Body: string(e.productForm("Shirt", "shirt.png"))}},
		"GET " + b + "/models":                     {{Query: "statusFilter=approved"}},
		"GET " + b + "/sceneries":                  {{Query: "statusFilter=approved"}},
		"GET " + b + "/packshots":                  {{Query: "productId=" + photo + "&statusFilter=approved"}, {Query: "limit=1&starting_after=" + packshot}},
		"GET " + b + "/image-picker":               {{Query: "productId=" + photo}, {Query: "productId=" + photo + "&limit=5&starting_after=" + shoot}},
		"GET " + b + "/videos":                     {{}, {Query: "limit=1000"}},
		"GET " + b + "/presets":                    {{Query: "maxRecords=5"}},
		"POST " + b + "/presets":                   {{Body: string(e.form(append(requiredFields("Loft"), "bestFor", "chairs", "tags", `["wood"]`), cover))}},
		"PUT " + b + "/presets":                    {{Body: string(e.form([]string{"presetId", created["id"].(string), "do", "use daylight", "existingGalleryIds", "[]"}))}},
		"POST " + b + "/image-picker/review":       {{Body: `{"recordId":"` + shoot + `","verdict":"accepted"}`}},
		"POST " + b + "/packshots/update-packshot": {{Body: `{"recordId":"` + packshot + `","Voting":"APPROVED"}`}},

		"POST " + b + "/webhook-endpoints":                   {{Body: `{"url":"` + hookURL + `/new","events":["order.completed"],"description":"orders"}`}},
		"GET " + b + "/webhook-endpoints":                    {{Query: "limit=5"}},
		"GET " + b + "/webhook-endpoints/:id":                {{Params: endpoint}},
		"PATCH " + b + "/webhook-endpoints/:id":              {{Params: endpoint, Body: `{"description":"renamed","events":["record.done","record.failed"]}`}},
		"DELETE " + b + "/webhook-endpoints/:id":             {{Params: deleted}},
		"POST " + b + "/webhook-endpoints/:id/rotate-secret": {{Params: endpoint}},
		"POST " + b + "/webhook-endpoints/:id/test":          {{Params: endpoint, Body: `{"event":"record.done"}`}},
		"POST " + b + "/webhook-endpoints/:id/recover":       {{Params: endpoint, Body: `{"since":"` + since + `"}`}},
		"GET " + b + "/webhook-deliveries":                   {{Query: "endpoint_id=" + endpoint + "&status=pending&event=webhook.test&limit=10"}},
		"GET " + b + "/webhook-deliveries/:id":               {{Params: delivery}},
		"POST " + b + "/webhook-deliveries/:id/replay":       {{Params: delivery}, {Params: delivery, Header: "Idempotency-Key: replay-" + delivery}},
		"GET " + b + "/events":                               {{Query: "type=record.done&created_after=2026-01-01T00:00:00Z&limit=10"}},
		"GET " + b + "/events/:id":                           {{Params: event}},
	}
	for path, body := range bodies {
		if _, ok := body["count"]; ok {
			body["count"] = 1 // each accepted request creates that many jobs
		}
		raw, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		// With and without a start deadline; Hostile derives its header values from the last.
		seeds["POST "+b+path] = []routefuzz.Seed{{Body: string(raw)}, {Header: "Idempotency-Key: " + path, Body: string(raw)},
			{Header: engine.HeaderCancelAfter + ": 600", Body: string(raw)}}
	}
	// Keyed requests of the other kinds of POST: a multipart form, and an answer kept sealed.
	for _, route := range []string{"POST " + b + "/products", "POST " + b + "/webhook-endpoints"} {
		seeds[route] = append(seeds[route], routefuzz.Seed{Header: "Idempotency-Key: " + route, Body: seeds[route][0].Body})
	}
	return seeds
}
