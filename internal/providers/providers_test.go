package providers_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
)

// fake serves the job types listed per model.
type fake map[string][]string

func (f fake) Generate(context.Context, providers.Request) ([]providers.Output, error) {
	return []providers.Output{{Data: []byte("x"), ContentType: "image/png", Ext: ".png"}}, nil
}

func (f fake) Serves(model, jobType string) bool {
	for _, jt := range f[model] {
		if jt == jobType {
			return true
		}
	}
	return false
}

func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Parse([]byte(`{"version": 7,
	  "aspect_ratios": [{"id": "1:1", "label": "Square", "width": 1, "height": 1, "default": true}],
	  "ai_models": [
	    {"id": "a/img", "provider": "a", "name": "A", "output_type": "image", "job_types": ["photo_shoot", "model_idea"], "supported_aspect_ratios": ["1:1"], "base_credit_cost": 2},
	    {"id": "a/vid", "provider": "a", "name": "A video", "output_type": "video", "job_types": ["video"], "supported_aspect_ratios": ["1:1"], "base_credit_cost": 5},
	    {"id": "b/img", "provider": "b", "name": "B", "output_type": "image", "job_types": ["packshot"], "supported_aspect_ratios": ["1:1"], "base_credit_cost": 1}
	  ],
	  "provider_prices": []}`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRegistryRefusesACatalogItsCodeCannotServe(t *testing.T) {
	c := testCatalog(t)
	_, err := providers.NewRegistry(c, map[string]providers.Provider{"a": fake{"img": {"photo_shoot"}, "vid": {"video"}}})
	if err == nil || !strings.Contains(err.Error(), "a/img") || !strings.Contains(err.Error(), "model_idea") {
		t.Fatalf("NewRegistry = %v, want an error naming a/img and model_idea", err)
	}
	// A provider that is not configured is not checked: its models are simply unavailable.
	r, err := providers.NewRegistry(c, map[string]providers.Provider{"a": fake{"img": {"photo_shoot", "model_idea"}, "vid": {"video"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Model("b/img"); ok {
		t.Fatal("a model of an unconfigured provider is available")
	}
	if got := len(r.Models()); got != 2 {
		t.Fatalf("Models() lists %d, want 2", got)
	}
	_, err = r.Generate(context.Background(), "b/img", providers.Request{})
	var ge *providers.Error
	if !errors.As(err, &ge) || ge.Category != errorcat.InternalBug {
		t.Fatalf("Generate on an unavailable model = %v", err)
	}
}

func TestModelsForShowsOnlyTheGivenJobTypes(t *testing.T) {
	r := providers.MustNewRegistry(testCatalog(t), map[string]providers.Provider{
		"a": fake{"img": {"photo_shoot", "model_idea"}, "vid": {"video"}}, "b": fake{"img": {"packshot"}},
	})
	got := r.ModelsFor(jobtype.PhotoShoot, jobtype.Packshot)
	if len(got) != 2 || got[0].ID != "a/img" || len(got[0].JobTypes) != 1 || got[0].JobTypes[0] != "photo_shoot" || got[1].ID != "b/img" {
		t.Fatalf("ModelsFor = %+v", got)
	}
	if all := r.Models(); len(all[0].JobTypes) != 2 {
		t.Fatal("ModelsFor changed the catalog's own model")
	}
}

func TestTheSeedCatalogParses(t *testing.T) {
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.AIModels {
		if m.Provider == "local" || m.Provider == "sim" {
			continue
		}
		if m.BaseCreditCost <= 0 {
			t.Errorf("%s costs nothing", m.ID)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{}, 0},
	}
	for _, c := range cases {
		if got := providers.RetryAfter(c.header, now); got != c.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", c.header, got, c.want)
		}
	}
}

func TestTransportFailuresAreTransient(t *testing.T) {
	// A refused connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = http.Get("http://" + addr)
	if ge := providers.TransportError("p", err); ge.Category != errorcat.TransientInfra {
		t.Errorf("refused: %v", ge)
	}
	// A timeout.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(300 * time.Millisecond) }))
	defer slow.Close()
	_, err = (&http.Client{Timeout: 50 * time.Millisecond}).Get(slow.URL)
	if ge := providers.TransportError("p", err); ge.Category != errorcat.TransientInfra {
		t.Errorf("timeout: %v", ge)
	}
	// A reset mid-answer.
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	}))
	defer reset.Close()
	_, err = http.Get(reset.URL)
	if ge := providers.TransportError("p", err); ge.Category != errorcat.TransientInfra {
		t.Errorf("reset: %v", ge)
	}
	if ge := providers.TransportError("p", errors.New("something else")); ge.Category != errorcat.InternalBug {
		t.Errorf("unknown: %v", ge)
	}
}

func TestDownload(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.Error(w, "gone", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG data"))
	}))
	defer srv.Close()
	data, ct, err := providers.Download(context.Background(), srv.Client(), "p", srv.URL+"/ok")
	if err != nil || ct != "image/png" || string(data) != "\x89PNG data" {
		t.Fatalf("Download = %q %s %v", data, ct, err)
	}
	_, _, err = providers.Download(context.Background(), srv.Client(), "p", srv.URL+"/gone")
	var ge *providers.Error
	if !errors.As(err, &ge) || ge.Category != errorcat.TransientInfra {
		t.Fatalf("Download of a missing file = %v", err)
	}
	uri := providers.DataURI(providers.Input{Data: []byte("abc"), ContentType: "image/webp"})
	data, ct, err = providers.Download(context.Background(), srv.Client(), "p", uri)
	if err != nil || ct != "image/webp" || string(data) != "abc" {
		t.Fatalf("data URI = %q %s %v", data, ct, err)
	}
	_, _, err = providers.Download(context.Background(), srv.Client(), "p: request r", "data:image/png,abc")
	if !errors.As(err, &ge) || ge.Category != errorcat.InternalBug || !strings.HasPrefix(ge.Message, "p: request r: ") {
		t.Fatalf("Download of a malformed data URI = %v, want INTERNAL_BUG naming who", err)
	}
}

func TestRedactAndClipDetail(t *testing.T) {
	err := providers.Redact(errors.New("bad key sk-123 for sk-123"), "sk-123")
	if err.Category != errorcat.InternalBug || strings.Contains(err.Message, "sk-123") {
		t.Fatalf("Redact = %+v", err)
	}
	if got := providers.Redact(providers.Errorf(errorcat.RateLimit, "slow down"), ""); got.Message != "slow down" || got.Category != errorcat.RateLimit {
		t.Fatalf("Redact without a secret = %+v", got)
	}
	long := strings.Repeat("é", providers.MaxDetail) // two bytes each: the cut falls inside one
	clipped := providers.ClipDetail(long)
	if !utf8.ValidString(clipped) || len(clipped) > providers.MaxDetail+len("…") || !strings.HasSuffix(clipped, "…") {
		t.Fatalf("ClipDetail cut %d bytes badly", len(clipped))
	}
	if providers.ClipDetail("short") != "short" {
		t.Fatal("ClipDetail changed a short text")
	}
}
