package render

import (
	"image"
	"image/color"
	"testing"
)

// boxOnWhite is a w×h box of colour c centred on a white 400×400 photo.
func boxOnWhite(c color.NRGBA, w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, 400, 400))
	for y := range 400 {
		for x := range 400 {
			p := color.NRGBA{255, 255, 255, 255}
			if x >= 200-w/2 && x < 200+w/2 && y >= 200-h/2 && y < 200+h/2 {
				p = c
			}
			img.SetNRGBA(x, y, p)
		}
	}
	return img
}

// A packshot's own contact shadow is background when the packshot is matted again (for a photo
// shoot): the product layer ends at the product's foot, not at the shadow's.
func TestMatteLeavesAPackshotsShadowBehind(t *testing.T) {
	for name, c := range map[string]color.NRGBA{"red": {200, 30, 40, 255}, "grey": {120, 120, 124, 255}} {
		ps, err := Packshot(boxOnWhite(c, 120, 200), PackshotOptions{AspectRatio: "1:1", LongEdge: 512, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		// The shadow is there: the pixel just under the product's foot is darker than white.
		foot := productBounds(t, ps, c)
		if r, _, _, _ := ps.At(foot.Min.X+foot.Dx()/2, foot.Max.Y+1).RGBA(); r>>8 > 245 {
			t.Fatalf("%s: the packshot has no contact shadow", name)
		}
		mr, err := extractProduct(toRaster(ps, ps.Bounds()))
		if err != nil || !mr.matted {
			t.Fatalf("%s: matte = %v, matted %v", name, err, mr.matted)
		}
		if got := mr.bbox; absInt(got.Max.Y-foot.Max.Y) > 4 || absInt(got.Min.Y-foot.Min.Y) > 4 || absInt(got.Dx()-foot.Dx()) > 8 {
			t.Fatalf("%s: matte %v, product %v: the shadow was kept or the product cut", name, got, foot)
		}
	}
}

// A light grey product with sharp edges on white is not mistaken for a shadow.
func TestMatteKeepsALightGreyProduct(t *testing.T) {
	mr, err := extractProduct(toRaster(boxOnWhite(color.NRGBA{200, 200, 200, 255}, 100, 160), image.Rect(0, 0, 400, 400)))
	if err != nil || !mr.matted {
		t.Fatalf("matte = %v, matted %v", err, mr.matted)
	}
	if mr.bbox != image.Rect(150, 120, 250, 280) {
		t.Fatalf("matte %v, want the whole box", mr.bbox)
	}
}

// productBounds finds the pixels close to colour c.
func productBounds(t *testing.T, img *image.NRGBA, c color.NRGBA) image.Rectangle {
	t.Helper()
	var r image.Rectangle
	for y := range img.Rect.Dy() {
		for x := range img.Rect.Dx() {
			p := img.NRGBAAt(x, y)
			if absInt(int(p.R)-int(c.R)) < 20 && absInt(int(p.G)-int(c.G)) < 20 && absInt(int(p.B)-int(c.B)) < 20 {
				r = r.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	if r.Empty() {
		t.Fatal("no product pixels")
	}
	return r
}
