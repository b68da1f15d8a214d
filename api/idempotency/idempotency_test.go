package idempotency

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/internal/engine"
)

// part is one part of a multipart form: a text field (file "") or a file.
type part struct{ name, file, value string }

// formContext is a request context whose multipart body the input check parsed, as a keyed
// request's is when the key is read.
func formContext(t *testing.T, path, boundary string, parts ...part) *gin.Context {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p.file == "" {
			if err := w.WriteField(p.name, p.value); err != nil {
				t.Fatal(err)
			}
			continue
		}
		fw, err := w.CreateFormFile(p.name, p.file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write([]byte(p.value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, path, &buf)
	c.Request.Header.Set("Content-Type", w.FormDataContentType())
	inputcheck.New(inputcheck.MultipartBody(1<<20), func(_ *gin.Context, r *inputcheck.Refusal) { t.Fatal(r.Message) }).Content(c)
	return c
}

// A multipart request's key is bound to its fields and files: the boundary and the order of
// differently named parts do not count; a name, a value, a file name, a byte or the order of the
// values of one name does.
func TestFormHashIsCanonical(t *testing.T) {
	hash := func(path, boundary string, parts ...part) string {
		c := formContext(t, path, boundary, parts...)
		h, err := formHash(c, c.Request.MultipartForm)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	name, tag1, tag2 := part{"name", "", "Shirt"}, part{"tags", "", "a"}, part{"tags", "", "b"}
	file := part{"file", "shirt.png", "PNG bytes"}
	base := hash("/products", "one", name, tag1, tag2, file)
	if got := hash("/products", "two", file, tag1, name, tag2); got != base {
		t.Error("another boundary and order of differently named parts changed the hash")
	}
	for what, got := range map[string]string{
		"another path":             hash("/presets", "one", name, tag1, tag2, file),
		"another value":            hash("/products", "one", part{"name", "", "Shirts"}, tag1, tag2, file),
		"another field name":       hash("/products", "one", part{"title", "", "Shirt"}, tag1, tag2, file),
		"values reordered":         hash("/products", "one", name, tag2, tag1, file),
		"another file name":        hash("/products", "one", name, tag1, tag2, part{"file", "other.png", file.value}),
		"another file byte":        hash("/products", "one", name, tag1, tag2, part{"file", "shirt.png", file.value + "!"}),
		"a text field, not a file": hash("/products", "one", name, tag1, tag2, part{"file", "", file.value}),
		"no file":                  hash("/products", "one", name, tag1, tag2),
	} {
		if got == base {
			t.Errorf("%s: same hash", what)
		}
	}
}

// A route that records its answer in its own transaction records what gin's PureJSON sends.
func TestJSONAnswerIsWhatPureJSONSends(t *testing.T) {
	v := map[string]any{"html": "<a href=\"x\">&</a>", "n": 2, "list": []string{"é", "ü"}}
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	c.PureJSON(http.StatusOK, v)
	a, err := JSONAnswer(http.StatusOK, v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Body, rec.Body.Bytes()) || a.Headers["Content-Type"][0] != rec.Header().Get("Content-Type") || a.Status != rec.Code {
		t.Fatalf("JSONAnswer %d %v %q, PureJSON %d %v %q", a.Status, a.Headers, a.Body, rec.Code, rec.Header(), rec.Body.String())
	}
}

// A sealed route without a sealer is refused before it runs: its answer could not be recorded.
func TestSealedRouteWithoutASealerDoesNotRun(t *testing.T) {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, "/rotate", nil)
	c.Request.Header.Set(Header, "k")
	var failed error
	k := Keys{Engine: engine.New(engine.Config{}), Internal: func(_ *gin.Context, err error) { failed = err }}
	ran := false
	k.Run(c, Rule{Sealed: true}, false, func(*gin.Context) { ran = true })
	if ran || failed == nil {
		t.Fatalf("ran %v, error %v; want the route refused", ran, failed)
	}
}

// A key's hash names a UUID of the path as the store keeps it: the same request with an ID in
// another case (the routes match either) is the same payload, and a retry of it replays instead
// of answering 409; another ID is another payload.
func TestPayloadHashNamesPathUUIDsInOneCase(t *testing.T) {
	hash := func(path string) string {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest(http.MethodDelete, path, nil)
		return PayloadHash(c, nil)
	}
	const id = "0b8a3c2e-5d0f-4a0e-9c3b-6f1e2d4c8a71"
	lower := hash("/api/v1/plugin/jobs/" + id)
	if upper := hash("/api/v1/plugin/jobs/0B8A3C2E-5D0F-4A0E-9C3B-6F1E2D4C8A71"); upper != lower {
		t.Errorf("an ID in upper case hashes apart: %s vs %s", upper, lower)
	}
	if other := hash("/api/v1/plugin/jobs/1b8a3c2e-5d0f-4a0e-9c3b-6f1e2d4c8a71"); other == lower {
		t.Error("another ID hashes the same")
	}
	if ref := hash("/api/v1/plugin/products/SKU-A"); ref == hash("/api/v1/plugin/products/sku-a") {
		t.Error("a merchant reference, whose case counts, hashes the same in another case")
	}
}
