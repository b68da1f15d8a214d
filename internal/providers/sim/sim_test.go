package sim_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/shotflow/shotflow/internal/media/render"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/internal/providers/sim"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
)

// packshot is a small PNG of a red bottle on white.
func packshot(t *testing.T) []byte {
	t.Helper()
	return testimage.PNG(t, testimage.Product(96, 128, testimage.White, image.Rect(30, 20, 66, 110), testimage.Red))
}

func request(t *testing.T, model string, attempt int) providers.Request {
	return providers.Request{
		JobID: "job-1", JobType: jobtype.PhotoShoot, Model: model, Attempt: attempt,
		AspectRatio: "4:5", LongEdge: 64, Seed: 7,
		Inputs: []providers.Input{{Data: packshot(t), ContentType: "image/png"}},
	}
}

const ok = errorcat.Category("") // no failure

func TestOutcomePerAttempt(t *testing.T) {
	tests := []struct {
		model string
		want  []errorcat.Category // outcome of attempts 1, 2, 3, 4
	}{
		{sim.ModelOK, []errorcat.Category{ok, ok, ok, ok}},
		{sim.ModelRateLimitTwice, []errorcat.Category{errorcat.RateLimit, errorcat.RateLimit, ok, ok}},
		{sim.ModelTransientOnce, []errorcat.Category{errorcat.TransientInfra, ok, ok, ok}},
		{sim.ModelCapacityThenOK, []errorcat.Category{errorcat.ProviderCapacity, ok, ok, ok}},
		{sim.ModelAlwaysTransient, []errorcat.Category{errorcat.TransientInfra, errorcat.TransientInfra, errorcat.TransientInfra, errorcat.TransientInfra}},
		{sim.ModelContentPolicy, []errorcat.Category{errorcat.ContentPolicy, errorcat.ContentPolicy, errorcat.ContentPolicy, errorcat.ContentPolicy}},
		{sim.ModelInputMissing, []errorcat.Category{errorcat.InputMissing, errorcat.InputMissing, errorcat.InputMissing, errorcat.InputMissing}},
		{sim.ModelProviderAccount, []errorcat.Category{errorcat.ProviderAccount, errorcat.ProviderAccount, errorcat.ProviderAccount, errorcat.ProviderAccount}},
		{sim.ModelInternalBug, []errorcat.Category{errorcat.InternalBug, errorcat.InternalBug, errorcat.InternalBug, errorcat.InternalBug}},
		{sim.ModelSlow, []errorcat.Category{ok, ok, ok, ok}},
		{sim.ModelVideoOK, []errorcat.Category{ok, ok, ok, ok}},
	}
	if len(tests) != len(sim.Models()) {
		t.Fatalf("table covers %d models, sim has %d", len(tests), len(sim.Models()))
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			for i, want := range tc.want {
				attempt := i + 1
				req := request(t, tc.model, attempt)
				req.Session.Suggestions = "sim-delay=1ms"
				outs, err := sim.Provider{}.Generate(context.Background(), req)
				if f := sim.Fault(tc.model, attempt); (f == nil) != (want == ok) || (f != nil && f.Category != want) {
					t.Errorf("Fault(%q, %d) = %v, want %q", tc.model, attempt, f, want)
				}
				if want == ok {
					if err != nil || len(outs) != 1 {
						t.Fatalf("attempt %d: %d outputs, %v; want one output", attempt, len(outs), err)
					}
					continue
				}
				var ge *providers.Error
				if !errors.As(err, &ge) {
					t.Fatalf("attempt %d: error %v (%T), want *providers.Error", attempt, err, err)
				}
				if ge.Category != want {
					t.Errorf("attempt %d: category %s, want %s (%s)", attempt, ge.Category, want, ge.Message)
				}
				if !strings.Contains(ge.Message, "sim/"+tc.model) {
					t.Errorf("attempt %d: message %q does not name the model", attempt, ge.Message)
				}
				if want == errorcat.RateLimit {
					if ge.RetryAfter != 2*time.Second {
						t.Errorf("attempt %d: RetryAfter %s, want 2s", attempt, ge.RetryAfter)
					}
					if !strings.HasPrefix(ge.Message, "429 Too Many Requests: rate limit exceeded for model sim/rate-limit-twice") {
						t.Errorf("attempt %d: message %q", attempt, ge.Message)
					}
				} else if ge.RetryAfter != 0 {
					t.Errorf("attempt %d: RetryAfter %s, want 0", attempt, ge.RetryAfter)
				}
				if got := providers.Classify(err); got != ge {
					t.Errorf("Classify changed the error: %v", got)
				}
			}
		})
	}
}

