package render

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"sync"
	"testing"
)

// extractProduct is extractMatte keeping enclosed background-coloured regions, as PhotoShoot mattes.
func extractProduct(src raster) (matteResult, error) { return extractMatte(src, false) }

func TestParseAspectRatio(t *testing.T) {
	tests := []struct {
		in      string
		w, h    int
		wantErr bool
	}{
		{"1:1", 1, 1, false},
		{"4:3", 4, 3, false},
		{"3:4", 3, 4, false},
		{"16:9", 16, 9, false},
		{"9:16", 9, 16, false},
		{"4:5", 4, 5, false},
		{"3:2", 3, 2, false},
		{"2:3", 2, 3, false},
		{" 21 : 9 ", 21, 9, false},
		{"4:1", 4, 1, false},
		{"1:4", 1, 4, false},
		{"", 0, 0, true},
		{"16x9", 0, 0, true},
		{"16:", 0, 0, true},
		{":9", 0, 0, true},
		{"0:1", 0, 0, true},
		{"1:0", 0, 0, true},
		{"-4:3", 0, 0, true},
		{"+4:3", 0, 0, true},
		{"4.5:3", 0, 0, true},
		{"a:b", 0, 0, true},
		{"1:2:3", 0, 0, true},
		{"5:1", 0, 0, true},
		{"1:5", 0, 0, true},
		{"999999:1", 0, 0, true},
	}
	for _, tc := range tests {
		w, h, err := ParseAspectRatio(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseAspectRatio(%q) = %d, %d, want error", tc.in, w, h)
			} else if !errors.Is(err, ErrInvalidAspectRatio) {
				t.Errorf("ParseAspectRatio(%q) error %v does not wrap ErrInvalidAspectRatio", tc.in, err)
			}
			continue
		}
		if err != nil || w != tc.w || h != tc.h {
			t.Errorf("ParseAspectRatio(%q) = %d, %d, %v, want %d, %d", tc.in, w, h, err, tc.w, tc.h)
		}
	}
}

func TestCanvasSize(t *testing.T) {
	tests := []struct {
		aspect string
		long   int
		w, h   int
	}{
		{"1:1", 1024, 1024, 1024},
		{"", 0, 1024, 1024},
		{"4:3", 1024, 1024, 768},
		{"3:4", 1024, 768, 1024},
		{"16:9", 1024, 1024, 576},
		{"9:16", 0, 576, 1024},
		{"4:5", 1024, 820, 1024},
		{"3:2", 1024, 1024, 682},
		{"2:3", 1024, 682, 1024},
		{"16:9", 1001, 1000, 562},
	}
	for _, tc := range tests {
		w, h, err := CanvasSize(tc.aspect, tc.long)
		if err != nil || w != tc.w || h != tc.h {
			t.Errorf("CanvasSize(%q, %d) = %d, %d, %v, want %d, %d", tc.aspect, tc.long, w, h, err, tc.w, tc.h)
		}
		if w%2 != 0 || h%2 != 0 {
			t.Errorf("CanvasSize(%q, %d) = %d×%d, not even", tc.aspect, tc.long, w, h)
		}
	}
	for _, bad := range []struct {
		aspect string
		long   int
	}{{"nope", 1024}, {"1:1", -5}, {"1:1", 8}, {"1:1", 100000}} {
		if _, _, err := CanvasSize(bad.aspect, bad.long); err == nil {
			t.Errorf("CanvasSize(%q, %d) succeeded, want error", bad.aspect, bad.long)
		}
	}
}

// Synthetic packshot geometry (in packshot pixels).
var (
	shotRect = image.Rect(160, 120, 480, 600) // red rounded rectangle
	shotHole = image.Rect(260, 260, 380, 400) // enclosed white window
)

const shotRadius = 60

