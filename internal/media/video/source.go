package video

import (
	"image"
	"image/color"
	"math"

	"golang.org/x/image/draw"
)

// prepareSource cover-fits img into a w x h frame: it crops the centre of img to the frame's
// aspect ratio and scales the crop down (never up) to the size it has at the strongest
// zoom, so that frames sample it at about one texel per pixel. Transparent areas are
// composited onto white. The result is opaque.
func prepareSource(img image.Image, w, h int) *image.RGBA {
	crop := coverCrop(img.Bounds(), w, h)
	scale := min(1, float64(w)*zoomMax/float64(crop.Dx()), float64(h)*zoomMax/float64(crop.Dy()))
	tw := max(1, int(math.Round(float64(crop.Dx())*scale)))
	th := max(1, int(math.Round(float64(crop.Dy())*scale)))
	dst := image.NewRGBA(image.Rect(0, 0, tw, th))

	op := draw.Src
	if !isOpaque(img) {
		draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		op = draw.Over
	}
	if tw == crop.Dx() && th == crop.Dy() {
		draw.Draw(dst, dst.Bounds(), img, crop.Min, op)
	} else {
		draw.CatmullRom.Scale(dst, dst.Bounds(), img, crop, op, nil)
	}
	return dst
}

// coverCrop returns the largest centred rectangle of b with the aspect ratio w:h.
func coverCrop(b image.Rectangle, w, h int) image.Rectangle {
	sw, sh := b.Dx(), b.Dy()
	cw, ch := sw, sh
	if sw*h > sh*w {
		cw = max(1, int(math.Round(float64(sh)*float64(w)/float64(h))))
	} else {
		ch = max(1, int(math.Round(float64(sw)*float64(h)/float64(w))))
	}
	x0 := b.Min.X + (sw-cw)/2
	y0 := b.Min.Y + (sh-ch)/2
	return image.Rect(x0, y0, x0+cw, y0+ch)
}

// isOpaque reports whether img says it is fully opaque.
func isOpaque(img image.Image) bool {
	o, ok := img.(interface{ Opaque() bool })
	return ok && o.Opaque()
}
