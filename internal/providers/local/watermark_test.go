package local

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/shotflow/shotflow/internal/media/render"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/models/jobtype"
)

// A request with Watermark gets the "TEST" watermark on its image, and only then.
func TestWatermarkedImages(t *testing.T) {
	t.Parallel()
	for _, jt := range []string{jobtype.Packshot, jobtype.PhotoShoot, jobtype.ModelIdea} {
		req := providers.Request{JobType: jt, Model: StudioModel, AspectRatio: "4:5", LongEdge: 320, Seed: 11,
			Prompt: "bright loft", Inputs: []providers.Input{{Data: productPNG(t), ContentType: "image/png"}}}
		plain := decodePNG(t, generate(t, req))
		req.Watermark = true
		marked := decodePNG(t, generate(t, req))
		b := marked.Bounds()
		l := render.Watermark(b.Dx(), b.Dy())
		if len(l.Letters) == 0 {
			t.Fatalf("%s: no watermark layout on %v", jt, b)
		}
		differs := false
		for _, r := range l.Letters {
			c := r.Min.Add(r.Max).Div(2)
			if got := color.NRGBAModel.Convert(marked.At(c.X, c.Y)); got != render.WatermarkColor {
				t.Fatalf("%s: watermarked pixel %v is %v", jt, c, got)
			}
			differs = differs || color.NRGBAModel.Convert(plain.At(c.X, c.Y)) != render.WatermarkColor
		}
		if !differs {
			t.Fatalf("%s: the render without Watermark has the watermark too", jt)
		}
	}
}

// A video with Watermark carries it on its frames: the stamp is the watermark's letters at the
// size encoded, and (with ffmpeg) its decoded frames show them.
func TestWatermarkedVideo(t *testing.T) {
	t.Parallel()
	rects, c := watermarkStamp(480, 270)
	if l := render.Watermark(480, 270); len(rects) == 0 || len(rects) != len(l.Letters) || c != render.WatermarkColor {
		t.Fatalf("video stamp: %d rects (%d letters), colour %v", len(rects), len(l.Letters), c)
	}
	blue := solidPNG(t, color.NRGBA{30, 60, 200, 255})
	req := providers.Request{JobType: jobtype.Video, Model: MotionModel, AspectRatio: "16:9", Seed: 3, Inputs: []providers.Input{blue}}
	p := Provider{VideoEncoder: "go"}
	plain, err := p.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Watermark = true
	marked, err := p.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(plain[0].Data, marked[0].Data) {
		t.Fatal("the watermarked video is the plain one")
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Log("ffmpeg is not on PATH: the frames are not decoded")
		return
	}
	path := filepath.Join(t.TempDir(), "v.mp4")
	if err := os.WriteFile(path, marked[0].Data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	frame := decodePNG(t, out)
	o := marked[0]
	for _, r := range render.Watermark(o.Width, o.Height).Letters {
		p := r.Min.Add(r.Max).Div(2)
		got := color.NRGBAModel.Convert(frame.At(p.X, p.Y)).(color.NRGBA)
		if got.R < 180 || got.G > 70 || got.B > 80 {
			t.Fatalf("decoded frame pixel %v is %v, not the watermark's red", p, got)
		}
	}
}

func decodePNG(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}