// makePackshot draws a red rounded rectangle with an enclosed white window
// and a dark stripe on a white background, with a little noise and
// anti-aliased edges, like a real studio packshot.
func makePackshot(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	sx, sy := float64(w)/640, float64(h)/720
	r := shotRect
	hole := shotHole
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			// Work in the 640×720 reference frame.
			fx, fy := (float64(x)+0.5)/sx, (float64(y)+0.5)/sy
			cov := roundedCoverage(fx, fy, r, shotRadius)
			in := fx >= float64(hole.Min.X) && fx < float64(hole.Max.X) && fy >= float64(hole.Min.Y) && fy < float64(hole.Max.Y)
			n := float64((x*7919+y*104729)%7) - 3
			bg := [3]float64{252 + n/2, 252 + n/2, 251 + n/2}
			fg := [3]float64{200 + n, 30 + n, 40 + n}
			if fy > 440 && fy < 470 {
				fg = [3]float64{40 + n, 30 + n, 35 + n}
			}
			if in {
				fg = [3]float64{250 + n/2, 250 + n/2, 250 + n/2}
			}
			var c [3]uint8
			for i := range 3 {
				c[i] = uint8(math.Round(bg[i]*(1-cov) + fg[i]*cov))
			}
			img.SetNRGBA(x, y, color.NRGBA{c[0], c[1], c[2], 255})
		}
	}
	return img
}

// roundedCoverage is ~1 inside a rounded rectangle and ~0 outside, with a
// one-pixel anti-aliased edge.
func roundedCoverage(x, y float64, r image.Rectangle, rad float64) float64 {
	cx, cy := float64(r.Min.X+r.Max.X)/2, float64(r.Min.Y+r.Max.Y)/2
	hw, hh := float64(r.Dx())/2, float64(r.Dy())/2
	qx := math.Abs(x-cx) - (hw - rad)
	qy := math.Abs(y-cy) - (hh - rad)
	sd := math.Hypot(math.Max(qx, 0), math.Max(qy, 0)) + math.Min(math.Max(qx, qy), 0) - rad
	return clamp01(0.5 - sd)
}

// mapToCanvas maps a packshot point to the canvas through the placement.
func mapToCanvas(pl placement, x, y float64) image.Point {
	b, p := pl.bbox, pl.product
	cx := float64(p.Min.X) + (x-float64(b.Min.X))*float64(p.Dx())/float64(b.Dx())
	cy := float64(p.Min.Y) + (y-float64(b.Min.Y))*float64(p.Dy())/float64(b.Dy())
	return image.Pt(int(cx), int(cy))
}

func pix(img *image.NRGBA, p image.Point) [3]int {
	c := img.NRGBAAt(p.X, p.Y)
	return [3]int{int(c.R), int(c.G), int(c.B)}
}

func TestOutputSize(t *testing.T) {
	shot := makePackshot(640, 720)
	for _, ar := range []string{"1:1", "4:3", "3:4", "16:9", "9:16", "4:5", "3:2", "2:3", "4:1", "1:4", ""} {
		for _, long := range []int{0, 512, 333, 16} {
			img, err := PhotoShoot(shot, PhotoShootOptions{AspectRatio: ar, LongEdge: long, Seed: 7, Style: "studio"})
			if err != nil {
				t.Fatalf("PhotoShoot(%q, %d): %v", ar, long, err)
			}
			w, h, _ := CanvasSize(ar, long)
			if img.Bounds() != image.Rect(0, 0, w, h) {
				t.Errorf("PhotoShoot(%q, %d) bounds %v, want %dx%d", ar, long, img.Bounds(), w, h)
			}
		}
	}
	if _, err := PhotoShoot(shot, PhotoShootOptions{AspectRatio: "7:1"}); err == nil {
		t.Error("PhotoShoot with 7:1 succeeded, want error")
	}
	if _, err := PhotoShoot(nil, PhotoShootOptions{}); err == nil {
		t.Error("PhotoShoot(nil) succeeded, want error")
	}
	if _, err := PhotoShoot(image.NewNRGBA(image.Rect(0, 0, 50, 50)), PhotoShootOptions{}); err == nil {
		t.Error("PhotoShoot(fully transparent) succeeded, want error")
	}
}

