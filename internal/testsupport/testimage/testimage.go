// Package testimage paints the small images tests upload, decode and compare (a solid colour, a
// gradient, two halves, a product drawn on a plain background) and encodes them as PNG or JPEG.
package testimage

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

// Colours the painters' callers use most.
var (
	White = color.NRGBA{255, 255, 255, 255}
	Black = color.NRGBA{0, 0, 0, 255}
	Red   = color.NRGBA{200, 30, 40, 255}
	Blue  = color.NRGBA{30, 60, 200, 255}
)

// Solid returns a w×h image of one colour.
func Solid(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

// Gradient returns an opaque w×h image whose red grows from left to right and blue from top to
// bottom, so no two pixels of a row or of a column are alike and a resized, cropped or
// re-encoded copy differs from the original.
func Gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{ramp(x, w), 120, ramp(y, h), 255})
		}
	}
	return img
}

// ramp spreads 0…n-1 over 0…255.
func ramp(i, n int) uint8 {
	if n < 2 {
		return 0
	}
	return uint8(255 * i / (n - 1))
}

// Halves returns a w×h image whose left half (the first w/2 columns) is left and the rest right.
func Halves(w, h int, left, right color.NRGBA) *image.NRGBA {
	return Fill(Solid(w, h, right), image.Rect(0, 0, w/2, h), left)
}

// Fill paints the part of img inside r with c and returns img, so shapes can be drawn one over
// another: Fill(Fill(Solid(300, 400, White), body, Blue), label, White).
func Fill(img *image.NRGBA, r image.Rectangle, c color.NRGBA) *image.NRGBA {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// Product returns a w×h photo of a product: the rectangle product in colour c on a plain
// background bg.
func Product(w, h int, bg color.NRGBA, product image.Rectangle, c color.NRGBA) *image.NRGBA {
	return Fill(Solid(w, h, bg), product, c)
}

// PNG encodes img as PNG and fails the test if it cannot.
func PNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatalf("testimage: encode PNG: %v", err)
	}
	return buf.Bytes()
}

// JPEG encodes img as JPEG at quality (1 to 100; 0 for the encoder's default) and fails the test
// if it cannot.
func JPEG(t testing.TB, img image.Image, quality int) []byte {
	t.Helper()
	var opts *jpeg.Options
	if quality > 0 {
		opts = &jpeg.Options{Quality: quality}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, opts); err != nil {
		t.Fatalf("testimage: encode JPEG: %v", err)
	}
	return buf.Bytes()
}

// SolidPNG is a w×h PNG of one colour.
func SolidPNG(t testing.TB, w, h int, c color.NRGBA) []byte {
	t.Helper()
	return PNG(t, Solid(w, h, c))
}

// GradientPNG is a w×h PNG of Gradient: for tests that need a valid image whose pixels differ.
func GradientPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	return PNG(t, Gradient(w, h))
}

// GradientJPEG is a w×h JPEG of Gradient, at the encoder's default quality.
func GradientJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	return JPEG(t, Gradient(w, h), 0)
}
