package plugin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/routefuzz"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
)

// fuzzTemporal is the Temporal client of the fuzz target: it accepts every workflow start (orders,
// input preparations, webhook deliveries and replays) and answers a cancel's signal as for an
// order whose workflow has finished. Any other call panics, which the router turns into a 500.
type fuzzTemporal struct{ client.Client }

func (fuzzTemporal) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return &mocks.WorkflowRun{}, nil
}

func (fuzzTemporal) SignalWorkflow(context.Context, string, string, string, any) error {
	return serviceerror.NewNotFound("workflow not found (fuzz test)")
}

// CancelWorkflow answers as for a delivery's workflow that has closed: an endpoint's deletion
// cancels those of the deliveries it ends.
func (fuzzTemporal) CancelWorkflow(context.Context, string, string) error {
	return serviceerror.NewNotFound("workflow not found (fuzz test)")
}

// FuzzPluginAPI sends every route of the plugin API (and the routes around it) requests built
// from fuzzed path parameters, query, one header and body, on PostgreSQL, and fails on any 5xx
// answer or any error answer that is not the envelope. The seeds are a valid request of every
// route and, derived from it, the hostile text of the fuzzing run that found 500s: NUL and
// invalid UTF-8 in path parameters, query parameters, the Idempotency-Key and X-Api-Key headers
// and each string of each JSON body.
func FuzzPluginAPI(f *testing.F) {
	e := newEnv(f, onPostgres(), withRateLimit(1<<30), withCredits(1<<40))
	e.withEngine(func(c *engine.Config) { c.Temporal = fuzzTemporal{} })
	e.handler.Secrets = e.box
	routes := routefuzz.Routes(e.router.Engine)
	valid := e.fuzzSeeds()
	for _, rt := range routes {
		seeds := valid[rt.Method+" "+rt.Path]
		if len(seeds) == 0 {
			f.Fatalf("no valid seed for %s %s", rt.Method, rt.Path)
		}
		i := routefuzz.Index(routes, rt.Method, rt.Path)
		for _, s := range append(seeds, routefuzz.Hostile(rt, seeds[len(seeds)-1])...) {
			f.Add(i, s.Params, s.Query, s.Header, []byte(s.Body))
		}
	}
	me := routefuzz.Index(routes, http.MethodGet, plugin.Base+"/me")
	for _, bad := range routefuzz.HostileText[1:] { // NUL cannot be in a header
		f.Add(me, "", "", "X-Api-Key: "+models.PluginKeyPrefix+bad+strings.Repeat("a", 16-len(bad))+".x", []byte{})
	}

	defaults := http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {e.key}}
	upload := http.Header{"Content-Type": {"image/png"}}
	f.Fuzz(func(t *testing.T, route uint8, params, query, header string, body []byte) {
		rt := routefuzz.Pick(routes, route)
		h := defaults
		if rt.Path == plugin.Base+"/uploads/:id" {
			h = upload
		}
		req := routefuzz.Request(rt, h, params, query, header, body)
		rec := httptest.NewRecorder()
		e.router.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q?%q %q → %d: %s", rt.Method, req.URL.Path, query, header, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var env plugin.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Code == "" || env.Error.MessageI18n["en"] == "" {
				t.Fatalf("%s %q → %d without the error envelope: %s", rt.Method, req.URL.Path, rec.Code, rec.Body)
			}
		}
	})
}

