package routefuzz_test

import (
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/testsupport/routefuzz"
)

func engine() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	ok := func(c *gin.Context) { c.Status(http.StatusOK) }
	r.GET("/b/:id", ok)
	r.POST("/b/:id", ok)
	r.GET("/a/:version/:group/:file", ok)
	return r
}

func TestRoutesAreSortedAndPicked(t *testing.T) {
	routes := routefuzz.Routes(engine())
	var names []string
	for _, r := range routes {
		names = append(names, r.Method+" "+r.Path)
	}
	want := []string{"GET /a/:version/:group/:file", "GET /b/:id", "POST /b/:id"}
	if !slices.Equal(names, want) {
		t.Fatalf("routes %v, want %v", names, want)
	}
	if i := routefuzz.Index(routes, http.MethodPost, "/b/:id"); i != 2 {
		t.Errorf("Index = %d, want 2", i)
	}
	if r := routefuzz.Pick(routes, 5); r.Method+" "+r.Path != "POST /b/:id" {
		t.Errorf("Pick(5) = %s %s, want the route 5 mod 3", r.Method, r.Path)
	}
}

func TestRequest(t *testing.T) {
	routes := routefuzz.Routes(engine())
	defaults := http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {"k"}}
	req := routefuzz.Request(routes[0], defaults, "v1/\x00", "a=%ff&b", "X-Api-Key: \xff", []byte("body"))
	if req.URL.Path != "/a/v1/\x00/\x00" || req.URL.RawQuery != "a=%ff&b" {
		t.Errorf("URL path %q query %q: want each parameter from params, the last repeated", req.URL.Path, req.URL.RawQuery)
	}
	if req.Header.Get("X-Api-Key") != "\xff" || req.Header.Get("Content-Type") != "application/json" || defaults.Get("X-Api-Key") != "k" {
		t.Errorf("headers %v (defaults now %v): want the header line over a copy of the defaults", req.Header, defaults)
	}
	if body, _ := io.ReadAll(req.Body); string(body) != "body" || req.Method != http.MethodGet {
		t.Errorf("%s with body %q", req.Method, body)
	}
	rec := routefuzz.Request(routes[1], defaults, "x", "", "no colon", nil)
	if rec.URL.Path != "/b/x" || rec.Header.Get("X-Api-Key") != "k" {
		t.Errorf("path %q, X-Api-Key %q: a header line without a colon changes nothing", rec.URL.Path, rec.Header.Get("X-Api-Key"))
	}
}

func TestHostile(t *testing.T) {
	routes := routefuzz.Routes(engine())
	seed := routefuzz.Seed{Params: "1", Query: "cursor=abc&limit=2", Header: "Idempotency-Key: k",
		Body: `{"name":"x","list":["y",{"k":1}]}`}
	got := routefuzz.Hostile(routes[2], seed)
	want := []routefuzz.Seed{
		{Params: "\x00", Query: seed.Query, Header: seed.Header, Body: seed.Body},
		{Params: "1", Query: "cursor=%FFabc&limit=2", Header: seed.Header, Body: seed.Body},
		{Params: "1", Query: seed.Query, Header: "Idempotency-Key: k\xc3\x28", Body: seed.Body},
		{Params: "1", Query: seed.Query, Header: seed.Header, Body: "{\"a\xed\xa0\x80\":\"x\",\"list\":[\"y\",{\"k\":1}]}"},
		{Params: "1", Query: seed.Query, Header: seed.Header, Body: `{"name":"a\u0000","list":["y",{"k":1}]}`},
		{Params: "1", Query: seed.Query, Header: seed.Header, Body: "{\"name\":\"x\",\"a\xff\":[\"y\",{\"k\":1}]}"},
		{Params: "1", Query: seed.Query, Header: seed.Header, Body: "{\"name\":\"x\",\"list\":[\"a\xc3\x28\",{\"k\":1}]}"},
		{Params: "1", Query: seed.Query, Header: seed.Header, Body: "{\"name\":\"x\",\"list\":[\"y\",{\"a\xed\xa0\x80\":1}]}"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Hostile:\n got  %q\n want %q", got, want)
	}
	if n := len(routefuzz.Hostile(routes[0], routefuzz.Seed{Body: "not json"})); n != 1 {
		t.Errorf("%d seeds for a route with parameters and no query, header or JSON: want 1", n)
	}
}
