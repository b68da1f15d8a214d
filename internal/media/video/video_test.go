package video

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRenderRejectsInvalidInput(t *testing.T) {
	img := solidImage(32, 32, color.RGBA{100, 100, 100, 255})
	eleven := make([]image.Image, MaxImages+1)
	for i := range eleven {
		eleven[i] = img
	}
	cases := []struct {
		name   string
		images []image.Image
		opts   Options
		want   string
	}{
		{"no images", nil, Options{}, "need 1 to 10 images, got 0"},
		{"too many images", eleven, Options{}, "need 1 to 10 images, got 11"},
		{"nil image", []image.Image{img, nil}, Options{}, "image 1 is nil"},
		{"empty image", []image.Image{image.NewRGBA(image.Rect(0, 0, 0, 5))}, Options{}, "image 0 is empty"},
		{"unknown encoder", []image.Image{img}, Options{Encoder: "vp9"}, `unknown encoder "vp9"`},
		{"negative width", []image.Image{img}, Options{Width: -2, Encoder: EncoderGo}, "negative option"},
		{"negative fps", []image.Image{img}, Options{FPS: -1, Encoder: EncoderGo}, "negative option"},
		{"negative duration", []image.Image{img}, Options{PerImage: -time.Second, Encoder: EncoderGo}, "negative option"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(context.Background(), tc.images, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Render error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestResolveDefaultsAndClamps(t *testing.T) {
	cases := []struct {
		name          string
		opts          Options
		images        int
		encoder       string
		width, height int
		fps, frames   int
		perImage      time.Duration
		crossfade     time.Duration
	}{
		{"single image defaults", Options{}, 1, EncoderFFmpeg, 720, 720, 24, 72, 3 * time.Second, 400 * time.Millisecond},
		{"reel defaults", Options{}, 3, EncoderFFmpeg, 720, 720, 24, 144, 2 * time.Second, 400 * time.Millisecond},
		{"go caps size and fps", Options{}, 1, EncoderGo, 480, 480, 12, 36, 3 * time.Second, 400 * time.Millisecond},
		{"go keeps aspect ratio", Options{Width: 1280, Height: 720}, 1, EncoderGo, 480, 270, 12, 36, 3 * time.Second, 400 * time.Millisecond},
		{"go leaves small sizes", Options{Width: 320, Height: 240, FPS: 10}, 1, EncoderGo, 320, 240, 10, 30, 3 * time.Second, 400 * time.Millisecond},
		{"odd sizes round down", Options{Width: 333, Height: 201}, 1, EncoderFFmpeg, 332, 200, 24, 72, 3 * time.Second, 400 * time.Millisecond},
		{"sizes clamp", Options{Width: 4000, Height: 3}, 1, EncoderFFmpeg, 1920, 16, 24, 72, 3 * time.Second, 400 * time.Millisecond},
		{"fps clamps", Options{FPS: 240}, 1, EncoderFFmpeg, 720, 720, 60, 180, 3 * time.Second, 400 * time.Millisecond},
		{"total at least 2s", Options{PerImage: 500 * time.Millisecond}, 2, EncoderFFmpeg, 720, 720, 24, 48, time.Second, 400 * time.Millisecond},
		{"total at most 20s", Options{}, 10, EncoderFFmpeg, 720, 720, 24, 480, 2 * time.Second, 400 * time.Millisecond},
		{"long reel clamps", Options{PerImage: 5 * time.Second}, 8, EncoderFFmpeg, 720, 720, 24, 480, 2500 * time.Millisecond, 400 * time.Millisecond},
		{"crossfade at most half", Options{PerImage: 300 * time.Millisecond, FPS: 10}, 10, EncoderFFmpeg, 720, 720, 10, 30, 300 * time.Millisecond, 150 * time.Millisecond},
		{"frames round to nearest", Options{PerImage: 2100 * time.Millisecond, FPS: 1}, 1, EncoderFFmpeg, 720, 720, 1, 2, 2 * time.Second, 400 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := resolve(tc.opts, tc.images, tc.encoder)
			if err != nil {
				t.Fatal(err)
			}
			if s.width != tc.width || s.height != tc.height || s.fps != tc.fps || s.frames != tc.frames {
				t.Errorf("got %dx%d at %d fps, %d frames; want %dx%d at %d fps, %d frames",
					s.width, s.height, s.fps, s.frames, tc.width, tc.height, tc.fps, tc.frames)
			}
			if s.perImage != tc.perImage || s.crossfade != tc.crossfade {
				t.Errorf("per image %v, crossfade %v; want %v, %v", s.perImage, s.crossfade, tc.perImage, tc.crossfade)
			}
		})
	}
}

func TestRenderGoResult(t *testing.T) {
	res, err := Render(context.Background(), []image.Image{gradientImage(300, 200)}, Options{Width: 1000, Height: 500, Encoder: EncoderGo})
	if err != nil {
		t.Fatal(err)
	}
	want := Result{ContentType: "video/mp4", Ext: ".mp4", Width: 480, Height: 240, Frames: 36, Duration: 3 * time.Second, Encoder: EncoderGo}
	got := res
	got.Data = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Result = %+v, want %+v", got, want)
	}
	if len(res.Data) < 36*480*240*3/2 {
		t.Fatalf("I_PCM video of %d bytes is smaller than its samples", len(res.Data))
	}
}

func TestRenderAutoPicksFFmpegWhenAvailable(t *testing.T) {
	res, err := Render(context.Background(), []image.Image{solidImage(40, 40, color.RGBA{10, 20, 30, 255})}, Options{Width: 64, Height: 64, PerImage: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := EncoderGo
	if FFmpegAvailable() {
		want = EncoderFFmpeg
	}
	if res.Encoder != want {
		t.Fatalf("auto encoder = %q, want %q (FFmpegAvailable %v)", res.Encoder, want, FFmpegAvailable())
	}
}

func TestRenderGoIsDeterministic(t *testing.T) {
	images := []image.Image{gradientImage(320, 240), quadrantImage(200, 300)}
	render := func(seed int64) []byte {
		t.Helper()
		res, err := Render(context.Background(), images, Options{Width: 160, Height: 120, Seed: seed, Encoder: EncoderGo})
		if err != nil {
			t.Fatal(err)
		}
		return res.Data
	}
	a, b := render(7), render(7)
	if !bytes.Equal(a, b) {
		t.Fatal("two renders with the same seed differ")
	}
	if bytes.Equal(a, render(8)) {
		t.Fatal("renders with seeds 7 and 8 are identical; the seed should change the motion")
	}
}

func TestRenderCancelled(t *testing.T) {
	// Small images are prepared at once, so the cancel lands among the frames.
	images := make([]image.Image, MaxImages)
	for i := range images {
		images[i] = gradientImage(400, 400)
	}
	for _, encoder := range []string{EncoderGo, EncoderFFmpeg} {
		t.Run(encoder, func(t *testing.T) {
			if encoder == EncoderFFmpeg {
				requireFFmpeg(t)
			}
			t.Run("before start", func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_, err := Render(ctx, images[:1], Options{Encoder: encoder})
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Render error = %v, want context.Canceled", err)
				}
			})
			t.Run("while rendering", func(t *testing.T) {
				// A 20 s reel of 1920x1920 frames (480x480 for the pure-Go encoder) takes
				// seconds; cancel it once under way.
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cancelledAt := make(chan time.Time, 1)
				time.AfterFunc(100*time.Millisecond, func() {
					cancelledAt <- time.Now()
					cancel()
				})
				_, err := Render(ctx, images, Options{Width: 1920, Height: 1920, Encoder: encoder})
				returned := time.Now()
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Render error = %v, want context.Canceled", err)
				}
				lag := returned.Sub(<-cancelledAt)
				if lag > 2*time.Second {
					t.Fatalf("Render returned %v after the cancel", lag)
				}
				t.Logf("returned %v after the cancel: %v", lag, err)
			})
		})
	}
}

// cancelAfter is a context whose Err reports context.Canceled from its n+1st call on, so
// that a test can end a render at an exact point.
type cancelAfter struct {
	context.Context
	calls, n int
}

func (c *cancelAfter) Err() error {
	c.calls++
	if c.calls > c.n {
		return context.Canceled
	}
	return nil
}

func TestEncodersStopBetweenFrames(t *testing.T) {
	for _, encoder := range []string{EncoderGo, EncoderFFmpeg} {
		t.Run(encoder, func(t *testing.T) {
			if encoder == EncoderFFmpeg {
				requireFFmpeg(t)
			}
			// One check while preparing the image, then one per frame: frame 5 is refused.
			ctx := &cancelAfter{Context: context.Background(), n: 1 + 5}
			_, err := Render(ctx, []image.Image{gradientImage(100, 100)}, Options{Width: 64, Height: 64, Encoder: encoder})
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "rendering frame 5 of") {
				t.Fatalf("Render error = %v, want context.Canceled at frame 5", err)
			}
		})
	}
}

func TestRenderDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	time.Sleep(5 * time.Millisecond)
	_, err := Render(ctx, []image.Image{gradientImage(64, 64)}, Options{Encoder: EncoderGo})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Render error = %v, want context.DeadlineExceeded", err)
	}
}

func TestMotionStaysInsideImage(t *testing.T) {
	const eps = 1e-9
	seen := map[motion]bool{}
	for seed := range int64(50) {
		for i := range MaxImages {
			m := motionFor(seed, i)
			seen[m] = true
			for step := range 11 {
				v := m.at(float64(step) / 10)
				if v.x < -eps || v.y < -eps || v.x+v.w > 1+eps || v.y+v.h > 1+eps || v.w < 1/zoomMax-eps || v.h < 1/zoomMax-eps {
					t.Fatalf("seed %d image %d: view %+v at step %d leaves the image or zooms past %v", seed, i, v, step, zoomMax)
				}
			}
			if m != motionFor(seed, i) {
				t.Fatalf("motionFor(%d, %d) is not deterministic", seed, i)
			}
		}
	}
	if len(seen) != 2*len(panDirections) {
		t.Fatalf("saw %d distinct moves, want all %d (8 directions, zoom in or out)", len(seen), 2*len(panDirections))
	}
}

func TestTimelineCrossfades(t *testing.T) {
	s, err := resolve(Options{FPS: 10, PerImage: 2 * time.Second}, 3, EncoderFFmpeg)
	if err != nil {
		t.Fatal(err)
	}
	tl := newTimeline(s)
	var buf []layer
	for k := range s.frames {
		at := (float64(k) + 0.5) / 10
		ls := tl.layers(k, buf)
		total := uint32(0)
		for _, l := range ls {
			total += l.weight
		}
		if total != 256 {
			t.Fatalf("frame %d: weights sum to %d, want 256", k, total)
		}
		nearBoundary := false
		for _, b := range []float64{2, 4} {
			nearBoundary = nearBoundary || (at > b-0.2 && at < b+0.2)
		}
		if fading := len(ls) == 2; fading != nearBoundary {
			t.Fatalf("frame %d at %.2fs: %d layers, want a crossfade only within 0.2s of 2s and 4s", k, at, len(ls))
		}
		if want := min(int(at/2), 2); len(ls) == 1 && ls[0].src != want {
			t.Fatalf("frame %d at %.2fs shows image %d, want %d", k, at, ls[0].src, want)
		}
	}
}