func TestMatteKeepsEnclosedWhite(t *testing.T) {
	shot := makePackshot(640, 720)
	for _, style := range []string{"dark studio", "warm wood", "pastel", "cool marble", "outdoor beach", "minimal"} {
		img, pl, err := photoShoot(shot, PhotoShootOptions{AspectRatio: "4:5", Seed: 3, Style: style})
		if err != nil {
			t.Fatal(err)
		}
		if !pl.matted {
			t.Fatalf("%s: matte fell back to a card", style)
		}
		// The trimmed box is the rounded rectangle (±2px).
		if d := pl.bbox.Min.Sub(shotRect.Min); abs(d.X) > 2 || abs(d.Y) > 2 {
			t.Errorf("%s: bbox %v, want ≈ %v", style, pl.bbox, shotRect)
		}
		if d := pl.bbox.Max.Sub(shotRect.Max); abs(d.X) > 2 || abs(d.Y) > 2 {
			t.Errorf("%s: bbox %v, want ≈ %v", style, pl.bbox, shotRect)
		}
		hole := mapToCanvas(pl, float64(shotHole.Min.X+shotHole.Max.X)/2, float64(shotHole.Min.Y+shotHole.Max.Y)/2)
		c := pix(img, hole)
		if c[0] < 200 || c[1] < 200 || c[2] < 200 {
			t.Errorf("%s: enclosed white window at %v is %v, want near-white", style, hole, c)
		}
		// Body of the product is still red.
		body := mapToCanvas(pl, 200, 200)
		if c := pix(img, body); c[0] < 140 || c[1] > 90 || c[2] > 100 {
			t.Errorf("%s: product body at %v is %v, want red", style, body, c)
		}
		// The white background outside the product is replaced: in the
		// rounded corner inside the bounding box and at the canvas corner.
		corner := mapToCanvas(pl, float64(shotRect.Min.X)+6, float64(shotRect.Min.Y)+6)
		bgc := pix(img, corner)
		if bgc[0] >= 245 && bgc[1] >= 245 && bgc[2] >= 245 {
			t.Errorf("%s: rounded-corner background at %v is still white %v", style, corner, bgc)
		}
		if bgc[0] > 150 && bgc[1] < 80 {
			t.Errorf("%s: rounded-corner background at %v is product red %v", style, corner, bgc)
		}
		if c := pix(img, image.Pt(0, 0)); c == [3]int{255, 255, 255} {
			t.Errorf("%s: canvas corner is white", style)
		}
		if style == "dark studio" {
			for _, p := range []image.Point{corner, {0, 0}, {img.Rect.Dx() - 1, 0}} {
				if c := pix(img, p); c[0]+c[1]+c[2] > 3*150 {
					t.Errorf("dark studio: background at %v is %v, want dark", p, c)
				}
			}
			// The window differs clearly from the scene right next to the product.
			scene := pix(img, image.Pt(pl.product.Min.X-10, hole.Y))
			if dist(c, scene) < 100 {
				t.Errorf("dark studio: window %v too close to scene colour %v", c, scene)
			}
		}
	}
}

func TestExtractProductDirect(t *testing.T) {
	shot := makePackshot(320, 360)
	mr, err := extractProduct(toRaster(shot, shot.Bounds()))
	if err != nil || !mr.matted {
		t.Fatalf("extractProduct: matted=%v err=%v", mr.matted, err)
	}
	alpha := func(x, y int) uint8 { return mr.layer.pix[y*mr.layer.stride+x*4+3] }
	// Window centre (reference 320,330 → 160,165) relative to the bbox.
	if a := alpha(160-mr.bbox.Min.X, 165-mr.bbox.Min.Y); a != 255 {
		t.Errorf("window alpha = %d, want 255", a)
	}
	if a := alpha(2, 2); a != 0 {
		t.Errorf("rounded corner alpha = %d, want 0", a)
	}
	// Edge feathering: some partially transparent pixels on the left edge.
	partial := 0
	for y := 0; y < mr.layer.h; y++ {
		if a := alpha(0, y); a > 0 && a < 255 {
			partial++
		}
	}
	if partial == 0 {
		t.Error("matte edge is not feathered")
	}
}

