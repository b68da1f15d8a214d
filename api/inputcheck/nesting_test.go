package inputcheck_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/inputcheck"
)

// nested is an object nested depth levels deep inside a field: {"a":{"a":…{"a":1}…}}.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

func TestJSONNestingIsBounded(t *testing.T) {
	r := router(inputcheck.JSONBody(1 << 20))
	deepArray := strings.Repeat("[", inputcheck.MaxDepth) + strings.Repeat("]", inputcheck.MaxDepth)
	for _, c := range []struct {
		name, body string
		status     int
	}{
		{"at the limit", nested(inputcheck.MaxDepth), http.StatusOK},
		{"arrays at the limit", `{"a":` + deepArray[1:len(deepArray)-1] + `}`, http.StatusOK},
		{"one level more", nested(inputcheck.MaxDepth + 1), http.StatusBadRequest},
		{"arrays one level more", `{"a":` + deepArray + `}`, http.StatusBadRequest},
		{"brackets inside strings do not count", `{"a":"` + strings.Repeat("{[", 1000) + `"}`, http.StatusOK},
		{"escaped quotes do not end a string", `{"a":"\"` + strings.Repeat("{", 1000) + `\\"}`, http.StatusOK},
		{"deep inside a field", `{"ok":1,"sub":` + nested(100_000) + `}`, http.StatusBadRequest},
		{"unclosed", strings.Repeat("[", 40), http.StatusBadRequest},
	} {
		a := serve(t, r, post("/x/1", "application/json", c.body))
		if a.Status != c.status {
			t.Errorf("%s: %d %q, want %d", c.name, a.Status, a.Message, c.status)
		}
		if c.status == http.StatusBadRequest && !strings.Contains(a.Message, "The body nests objects and arrays more than 32 levels deep") {
			t.Errorf("%s: message %q", c.name, a.Message)
		}
	}
}

// A body nested far too deep is refused as soon as its bytes go past the limit: the rest is never
// read, however long it is.
func TestDeepJSONIsRefusedWithoutReadingTheRest(t *testing.T) {
	r := router(inputcheck.JSONBody(16 << 20))
	body := &counting{prefix: strings.Repeat("[", inputcheck.MaxDepth+1), size: 16 << 20}
	req := httptest.NewRequest(http.MethodPost, "/x/1", body)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1
	refused(t, serve(t, r, req), http.StatusBadRequest, "more than 32 levels deep")
	if body.read > 512<<10 {
		t.Errorf("read %d bytes of a body refused in its first 33", body.read)
	}
}

func TestMultipartTextNestingIsBounded(t *testing.T) {
	r := router(inputcheck.MultipartBody(1 << 20))
	ct, body := multipartBody(t, []string{"name", "ok", "keep", "[" + nested(200) + "]"}, "", "", nil)
	refused(t, serve(t, r, post("/x/1", ct, body)), http.StatusBadRequest, "The form field keep nests objects and arrays more than 32 levels deep")
	ct, body = multipartBody(t, []string{"name", "ok", "keep", `["a","b"]`}, "", "", nil)
	refused(t, serve(t, r, post("/x/1", ct, body)), http.StatusOK, "")
}

// BenchmarkHostileNestingRefusal is the refusal of a 1 MB body of nested objects through a route's
// checks: issue 23 holds it under 10 ms (docs/benchmarks.md).
func BenchmarkHostileNestingRefusal(b *testing.B) {
	r := router(inputcheck.JSONBody(1 << 20))
	body := strings.Repeat(`{"a":`, (1<<20)/5)
	var worst time.Duration
	for b.Loop() {
		start := time.Now()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/x/1", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		r.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			b.Fatalf("answer %d", rec.Code)
		}
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
}
