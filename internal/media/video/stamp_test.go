package video

import (
	"context"
	"image"
	"image/color"
	"testing"
)

// stampRed paints one red square in the middle of every frame.
func stampRed(w, h int) ([]image.Rectangle, color.NRGBA) {
	return []image.Rectangle{image.Rect(w/4, h/4, w*3/4, h*3/4)}, color.NRGBA{R: 220, G: 30, B: 40, A: 255}
}

// A stamp is on every frame, in its colour, and nowhere else: the decoded first and last frames
// of both encoders show it.
func TestDecodeStampOnEveryFrame(t *testing.T) {
	blue := color.RGBA{30, 60, 200, 255}
	encoders(t, func(t *testing.T, encoder string) {
		res, path := renderToFile(t, []image.Image{solidImage(320, 320, blue)},
			Options{Width: 160, Height: 160, FPS: 8, Encoder: encoder, Stamp: stampRed})
		checkPlays(t, path, res)
		rects, c := stampRed(res.Width, res.Height)
		inner := rects[0].Inset(4)
		red := color.RGBA{c.R, c.G, c.B, 255}
		for _, n := range []int{0, res.Frames - 1} {
			img := decodeFrame(t, path, n)
			if d := colourDistance(meanColour(img, inner), red); d > colourTolerance[encoder] {
				t.Errorf("frame %d: the stamp's area is %v, %.1f from its colour", n, meanColour(img, inner), d)
			}
			corner := image.Rect(2, 2, res.Width/4-4, res.Height/4-4)
			if d := colourDistance(meanColour(img, corner), blue); d > colourTolerance[encoder] {
				t.Errorf("frame %d: outside the stamp is %v, %.1f from the picture's colour", n, meanColour(img, corner), d)
			}
		}
	})
}

// Without ffmpeg: the stamp's samples are in every rendered frame, and a movie without one has
// none of them.
func TestStampPaintsFrames(t *testing.T) {
	t.Parallel()
	s, err := resolve(Options{Width: 64, Height: 64, FPS: 4}, 1, EncoderGo)
	if err != nil {
		t.Fatal(err)
	}
	for _, stamped := range []bool{true, false} {
		m, err := newMovie(context.Background(), []image.Image{solidImage(64, 64, color.RGBA{30, 60, 200, 255})}, s)
		if err != nil {
			t.Fatal(err)
		}
		if stamped {
			m.stamp = newStamp(stampRed, s.width, s.height)
		}
		want := newStamp(stampRed, s.width, s.height)
		for k := range s.frames {
			f, err := m.frame(context.Background(), k)
			if err != nil {
				t.Fatal(err)
			}
			y := f.img.Y[32*f.img.YStride+32]
			cr := f.img.Cr[16*f.img.CStride+16]
			if got := y == want.y && cr == want.cr; got != stamped {
				t.Fatalf("stamped %v: frame %d has Y %d Cr %d at the centre, stamp's %d %d", stamped, k, y, cr, want.y, want.cr)
			}
		}
	}
	if newStamp(nil, 64, 64) != nil || newStamp(func(int, int) ([]image.Rectangle, color.NRGBA) { return nil, color.NRGBA{} }, 64, 64) != nil {
		t.Fatal("an empty stamp paints")
	}
}