func TestJPEGPackshot(t *testing.T) {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, makePackshot(640, 720), &jpeg.Options{Quality: 70}); err != nil {
		t.Fatal(err)
	}
	shot, err := jpeg.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	img, pl, err := photoShoot(shot, PhotoShootOptions{Style: "dark", Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.matted {
		t.Fatal("JPEG packshot fell back to a card")
	}
	if d := pl.bbox.Min.Sub(shotRect.Min); abs(d.X) > 3 || abs(d.Y) > 3 {
		t.Errorf("bbox %v, want ≈ %v", pl.bbox, shotRect)
	}
	hole := mapToCanvas(pl, 320, 330)
	if c := pix(img, hole); c[0] < 200 || c[1] < 200 || c[2] < 200 {
		t.Errorf("window %v, want near-white", c)
	}
	if c := pix(img, mapToCanvas(pl, 166, 126)); c[0]+c[1]+c[2] > 3*150 {
		t.Errorf("rounded corner %v, want dark scene", c)
	}
}

func TestTransparentPackshot(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 300, 300))
	for y := 80; y < 260; y++ {
		for x := 100; x < 200; x++ {
			img.SetNRGBA(x, y, color.NRGBA{20, 90, 200, 255})
		}
	}
	out, pl, err := photoShoot(img, PhotoShootOptions{Style: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.matted || pl.bbox != image.Rect(100, 80, 200, 260) {
		t.Errorf("matted=%v bbox=%v, want matted product box", pl.matted, pl.bbox)
	}
	c := pix(out, mapToCanvas(pl, 150, 170))
	if c[2] < 150 || c[0] > 80 {
		t.Errorf("product centre %v, want blue", c)
	}
}

func TestNoPlainBackgroundFallsBack(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 400, 300))
	for y := 0; y < 300; y++ {
		for x := 0; x < 400; x++ {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / 400), uint8((x ^ y) & 255), uint8(y * 255 / 300), 255})
		}
	}
	out, pl, err := photoShoot(img, PhotoShootOptions{AspectRatio: "16:9", Style: "forest"})
	if err != nil {
		t.Fatal(err)
	}
	if pl.matted {
		t.Error("busy photo was matted, want rounded-card fallback")
	}
	if out.Bounds() != image.Rect(0, 0, 1024, 576) {
		t.Errorf("bounds %v", out.Bounds())
	}
	if n := distinctColours(out); n < 1000 {
		t.Errorf("only %d distinct colours", n)
	}
}

func TestOutputNotUniform(t *testing.T) {
	shot := makePackshot(640, 720)
	for _, style := range []string{"", "minimal", "studio white", "qwerty zxcv"} {
		img, err := PhotoShoot(shot, PhotoShootOptions{Style: style, LongEdge: 512})
		if err != nil {
			t.Fatal(err)
		}
		if n := distinctColours(img); n < 1000 {
			t.Errorf("style %q: only %d distinct colours", style, n)
		}
		for i := 3; i < len(img.Pix); i += 4 {
			if img.Pix[i] != 255 {
				t.Fatalf("style %q: output not opaque", style)
			}
		}
	}
}

