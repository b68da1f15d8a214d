package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	shotflowapi "github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/internal/testsupport/faultproxy"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
)

// outageTimeout is the request timeout of the outage tests; outageSlack is what an answer may take
// beyond it on a busy test machine.
const (
	outageTimeout = 2 * time.Second
	outageSlack   = 2 * time.Second
)

// routeRequest is a plausible request to one route and the answer it gets while the database is
// unreachable: 503, or the route's normal status when it needs no database.
type routeRequest struct {
	method, target string // target is relative to the service's base URL
	contentType    string
	body           []byte
	header         map[string]string
	want           int
}

// outcome is what one request got.
type outcome struct {
	route  string
	req    routeRequest
	status int
	header http.Header
	body   []byte
	took   time.Duration
	err    error
}

// TestEveryRouteAnswersInTimeWhenTheDatabaseIsUnreachable black-holes, then refuses, the API's
// database and sends a plausible request to every route the router serves (a new route without
// a request here fails the test). Each answers within the request timeout plus a little slack:
// 503 with Retry-After in its API's error body, or its normal answer when it needs no database;
// /readyz names the database and nothing more, and logs the detail. Once the database is back the
// service serves again within a bounded time.
func TestEveryRouteAnswersInTimeWhenTheDatabaseIsUnreachable(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{
		ProxyDatabase: true,
		NoWorker:      true,
		Configure:     func(c *config.Config) { c.RequestTimeout = outageTimeout },
	})
	tenant := env.NewTenant(t, 100)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	requests := outageRequests(t, env, tenant, api)

	routes := env.App.Handler().(*shotflowapi.Router).Routes()
	for _, r := range routes {
		if _, ok := requests[r.Method+" "+r.Path]; !ok {
			t.Errorf("route %s %s has no request in outageRequests: add one", r.Method, r.Path)
		}
	}
	if len(requests) != len(routes) {
		t.Errorf("outageRequests has %d requests for %d routes: remove those of routes that are gone", len(requests), len(routes))
	}
	if t.Failed() {
		t.FailNow()
	}

	dbURL, err := url.Parse(env.Config.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []faultproxy.Mode{faultproxy.Blackhole, faultproxy.Refuse} {
		t.Run(mode.String(), func(t *testing.T) {
			if err := env.DBProxy.SetMode(mode); err != nil {
				t.Fatal(err)
			}
			seenBefore := len(env.Logs.FilterMessage("not ready").All())
			outcomes := sendAll(env.BaseURL, requests)
			for _, o := range outcomes {
				checkOutage(t, o, dbURL)
			}
			notReady := env.Logs.FilterMessage("not ready").All()[seenBefore:]
			if len(notReady) != 1 || notReady[0].ContextMap()["dependency"] != "database" || notReady[0].ContextMap()["error"] == "" {
				t.Errorf("the not-ready log entries are %v, want one naming the database with the detail", notReady)
			}

			if err := env.DBProxy.SetMode(faultproxy.Forward); err != nil {
				t.Fatal(err)
			}
			recovered := time.Now()
			testenv.Eventually(t, 15*time.Second, "GET /me to answer 200 once the database is back", func() bool {
				return api.do(http.MethodGet, "/me", nil, nil).StatusCode == http.StatusOK
			})
			t.Logf("%s: %d routes answered; the service recovered %v after the database came back", mode, len(outcomes), time.Since(recovered).Round(time.Millisecond))
		})
	}
}

// sendAll sends every request at once and returns what each got, sorted by route.
func sendAll(base string, requests map[string]routeRequest) []outcome {
	httpClient := &http.Client{Timeout: time.Minute}
	out := make([]outcome, 0, len(requests))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for route, rr := range requests {
		wg.Go(func() {
			o := outcome{route: route, req: rr}
			req, err := http.NewRequest(rr.method, base+rr.target, bytes.NewReader(rr.body))
			if err == nil {
				if rr.contentType != "" {
					req.Header.Set("Content-Type", rr.contentType)
				}
				for k, v := range rr.header {
					req.Header.Set(k, v)
				}
				start := time.Now()
				var resp *http.Response
				if resp, err = httpClient.Do(req); err == nil {
					o.body, err = io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					o.status, o.header = resp.StatusCode, resp.Header
				}
				o.took = time.Since(start)
			}
			o.err = err
			mu.Lock()
			out = append(out, o)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].route < out[j].route })
	return out
}

