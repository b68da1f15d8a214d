package contract_test

import (
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models/status"
)

// TestDocumentIsValid loads api/openapi.yaml with kin-openapi and validates it, so `make test`
// catches a broken document without npm (`make openapi-lint` runs Redocly's linter on top).
func TestDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc, err := contract.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != plugin.Base {
		t.Fatalf("servers = %v, want the one server %s", doc.Servers, plugin.Base)
	}
	for _, event := range []string{"job.completed", "job.failed", "job.cancelled"} {
		if item := doc.Webhooks[event]; item == nil || item.Post == nil {
			t.Errorf("webhooks.%s.post is missing", event)
		}
	}
}

// TestDocumentConventions checks what every operation must say: an operationId, its permission
// (x-permissions, as permission names), the error answers every route can give (400 and 413 from
// the input check, 500), those every authenticated route can give, 503 with Retry-After on every
// route that uses a dependency, and X-Request-Id on every answer.
func TestDocumentConventions(t *testing.T) {
	t.Parallel()
	doc, err := contract.Load()
	if err != nil {
		t.Fatal(err)
	}
	permissions := map[string]bool{}
	for _, perms := range plugin.ScopePermissions {
		for _, p := range perms {
			permissions[p] = true
		}
	}
	// Operations that use no dependency; every other one can meet an outage or its deadline.
	independent := map[string]bool{"GET /healthz": true, "GET " + api.MetricsPath: true, "GET " + api.OpenAPIPath: true, "GET /docs/plugin-api/errors/{code}": true}
	ids := map[string]string{}
	for _, o := range operations(doc) {
		op, where := o.op, o.method+" "+o.path
		if op.OperationID == "" {
			t.Errorf("%s has no operationId", where)
		} else if prev, dup := ids[op.OperationID]; dup {
			t.Errorf("%s reuses operationId %q of %s", where, op.OperationID, prev)
		}
		ids[op.OperationID] = where
		perms, ok := op.Extensions["x-permissions"].([]any)
		if !ok {
			t.Errorf("%s has no x-permissions list", where)
		}
		for _, p := range perms {
			if s, _ := p.(string); !permissions[s] {
				t.Errorf("%s: x-permissions names %v, which is not a permission of plugin.ScopePermissions", where, p)
			}
		}
		secured := op.Security == nil || len(*op.Security) > 0
		want := []string{"400", "413", "500"}
		if !independent[o.method+" "+o.fullPath] {
			want = append(want, "503")
		}
		if secured {
			want = append(want, "401", "429")
			if len(perms) > 0 {
				want = append(want, "403")
			} else if op.Responses.Value("403") != nil {
				t.Errorf("%s needs no permission, yet documents 403", where)
			}
			if !strings.Contains(op.Description, "Permission: ") {
				t.Errorf("%s: the description does not name the permission", where)
			}
		}
		for _, code := range want {
			if op.Responses.Value(code) == nil {
				t.Errorf("%s does not document %s", where, code)
			}
		}
		for code, resp := range op.Responses.Map() {
			if code != "304" && resp.Value.Headers["X-Request-Id"] == nil {
				t.Errorf("%s: response %s does not document the X-Request-Id header", where, code)
			}
			if secured && code == "429" && resp.Value.Headers["Retry-After"] == nil {
				t.Errorf("%s: response 429 does not document Retry-After", where)
			}
			if code == "503" && o.fullPath != "/readyz" && resp.Value.Headers["Retry-After"] == nil {
				t.Errorf("%s: response 503 does not document Retry-After", where)
			}
		}
	}
}

// ginParam turns gin's :name and *name path segments into OpenAPI's {name}.
var ginParam = regexp.MustCompile(`/[:*]([^/]+)`)

// TestRoutesMatchDocument walks the routes the router serves and fails on any route missing from
// the document, and on any documented operation that is not served.
func TestRoutesMatchDocument(t *testing.T) {
	t.Parallel()
	doc, err := contract.Load()
	if err != nil {
		t.Fatal(err)
	}
	router := newRouter()
	served := map[string]bool{}
	for _, r := range router.Routes() {
		served[r.Method+" "+ginParam.ReplaceAllString(r.Path, "/{$1}")] = true
	}
	documented := map[string]bool{}
	for _, o := range operations(doc) {
		documented[o.method+" "+o.fullPath] = true
	}
	pluginRoutes := 0
	for _, route := range sortedKeys(served) {
		if strings.Contains(route, " "+plugin.Base+"/") {
			pluginRoutes++
		}
		if !documented[route] {
			t.Errorf("route %s is served but not in api/openapi.yaml", route)
		}
	}
	for _, route := range sortedKeys(documented) {
		if !served[route] {
			t.Errorf("api/openapi.yaml documents %s, which the router does not serve", route)
		}
	}
	if pluginRoutes < 10 {
		t.Fatalf("only %d plugin routes found: is the router built as in production?", pluginRoutes)
	}
	t.Logf("%d routes served and documented (%d under %s)", len(served), pluginRoutes, plugin.Base)
}