func TestAttemptZeroCountsAsFirst(t *testing.T) {
	f := sim.Fault(sim.ModelTransientOnce, 0)
	if f == nil || f.Category != errorcat.TransientInfra {
		t.Fatalf("Fault(transient-once, 0) = %v, want TRANSIENT_INFRA", f)
	}
}

func TestDeterministic(t *testing.T) {
	for _, id := range sim.Models() {
		model := strings.TrimPrefix(id, "sim/")
		for attempt := 1; attempt <= 3; attempt++ {
			a, b := sim.Fault(model, attempt), sim.Fault(model, attempt)
			if (a == nil) != (b == nil) || (a != nil && *a != *b) {
				t.Errorf("Fault(%q, %d) not deterministic: %v vs %v", model, attempt, a, b)
			}
		}
	}
}

func TestUnknownModel(t *testing.T) {
	_, err := sim.Provider{}.Generate(context.Background(), request(t, "nope", 1))
	if ge := providers.Classify(err); ge.Category != errorcat.InternalBug || !strings.Contains(ge.Message, `"nope"`) {
		t.Fatalf("unknown model: %v, want INTERNAL_BUG naming it", err)
	}
}

func TestNoInput(t *testing.T) {
	req := request(t, sim.ModelOK, 1)
	req.Inputs = nil
	_, err := sim.Provider{}.Generate(context.Background(), req)
	if ge := providers.Classify(err); ge.Category != errorcat.InputMissing {
		t.Fatalf("no input: %v, want INPUT_MISSING", err)
	}
	req.Inputs = []providers.Input{{Data: []byte("not an image"), ContentType: "image/png"}}
	_, err = sim.Provider{}.Generate(context.Background(), req)
	if ge := providers.Classify(err); ge.Category != errorcat.InputMissing {
		t.Fatalf("undecodable input: %v, want INPUT_MISSING", err)
	}
}

