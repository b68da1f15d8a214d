package video

import (
	"fmt"
	"time"
)

// Limits and defaults of Options.
const (
	defaultSide     = 720
	minSide         = 16
	maxSide         = 1920
	defaultFPS      = 24
	maxFPS          = 60
	defaultSingle   = 3 * time.Second
	defaultPerImage = 2 * time.Second
	minTotal        = 2 * time.Second
	maxTotal        = 20 * time.Second
	maxCrossfade    = 400 * time.Millisecond

	// goMaxSide and goMaxFPS cap the pure-Go (I_PCM) encoder, whose output is uncompressed.
	goMaxSide = 480
	goMaxFPS  = 12
)

// settings are Options resolved for one encoder and a number of images.
type settings struct {
	width, height int
	fps           int
	images        int
	frames        int
	perImage      time.Duration // each image's share of the duration
	crossfade     time.Duration // overlap between consecutive images
	seed          int64
}

// duration is the exact length of the video: frames / fps.
func (s settings) duration() time.Duration {
	return time.Duration(s.frames) * time.Second / time.Duration(s.fps)
}

// resolve applies defaults and clamps to opts for n images and the given encoder.
func resolve(opts Options, n int, encoder string) (settings, error) {
	if opts.Width < 0 || opts.Height < 0 || opts.FPS < 0 || opts.PerImage < 0 {
		return settings{}, fmt.Errorf("video: negative option (width %d, height %d, fps %d, per image %v)",
			opts.Width, opts.Height, opts.FPS, opts.PerImage)
	}
	s := settings{images: n, seed: opts.Seed}
	s.width, s.height = resolveSize(opts.Width, opts.Height, encoder)
	s.fps = resolveFPS(opts.FPS, encoder)

	perImage := opts.PerImage
	if perImage == 0 {
		perImage = defaultPerImage
		if n == 1 {
			perImage = defaultSingle
		}
	}
	total := min(max(perImage*time.Duration(n), minTotal), maxTotal)
	s.frames = max(1, int((total*time.Duration(s.fps)+time.Second/2)/time.Second))
	s.perImage = s.duration() / time.Duration(n)
	s.crossfade = min(maxCrossfade, s.perImage/2)
	return s, nil
}

// resolveSize applies the default size, rounds down to even, clamps, and caps the long
// edge for the pure-Go encoder while keeping the aspect ratio.
func resolveSize(w, h int, encoder string) (int, int) {
	if w == 0 {
		w = defaultSide
	}
	if h == 0 {
		h = defaultSide
	}
	w, h = clampSide(w), clampSide(h)
	if long := max(w, h); encoder == EncoderGo && long > goMaxSide {
		w, h = clampSide(w*goMaxSide/long), clampSide(h*goMaxSide/long)
	}
	return w, h
}

// clampSide rounds a side down to even and clamps it to minSide–maxSide.
func clampSide(v int) int {
	return min(max(v&^1, minSide), maxSide)
}

// resolveFPS applies the default frame rate and clamps it, lower for the pure-Go encoder.
func resolveFPS(fps int, encoder string) int {
	if fps == 0 {
		fps = defaultFPS
	}
	limit := maxFPS
	if encoder == EncoderGo {
		limit = goMaxFPS
	}
	return min(max(fps, 1), limit)
}
