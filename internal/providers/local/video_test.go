package local

import (
	"bytes"
	"context"
	"errors"
	"image/color"
	"testing"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models/jobtype"
)

// solidPNG is a 64×48 PNG input of one colour.
func solidPNG(t *testing.T, c color.NRGBA) providers.Input {
	t.Helper()
	return providers.Input{Data: testimage.SolidPNG(t, 64, 48, c), ContentType: "image/png"}
}

// The motion model renders a video of one image and a reel of several as MP4 at the requested
// aspect ratio (the pure-Go encoder here, so no ffmpeg is needed), and refuses wrong inputs.
func TestProviderRendersVideosAndReels(t *testing.T) {
	p := Provider{VideoEncoder: "go"}
	red, blue := solidPNG(t, color.NRGBA{200, 30, 40, 255}), solidPNG(t, color.NRGBA{30, 60, 200, 255})
	for _, tc := range []struct {
		jobType string
		inputs  []providers.Input
		aspect  string
	}{
		{jobtype.Video, []providers.Input{red}, "16:9"},
		{jobtype.Reel, []providers.Input{red, blue, red}, "9:16"},
	} {
		outs, err := p.Generate(context.Background(), providers.Request{JobType: tc.jobType, Model: MotionModel,
			AspectRatio: tc.aspect, Seed: 3, Inputs: tc.inputs})
		if err != nil || len(outs) != 1 {
			t.Fatalf("%s: %d outputs, %v", tc.jobType, len(outs), err)
		}
		o := outs[0]
		if o.ContentType != "video/mp4" || o.Ext != ".mp4" || o.Duration <= 0 || !bytes.Contains(o.Data[:16], []byte("ftyp")) {
			t.Fatalf("%s: output %s %s %v", tc.jobType, o.ContentType, o.Ext, o.Duration)
		}
		if (tc.aspect == "16:9") != (o.Width > o.Height) {
			t.Fatalf("%s: %dx%d is not %s", tc.jobType, o.Width, o.Height, tc.aspect)
		}
	}

	eleven := make([]providers.Input, 11)
	for i := range eleven {
		eleven[i] = red
	}
	for name, req := range map[string]providers.Request{
		"video without an image": {JobType: jobtype.Video},
		"video of two images":    {JobType: jobtype.Video, Inputs: []providers.Input{red, blue}},
		"reel of eleven images":  {JobType: jobtype.Reel, Inputs: eleven},
		"undecodable image":      {JobType: jobtype.Reel, Inputs: []providers.Input{red, {Data: []byte("nope")}}},
	} {
		req.AspectRatio, req.Model = "1:1", MotionModel
		_, err := p.Generate(context.Background(), req)
		var ge *providers.Error
		if !errors.As(err, &ge) || ge.Category != errorcat.InputMissing {
			t.Errorf("%s: %v, want INPUT_MISSING", name, err)
		}
	}
}
