package video

import (
	"image"
	"image/color"
)

// stamp is what Options.Stamp paints on every frame: rectangles of one colour, as BT.709
// limited-range samples.
type stamp struct {
	rects     []image.Rectangle
	y, cb, cr uint8
}

// newStamp resolves opts.Stamp for frames of w x h; nil when there is nothing to paint.
func newStamp(f func(w, h int) ([]image.Rectangle, color.NRGBA), w, h int) *stamp {
	if f == nil {
		return nil
	}
	rects, c := f(w, h)
	if len(rects) == 0 {
		return nil
	}
	r, g, b := int32(c.R), int32(c.G), int32(c.B)
	return &stamp{
		rects: rects,
		y:     uint8((16<<16 + yR*r + yG*g + yB*b + 1<<15) >> 16),
		cb:    chroma(4 * (cbR*r + cbG*g + cbB*b)),
		cr:    chroma(4 * (crR*r + crG*g + crB*b)),
	}
}

// paint fills the stamp's rectangles on img. Chroma is 4:2:0: a chroma sample is painted when
// its 2x2 block lies in a rectangle at least in part, so the colour's edge is at most one pixel
// wider than the luma's.
func (s *stamp) paint(img *image.YCbCr) {
	if s == nil {
		return
	}
	for _, r := range s.rects {
		r = r.Intersect(img.Rect)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			row := img.Y[y*img.YStride:]
			for x := r.Min.X; x < r.Max.X; x++ {
				row[x] = s.y
			}
		}
		for cy := r.Min.Y / 2; cy < (r.Max.Y+1)/2; cy++ {
			for cx := r.Min.X / 2; cx < (r.Max.X+1)/2; cx++ {
				i := cy*img.CStride + cx
				img.Cb[i], img.Cr[i] = s.cb, s.cr
			}
		}
	}
}
