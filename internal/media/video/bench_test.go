package video

import (
	"context"
	"image"
	"testing"
)

// benchRender renders a 3 s 720x720 single-image video with the given encoder b.N times.
func benchRender(b *testing.B, encoder string) {
	img := []image.Image{gradientImage(1600, 1200)}
	opts := Options{Width: 720, Height: 720, PerImage: 3e9, Encoder: encoder}
	var size int
	for b.Loop() {
		res, err := Render(context.Background(), img, opts)
		if err != nil {
			b.Fatal(err)
		}
		size = len(res.Data)
	}
	b.ReportMetric(float64(size), "bytes/video")
}

// BenchmarkRenderGo measures the pure-Go encoder (480x480 at 12 fps after its caps).
func BenchmarkRenderGo(b *testing.B) { benchRender(b, EncoderGo) }

// BenchmarkRenderFFmpeg measures the ffmpeg encoder at 720x720, 24 fps.
func BenchmarkRenderFFmpeg(b *testing.B) {
	if !FFmpegAvailable() {
		b.Skip("ffmpeg not on PATH (run `make ffmpeg`)")
	}
	benchRender(b, EncoderFFmpeg)
}

// BenchmarkFrames measures frame rendering alone: 72 frames of 720x720 from one image.
func BenchmarkFrames(b *testing.B) {
	s, err := resolve(Options{PerImage: 3e9}, 1, EncoderFFmpeg)
	if err != nil {
		b.Fatal(err)
	}
	m, err := newMovie(context.Background(), []image.Image{gradientImage(1600, 1200)}, s)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for k := range s.frames {
			if _, err := m.frame(context.Background(), k); err != nil {
				b.Fatal(err)
			}
		}
	}
}
