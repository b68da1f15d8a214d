package testmode

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/media/render"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/models/jobtype"
)

func TestCheckEdges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o      Outcome
		member string
	}{
		{Outcome{}, ""},
		{Outcome{FailWith: errorcat.ContentPolicy}, ""},
		{Outcome{FailWith: errorcat.InputNotReady, RetryableFailures: MaxRetryableFailures, DelayMS: 120000}, ""},
		{Outcome{FailWith: "CONTENT_POLICY "}, "fail_with"},
		{Outcome{FailWith: "content_policy"}, "fail_with"},
		{Outcome{FailWith: "NOPE"}, "fail_with"},
		{Outcome{RetryableFailures: -1}, "retryable_failures"},
		{Outcome{RetryableFailures: MaxRetryableFailures + 1}, "retryable_failures"},
		{Outcome{DelayMS: -1}, "delay_ms"},
		{Outcome{DelayMS: 120001}, "delay_ms"},
	} {
		member, problem := tc.o.Check()
		if member != tc.member || (member != "") != (problem != "") {
			t.Errorf("%+v: member %q (%q), want %q", tc.o, member, problem, tc.member)
		}
	}
	// The refusal of an unknown category lists the categories.
	if _, problem := (Outcome{FailWith: "NOPE"}).Check(); !strings.Contains(problem, "PROVIDER_CAPACITY") {
		t.Errorf("unknown category's problem %q does not list the categories", problem)
	}
}

func TestEncodeDecode(t *testing.T) {
	t.Parallel()
	o := Outcome{FailWith: errorcat.RateLimit, RetryableFailures: 2, DelayMS: 50}
	s := o.Encode()
	if s != `{"fail_with":"RATE_LIMIT","retryable_failures":2,"delay_ms":50}` {
		t.Fatalf("Encode = %s", s)
	}
	got, err := Decode(&s)
	if err != nil || got != o {
		t.Fatalf("Decode(%s) = %+v, %v", s, got, err)
	}
	for _, none := range []*string{nil, new(string), ptr("null")} {
		if got, err := Decode(none); err != nil || got != (Outcome{}) {
			t.Fatalf("Decode(none) = %+v, %v", got, err)
		}
	}
	for _, bad := range []string{`{"fail_with":"NOPE"}`, `{"delay_ms":-5}`, `[1]`} {
		if _, err := Decode(&bad); err == nil {
			t.Errorf("Decode(%s) accepted", bad)
		}
	}
}

func ptr(s string) *string { return &s }

func TestFaultByAttempt(t *testing.T) {
	t.Parallel()
	want := func(o Outcome, attempt int, c errorcat.Category) {
		t.Helper()
		f := Fault(o, attempt)
		switch {
		case c == "" && f != nil:
			t.Errorf("%+v attempt %d: %v, want success", o, attempt, f)
		case c != "" && (f == nil || f.Category != c):
			t.Errorf("%+v attempt %d: %v, want %s", o, attempt, f, c)
		}
	}
	want(Outcome{}, 1, "")
	want(Outcome{FailWith: errorcat.ContentPolicy}, 1, errorcat.ContentPolicy)
	want(Outcome{FailWith: errorcat.ContentPolicy}, 6, errorcat.ContentPolicy)
	retry := Outcome{RetryableFailures: 2}
	want(retry, 0, errorcat.TransientInfra)
	want(retry, 1, errorcat.TransientInfra)
	want(retry, 2, errorcat.TransientInfra)
	want(retry, 3, "")
	both := Outcome{RetryableFailures: 1, FailWith: errorcat.ProviderAccount}
	want(both, 1, errorcat.TransientInfra)
	want(both, 2, errorcat.ProviderAccount)
}

// recorder is a studio that records what it is asked.
type recorder struct{ reqs []providers.Request }

func (r *recorder) Serves(string, string) bool { return true }
func (r *recorder) Generate(_ context.Context, req providers.Request) ([]providers.Output, error) {
	r.reqs = append(r.reqs, req)
	return []providers.Output{{Data: []byte("x"), ContentType: "image/png", Ext: ".png"}}, nil
}

func TestStudioAppliesTheOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &recorder{}
	s := Studio{Local: rec}
	req := providers.Request{JobType: jobtype.ModelIdea, Model: "gpt-image-1", Attempt: 1}

	if _, err := s.Generate(ctx, req, Outcome{FailWith: errorcat.ContentPolicy}); providers.Classify(err).Category != errorcat.ContentPolicy {
		t.Fatalf("fail_with: %v", err)
	}
	if len(rec.reqs) != 0 {
		t.Fatal("a failing attempt rendered")
	}
	outs, err := s.Generate(ctx, req, Outcome{})
	if err != nil || len(outs) != 1 || len(rec.reqs) != 1 || !rec.reqs[0].Watermark {
		t.Fatalf("success: %v, %d outputs, requests %+v", err, len(outs), rec.reqs)
	}

	began := time.Now()
	if _, err := s.Generate(ctx, req, Outcome{DelayMS: 150}); err != nil || time.Since(began) < 150*time.Millisecond {
		t.Fatalf("delay_ms 150 took %s: %v", time.Since(began), err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	began = time.Now()
	_, err = s.Generate(cctx, req, Outcome{DelayMS: 60000})
	if providers.Classify(err).Category != errorcat.TransientInfra || time.Since(began) > 5*time.Second {
		t.Fatalf("a cancelled delay: %v after %s", err, time.Since(began))
	}
}

// The local studio draws the watermark on what it renders for test mode: the letters' cells are
// the watermark's colour, which the same render without it does not have there.
func TestStudioWatermarksTheLocalRender(t *testing.T) {
	t.Parallel()
	req := providers.Request{JobType: jobtype.ModelIdea, Model: "gpt-image-1", AspectRatio: "1:1", LongEdge: 256,
		Seed: 7, Prompt: "minimal studio", Attempt: 1}
	marked, err := Studio{Local: local.Provider{}}.Generate(context.Background(), req, Outcome{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := local.Provider{}.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	mimg, pimg := decode(t, marked[0].Data), decode(t, plain[0].Data)
	layout := render.Watermark(256, 256)
	if len(layout.Letters) == 0 {
		t.Fatal("no watermark on a 256-pixel picture")
	}
	for _, r := range layout.Letters {
		c := (r.Min.Add(r.Max)).Div(2)
		if !isMark(mimg.At(c.X, c.Y)) {
			t.Fatalf("pixel %v of the test render is %v, not the watermark's colour", c, mimg.At(c.X, c.Y))
		}
	}
	misses := 0
	for _, r := range layout.Letters {
		c := (r.Min.Add(r.Max)).Div(2)
		if !isMark(pimg.At(c.X, c.Y)) {
			misses++
		}
	}
	if misses == 0 {
		t.Fatal("the plain render has the watermark's colour everywhere the letters are: the check proves nothing")
	}
}

func decode(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// isMark reports whether c is the watermark's colour, within rounding.
func isMark(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	w := render.WatermarkColor
	near := func(v uint32, want uint8) bool { d := int(v>>8) - int(want); return d > -6 && d < 6 }
	return near(r, w.R) && near(g, w.G) && near(b, w.B)
}
