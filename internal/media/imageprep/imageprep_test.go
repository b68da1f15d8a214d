package imageprep

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"testing"

	"github.com/shotflow/shotflow/internal/testsupport/testimage"
)

// halves returns a w×h image whose left half is red and right half blue.
func halves(w, h int) *image.NRGBA {
	return testimage.Halves(w, h, color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 0, 255, 255})
}

// jpegWithOrientation encodes img as a JPEG carrying an APP1 Exif segment with the orientation tag,
// in the given TIFF byte order.
func jpegWithOrientation(t *testing.T, img image.Image, orientation uint16, bo binary.ByteOrder) []byte {
	t.Helper()
	raw := testimage.JPEG(t, img, 95)
	tiff := make([]byte, 8+2+12+4)
	if bo == binary.LittleEndian {
		copy(tiff, "II*\x00")
	} else {
		copy(tiff, "MM\x00*")
	}
	bo.PutUint32(tiff[4:], 8)
	bo.PutUint16(tiff[8:], 1)
	bo.PutUint16(tiff[10:], exifOrientationTag)
	bo.PutUint16(tiff[12:], 3) // SHORT
	bo.PutUint32(tiff[14:], 1)
	bo.PutUint16(tiff[18:], orientation)
	payload := append([]byte("Exif\x00\x00"), tiff...)
	seg := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	seg = append(seg, payload...)
	out := append([]byte{}, raw[:2]...)
	out = append(out, seg...)
	return append(out, raw[2:]...)
}

func decode(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func isRed(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r > 0xC000 && g < 0x4000 && b < 0x4000
}

func TestOrientationIsAppliedToThePixels(t *testing.T) {
	src := halves(1200, 600) // red on the left
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		data := jpegWithOrientation(t, src, 6, bo)
		if got := JPEGOrientation(data); got != 6 {
			t.Fatalf("%v: JPEGOrientation = %d, want 6", bo, got)
		}
		res, err := Prepare(data, "image/jpeg", Options{MinLongEdge: 64})
		if err != nil {
			t.Fatal(err)
		}
		if res.Orientation != 6 || res.Width != 600 || res.Height != 1200 || res.Prepared == nil {
			t.Fatalf("%v: orientation %d, %dx%d, prepared %v; want 6, 600x1200, a prepared copy", bo, res.Orientation, res.Width, res.Height, res.Prepared != nil)
		}
		img := decode(t, res.Prepared)
		// Rotated 90° clockwise, the left (red) half of the stored image is the top half.
		if !isRed(img.At(300, 100)) || isRed(img.At(300, 1100)) {
			t.Fatalf("%v: the top of the upright image is not the red half", bo)
		}
	}
}

func TestOrientEveryValue(t *testing.T) {
	// A 3×2 image with distinct pixels; each orientation must map the stored corners to the
	// EXIF-defined places of the upright image.
	src := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	for i := range src.Pix {
		src.Pix[i] = uint8(i)
	}
	px := func(img image.Image, x, y int) color.NRGBA { return img.(*image.NRGBA).NRGBAAt(x, y) }
	tl := src.NRGBAAt(0, 0) // stored top-left
	want := map[int][2]int{ // where the stored top-left lands in the upright image
		1: {0, 0}, 2: {2, 0}, 3: {2, 1}, 4: {0, 1}, 5: {0, 0}, 6: {1, 0}, 7: {1, 2}, 8: {0, 2},
	}
	for o, at := range want {
		out := Orient(src, o)
		if got := px(out, at[0], at[1]); got != tl {
			t.Errorf("orientation %d: stored top-left not at %v", o, at)
		}
		b := out.Bounds()
		if (o >= 5) != (b.Dx() == 2 && b.Dy() == 3) {
			t.Errorf("orientation %d: size %v", o, b.Size())
		}
	}
}

func TestSmallImagesAreUpscaledAndThumbnailed(t *testing.T) {
	res, err := Prepare(testimage.PNG(t, halves(400, 200)), "image/png", Options{MinLongEdge: 1000, ThumbEdge: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Upscaled || res.Width != 1000 || res.Height != 500 {
		t.Fatalf("upscaled %v to %dx%d, want 1000x500", res.Upscaled, res.Width, res.Height)
	}
	if b := decode(t, res.Prepared).Bounds(); b.Dx() != 1000 || b.Dy() != 500 {
		t.Fatalf("prepared file is %v", b)
	}
	thumb := decode(t, res.Thumbnail)
	if b := thumb.Bounds(); b.Dx() != 100 || b.Dy() != 50 {
		t.Fatalf("thumbnail is %v, want 100x50", b)
	}
	if !isRed(thumb.At(10, 25)) || isRed(thumb.At(90, 25)) {
		t.Fatal("thumbnail does not show the image")
	}
}

func TestLargeUprightImagesAreKeptAsTheyAre(t *testing.T) {
	res, err := Prepare(testimage.PNG(t, halves(1200, 900)), "image/png", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Prepared != nil || res.Upscaled || res.Width != 1200 || res.Height != 900 || len(res.Thumbnail) == 0 {
		t.Fatalf("got %+v", res)
	}
}

func TestUnusableUploads(t *testing.T) {
	good := testimage.PNG(t, halves(100, 100))
	truncated := append([]byte{}, good[:60]...)
	cases := map[string]struct {
		data     []byte
		declared string
	}{
		"not an image":      {[]byte("hello, this is text and not a picture at all"), "image/png"},
		"wrong type":        {good, "image/jpeg"},
		"truncated":         {truncated, "image/png"},
		"too small":         {testimage.PNG(t, halves(20, 10)), "image/png"},
		"too many pixels":   {testimage.PNG(t, halves(300, 300)), "image/png"},
		"damaged jpeg body": {append(jpegWithOrientation(t, halves(64, 64), 1, binary.BigEndian)[:400], 0xFF, 0xD9), "image/jpeg"},
	}
	for name, c := range cases {
		opts := Options{}
		if name == "too many pixels" {
			opts.MaxPixels = 300*300 - 1
		}
		_, err := Prepare(c.data, c.declared, opts)
		if !errors.Is(err, ErrUnusable) {
			t.Errorf("%s: err = %v, want ErrUnusable", name, err)
		}
	}
}

func TestJPEGOrientationWithoutExif(t *testing.T) {
	for _, data := range [][]byte{testimage.JPEG(t, halves(10, 10), 0), nil, []byte("nope"), {0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF}} {
		if got := JPEGOrientation(data); got != 1 {
			t.Errorf("JPEGOrientation = %d, want 1", got)
		}
	}
}
