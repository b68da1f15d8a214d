package render

import (
	"image"
	"image/color"
	"testing"
)

func TestWatermarkDrawsTheWordOverABand(t *testing.T) {
	t.Parallel()
	grey := color.NRGBA{R: 40, G: 40, B: 40, A: 255}
	for _, size := range []image.Point{{400, 300}, {300, 900}, {1024, 1024}} {
		img := image.NewNRGBA(image.Rect(0, 0, size.X, size.Y))
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = grey.R, grey.G, grey.B, grey.A
		}
		DrawWatermark(img)
		l := Watermark(size.X, size.Y)
		// Every lit cell of the glyphs of the word is drawn.
		want := 0
		for _, r := range WatermarkText {
			for _, row := range glyphs[r] {
				for _, c := range row {
					if c == '#' {
						want++
					}
				}
			}
		}
		if len(l.Letters) != want {
			t.Fatalf("%v: %d letter cells, want %d", size, len(l.Letters), want)
		}
		if w := l.Band.Dx(); w < size.X/3 || w > size.X {
			t.Errorf("%v: the band is %d pixels wide", size, w)
		}
		for _, r := range l.Letters {
			if !r.In(l.Band) {
				t.Fatalf("%v: letter cell %v outside the band %v", size, r, l.Band)
			}
			c := r.Min.Add(r.Max).Div(2)
			if got := img.NRGBAAt(c.X, c.Y); got != WatermarkColor {
				t.Fatalf("%v: letter pixel %v is %v, want %v", size, c, got, WatermarkColor)
			}
		}
		// The band lightens what is behind it; outside it nothing changes.
		inBand := image.Pt(l.Band.Min.X+1, l.Band.Min.Y+1)
		if got := img.NRGBAAt(inBand.X, inBand.Y); got.R <= grey.R+80 || got.R != got.G {
			t.Errorf("%v: band pixel %v is %v, not a lightened grey", size, inBand, got)
		}
		if got := img.NRGBAAt(0, 0); got != grey {
			t.Errorf("%v: corner pixel is %v, want it untouched", size, got)
		}
	}
}

func TestWatermarkSkipsATinyPicture(t *testing.T) {
	t.Parallel()
	img := image.NewNRGBA(image.Rect(0, 0, 20, 20))
	DrawWatermark(img)
	for _, v := range img.Pix {
		if v != 0 {
			t.Fatal("a 20-pixel picture was drawn on")
		}
	}
	if l := Watermark(20, 20); len(l.Letters) != 0 || !l.Band.Empty() {
		t.Fatalf("layout of a 20-pixel picture: %+v", l)
	}
}
