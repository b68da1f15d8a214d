package render

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"testing"
)

// Synthetic mug geometry (in photo pixels of a 640×560 photo).
var (
	mugBody   = image.Rect(140, 120, 420, 480) // blue rounded body
	mugHandle = image.Pt(420, 300)             // centre of the handle ring, on the body's right edge
	mugBox    = image.Rect(140, 120, 520, 480) // body and handle
)

const mugRingOuter, mugRingInner = 100.0, 60.0

// makeMug draws a blue mug with a ring handle on a light grey, noisy
// backdrop. The hole of the handle is backdrop enclosed by the ring and the
// body: not connected to the photo's border.
func makeMug() *image.NRGBA {
	const w, h = 640, 560
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)+0.5, float64(y)+0.5
			n := float64(hash32(uint32(x)*0x9e3779b1^uint32(y)*0x85ebca77)%13) - 6
			bg := [3]float64{196 + n, 198 + n, 204 + n}
			shade := 1 - 0.25*math.Abs(fx-280)/140
			fg := [3]float64{40 * shade, 90 * shade, 200 * shade}
			cov := roundedCoverage(fx, fy, mugBody, 30)
			if fx > 412 {
				r := math.Hypot(fx-float64(mugHandle.X), fy-float64(mugHandle.Y))
				cov = math.Max(cov, clamp01(0.5-(r-mugRingOuter))*clamp01(0.5-(mugRingInner-r)))
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

// isMugBlue reports whether a canvas pixel shows the mug's blue.
func isMugBlue(c [3]int) bool { return c[2] > c[0]+70 && c[2] > c[1]+40 }

// luma is the Rec. 709 luma of a pixel.
func luma(c [3]int) float64 {
	return 0.2126*float64(c[0]) + 0.7152*float64(c[1]) + 0.0722*float64(c[2])
}

// colourBox returns the bounding box of the pixels for which in is true.
func colourBox(img *image.NRGBA, in func([3]int) bool) image.Rectangle {
	var box image.Rectangle
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if in(pix(img, image.Pt(x, y))) {
				box = box.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return box
}

// assertWhiteBorder fails unless every pixel of the canvas's outer ring is
// pure white.
func assertWhiteBorder(t *testing.T, img *image.NRGBA) {
	t.Helper()
	W, H := img.Rect.Dx(), img.Rect.Dy()
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			if y > 0 && y < H-1 && x > 0 && x < W-1 {
				x = W - 2
				continue
			}
			if c := pix(img, image.Pt(x, y)); c != [3]int{255, 255, 255} {
				t.Fatalf("border pixel (%d,%d) is %v, want pure white", x, y, c)
			}
		}
	}
}

