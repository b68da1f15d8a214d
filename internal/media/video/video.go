// Package video turns 1–10 still images into a short, playable MP4 (H.264) video: a Ken Burns
// pan-and-zoom over each image, with a short crossfade between consecutive images of a reel.
//
// Frames are rendered in pure Go (cover-fit, bilinear sampling, BT.709 limited-range 4:2:0)
// and then encoded by one of two encoders:
//
//   - "ffmpeg": the frames are piped as raw yuv420p into ffmpeg (libx264, preset veryfast,
//     CRF 23, +faststart). Small files, any size up to 1920 pixels, up to 60 fps. Used
//     whenever ffmpeg is on PATH (`make ffmpeg` installs it; the Docker image ships it).
//   - "go": a pure-Go fallback with no cgo and no external programs. It writes a Constrained
//     Baseline H.264 stream (level 4.1) in which every picture is an IDR picture made only of
//     I_PCM macroblocks, that is uncompressed samples, inside an MP4 with the moov box first.
//     Such a file plays everywhere but is large (width*height*1.5 bytes per frame), so this
//     encoder caps its own output: the long edge is scaled down to at most 480 pixels and the
//     frame rate to at most 12 fps (a 3 s 480x480 video is about 12 MB, a 20 s reel about
//     83 MB). Result reports the size and frame rate actually used.
//
// With Options.Encoder "" Render uses ffmpeg when it is found on PATH and falls back to the
// pure-Go encoder when it is not, or when ffmpeg fails.
package video

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"os/exec"
	"sync"
	"time"
)

// Encoder names accepted in Options.Encoder and reported in Result.Encoder.
const (
	EncoderAuto   = ""
	EncoderFFmpeg = "ffmpeg"
	EncoderGo     = "go"
)

// MaxImages is the largest number of images one video (a reel) may show.
const MaxImages = 10

// Options of one render. Zero values mean defaults.
type Options struct {
	// Width and Height are the output size in pixels, rounded down to even and clamped to
	// 16–1920; the default is 720x720. The pure-Go encoder scales the size down so that the
	// long edge is at most 480 pixels.
	Width, Height int
	// FPS is the frame rate, clamped to 1–60; the default is 24. The pure-Go encoder uses
	// at most 12.
	FPS int
	// PerImage is how long each image is on screen; the default is 3s for one image and 2s
	// each for reels. The total (PerImage times the number of images) is clamped to 2–20 s.
	PerImage time.Duration
	// Seed chooses the pan direction and whether to zoom in or out, per image,
	// deterministically.
	Seed int64
	// Encoder is "" (auto: ffmpeg when found on PATH, else pure Go), "ffmpeg" or "go".
	Encoder string
	// Stamp, when set, is painted on every frame: given the size actually encoded, it returns
	// the rectangles to fill and their colour (test mode's "TEST" watermark).
	Stamp func(width, height int) ([]image.Rectangle, color.NRGBA)
}

// Result is one rendered video.
type Result struct {
	Data          []byte        // the MP4 file
	ContentType   string        // "video/mp4"
	Ext           string        // ".mp4"
	Width, Height int           // size actually encoded
	Frames        int           // number of frames
	Duration      time.Duration // Frames divided by the frame rate
	Encoder       string        // "ffmpeg" or "go"
}

// ErrFFmpegMissing is returned when Options.Encoder is "ffmpeg" but ffmpeg is not on PATH.
var ErrFFmpegMissing = errors.New("video: ffmpeg not found on PATH (run `make ffmpeg`)")

var ffmpegPath = sync.OnceValues(func() (string, error) { return exec.LookPath("ffmpeg") })

// FFmpegAvailable reports whether ffmpeg is on PATH. The answer is looked up once and cached.
func FFmpegAvailable() bool {
	_, err := ffmpegPath()
	return err == nil
}

// Render renders images (1 to MaxImages, in order) into an MP4 video. Result reports the
// encoder, size and frame count actually used (see the package doc for the pure-Go caps).
// With Options.Encoder "" a failing ffmpeg is retried with the pure-Go encoder. Render
// returns an error wrapping ctx.Err() when ctx ends before the video is done.
func Render(ctx context.Context, images []image.Image, opts Options) (Result, error) {
	if err := checkImages(images); err != nil {
		return Result{}, err
	}
	encoder, err := chooseEncoder(opts.Encoder)
	if err != nil {
		return Result{}, err
	}
	res, err := renderWith(ctx, images, opts, encoder)
	if err != nil && opts.Encoder == EncoderAuto && encoder == EncoderFFmpeg && ctx.Err() == nil {
		res, err = renderWith(ctx, images, opts, EncoderGo)
	}
	return res, err
}

// checkImages validates the number of images and that each one has pixels.
func checkImages(images []image.Image) error {
	if len(images) == 0 || len(images) > MaxImages {
		return fmt.Errorf("video: need 1 to %d images, got %d", MaxImages, len(images))
	}
	for i, img := range images {
		if img == nil {
			return fmt.Errorf("video: image %d is nil", i)
		}
		if img.Bounds().Empty() {
			return fmt.Errorf("video: image %d is empty (%v)", i, img.Bounds())
		}
	}
	return nil
}

// chooseEncoder resolves Options.Encoder to "ffmpeg" or "go".
func chooseEncoder(name string) (string, error) {
	switch name {
	case EncoderAuto:
		if FFmpegAvailable() {
			return EncoderFFmpeg, nil
		}
		return EncoderGo, nil
	case EncoderFFmpeg:
		if !FFmpegAvailable() {
			return "", ErrFFmpegMissing
		}
		return EncoderFFmpeg, nil
	case EncoderGo:
		return EncoderGo, nil
	default:
		return "", fmt.Errorf("video: unknown encoder %q (want %q, %q or %q)", name, EncoderAuto, EncoderFFmpeg, EncoderGo)
	}
}

// renderWith renders and encodes the video with one encoder.
func renderWith(ctx context.Context, images []image.Image, opts Options, encoder string) (Result, error) {
	s, err := resolve(opts, len(images), encoder)
	if err != nil {
		return Result{}, err
	}
	m, err := newMovie(ctx, images, s)
	if err != nil {
		return Result{}, err
	}
	m.stamp = newStamp(opts.Stamp, s.width, s.height)
	var data []byte
	if encoder == EncoderFFmpeg {
		data, err = encodeFFmpeg(ctx, m)
	} else {
		data, err = encodeGo(ctx, m)
	}
	if err != nil {
		return Result{}, err
	}
	return Result{
		Data:        data,
		ContentType: "video/mp4",
		Ext:         ".mp4",
		Width:       s.width,
		Height:      s.height,
		Frames:      s.frames,
		Duration:    s.duration(),
		Encoder:     encoder,
	}, nil
}
