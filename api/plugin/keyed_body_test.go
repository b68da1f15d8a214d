package plugin

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
)

// keyedSessionBody is a session of n subjects, the body of a keyed POST /jobs.
func keyedSessionBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"job_type":"photo_shoot","session_config":{"aspect_ratio":"1:1","style":"warm"},"subjects":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"product_ref":"sku-%d","product_label":"Blue mug %d","images_count":5,"ai_model":"local/studio-v1"}`, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// handleKeyedBody does with the body of a keyed POST /jobs what the request does before and
// around RunOnce: the input check, keyed's payload hash, then the session handler's parse.
func handleKeyedBody(tb testing.TB, h *Handler, checks inputcheck.Checks, body []byte) {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, "/v1/jobs", bytes.NewReader(body))
	c.Request.Header.Set("Content-Type", "application/json")
	c.Request.Header.Set(HeaderIdempotencyKey, "key-1")
	checks.Content(c)
	if c.IsAborted() {
		tb.Fatal("the input check refused the body")
	}
	raw, ok := h.readBody(c)
	if !ok {
		tb.Fatal("keyed: no body")
	}
	if payloadHash(c, raw) == "" {
		tb.Fatal("no hash")
	}
	session, ok := h.readBody(c)
	if !ok {
		tb.Fatal("handler: no body")
	}
	if _, f := parseSession(session); f != nil {
		tb.Fatal(f.message)
	}
}

// keyedBodyAllocs bounds the allocations of handleKeyedBody for a 20-subject session (issue 23,
// item 19; docs/benchmarks.md): about 1,730 when the keyed layer hashes the document the input
// check kept while it scanned the body and reads the input check's bytes, about 1,985 when it
// parsed the body twice more for the hash (json.Valid, then a decode) and copied it twice (keyed
// and the handler each read it again).
const keyedBodyAllocs = 1850

// A keyed request's body is parsed once for its key: the input check keeps the decoded document
// and the bytes it read, and the keyed layer and the handler use them.
func TestKeyedRequestParsesItsBodyOnce(t *testing.T) {
	h := &Handler{}
	checks := inputcheck.New(inputcheck.JSONBody(maxSessionBodyBytes), func(*gin.Context, *inputcheck.Refusal) {})
	body := keyedSessionBody(20)
	if got := testing.AllocsPerRun(20, func() { handleKeyedBody(t, h, checks, body) }); got > keyedBodyAllocs {
		t.Fatalf("a keyed 20-subject session's body costs %.0f allocations, want at most %d", got, keyedBodyAllocs)
	}
}

// BenchmarkKeyedSessionBody handles the body of a keyed 20-subject session (docs/benchmarks.md).
func BenchmarkKeyedSessionBody(b *testing.B) {
	h := &Handler{}
	checks := inputcheck.New(inputcheck.JSONBody(maxSessionBodyBytes), func(*gin.Context, *inputcheck.Refusal) {})
	body := keyedSessionBody(20)
	b.ReportAllocs()
	for b.Loop() {
		handleKeyedBody(b, h, checks, body)
	}
}

// The hash of a keyed body made from the input check's document is the hash of its bytes, as keys
// recorded before were bound: formatting, key order, repeated keys and number spelling included.
func TestKeyedHashOfTheCheckedDocumentIsTheHashOfTheBody(t *testing.T) {
	checks := inputcheck.New(inputcheck.JSONBody(maxSessionBodyBytes), func(*gin.Context, *inputcheck.Refusal) {})
	for _, body := range []string{
		string(keyedSessionBody(3)),
		`{"b":[1,2.0,2e0,-0.5,1e400,{"x":null,"y":true}],"a":"\u00e9t\u00e9","a":"last","e":[],"o":{}}`,
		` [ {"z":1} , "s" , 3 ] `,
		`"only a string"`,
	} {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest(http.MethodPost, "/v1/jobs?b=2&a=1", strings.NewReader(body))
		c.Request.Header.Set(HeaderIdempotencyKey, "key-1")
		checks.Content(c)
		if _, ok := inputcheck.Document(c); !ok {
			t.Fatalf("%s: the input check kept no document", body)
		}
		want, err := requestHash(http.MethodPost, "/v1/jobs?a=1&b=2", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := payloadHash(c, []byte(body)); got != want {
			t.Errorf("%s: hash of the document %s, of the body %s", body, got, want)
		}
	}
	// Not one document: no document is kept, and the body's own hash applies.
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader(`{"a":1} {"b":2}`))
	c.Request.Header.Set(HeaderIdempotencyKey, "key-1")
	checks.Content(c)
	if doc, ok := inputcheck.Document(c); ok {
		t.Fatalf("two documents kept as %v", doc)
	}
}