// checkOutage checks one answer given while the database was unreachable.
func checkOutage(t *testing.T, o outcome, dbURL *url.URL) {
	t.Helper()
	if o.err != nil {
		t.Errorf("%s: %v", o.route, o.err)
		return
	}
	if o.took > outageTimeout+outageSlack {
		t.Errorf("%s took %v, more than the %v request timeout and %v of slack", o.route, o.took, outageTimeout, outageSlack)
	}
	if o.status != o.req.want {
		t.Errorf("%s: %d %s, want %d", o.route, o.status, o.body, o.req.want)
		return
	}
	if o.status != http.StatusServiceUnavailable {
		return
	}
	var body map[string]any
	if err := json.Unmarshal(o.body, &body); err != nil {
		t.Errorf("%s: the 503 body is not JSON: %s", o.route, o.body)
		return
	}
	switch {
	case o.req.target == "/readyz":
		if len(body) != 2 || body["status"] != "unavailable" || body["dependency"] != "database" {
			t.Errorf("%s: %s, want the status and the dependency database alone", o.route, o.body)
		}
		for _, secret := range []string{dbURL.Host, dbURL.Hostname(), dbURL.Port(), dbURL.User.Username(), strings.TrimPrefix(dbURL.Path, "/")} {
			if strings.Contains(string(o.body), secret) {
				t.Errorf("%s leaks %q: %s", o.route, secret, o.body)
			}
		}
		return
	case strings.HasPrefix(o.req.target, external.Base+"/"):
		if msg, ok := body["error"].(string); len(body) != 1 || !ok || msg == "" {
			t.Errorf("%s: %s, want the external error body {error}", o.route, o.body)
		}
	default:
		e, _ := body["error"].(map[string]any)
		if len(body) != 1 || e["code"] != plugin.CodeUnavailable || e["retryable"] != true {
			t.Errorf("%s: %s, want the plugin envelope of a retryable %s", o.route, o.body, plugin.CodeUnavailable)
		}
	}
	if got := o.header.Get("Retry-After"); got != strconv.Itoa(unavailable.RetryAfterSeconds) {
		t.Errorf("%s: Retry-After %q, want %d", o.route, got, unavailable.RetryAfterSeconds)
	}
}

