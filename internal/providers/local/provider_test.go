package local

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"slices"
	"testing"

	"github.com/shotflow/shotflow/internal/media/render"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models/jobtype"
)

// productPNG is a PNG product photo: a blue box on a plain light grey background.
func productPNG(t testing.TB) []byte {
	t.Helper()
	return testimage.PNG(t, testimage.Product(640, 560, color.NRGBA{196, 198, 204, 255}, image.Rect(140, 120, 420, 480), testimage.Blue))
}

// generate renders req with the local provider and returns its single output's bytes.
func generate(t testing.TB, req providers.Request) []byte {
	t.Helper()
	outs, err := Provider{}.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("%s %s %d seed %d: %v", req.JobType, req.AspectRatio, req.LongEdge, req.Seed, err)
	}
	if len(outs) != 1 {
		t.Fatalf("%s: %d outputs", req.JobType, len(outs))
	}
	return outs[0].Data
}

// rendered is what the renderer draws for req, uncached: the input decoded, then render.PhotoShoot,
// render.Packshot or render.Idea with the request's options, then render.EncodePNG.
func rendered(t *testing.T, req providers.Request) []byte {
	t.Helper()
	decode := func(data []byte) image.Image {
		img, _, err := image.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	var img *image.NRGBA
	var err error
	switch req.JobType {
	case jobtype.PhotoShoot:
		opts := render.PhotoShootOptions{AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed,
			Style: req.Session.Style, Suggestions: req.Session.Suggestions}
		if req.Scenery != nil {
			opts.Scenery = decode(req.Scenery.Data)
		}
		img, err = render.PhotoShoot(decode(req.Inputs[0].Data), opts)
	case jobtype.Packshot:
		img, err = render.Packshot(decode(req.Inputs[0].Data), render.PackshotOptions{AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed})
	case jobtype.ModelIdea, jobtype.SceneryIdea:
		kind := render.IdeaModel
		if req.JobType == jobtype.SceneryIdea {
			kind = render.IdeaScenery
		}
		img, err = render.Idea(kind, req.Prompt, render.IdeaOptions{AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed})
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := render.EncodePNG(img)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGenerateRendersTheRequest: every image job renders what the renderer draws for the request's
// input, aspect ratio, long edge, seed, style, suggestions, scenery and prompt, the same bytes again
// when the renderer's cache holds the matted input; an undecodable scenery is left out.
func TestGenerateRendersTheRequest(t *testing.T) {
	input := providers.Input{Data: productPNG(t), ContentType: "image/png"}
	scenery := providers.Input{Data: testimage.GradientPNG(t, 200, 150), ContentType: "image/png"}
	session := providers.SessionConfig{Style: "dark studio", Suggestions: "kitchen counter"}
	var reqs []providers.Request
	for _, jt := range []string{jobtype.PhotoShoot, jobtype.Packshot, jobtype.ModelIdea, jobtype.SceneryIdea} {
		for _, c := range []struct {
			aspect   string
			longEdge int
		}{{"", 64}, {"16:9", 200}, {"4:5", 96}} {
			for seed := range int64(2) {
				req := providers.Request{JobType: jt, Model: StudioModel, AspectRatio: c.aspect, LongEdge: c.longEdge, Seed: seed,
					Prompt: "tall woman, red dress, beach", Session: session}
				if jt == jobtype.PhotoShoot || jt == jobtype.Packshot {
					req.Inputs = []providers.Input{input}
				}
				reqs = append(reqs, req)
				if jt == jobtype.PhotoShoot && seed == 1 {
					req.Scenery = &scenery
					reqs = append(reqs, req)
				}
			}
		}
	}
	for _, req := range reqs {
		want := rendered(t, req)
		for range 2 {
			if got := generate(t, req); !bytes.Equal(got, want) {
				t.Errorf("%s %q %d seed %d scenery %t: output differs from the renderer's", req.JobType, req.AspectRatio, req.LongEdge, req.Seed, req.Scenery != nil)
			}
		}
	}

	req := providers.Request{JobType: jobtype.PhotoShoot, LongEdge: 64, Inputs: []providers.Input{input}}
	plain := generate(t, req)
	req.Scenery = &providers.Input{Data: []byte("not an image")}
	if !bytes.Equal(generate(t, req), plain) {
		t.Error("an undecodable scenery changed the photo shoot")
	}
}

// TestGenerateInputFailures: a missing, undecodable or unusable input fails INPUT_MISSING with a
// message naming the job's input, on every attempt.
func TestGenerateInputFailures(t *testing.T) {
	invisible := providers.Input{Data: testimage.PNG(t, image.NewNRGBA(image.Rect(0, 0, 32, 32))), ContentType: "image/png"}
	cases := []struct {
		req  providers.Request
		want string
	}{
		{providers.Request{JobType: jobtype.PhotoShoot}, "INPUT_MISSING: photo shoot needs a packshot input"},
		{providers.Request{JobType: jobtype.Packshot}, "INPUT_MISSING: packshot needs a product photo input"},
		{providers.Request{JobType: jobtype.PhotoShoot, Inputs: []providers.Input{{Data: []byte("not an image")}}},
			"INPUT_MISSING: packshot is not a decodable image: image: unknown format"},
		{providers.Request{JobType: jobtype.Packshot, Inputs: []providers.Input{{Data: []byte("not an image")}}},
			"INPUT_MISSING: product photo is not a decodable image: image: unknown format"},
		{providers.Request{JobType: jobtype.PhotoShoot, AspectRatio: "9:1", Inputs: []providers.Input{{Data: []byte("not an image")}}},
			"INPUT_MISSING: packshot is not a decodable image: image: unknown format"},
		{providers.Request{JobType: jobtype.PhotoShoot, AspectRatio: "9:1", Inputs: []providers.Input{invisible}},
			`INPUT_MISSING: render: invalid aspect ratio "9:1": more extreme than 4:1`},
		{providers.Request{JobType: jobtype.PhotoShoot, LongEdge: 64, Inputs: []providers.Input{invisible}},
			"INPUT_MISSING: render: packshot has no visible pixels"},
		{providers.Request{JobType: jobtype.Packshot, LongEdge: 64, Inputs: []providers.Input{invisible}},
			"INPUT_MISSING: render: packshot has no visible pixels"},
	}
	for _, c := range cases {
		for range 2 {
			_, err := Provider{}.Generate(context.Background(), c.req)
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Category != errorcat.InputMissing || err.Error() != c.want {
				t.Errorf("%s %+v: error %v, want %s", c.req.JobType, c.req.AspectRatio, err, c.want)
			}
		}
	}
}

func TestProviderGenerate(t *testing.T) {
	shot := productPNG(t)
	for _, jt := range []string{jobtype.PhotoShoot, jobtype.Packshot, jobtype.ModelIdea, jobtype.SceneryIdea} {
		req := providers.Request{JobType: jt, Model: StudioModel, AspectRatio: "4:5", LongEdge: 320, Seed: 5, Prompt: "tall woman, beach"}
		if jt == jobtype.PhotoShoot || jt == jobtype.Packshot {
			req.Inputs = []providers.Input{{Data: shot, ContentType: "image/png"}}
		}
		outs, err := Provider{}.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", jt, err)
		}
		if len(outs) != 1 || outs[0].ContentType != "image/png" || outs[0].Ext != ".png" || outs[0].Width != 256 || outs[0].Height != 320 {
			t.Fatalf("%s: outputs %+v", jt, outs)
		}
		img, err := png.Decode(bytes.NewReader(outs[0].Data))
		if err != nil {
			t.Fatalf("%s: %v", jt, err)
		}
		if img.Bounds() != image.Rect(0, 0, 256, 320) {
			t.Errorf("%s: decoded bounds %v", jt, img.Bounds())
		}
	}

	fails := []struct {
		req  providers.Request
		want errorcat.Category
	}{
		{providers.Request{JobType: jobtype.Packshot}, errorcat.InputMissing},
		{providers.Request{JobType: jobtype.Packshot, Inputs: []providers.Input{{Data: []byte("not an image")}}}, errorcat.InputMissing},
		{providers.Request{JobType: jobtype.PhotoShoot, Inputs: []providers.Input{{Data: []byte{0x89, 'P', 'N', 'G'}}}}, errorcat.InputMissing},
		{providers.Request{JobType: jobtype.ModelIdea, AspectRatio: "7:1"}, errorcat.InternalBug},
		{providers.Request{JobType: "banner", Inputs: []providers.Input{{Data: shot}}}, errorcat.InternalBug},
	}
	for _, f := range fails {
		_, err := Provider{}.Generate(context.Background(), f.req)
		if err == nil || providers.Classify(err).Category != f.want {
			t.Errorf("%s %+v: error %v, want %s", f.req.JobType, f.req.AspectRatio, err, f.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Provider{}).Generate(ctx, providers.Request{JobType: jobtype.SceneryIdea}); providers.Classify(err).Category != errorcat.TransientInfra {
		t.Errorf("cancelled: %v, want TRANSIENT_INFRA", err)
	}
}

func TestProviderServes(t *testing.T) {
	var _ providers.Provider = Provider{}
	want := map[string][]string{
		StudioModel: {jobtype.PhotoShoot, jobtype.Packshot, jobtype.ModelIdea, jobtype.SceneryIdea},
		MotionModel: {jobtype.Video, jobtype.Reel},
	}
	for _, model := range []string{StudioModel, MotionModel, "studio-v2", "", "ok"} {
		for _, jt := range append(slices.Clone(jobtype.All), "", "banner") {
			if got := (Provider{}).Serves(model, jt); got != slices.Contains(want[model], jt) {
				t.Errorf("Serves(%q, %q) = %v", model, jt, got)
			}
		}
	}
}