func TestPackshotCentredOnWhite(t *testing.T) {
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, makeMug(), &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	fromJPEG, err := jpeg.Decode(&jpg)
	if err != nil {
		t.Fatal(err)
	}
	photos := map[string]image.Image{"png": makeMug(), "jpeg": fromJPEG}
	for name, photo := range photos {
		for _, ar := range []string{"1:1", "4:5", "16:9", "9:16", "3:2"} {
			img, pl, err := packshot(photo, PackshotOptions{AspectRatio: ar, LongEdge: 768, Seed: 3})
			if err != nil {
				t.Fatalf("%s %s: %v", name, ar, err)
			}
			W, H, _ := CanvasSize(ar, 768)
			if img.Bounds() != image.Rect(0, 0, W, H) {
				t.Fatalf("%s %s: bounds %v, want %dx%d", name, ar, img.Bounds(), W, H)
			}
			if !pl.matted {
				t.Fatalf("%s %s: fell back to a card", name, ar)
			}
			if d := pl.bbox.Min.Sub(mugBox.Min); abs(d.X) > 2 || abs(d.Y) > 2 {
				t.Errorf("%s %s: matte box %v, want ≈ %v", name, ar, pl.bbox, mugBox)
			}
			if d := pl.bbox.Max.Sub(mugBox.Max); abs(d.X) > 2 || abs(d.Y) > 2 {
				t.Errorf("%s %s: matte box %v, want ≈ %v", name, ar, pl.bbox, mugBox)
			}
			assertWhiteBorder(t, img)

			// The blue product is centred and fills 80% of its limiting dimension.
			box := colourBox(img, isMugBlue)
			if dx, dy := box.Min.X+box.Max.X-W, box.Min.Y+box.Max.Y-H; abs(dx) > 4 || abs(dy) > 4 {
				t.Errorf("%s %s: product box %v not centred in %dx%d", name, ar, box, W, H)
			}
			fill := math.Max(float64(box.Dx())/float64(W), float64(box.Dy())/float64(H))
			if math.Abs(fill-packshotFill) > 0.01 {
				t.Errorf("%s %s: product box %v fills %.3f of the canvas, want %.2f", name, ar, box, fill, packshotFill)
			}
			if c := pix(img, image.Pt(W/2, H/2)); !isMugBlue(c) {
				t.Errorf("%s %s: canvas centre is %v, want the mug's blue", name, ar, c)
			}

			// The handle's hole shows the white ground, not the grey backdrop.
			hole := mapToCanvas(pl, float64(mugHandle.X)+mugRingInner*0.6, float64(mugHandle.Y))
			if c := pix(img, hole); c[0] < 250 || c[1] < 250 || c[2] < 250 {
				t.Errorf("%s %s: handle hole at %v is %v, want white", name, ar, hole, c)
			}

			// A soft shadow just under the product: darker than the ground,
			// lighter than the product, fading out below.
			below := image.Pt(W/2, box.Max.Y+1)
			if c, p := pix(img, below), pix(img, image.Pt(W/2, box.Max.Y-3)); luma(c) >= 245 || luma(c) <= luma(p)+20 {
				t.Errorf("%s %s: just under the product %v is %v (product %v), want a soft shadow", name, ar, below, c, p)
			}
			far := image.Pt(W/2, box.Max.Y+(H-box.Max.Y)*3/4)
			if c := pix(img, far); c != [3]int{255, 255, 255} {
				t.Errorf("%s %s: far under the product %v is %v, want white", name, ar, far, c)
			}
		}
	}
}

func TestPackshotDeterministic(t *testing.T) {
	photo := makeMug()
	render := func(o PackshotOptions) ([]byte, placement) {
		img, pl, err := packshot(photo, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := EncodePNG(img)
		if err != nil {
			t.Fatal(err)
		}
		return b, pl
	}
	opts := PackshotOptions{AspectRatio: "4:5", LongEdge: 512, Seed: 9}
	a, pa := render(opts)
	if b, _ := render(opts); !bytes.Equal(a, b) {
		t.Fatal("same photo and options produced different bytes")
	}
	// The seed varies the shadow only: the product stays where it was.
	opts.Seed = 10
	b, pb := render(opts)
	if bytes.Equal(a, b) {
		t.Error("another seed produced the same bytes")
	}
	if pa.product != pb.product {
		t.Errorf("another seed moved the product: %v vs %v", pa.product, pb.product)
	}
}

func TestPackshotMugPhoto(t *testing.T) {
	data, err := os.ReadFile("../../../docs/examples/mug.png")
	if err != nil {
		t.Fatal(err)
	}
	photo, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	img, pl, err := packshot(photo, PackshotOptions{AspectRatio: "1:1", LongEdge: 600})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.matted || pl.bbox != image.Rect(120, 80, 280, 340) {
		t.Errorf("matted=%v box=%v, want the red body's box", pl.matted, pl.bbox)
	}
	assertWhiteBorder(t, img)
	red := func(c [3]int) bool { return c[0] > 150 && c[1] < 90 && c[2] < 100 }
	box := colourBox(img, red)
	if dx, dy := box.Min.X+box.Max.X-600, box.Min.Y+box.Max.Y-600; abs(dx) > 4 || abs(dy) > 4 {
		t.Errorf("red box %v not centred", box)
	}
	if box.Dy() < 476 || box.Dy() > 484 {
		t.Errorf("red box %v is %d high, want 80%% of 600", box, box.Dy())
	}
	// The off-white oval the body encloses is now the white ground.
	if c := pix(img, mapToCanvas(pl, 200, 150)); c[0] < 250 || c[1] < 250 || c[2] < 250 {
		t.Errorf("enclosed oval is %v, want white", c)
	}
}

func TestPackshotTransparentPhoto(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 300, 400))
	for y := 100; y < 350; y++ {
		for x := 120; x < 200; x++ {
			img.SetNRGBA(x, y, color.NRGBA{20, 150, 60, 255})
		}
	}
	out, pl, err := packshot(img, PackshotOptions{AspectRatio: "3:4", LongEdge: 400})
	if err != nil {
		t.Fatal(err)
	}
	if !pl.matted || pl.bbox != image.Rect(120, 100, 200, 350) {
		t.Errorf("matted=%v box=%v, want the green bar", pl.matted, pl.bbox)
	}
	assertWhiteBorder(t, out)
	green := func(c [3]int) bool { return c[1] > c[0]+60 && c[1] > c[2]+40 }
	if box := colourBox(out, green); box.Dy() != 320 || abs(box.Min.X+box.Max.X-300) > 2 {
		t.Errorf("green box %v, want 320 high and centred in 300×400", box)
	}
}