// outageRequests builds a plausible request for every route, keyed by gin's "METHOD /path".
func outageRequests(t *testing.T, env *testenv.Env, tenant testenv.Tenant, api *client) map[string]routeRequest {
	t.Helper()
	// A reference image URL, read while the database is up: serving it needs only the blob store.
	var listed struct{ Models []plugin.ReferenceEntry }
	expect(t, api.do(http.MethodGet, "/models", nil, &listed), http.StatusOK)
	if len(listed.Models) == 0 || listed.Models[0].Thumbnail == "" {
		t.Fatalf("GET /models = %+v: no reference image to download", listed)
	}
	refURL, err := url.Parse(listed.Models[0].Thumbnail)
	if err != nil {
		t.Fatal(err)
	}
	png := packshotPNG(t)
	signed := func(method, path string) string {
		u, err := url.Parse(env.App.Signer.URL(method, path, time.Now().Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		return u.RequestURI()
	}
	id := models.NewID()
	session := map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects":       []map[string]any{{"product_ref": "vase", "images_count": 1, "ai_model": "local/studio-v1"}},
	}
	generation := map[string]any{"config": map[string]any{"product": map[string]any{"id": id}}, "count": 1}

	pluginKey := map[string]string{"X-Api-Key": tenant.PluginKey}
	externalKey := map[string]string{"X-Api-Key": tenant.ExternalKey}
	requests := map[string]routeRequest{}
	add := func(method, route, target string, header map[string]string, body any, want int) {
		rr := routeRequest{method: method, target: target, header: maps.Clone(header), want: want}
		switch b := body.(type) {
		case nil:
		case multipartBody:
			rr.body, rr.contentType = b.data, b.contentType
		default:
			data, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			rr.body, rr.contentType = data, "application/json"
		}
		requests[method+" "+route] = rr
	}
	unavailableNow := http.StatusServiceUnavailable

	// Outside the APIs' key-authenticated groups.
	add(http.MethodGet, "/healthz", "/healthz", nil, nil, http.StatusOK)
	add(http.MethodGet, "/metrics", "/metrics", nil, nil, http.StatusOK)
	add(http.MethodGet, "/readyz", "/readyz", nil, nil, unavailableNow)
	add(http.MethodGet, "/docs/plugin-api/errors/:code", "/docs/plugin-api/errors/"+plugin.CodeUnavailable, nil, nil, http.StatusOK)
	add(http.MethodGet, plugin.Base+"/openapi.yaml", plugin.Base+"/openapi.yaml", nil, nil, http.StatusOK)
	add(http.MethodGet, external.OpenAPIPath, external.OpenAPIPath, nil, nil, http.StatusOK)
	add(http.MethodGet, "/files/:id", signed(http.MethodGet, files.Path(id)), nil, nil, unavailableNow)
	add(http.MethodGet, "/files/:id/thumbnail", signed(http.MethodGet, "/files/"+id+"/thumbnail"), nil, nil, unavailableNow)
	add(http.MethodGet, files.RefPrefix+":version/:group/:file", refURL.RequestURI(), nil, nil, http.StatusOK)
	put := routeRequest{method: http.MethodPut, target: signed(http.MethodPut, plugin.Base+"/uploads/"+id),
		contentType: "image/png", body: png, want: unavailableNow}
	requests[http.MethodPut+" "+plugin.Base+"/uploads/:id"] = put

	// The plugin API.
	p := func(method, route, target string, body any) {
		add(method, plugin.Base+route, plugin.Base+target, pluginKey, body, unavailableNow)
	}
	x := func(method, route, target string, body any) {
		add(method, external.Base+route, external.Base+target, externalKey, body, unavailableNow)
	}
	p(http.MethodGet, "/me", "/me", nil)
	p(http.MethodPut, "/test/credits", "/test/credits", map[string]any{"available": 0})
	p(http.MethodGet, "/ai-models", "/ai-models", nil)
	p(http.MethodGet, "/aspect-ratios", "/aspect-ratios", nil)
	p(http.MethodGet, "/pricing", "/pricing", nil)
	p(http.MethodGet, "/models", "/models", nil)
	p(http.MethodGet, "/sceneries", "/sceneries", nil)
	p(http.MethodGet, "/presets", "/presets", nil)
	p(http.MethodPost, "/assets/upload", "/assets/upload", map[string]any{
		"mode": "presigned", "filename": "vase.png", "content_type": "image/png", "size_bytes": len(png)})
	p(http.MethodPost, "/packshots", "/packshots", map[string]any{"packshots": []map[string]any{{
		"asset_id": id, "product_ref": "vase", "product_metadata": map[string]any{"display_name": "Vase"}}}})
	p(http.MethodGet, "/packshots", "/packshots?limit=10", nil)
	p(http.MethodDelete, "/packshots/:id_or_ref", "/packshots/ps-1", nil)
	p(http.MethodPost, "/images", "/images", map[string]any{"images": []map[string]any{{
		"external_ref": "img-1", "product_ref": "vase", "asset_id": id}}})
	p(http.MethodGet, "/products", "/products", nil)
	p(http.MethodGet, "/products/:id_or_ref", "/products/vase", nil)
	p(http.MethodDelete, "/products/:id_or_ref", "/products/vase", nil)
	p(http.MethodPost, "/jobs", "/jobs", session)
	p(http.MethodPost, "/jobs/batch", "/jobs/batch", map[string]any{"batches": []any{session}})
	p(http.MethodGet, "/jobs/:id", "/jobs/"+id, nil)
	p(http.MethodGet, "/jobs", "/jobs?limit=10", nil)
	p(http.MethodGet, "/usage", "/usage?group_by=job_type", nil)
	p(http.MethodDelete, "/jobs/:id", "/jobs/"+id, nil)
	p(http.MethodPost, "/jobs/:id/refresh-url", "/jobs/"+id+"/refresh-url", nil)
	p(http.MethodPost, "/jobs/:id/accept", "/jobs/"+id+"/accept", nil)
	p(http.MethodPost, "/jobs/:id/reject", "/jobs/"+id+"/reject", nil)
	p(http.MethodGet, "/orders/:id", "/orders/"+id, nil)
	p(http.MethodGet, "/orders/:id/events", "/orders/"+id+"/events", nil)
	p(http.MethodPost, "/orders/:id/clone", "/orders/"+id+"/clone", map[string]any{})
	requests[http.MethodPost+" "+plugin.Base+"/orders/:id/clone"].header["Idempotency-Key"] = "clone-1"
	p(http.MethodPost, "/webhooks/:delivery_id/replay", "/webhooks/"+id+"/replay", nil)
	p(http.MethodPost, "/installations/:id/rotate-hmac", "/installations/"+tenant.InstallationID+"/rotate-hmac", nil)
	p(http.MethodGet, "/spend-limit", "/spend-limit", nil)
	p(http.MethodPut, "/spend-limit", "/spend-limit", map[string]any{"monthly_credits": 100, "alert_at_percent": 80})
	p(http.MethodGet, "/alerts", "/alerts", nil)
	p(http.MethodPut, "/alerts", "/alerts", map[string]any{"low_balance_threshold": 100})
	p(http.MethodDelete, "/spend-limit", "/spend-limit", nil)
	since := map[string]any{"since": time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)}
	endpoint := map[string]any{"url": "https://shop.example/hooks"}
	for _, api := range []func(method, route, target string, body any){p, x} {
		api(http.MethodPost, "/webhook-endpoints", "/webhook-endpoints", endpoint)
		api(http.MethodGet, "/webhook-endpoints", "/webhook-endpoints?limit=10", nil)
		api(http.MethodGet, "/webhook-endpoints/:id", "/webhook-endpoints/"+id, nil)
		api(http.MethodPatch, "/webhook-endpoints/:id", "/webhook-endpoints/"+id, map[string]any{"description": "shop"})
		api(http.MethodDelete, "/webhook-endpoints/:id", "/webhook-endpoints/"+id, nil)
		api(http.MethodPost, "/webhook-endpoints/:id/test", "/webhook-endpoints/"+id+"/test", map[string]any{})
		api(http.MethodPost, "/webhook-endpoints/:id/recover", "/webhook-endpoints/"+id+"/recover", since)
		api(http.MethodGet, "/webhook-deliveries", "/webhook-deliveries?limit=10", nil)
		api(http.MethodGet, "/webhook-deliveries/:id", "/webhook-deliveries/"+id, nil)
		api(http.MethodGet, "/events", "/events?limit=10", nil)
		api(http.MethodGet, "/events/:id", "/events/"+id, nil)
	}
	x(http.MethodPost, "/webhook-endpoints/:id/rotate-secret", "/webhook-endpoints/"+id+"/rotate-secret", nil)
	x(http.MethodPost, "/webhook-deliveries/:id/replay", "/webhook-deliveries/"+id+"/replay", nil)

	// The external API (its webhook routes are with the plugin API's above).
	form := func(fields []string, file string) multipartBody {
		return multipartForm(t, fields, file, png)
	}
	x(http.MethodGet, "/orders", "/orders?limit=10", nil)
	x(http.MethodGet, "/account", "/account", nil)
	x(http.MethodGet, "/usage", "/usage?group_by=key", nil)
	x(http.MethodPut, "/test/credits", "/test/credits", map[string]any{"available": 0})
	x(http.MethodGet, "/spend-limit", "/spend-limit", nil)
	x(http.MethodPut, "/spend-limit", "/spend-limit", map[string]any{"monthlyCredits": 100, "alertAtPercent": 80})
	x(http.MethodDelete, "/spend-limit", "/spend-limit", nil)
	x(http.MethodGet, "/alerts", "/alerts", nil)
	x(http.MethodPut, "/alerts", "/alerts", map[string]any{"low_balance_threshold": 100})
	x(http.MethodGet, "/orders/:id", "/orders/"+id, nil)
	x(http.MethodGet, "/orders/:id/events", "/orders/"+id+"/events", nil)
	x(http.MethodDelete, "/orders/:id", "/orders/"+id, nil)
	x(http.MethodGet, "/products", "/products", nil)
	x(http.MethodPost, "/products", "/products", form([]string{"name", "Vase"}, "file"))
	x(http.MethodGet, "/models", "/models", nil)
	x(http.MethodGet, "/sceneries", "/sceneries", nil)
	x(http.MethodGet, "/packshots", "/packshots", nil)
	x(http.MethodGet, "/image-picker", "/image-picker", nil)
	x(http.MethodGet, "/videos", "/videos", nil)
	x(http.MethodPost, "/packshots/update-packshot", "/packshots/update-packshot", map[string]any{"recordId": id, "Voting": "APPROVED"})
	x(http.MethodPost, "/image-picker/review", "/image-picker/review", map[string]any{"recordId": id, "verdict": "accepted"})
	x(http.MethodGet, "/presets", "/presets", nil)
	x(http.MethodPost, "/presets", "/presets", form([]string{"name", "Studio", "quantityGuidelines", "one", "qualityGuidelines", "sharp"}, "cover"))
	x(http.MethodPut, "/presets", "/presets", form([]string{"presetId", id, "name", "Studio 2"}, "gallery"))
	x(http.MethodPost, "/models/register-ideas", "/models/register-ideas", map[string]any{"preferences": "calm, natural light", "count": 1})
	x(http.MethodPost, "/sceneries/register-ideas", "/sceneries/register-ideas", map[string]any{"preferences": "a sunny kitchen", "count": 1})
	x(http.MethodPost, "/packshots/register-ideas", "/packshots/register-ideas", generation)
	x(http.MethodPost, "/image-picker/register-ideas", "/image-picker/register-ideas", generation)
	x(http.MethodPost, "/video-picker/register-videos", "/video-picker/register-videos", map[string]any{"imageId": id})
	x(http.MethodPost, "/reel/register-reel", "/reel/register-reel", map[string]any{"imagesIds": []string{id}})
	return requests
}

// multipartBody is an encoded multipart/form-data body.
type multipartBody struct {
	data        []byte
	contentType string
}

// multipartForm encodes name/value pairs and one PNG file under fileField.
func multipartForm(t *testing.T, fields []string, fileField string, png []byte) multipartBody {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	part, err := w.CreateFormFile(fileField, fmt.Sprintf("%s.png", fileField))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := part.Write(png); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return multipartBody{data: buf.Bytes(), contentType: w.FormDataContentType()}
}
