package testimage

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

func TestSolidIsOneColourOfTheSize(t *testing.T) {
	img := Solid(5, 3, Red)
	if img.Bounds() != image.Rect(0, 0, 5, 3) {
		t.Fatalf("bounds %v, want 5×3", img.Bounds())
	}
	for y := range 3 {
		for x := range 5 {
			if c := img.NRGBAAt(x, y); c != Red {
				t.Fatalf("pixel (%d,%d) is %v, want %v", x, y, c, Red)
			}
		}
	}
}

func TestGradientPixelsDifferAlongBothAxes(t *testing.T) {
	img := Gradient(7, 4)
	for y := range 4 {
		for x := range 7 {
			c := img.NRGBAAt(x, y)
			if c.A != 255 {
				t.Fatalf("pixel (%d,%d) is not opaque: %v", x, y, c)
			}
			if x > 0 && img.NRGBAAt(x-1, y) == c {
				t.Fatalf("pixels (%d,%d) and (%d,%d) are alike", x-1, y, x, y)
			}
			if y > 0 && img.NRGBAAt(x, y-1) == c {
				t.Fatalf("pixels (%d,%d) and (%d,%d) are alike", x, y-1, x, y)
			}
		}
	}
	if one := Gradient(1, 1); one.NRGBAAt(0, 0).A != 255 {
		t.Fatalf("a 1×1 gradient is %v, want opaque", one.NRGBAAt(0, 0))
	}
}

func TestHalvesSplitsAtTheMiddleColumn(t *testing.T) {
	img := Halves(5, 2, Red, Blue)
	for x, want := range []color.NRGBA{Red, Red, Blue, Blue, Blue} {
		for y := range 2 {
			if c := img.NRGBAAt(x, y); c != want {
				t.Errorf("pixel (%d,%d) is %v, want %v", x, y, c, want)
			}
		}
	}
}

func TestProductDrawsItsRectangleOnlyInsideTheImage(t *testing.T) {
	img := Product(4, 4, White, image.Rect(2, 1, 10, 3), Blue)
	for y := range 4 {
		for x := range 4 {
			want := White
			if x >= 2 && y >= 1 && y < 3 {
				want = Blue
			}
			if c := img.NRGBAAt(x, y); c != want {
				t.Errorf("pixel (%d,%d) is %v, want %v", x, y, c, want)
			}
		}
	}
}

func TestEncodingsDecodeToTheImage(t *testing.T) {
	src := Halves(16, 8, Red, Blue)
	for name, tc := range map[string]struct {
		data   []byte
		decode func([]byte) (image.Image, error)
		exact  bool
	}{
		"png":           {PNG(t, src), func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }, true},
		"jpeg":          {JPEG(t, src, 95), func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }, false},
		"default jpeg":  {JPEG(t, src, 0), func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }, false},
		"solid png":     {SolidPNG(t, 16, 8, Red), func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }, false},
		"gradient png":  {GradientPNG(t, 16, 8), func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }, false},
		"gradient jpeg": {GradientJPEG(t, 16, 8), func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }, false},
	} {
		got, err := tc.decode(tc.data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Bounds() != src.Bounds() {
			t.Errorf("%s: decoded %v, want %v", name, got.Bounds(), src.Bounds())
		}
		if tc.exact && color.NRGBAModel.Convert(got.At(0, 0)) != Red {
			t.Errorf("%s: pixel (0,0) is %v, want %v", name, got.At(0, 0), Red)
		}
	}
}