// fuzzSeeds creates the records the valid requests name and returns them by route ("METHOD
// path" as the router registers it).
func (e *env) fuzzSeeds() map[string][]routefuzz.Seed {
	e.t.Helper()
	e.approved("shirt")
	asset := e.readyAsset(e.inst)
	old := e.product(e.inst, "old")
	packshot := e.packshot(e.inst, old.ID, e.readyAsset(e.inst).ID, models.VotingPending)
	order, job, output := e.storeJob(e.inst)
	delivery := e.delivery(e.inst)
	session := `{"session_config":{"aspect_ratio":"1:1","style":"studio","suggestions":"soft light"},` +
		`"subjects":[{"product_ref":"shirt","product_label":"Shirt","images_count":1,"ai_model":"local/studio-v1"}]}`
	rec := e.do(http.MethodPost, p("/jobs"), e.key, session)
	if rec.Code != http.StatusCreated {
		e.t.Fatalf("POST /jobs: %d %s", rec.Code, rec.Body)
	}
	var created plugin.SessionResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &created); err != nil {
		e.t.Fatal(err)
	}
	pending := created.Subjects[0].JobIDs[0]
	png := testimage.GradientPNG(e.t, 2, 2)
	_, uploadURL := e.createUpload(e.key, "p.png", "image/png", len(png))
	up, err := url.Parse(uploadURL)
	if err != nil {
		e.t.Fatal(err)
	}
	expires := time.Now().Add(time.Hour)
	signed := func(path string) string {
		u, err := url.Parse(e.signer.URL(http.MethodGet, path, expires))
		if err != nil {
			e.t.Fatal(err)
		}
		return u.RawQuery
	}
	refFile := "v1/sceneries/" + models.NewID() + ".jpg"
	hook := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
	doomed := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
	tested := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
	since := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	hookEvent, hookDelivery := e.loggedEvent(e.inst, hook, "job.completed", time.Now().UTC(), false)
	testKey := e.issueTestKey(models.PluginScopes...)

	none := []routefuzz.Seed{{}}
	b := plugin.Base
	return map[string][]routefuzz.Seed{
		"GET " + b + "/openapi.yaml":        none,
		"GET /healthz":                      none,
		"GET /metrics":                      none,
		"GET /readyz":                       none,
		"GET /docs/plugin-api/errors/:code": {{Params: plugin.CodeInvalidInput}},
		"GET /files/:id":                    {{Params: output.ID, Query: signed(files.Path(output.ID))}, {Params: output.ID, Query: signed(files.Path(output.ID)), Header: "Range: bytes=0-"}},
		"GET /files/:id/thumbnail":          {{Params: asset.ID, Query: signed(files.Path(asset.ID) + "/thumbnail")}},
		"GET " + files.RefPrefix + ":version/:group/:file": {{Params: refFile, Query: signed(files.RefPath(refFile))}},
		"PUT " + b + "/uploads/:id":                        {{Params: strings.TrimPrefix(up.Path, b+"/uploads/"), Query: up.RawQuery, Body: string(png)}},
		"GET " + b + "/me":                                 none,
		"PUT " + b + "/test/credits":                       {{Body: `{"available":5}`}, {Header: "X-Api-Key: " + testKey, Body: `{"available":5}`}},
		"GET " + b + "/ai-models":                          none,
		"GET " + b + "/aspect-ratios":                      none,
		"GET " + b + "/pricing":                            none,
		"GET " + b + "/models":                             {{Query: "limit=5"}},
		"GET " + b + "/sceneries":                          none,
		"GET " + b + "/presets":                            none,
		"POST " + b + "/assets/upload":                     {{Body: `{"mode":"presigned","filename":"photo.png","content_type":"image/png","size_bytes":1024}`}},
		"POST " + b + "/packshots":                         {{Body: `{"packshots":[{"asset_id":"` + asset.ID + `","product_ref":"shirt","external_ref":"ps-1","source_image_ref":"img-1","product_metadata":{"display_name":"Shirt","sku":"S-1"}}]}`}},
		"GET " + b + "/packshots":                          {{Query: "product_ref=shirt&limit=10"}},
		"DELETE " + b + "/packshots/:id_or_ref":            {{Params: packshot.ID}},
		"POST " + b + "/images":                            {{Body: `{"images":[{"external_ref":"img-1","product_ref":"shirt","asset_id":"` + asset.ID + `","product_metadata":{"display_name":"Shirt","sku":"S-1"}}]}`}},
		"GET " + b + "/products":                           {{Query: "limit=10&include_deleted=true"}},
		"GET " + b + "/products/:id_or_ref":                {{Params: "shirt"}},
		"DELETE " + b + "/products/:id_or_ref":             {{Params: old.ID}},
		"POST " + b + "/jobs":                              {{Body: session}, {Header: engine.HeaderCancelAfter + ": 2h30m", Body: session}, {Header: plugin.HeaderIdempotencyKey + ": session-1", Body: session}},
		"POST " + b + "/jobs/batch":                        {{Body: `{"batches":[` + session + `]}`}},
		"GET " + b + "/jobs/:id":                           {{Params: job.ID}, {Params: job.ID, Header: "Prefer: wait=1"}},
		"GET " + b + "/jobs":                               {{Query: "status=completed&limit=10&created_after=2026-01-01T00:00:00Z"}},
		"GET " + b + "/usage":                              {{Query: "from=2026-01-01&to=2026-02-01T00:00:00Z&group_by=ai_model"}, {}},
		"DELETE " + b + "/jobs/:id":                        {{Params: pending}},
		"POST " + b + "/jobs/:id/refresh-url":              {{Params: job.ID}},
		"POST " + b + "/jobs/:id/accept":                   {{Params: job.ID}},
		"POST " + b + "/jobs/:id/reject":                   {{Params: job.ID}},
		"GET " + b + "/orders/:id":                         {{Params: order.ID}, {Params: order.ID, Header: "Prefer: wait=1"}},
		"GET " + b + "/orders/:id/events":                  {{Params: order.ID}, {Params: order.ID, Header: "Last-Event-ID: 0"}},
		"POST " + b + "/orders/:id/clone":                  {{Params: created.OrderID, Header: plugin.HeaderIdempotencyKey + ": clone-1", Body: `{"subjects":[{"product_ref":"shirt","images_count":1}]}`}},
		"POST " + b + "/webhooks/:delivery_id/replay":      {{Params: delivery.ID}},
		"POST " + b + "/installations/:id/rotate-hmac":     {{Params: e.inst.ID}},
		"GET " + b + "/spend-limit":                        none,
		"PUT " + b + "/spend-limit":                        {{Body: `{"monthly_credits":5000,"alert_at_percent":80}`}, {Header: plugin.HeaderIdempotencyKey + ": limit-1", Body: `{"monthly_credits":100}`}},
		"DELETE " + b + "/spend-limit":                     none,
		"GET " + b + "/alerts":                             none,
		"PUT " + b + "/alerts":                             {{Body: `{"low_balance_threshold":100}`}, {Body: `{"low_balance_threshold":null}`}},
		"POST " + b + "/webhook-endpoints":                 {{Body: `{"url":"` + hookURL + `","events":["job.completed","order.completed"],"description":"shop"}`}},
		"GET " + b + "/webhook-endpoints":                  {{Query: "limit=5"}},
		"GET " + b + "/webhook-endpoints/:id":              {{Params: hook}},
		"PATCH " + b + "/webhook-endpoints/:id":            {{Params: hook, Body: `{"status":"disabled","description":"paused"}`}},
		"DELETE " + b + "/webhook-endpoints/:id":           {{Params: doomed}},
		"POST " + b + "/webhook-endpoints/:id/test":        {{Params: tested, Body: `{"event":"job.completed"}`}},
		"POST " + b + "/webhook-endpoints/:id/recover":     {{Params: tested, Body: `{"since":"` + since + `"}`}},
		"GET " + b + "/webhook-deliveries":                 {{Query: "endpoint_id=" + hook + "&status=delivering&limit=10&created_after=2026-01-01T00:00:00Z"}},
		"GET " + b + "/webhook-deliveries/:id":             {{Params: hookDelivery.ID}},
		"GET " + b + "/events":                             {{Query: "type=job.completed&limit=10"}},
		"GET " + b + "/events/:id":                         {{Params: hookEvent.ID}},
	}
}