func TestPrepareSourceCoverFits(t *testing.T) {
	cases := []struct {
		name         string
		src          image.Rectangle
		w, h         int
		wantW, wantH int
	}{
		{"wide source into square, scaled down", image.Rect(0, 0, 2000, 1000), 400, 400, 460, 460},
		{"tall source into wide frame", image.Rect(0, 0, 1000, 3000), 400, 200, 460, 230},
		{"small source is not scaled up", image.Rect(10, 10, 110, 60), 400, 400, 50, 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := image.NewRGBA(tc.src)
			got := prepareSource(img, tc.w, tc.h).Bounds()
			if got.Dx() != tc.wantW || got.Dy() != tc.wantH {
				t.Fatalf("prepared size %dx%d, want %dx%d", got.Dx(), got.Dy(), tc.wantW, tc.wantH)
			}
		})
	}
}

func TestPrepareSourceCompositesOnWhite(t *testing.T) {
	transparent := image.NewNRGBA(image.Rect(0, 0, 50, 50))
	src := prepareSource(transparent, 50, 50)
	if c := src.RGBAAt(25, 25); c != (color.RGBA{255, 255, 255, 255}) {
		t.Fatalf("transparent pixel became %v, want opaque white", c)
	}
}

func TestColourConversion(t *testing.T) {
	cases := []struct {
		rgb       [3]byte
		y, cb, cr uint8
	}{
		{[3]byte{0, 0, 0}, 16, 128, 128},
		{[3]byte{255, 255, 255}, 235, 128, 128},
		{[3]byte{255, 0, 0}, 63, 102, 240},
		{[3]byte{0, 0, 255}, 32, 240, 118},
	}
	for _, tc := range cases {
		rgb := bytes.Repeat(tc.rgb[:], 2)
		y := make([]byte, 2)
		cb, cr := make([]byte, 1), make([]byte, 1)
		lumaRow(y, rgb)
		chromaRow(cb, cr, rgb, rgb)
		if y[0] != tc.y || cb[0] != tc.cb || cr[0] != tc.cr {
			t.Errorf("RGB %v -> Y'CbCr %d %d %d, want %d %d %d", tc.rgb, y[0], cb[0], cr[0], tc.y, tc.cb, tc.cr)
		}
	}
}

// fakeFFmpeg makes Render use a shell script that prints an error and fails in place of
// ffmpeg, for the rest of the test.
func fakeFFmpeg(t *testing.T) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "ffmpeg")
	body := "#!/bin/sh\ncat >/dev/null\necho \"Unknown encoder 'libx264'\" >&2\nexit 1\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := ffmpegPath
	ffmpegPath = func() (string, error) { return script, nil }
	t.Cleanup(func() { ffmpegPath = saved })
}

func TestFFmpegFailureReportsStderr(t *testing.T) {
	fakeFFmpeg(t)
	_, err := Render(context.Background(), []image.Image{gradientImage(64, 64)}, Options{Width: 32, Height: 32, Encoder: EncoderFFmpeg})
	if err == nil || !strings.Contains(err.Error(), "ffmpeg failed") || !strings.Contains(err.Error(), "Unknown encoder 'libx264'") {
		t.Fatalf("Render error = %v, want ffmpeg's own message", err)
	}
}

func TestAutoFallsBackToGoWhenFFmpegFails(t *testing.T) {
	fakeFFmpeg(t)
	res, err := Render(context.Background(), []image.Image{gradientImage(64, 64)}, Options{Width: 32, Height: 32})
	if err != nil {
		t.Fatal(err)
	}
	if res.Encoder != EncoderGo || len(res.Data) == 0 {
		t.Fatalf("auto render used %q (%d bytes), want the pure-Go fallback", res.Encoder, len(res.Data))
	}
}
