// Package imageprep checks and prepares an uploaded source image before generation reads it: the
// bytes must be an image of the declared type within size limits, the EXIF orientation of a JPEG
// is applied to the pixels, an image below the minimum size is upscaled, and a thumbnail is made.
package imageprep

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp" // decodes WebP uploads
)

// Defaults of Options.
const (
	DefaultMinLongEdge = 1024
	DefaultMinEdge     = 32
	DefaultMaxPixels   = 50_000_000
	DefaultThumbEdge   = 320
)

// Options are the limits and sizes of Prepare; zero values mean the defaults.
type Options struct {
	MinLongEdge int // an image whose long edge is shorter is upscaled to it
	MinEdge     int // an image with a shorter edge is refused as too small to use
	MaxPixels   int // an image with more pixels is refused
	ThumbEdge   int // long edge of the thumbnail
}

func (o Options) withDefaults() Options {
	if o.MinLongEdge <= 0 {
		o.MinLongEdge = DefaultMinLongEdge
	}
	if o.MinEdge <= 0 {
		o.MinEdge = DefaultMinEdge
	}
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	if o.ThumbEdge <= 0 {
		o.ThumbEdge = DefaultThumbEdge
	}
	return o
}

// Result is a prepared upload.
type Result struct {
	// Prepared is the image generation should read, as PNG, or nil when the upload needs no change
	// (right way up and large enough): then the original bytes are used as they are.
	Prepared []byte
	// Thumbnail is a JPEG preview at most ThumbEdge pixels on its long edge.
	Thumbnail []byte
	// Width and Height are those of the prepared image (of the original when Prepared is nil).
	Width, Height int
	// Orientation is the EXIF orientation that was applied (1 when none).
	Orientation int
	// Upscaled reports whether the image was enlarged to MinLongEdge.
	Upscaled bool
}

// ErrUnusable is wrapped by every error that means the upload itself cannot be used (as opposed to a
// failure to process it): such an upload is invalid and jobs that need it fail with INPUT_MISSING.
var ErrUnusable = errors.New("unusable image")

func unusable(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnusable}, args...)...)
}

// CheckHead checks the head of a file (its first bytes) against the declared content type and the
// limits of opts, as Prepare does before decoding, and returns the image's dimensions. A failure
// wraps ErrUnusable, and a header that the head ends in the middle of also wraps
// io.ErrUnexpectedEOF: a JPEG's metadata segments (EXIF, XMP, ICC) come before its frame header
// and may fill more than any fixed head, so a caller holding only a head leaves that file to
// Prepare, which has all of it.
func CheckHead(head []byte, declared string, opts Options) (width, height int, err error) {
	opts = opts.withDefaults()
	if sniffed := http.DetectContentType(head); sniffed != declared {
		return 0, 0, unusable("the file is %s, not the declared %s", sniffed, declared)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(head))
	if err != nil {
		return 0, 0, unusable("the file cannot be read as %s: %w", declared, err)
	}
	if cfg.Width < opts.MinEdge || cfg.Height < opts.MinEdge {
		return 0, 0, unusable("the image is %dx%d pixels; both sides must be at least %d", cfg.Width, cfg.Height, opts.MinEdge)
	}
	if cfg.Width*cfg.Height > opts.MaxPixels {
		return 0, 0, unusable("the image is %dx%d pixels, more than %d in all", cfg.Width, cfg.Height, opts.MaxPixels)
	}
	return cfg.Width, cfg.Height, nil
}

// Prepare checks data against the declared content type and prepares it.
func Prepare(data []byte, declared string, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if _, _, err := CheckHead(data, declared, opts); err != nil {
		return Result{}, err
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return Result{}, unusable("the image data is damaged: %v", err)
	}
	res := Result{Orientation: 1}
	if declared == "image/jpeg" {
		res.Orientation = JPEGOrientation(data)
	}
	changed := false
	if res.Orientation != 1 {
		img = Orient(img, res.Orientation)
		changed = true
	}
	b := img.Bounds()
	if long := max(b.Dx(), b.Dy()); long < opts.MinLongEdge {
		img = resize(img, b.Dx()*opts.MinLongEdge/long, b.Dy()*opts.MinLongEdge/long)
		res.Upscaled, changed = true, true
	}
	b = img.Bounds()
	res.Width, res.Height = b.Dx(), b.Dy()
	if changed {
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&buf, img); err != nil {
			return Result{}, fmt.Errorf("encode prepared image: %w", err)
		}
		res.Prepared = buf.Bytes()
	}
	if res.Thumbnail, err = Thumbnail(img, opts.ThumbEdge); err != nil {
		return Result{}, err
	}
	return res, nil
}

// Thumbnail renders img as a JPEG at most edge pixels on its long side, flattened on white.
func Thumbnail(img image.Image, edge int) ([]byte, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if long := max(w, h); long > edge {
		w, h = max(1, w*edge/long), max(1, h*edge/long)
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Over, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 82}); err != nil {
		return nil, fmt.Errorf("encode thumbnail: %w", err)
	}
	return buf.Bytes(), nil
}

func resize(img image.Image, w, h int) image.Image {
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	return dst
}