func TestOutputIsPNGOfAspectRatio(t *testing.T) {
	for _, ar := range []string{"1:1", "4:5", "16:9", "9:16"} {
		req := request(t, sim.ModelRateLimitTwice, 3)
		req.AspectRatio, req.LongEdge = ar, 160
		req.Session = providers.SessionConfig{Style: "dark studio", Suggestions: "marble"}
		outs, err := sim.Provider{}.Generate(context.Background(), req)
		if err != nil || len(outs) != 1 {
			t.Fatalf("%s: %d outputs, %v", ar, len(outs), err)
		}
		out := outs[0]
		if out.ContentType != "image/png" || out.Ext != ".png" {
			t.Errorf("%s: content type %q ext %q", ar, out.ContentType, out.Ext)
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(out.Data))
		if err != nil || format != "png" {
			t.Fatalf("%s: output does not decode as PNG: %q %v", ar, format, err)
		}
		w, h, err := render.CanvasSize(ar, 160)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Width != w || cfg.Height != h || out.Width != w || out.Height != h {
			t.Errorf("%s: decoded %dx%d, reported %dx%d, want %dx%d", ar, cfg.Width, cfg.Height, out.Width, out.Height, w, h)
		}
		if aw, ah, _ := render.ParseAspectRatio(ar); cfg.Width*ah != cfg.Height*aw && abs(cfg.Width*ah-cfg.Height*aw) > max(aw, ah)*2 {
			t.Errorf("%s: %dx%d is not that aspect ratio", ar, cfg.Width, cfg.Height)
		}
		// Same request, same pixels: the success path is as deterministic as the local provider.
		again, err := sim.Provider{}.Generate(context.Background(), req)
		if err != nil || !bytes.Equal(again[0].Data, out.Data) {
			t.Errorf("%s: second render differs (%v)", ar, err)
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestDelay(t *testing.T) {
	tests := []struct {
		suggestions string
		want        time.Duration
	}{
		{"", sim.DefaultDelay},
		{"marble table, soft light", sim.DefaultDelay},
		{"sim-delay=3s", 3 * time.Second},
		{"on a beach, sim-delay=150ms; golden hour", 150 * time.Millisecond},
		{"SIM-DELAY=1m", time.Minute},
		{"sim-delay=0s", 0},
		{"sim-delay=soon", sim.DefaultDelay},
		{"sim-delay=-1s", sim.DefaultDelay},
	}
	for _, tc := range tests {
		if got := sim.Delay(tc.suggestions); got != tc.want {
			t.Errorf("Delay(%q) = %s, want %s", tc.suggestions, got, tc.want)
		}
	}
	if sim.DefaultDelay != 2*time.Second {
		t.Errorf("DefaultDelay = %s, want 2s", sim.DefaultDelay)
	}
}

func TestSlowHonoursDelay(t *testing.T) {
	req := request(t, sim.ModelSlow, 1)
	req.Session.Suggestions = "sim-delay=300ms"
	start := time.Now()
	outs, err := sim.Provider{}.Generate(context.Background(), req)
	elapsed := time.Since(start)
	if err != nil || len(outs) != 1 {
		t.Fatalf("slow: %d outputs, %v", len(outs), err)
	}
	if elapsed < 300*time.Millisecond {
		t.Errorf("slow returned after %s, want at least 300ms", elapsed)
	}
}

func TestSlowHonoursCancellation(t *testing.T) {
	req := request(t, sim.ModelSlow, 1)
	req.Session.Suggestions = "sim-delay=1m"
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := sim.Provider{}.Generate(ctx, req)
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("cancelled slow returned after %s", elapsed)
	}
	if ge := providers.Classify(err); ge.Category != errorcat.TransientInfra || !errors.As(err, new(*providers.Error)) {
		t.Fatalf("cancelled slow: %v, want TRANSIENT_INFRA", err)
	}

	// A deadline too: the default 2s delay against a 50ms deadline.
	req.Session.Suggestions = ""
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = sim.Provider{}.Generate(ctx, req)
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("slow past its deadline returned after %s", elapsed)
	}
	if ge := providers.Classify(err); ge.Category != errorcat.TransientInfra {
		t.Fatalf("slow past deadline: %v, want TRANSIENT_INFRA", err)
	}

	// Already cancelled: no model even starts.
	_, err = sim.Provider{}.Generate(ctx, request(t, sim.ModelOK, 1))
	if ge := providers.Classify(err); ge.Category != errorcat.TransientInfra {
		t.Fatalf("ok with a done context: %v, want TRANSIENT_INFRA", err)
	}
}

// Inside a Temporal activity sim/slow heartbeats about every second.
func TestSlowHeartbeatsInActivity(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	counter := &beatCounter{}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{counter}})
	req := request(t, sim.ModelSlow, 1)
	req.Session.Suggestions = "sim-delay=2500ms"
	gen := func(ctx context.Context, req providers.Request) (int, error) {
		outs, err := sim.Provider{}.Generate(ctx, req)
		return len(outs), err
	}
	env.RegisterActivity(gen)
	val, err := env.ExecuteActivity(gen, req)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := val.Get(&n); err != nil || n != 1 {
		t.Fatalf("outputs %d, %v", n, err)
	}
	if got := counter.n.Load(); got < 2 || got > 3 {
		t.Errorf("%d heartbeats in 2.5s, want 2", got)
	}
}

// beatCounter counts the heartbeats activities record.
type beatCounter struct {
	interceptor.WorkerInterceptorBase
	n atomic.Int32
}

func (b *beatCounter) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &beatInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, counter: b}
}

type beatInbound struct {
	interceptor.ActivityInboundInterceptorBase
	counter *beatCounter
}

func (i *beatInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return i.Next.Init(&beatOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}, counter: i.counter})
}

type beatOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	counter *beatCounter
}

func (o *beatOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	o.counter.n.Add(1)
	o.Next.RecordHeartbeat(ctx, details...)
}

func TestCatalogHasEverySimModel(t *testing.T) {
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	studio, ok := c.Model("local/studio-v1")
	if !ok {
		t.Fatal("local/studio-v1 missing")
	}
	var inCatalog []string
	for _, m := range c.AIModels {
		if m.Provider == sim.Name {
			inCatalog = append(inCatalog, m.ID)
		}
	}
	if !slices.Equal(inCatalog, sim.Models()) {
		t.Fatalf("catalog sim models %v, want %v", inCatalog, sim.Models())
	}
	images := []string{jobtype.PhotoShoot, jobtype.Packshot, jobtype.ModelIdea, jobtype.SceneryIdea}
	for _, id := range sim.Models() {
		m, _ := c.Model(id)
		jobTypes, cost, output := images, int64(1), "image"
		if id == sim.Name+"/"+sim.ModelVideoOK {
			jobTypes, cost, output = []string{jobtype.Video, jobtype.Reel}, 3, "video"
		}
		if !slices.Equal(m.JobTypes, jobTypes) || m.BaseCreditCost != cost ||
			!slices.Equal(m.SupportedAspectRatios, studio.SupportedAspectRatios) || m.OutputType != output {
			t.Errorf("catalog entry %+v", m)
		}
	}
}

