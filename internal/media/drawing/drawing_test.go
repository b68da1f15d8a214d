package drawing

import (
	"bytes"
	"image"
	"testing"

	"github.com/shotflow/shotflow/internal/media/render"
)

var (
	ava    = Look{Skin: "#e8c4a8", Hair: "#3b2416", HairStyle: "long", Top: "#1f2f57", Bottom: "#1f2f57", Dress: true, Build: 0.95}
	bottle = Product{Shape: "bottle", Color: "#2f6fb0", Accent: "#f4f4f4"}
)

// meanDiff is the mean absolute channel difference of a and b inside r.
func meanDiff(a, b *image.NRGBA, r image.Rectangle) float64 {
	var sum, n float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			p, q := a.NRGBAAt(x, y), b.NRGBAAt(x, y)
			for _, d := range []int{int(p.R) - int(q.R), int(p.G) - int(q.G), int(p.B) - int(q.B)} {
				sum += float64(max(d, -d))
				n++
			}
		}
	}
	return sum / n
}

// opaque reports whether every pixel of img is opaque.
func opaque(img *image.NRGBA) bool {
	for i := 3; i < len(img.Pix); i += 4 {
		if img.Pix[i] != 255 {
			return false
		}
	}
	return true
}

func TestImagesAreSizedOpaqueAndDeterministic(t *testing.T) {
	cases := []struct {
		name string
		draw func() (*image.NRGBA, error)
		w, h int
	}{
		{"scenery", func() (*image.NRGBA, error) { return Scenery("white marble countertop, bright daylight", 201) }, 1024, 768},
		{"fashion model", func() (*image.NRGBA, error) { return FashionModel(ava, "light grey seamless studio backdrop", 101) }, 512, 640},
		{"preset cover", func() (*image.NRGBA, error) { return PresetImage(bottle, "minimal white studio, bright", 301, "1:1") }, 640, 640},
		{"preset gallery image", func() (*image.NRGBA, error) { return PresetImage(bottle, "warm wood", 302, "4:5") }, 512, 640},
	}
	for _, c := range cases {
		img, err := c.draw()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if img.Bounds() != image.Rect(0, 0, c.w, c.h) {
			t.Errorf("%s is %v, want %dx%d", c.name, img.Bounds(), c.w, c.h)
		}
		if !opaque(img) {
			t.Errorf("%s is not opaque", c.name)
		}
		again, err := c.draw()
		if err != nil || !bytes.Equal(img.Pix, again.Pix) {
			t.Errorf("%s: two drawings differ (err %v)", c.name, err)
		}
	}
	a, _ := Scenery("white marble countertop, bright daylight", 201)
	b, _ := Scenery("dark slate, moody evening light", 202)
	if d := meanDiff(a, b, a.Rect); d < 10 {
		t.Errorf("two sceneries differ by only %.1f per channel", d)
	}
}

// A fashion model is its backdrop with the figure and its shadow drawn in the middle: the figure
// changes the backdrop, the margins around it are the backdrop's pixels.
func TestFashionModelDrawsTheFigureOnItsBackdrop(t *testing.T) {
	img, err := FashionModel(ava, "light grey seamless studio backdrop", 101)
	if err != nil {
		t.Fatal(err)
	}
	bare, err := render.Backdrop(render.PhotoShootOptions{AspectRatio: "4:5", LongEdge: 640, Seed: 101, Style: "light grey seamless studio backdrop"})
	if err != nil {
		t.Fatal(err)
	}
	if d := meanDiff(img, bare, image.Rect(206, 100, 306, 560)); d < 20 {
		t.Errorf("the figure changes its backdrop by only %.1f per channel", d)
	}
	for _, margin := range []image.Rectangle{image.Rect(0, 0, 512, 40), image.Rect(0, 0, 80, 640), image.Rect(432, 0, 512, 640)} {
		if d := meanDiff(img, bare, margin); d != 0 {
			t.Errorf("margin %v differs from the backdrop by %.2f per channel", margin, d)
		}
	}
}

// Every trait of a look and every product shape shows in the pixels.
func TestLooksAndProductsShow(t *testing.T) {
	base, err := FashionModel(ava, "minimal", 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(l *Look){
		"skin":       func(l *Look) { l.Skin = "#5a3a28" },
		"hair":       func(l *Look) { l.Hair = "#e0c060" },
		"hair style": func(l *Look) { l.HairStyle = "bob" },
		"top":        func(l *Look) { l.Top = "#c02030" },
		"trousers":   func(l *Look) { l.Dress = false },
		"build":      func(l *Look) { l.Build = 1.25 },
	} {
		l := ava
		change(&l)
		img, err := FashionModel(l, "minimal", 1)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(img.Pix, base.Pix) {
			t.Errorf("changing the %s draws the same figure", name)
		}
	}

	var shots []*image.NRGBA
	for _, shape := range []string{"bottle", "jar", "mug", "box"} {
		p := bottle
		p.Shape = shape
		img, err := PresetImage(p, "minimal white studio", 1, "1:1")
		if err != nil {
			t.Fatal(err)
		}
		blue := 0
		for i := 0; i < len(img.Pix); i += 4 {
			if r, g, b := int(img.Pix[i]), int(img.Pix[i+1]), int(img.Pix[i+2]); b > r+60 && b > g+20 {
				blue++
			}
		}
		if share := float64(blue) / float64(len(img.Pix)/4); share < 0.03 {
			t.Errorf("%s: %.1f%% of the photo is the product's blue", shape, 100*share)
		}
		for i, other := range shots {
			if bytes.Equal(img.Pix, other.Pix) {
				t.Errorf("%s looks like shape %d", shape, i)
			}
		}
		shots = append(shots, img)
	}
}

func TestBadColoursAreErrors(t *testing.T) {
	for _, c := range []string{"", "#", "blue", "#12345", "#1234567", "#12345g", "123456#"} {
		l := ava
		l.Top = c
		if _, err := FashionModel(l, "minimal", 1); err == nil {
			t.Errorf("look with top %q drawn, want an error", c)
		}
		p := bottle
		p.Accent = c
		if _, err := PresetImage(p, "minimal", 1, "1:1"); err == nil {
			t.Errorf("product with accent %q drawn, want an error", c)
		}
	}
	if _, err := PresetImage(bottle, "minimal", 1, "9:1"); err == nil {
		t.Error("preset image at 9:1 drawn, want an error")
	}
}