func TestDeterminism(t *testing.T) {
	shot := makePackshot(640, 720)
	opts := PhotoShootOptions{AspectRatio: "4:3", Seed: 42, Style: "warm wood", Suggestions: "morning light, kitchen"}
	render := func(o PhotoShootOptions) []byte {
		img, err := PhotoShoot(shot, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := EncodePNG(img)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := render(opts), render(opts)
	if !bytes.Equal(a, b) {
		t.Fatal("same inputs produced different bytes")
	}
	for _, mod := range []func(o *PhotoShootOptions){
		func(o *PhotoShootOptions) { o.Style = "cool marble" },
		func(o *PhotoShootOptions) { o.Style = "warm wood " },
		func(o *PhotoShootOptions) { o.Suggestions = "evening" },
		func(o *PhotoShootOptions) { o.Seed = 43 },
	} {
		o := opts
		mod(&o)
		if bytes.Equal(a, render(o)) {
			t.Errorf("options %+v produced the same bytes as %+v", o, opts)
		}
	}
}

func TestStylesLookDifferent(t *testing.T) {
	shot := makePackshot(320, 360)
	styles := []string{"warm wood", "cool marble", "dark studio", "pastel pink", "outdoor beach", "forest", "industrial concrete", "blorp flimflam", "zyzzyva"}
	imgs := make([]*image.NRGBA, len(styles))
	for i, s := range styles {
		img, err := PhotoShoot(shot, PhotoShootOptions{LongEdge: 256, Seed: 1, Style: s})
		if err != nil {
			t.Fatal(err)
		}
		imgs[i] = img
	}
	for i := range imgs {
		for j := i + 1; j < len(imgs); j++ {
			if d := meanAbsDiff(imgs[i], imgs[j]); d < 8 {
				t.Errorf("%q vs %q: mean difference %.1f, want visibly different", styles[i], styles[j], d)
			}
		}
	}
}

func TestScenery(t *testing.T) {
	scenery := image.NewRGBA(image.Rect(0, 0, 800, 600))
	for y := 0; y < 600; y++ {
		for x := 0; x < 800; x++ {
			scenery.SetRGBA(x, y, color.RGBA{uint8(x * 255 / 800), uint8(y * 255 / 600), 120, 255})
		}
	}
	shot := makePackshot(640, 720)
	opts := PhotoShootOptions{AspectRatio: "1:1", Seed: 5, Scenery: scenery}
	img, pl, err := photoShoot(shot, opts)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds() != image.Rect(0, 0, 1024, 1024) {
		t.Fatalf("bounds %v", img.Bounds())
	}
	// Cover-scale + centre-crop: canvas x∈[0,1024) ↔ scenery x∈[100,700).
	for _, p := range []image.Point{{40, 40}, {980, 60}, {512, 20}} {
		sx := 100 + (float64(p.X)+0.5)*600/1024
		sy := (float64(p.Y) + 0.5) * 600 / 1024
		want := [3]int{int(sx * 255 / 800), int(sy * 255 / 600), 120}
		if got := pix(img, p); dist(got, want) > 20 {
			t.Errorf("scenery pixel at %v = %v, want ≈ %v", p, got, want)
		}
	}
	hole := mapToCanvas(pl, float64(shotHole.Min.X+shotHole.Max.X)/2, float64(shotHole.Min.Y+shotHole.Max.Y)/2)
	if c := pix(img, hole); c[0] < 200 || c[1] < 200 || c[2] < 200 {
		t.Errorf("window over scenery is %v, want near-white", c)
	}
	plain, _ := PhotoShoot(shot, PhotoShootOptions{AspectRatio: "1:1", Seed: 5})
	if meanAbsDiff(img, plain) < 10 {
		t.Error("scenery output looks like the procedural one")
	}
	// A YCbCr scenery (JPEG-like) much larger than the canvas also works.
	big := image.NewYCbCr(image.Rect(0, 0, 3000, 2000), image.YCbCrSubsampleRatio420)
	for i := range big.Y {
		big.Y[i] = uint8(i % 251)
	}
	for i := range big.Cb {
		big.Cb[i], big.Cr[i] = 100, 160
	}
	img2, err := PhotoShoot(shot, PhotoShootOptions{AspectRatio: "9:16", LongEdge: 640, Scenery: big})
	if err != nil {
		t.Fatal(err)
	}
	if img2.Bounds() != image.Rect(0, 0, 360, 640) {
		t.Errorf("bounds %v", img2.Bounds())
	}
}

func TestLargeAndOddInputs(t *testing.T) {
	// A big packshot with an offset origin (sub-image) is handled.
	big := makePackshot(2400, 2700)
	sub := big.SubImage(image.Rect(100, 100, 2300, 2600)).(*image.NRGBA)
	img, pl, err := photoShoot(sub, PhotoShootOptions{AspectRatio: "3:2", LongEdge: 800})
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds() != image.Rect(0, 0, 800, 534) || !pl.matted {
		t.Errorf("bounds %v matted %v", img.Bounds(), pl.matted)
	}
	// Gray and paletted inputs.
	g := image.NewGray(image.Rect(0, 0, 200, 200))
	for i := range g.Pix {
		g.Pix[i] = 255
	}
	for y := 50; y < 150; y++ {
		for x := 70; x < 130; x++ {
			g.Pix[y*g.Stride+x] = 40
		}
	}
	if _, err := PhotoShoot(g, PhotoShootOptions{}); err != nil {
		t.Error(err)
	}
	// A uniform white image has no product: falls back to a card.
	w := image.NewGray(image.Rect(0, 0, 64, 64))
	for i := range w.Pix {
		w.Pix[i] = 255
	}
	_, pl, err = photoShoot(w, PhotoShootOptions{})
	if err != nil || pl.matted {
		t.Errorf("uniform white: matted=%v err=%v", pl.matted, err)
	}
	// Tiny images.
	if _, err := PhotoShoot(image.NewGray(image.Rect(0, 0, 1, 1)), PhotoShootOptions{LongEdge: 64}); err != nil {
		t.Error(err)
	}
}

func TestEncodePNGRoundTrip(t *testing.T) {
	img, err := PhotoShoot(makePackshot(320, 360), PhotoShootOptions{AspectRatio: "16:9", LongEdge: 320, Style: "pastel"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodePNG(img)
	if err != nil {
		t.Fatal(err)
	}
	dec, format, err := image.Decode(bytes.NewReader(data))
	if err != nil || format != "png" {
		t.Fatalf("Decode: %v (format %q)", err, format)
	}
	if dec.Bounds() != img.Bounds() {
		t.Fatalf("decoded bounds %v, want %v", dec.Bounds(), img.Bounds())
	}
	for y := 0; y < 180; y++ {
		for x := 0; x < 320; x++ {
			r1, g1, b1, a1 := img.At(x, y).RGBA()
			r2, g2, b2, a2 := dec.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				t.Fatalf("pixel (%d,%d) differs after round trip", x, y)
			}
		}
	}
	if _, err := EncodePNG(nil); err == nil {
		t.Error("EncodePNG(nil) succeeded")
	}
}

func distinctColours(img *image.NRGBA) int {
	seen := make(map[[3]uint8]struct{})
	for i := 0; i+3 < len(img.Pix); i += 4 {
		seen[[3]uint8{img.Pix[i], img.Pix[i+1], img.Pix[i+2]}] = struct{}{}
	}
	return len(seen)
}

func meanAbsDiff(a, b *image.NRGBA) float64 {
	var s float64
	for i := range a.Pix {
		d := float64(a.Pix[i]) - float64(b.Pix[i])
		s += math.Abs(d)
	}
	return s / float64(len(a.Pix)*3/4)
}

func dist(a, b [3]int) int {
	return max(abs(a[0]-b[0]), abs(a[1]-b[1]), abs(a[2]-b[2]))
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

var benchShot = sync.OnceValue(func() *image.NRGBA { return makePackshot(1024, 1024) })

func BenchmarkPhotoShoot1024(b *testing.B) {
	shot := benchShot()
	opts := PhotoShootOptions{AspectRatio: "1:1", LongEdge: 1024, Seed: 1, Style: "warm wood", Suggestions: "kitchen counter, morning light"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PhotoShoot(shot, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPhotoShoot1024Concurrent8(b *testing.B) {
	shot := benchShot()
	styles := []string{"warm wood", "cool marble", "dark studio", "pastel", "outdoor beach", "forest", "minimal", "industrial"}
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make([]error, len(styles))
		for i, s := range styles {
			wg.Go(func() {
				_, errs[i] = PhotoShoot(shot, PhotoShootOptions{LongEdge: 1024, Seed: int64(i), Style: s})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkEncodePNG1024(b *testing.B) {
	img, err := PhotoShoot(benchShot(), PhotoShootOptions{Seed: 1, Style: "warm wood"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodePNG(img); err != nil {
			b.Fatal(err)
		}
	}
}