func TestPackshotBusyPhotoFallsBack(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 400, 300))
	for y := 0; y < 300; y++ {
		for x := 0; x < 400; x++ {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / 400), uint8((x ^ y) & 255), uint8(y * 255 / 300), 255})
		}
	}
	out, pl, err := packshot(img, PackshotOptions{AspectRatio: "1:1", LongEdge: 500})
	if err != nil {
		t.Fatal(err)
	}
	if pl.matted {
		t.Error("busy photo was matted, want the rounded-card fallback")
	}
	assertWhiteBorder(t, out)
	if pl.product != image.Rect(50, 100, 450, 400) {
		t.Errorf("card at %v, want 400×300 centred", pl.product)
	}
	if n := distinctColours(out); n < 1000 {
		t.Errorf("only %d distinct colours: the photo is not on the card", n)
	}
}

func TestPackshotErrors(t *testing.T) {
	if _, err := Packshot(nil, PackshotOptions{}); err == nil {
		t.Error("Packshot(nil) succeeded")
	}
	if _, err := Packshot(image.NewNRGBA(image.Rect(0, 0, 0, 0)), PackshotOptions{}); err == nil {
		t.Error("Packshot(empty) succeeded")
	}
	if _, err := Packshot(image.NewNRGBA(image.Rect(0, 0, 50, 50)), PackshotOptions{}); !errors.Is(err, errInvisible) {
		t.Errorf("Packshot(transparent) = %v, want errInvisible", err)
	}
	if _, err := Packshot(makeMug(), PackshotOptions{AspectRatio: "9:1"}); !errors.Is(err, ErrInvalidAspectRatio) {
		t.Errorf("Packshot(9:1) = %v, want ErrInvalidAspectRatio", err)
	}
}

func TestExtractMatteHoles(t *testing.T) {
	// A dark square on white with a large enclosed white window and a tiny
	// enclosed white dot: clearing holes clears the window, keeps the dot.
	img := image.NewNRGBA(image.Rect(0, 0, 200, 200))
	for y := 0; y < 200; y++ {
		for x := 0; x < 200; x++ {
			c := color.NRGBA{255, 255, 255, 255}
			in := x >= 40 && x < 160 && y >= 40 && y < 160
			window := x >= 70 && x < 130 && y >= 70 && y < 110
			dot := x >= 90 && x < 93 && y >= 130 && y < 133
			if in && !window && !dot {
				c = color.NRGBA{30, 30, 30, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	src := toRaster(img, img.Bounds())
	alpha := func(mr matteResult, x, y int) uint8 {
		return mr.layer.pix[(y-mr.bbox.Min.Y)*mr.layer.stride+(x-mr.bbox.Min.X)*4+3]
	}
	kept, err := extractProduct(src)
	if err != nil {
		t.Fatal(err)
	}
	cleared, err := extractMatte(src, true)
	if err != nil {
		t.Fatal(err)
	}
	if a := alpha(kept, 100, 90); a != 255 {
		t.Errorf("extractProduct: window alpha %d, want 255 (kept)", a)
	}
	if a := alpha(cleared, 100, 90); a != 0 {
		t.Errorf("extractMatte(clearHoles): window alpha %d, want 0", a)
	}
	if a := alpha(cleared, 91, 131); a != 255 {
		t.Errorf("extractMatte(clearHoles): tiny dot alpha %d, want 255 (product detail)", a)
	}
	if a := alpha(cleared, 69, 90); a == 0 || a == 255 {
		t.Errorf("extractMatte(clearHoles): window edge alpha %d, want feathered", a)
	}
}