func TestRegistry(t *testing.T) {
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	ids := func(r *providers.Registry) []string {
		var out []string
		for _, m := range r.Models() {
			out = append(out, m.ID)
		}
		return out
	}

	without := providers.MustNewRegistry(c, map[string]providers.Provider{"local": local.Provider{}})
	for _, id := range ids(without) {
		if strings.HasPrefix(id, "sim/") {
			t.Errorf("sim disabled but %s is listed", id)
		}
	}
	if _, ok := without.Model("sim/ok"); ok {
		t.Error("sim disabled but sim/ok is available")
	}
	if _, err := without.Generate(context.Background(), "sim/ok", request(t, "", 1)); providers.Classify(err).Category != errorcat.InternalBug {
		t.Errorf("sim disabled, generate sim/ok: %v, want INTERNAL_BUG", err)
	}

	with := providers.MustNewRegistry(c, map[string]providers.Provider{"local": local.Provider{}, sim.Name: sim.Provider{}})
	listed := ids(with)
	for _, id := range append(sim.Models(), "local/studio-v1") {
		if !slices.Contains(listed, id) {
			t.Errorf("sim enabled but %s is not listed (%v)", id, listed)
		}
	}
	// The registry hands the provider the model part and the attempt number.
	if _, err := with.Generate(context.Background(), "sim/transient-once", request(t, "", 1)); providers.Classify(err).Category != errorcat.TransientInfra {
		t.Errorf("sim/transient-once attempt 1: %v, want TRANSIENT_INFRA", err)
	}
	if outs, err := with.Generate(context.Background(), "sim/transient-once", request(t, "", 2)); err != nil || len(outs) != 1 {
		t.Errorf("sim/transient-once attempt 2: %d outputs, %v", len(outs), err)
	}
}

func TestSessionOptionChoosesTheFault(t *testing.T) {
	p := sim.Provider{}
	req := request(t, sim.ModelOK, 1)
	req.Session.Suggestions = "soft light, sim-fault=rate-limit-twice"
	for attempt, want := range []errorcat.Category{errorcat.RateLimit, errorcat.RateLimit, ok} {
		req.Attempt = attempt + 1
		_, err := p.Generate(context.Background(), req)
		if got := category(err); got != want {
			t.Fatalf("attempt %d: %q, want %q", attempt+1, got, want)
		}
	}
	// Only sim/ok and sim/video-ok take the option; an unknown fault name is ignored.
	req = request(t, sim.ModelContentPolicy, 1)
	req.Session.Suggestions = "sim-fault=transient-once"
	if _, err := p.Generate(context.Background(), req); category(err) != errorcat.ContentPolicy {
		t.Fatalf("sim/content-policy with an option: %v", err)
	}
	req = request(t, sim.ModelOK, 1)
	req.Session.Suggestions = "sim-fault=nonsense"
	if _, err := p.Generate(context.Background(), req); err != nil {
		t.Fatalf("sim/ok with an unknown fault: %v", err)
	}
}

func TestFaultAtLimitsTheFaultToOneJob(t *testing.T) {
	p := sim.Provider{}
	for position, want := range []errorcat.Category{ok, errorcat.ContentPolicy, ok} {
		req := request(t, sim.ModelOK, 1)
		req.Position = position
		req.Session.Suggestions = "sim-fault=content-policy sim-fault-at=1"
		if _, err := p.Generate(context.Background(), req); category(err) != want {
			t.Errorf("position %d: %v, want %q", position, err, want)
		}
	}
}

func TestServes(t *testing.T) {
	p := sim.Provider{}
	for _, tc := range []struct {
		model, jobType string
		want           bool
	}{
		{sim.ModelOK, jobtype.Packshot, true},
		{sim.ModelSlow, jobtype.ModelIdea, true},
		{sim.ModelOK, jobtype.Video, false},
		{sim.ModelVideoOK, jobtype.Reel, true},
		{sim.ModelVideoOK, jobtype.PhotoShoot, false},
		{"nope", jobtype.PhotoShoot, false},
		{sim.ModelOK, "painting", false},
	} {
		if got := p.Serves(tc.model, tc.jobType); got != tc.want {
			t.Errorf("Serves(%s, %s) = %v", tc.model, tc.jobType, got)
		}
	}
}

func category(err error) errorcat.Category {
	if err == nil {
		return ok
	}
	return providers.Classify(err).Category
}