// TestDocumentIsServed checks GET /api/v1/plugin/openapi.yaml answers the embedded document
// without an API key, and that the exchange itself matches the document.
func TestDocumentIsServed(t *testing.T) {
	t.Parallel()
	router := newRouter()
	req, err := http.NewRequest(http.MethodGet, api.OpenAPIPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := contract.ServeAndCheck(t, router, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", api.OpenAPIPath, rec.Code, rec.Body.String())
	}
	if rec.Body.String() != string(api.OpenAPIDocument) {
		t.Fatal("the served document is not api/openapi.yaml")
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/yaml") {
		t.Fatalf("Content-Type = %q", ct)
	}
}

// newRouter builds the production router; its routes are all these tests need.
func newRouter() *api.Router {
	return api.NewRouter(api.Deps{Log: zap.NewNop(), Engine: engine.New(engine.Config{})}, &plugin.Handler{Log: zap.NewNop()})
}

type operation struct {
	method, path, fullPath string
	op                     *openapi3.Operation
}

// operations lists the document's operations with their full paths (server base + path).
func operations(doc *openapi3.T) []operation {
	var out []operation
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		base := doc.Servers[0].URL
		if len(item.Servers) > 0 {
			base = item.Servers[0].URL
		}
		full := strings.TrimRight(base, "/") + path
		for method, op := range item.Operations() {
			out = append(out, operation{method: method, path: path, fullPath: full, op: op})
		}
	}
	slices.SortFunc(out, func(a, b operation) int { return strings.Compare(a.fullPath+a.method, b.fullPath+b.method) })
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestEnumsMatchCode ties the document's enums to the code's lists, so a new error code, job
// status or permission cannot be added to one and not the other.
func TestEnumsMatchCode(t *testing.T) {
	t.Parallel()
	doc, err := contract.Load()
	if err != nil {
		t.Fatal(err)
	}
	enum := func(name string) []string {
		s := doc.Components.Schemas[name]
		if s == nil || s.Value == nil {
			t.Fatalf("components.schemas.%s is missing", name)
		}
		var out []string
		for _, v := range s.Value.Enum {
			if str, ok := v.(string); ok {
				out = append(out, str)
			}
		}
		sort.Strings(out)
		return out
	}
	var codes []string
	for code := range plugin.ErrorDocs {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	if got := enum("ErrorCode"); !slices.Equal(got, codes) {
		t.Errorf("ErrorCode enum = %v\nplugin.ErrorDocs has %v", got, codes)
	}
	statuses := slices.Clone(plugin.JobStatuses)
	sort.Strings(statuses)
	if got := enum("JobStatus"); !slices.Equal(got, statuses) {
		t.Errorf("JobStatus enum = %v\nplugin.JobStatuses = %v", got, statuses)
	}
	var perms []string
	for _, ps := range plugin.ScopePermissions {
		perms = append(perms, ps...)
	}
	sort.Strings(perms)
	perms = slices.Compact(perms)
	if got := enum("Permission"); !slices.Equal(got, perms) {
		t.Errorf("Permission enum = %v\nplugin.ScopePermissions grants %v", got, perms)
	}
	// The cancel reasons, in both documents.
	reasons := []string{status.CancelDeadline, status.CancelRequested}
	if got := enum("CancelReason"); !slices.Equal(got, reasons) {
		t.Errorf("CancelReason enum = %v, want the store's %v", got, reasons)
	}
	external, err := contract.External.Load()
	if err != nil {
		t.Fatal(err)
	}
	schema := external.Components.Schemas["CancelReason"]
	if schema == nil || schema.Value == nil {
		t.Fatal("the external document has no components.schemas.CancelReason")
	}
	var got []string
	for _, v := range schema.Value.Enum {
		if str, ok := v.(string); ok {
			got = append(got, str)
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, reasons) {
		t.Errorf("the external CancelReason enum = %v, want the store's %v", got, reasons)
	}
}
