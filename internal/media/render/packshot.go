package render

import (
	"image"
	"math"
)

// PackshotOptions configures one Packshot render.
type PackshotOptions struct {
	AspectRatio string // "W:H", e.g. "4:5"; empty means "1:1"
	LongEdge    int    // long-edge pixels; 0 means DefaultLongEdge
	Seed        int64  // varies the shadow's softness and depth only
}

// packshotFill is the fraction of the canvas width and height the product's
// bounding box may fill; the limiting dimension fills it exactly.
const packshotFill = 0.8

// Packshot cuts the product out of photo and centres it on pure white
// (#FFFFFF) with a soft contact shadow, returning an opaque image of exactly
// CanvasSize(opts.AspectRatio, opts.LongEdge) pixels.
//
// The product is separated from a plain (or transparent) background by a
// feathered flood-fill matte from the photo's borders; background-coloured
// regions it encloses, such as the hole of a mug handle, are cleared too
// unless they are tiny. The matte's bounding box is scaled to fill 80% of the
// canvas in its limiting dimension and centred. A photo whose background is
// not plain enough to matte is placed whole, as a rounded card, the way
// PhotoShoot places it: the result is still a clean white packshot. Besides
// invalid options, the only errors are a nil or empty photo and one without a
// single visible pixel. Same photo and options, same pixels.
func Packshot(photo image.Image, opts PackshotOptions) (*image.NRGBA, error) {
	img, _, err := packshot(photo, opts)
	return img, err
}

// packshot is Packshot that also reports the product placement.
func packshot(photo image.Image, opts PackshotOptions) (*image.NRGBA, placement, error) {
	in, err := matteInput(photo, packshotMatte, opts.AspectRatio, opts.LongEdge)
	if err != nil {
		return nil, placement{}, err
	}
	img, pl := composePackshot(in, opts)
	return img, pl, nil
}

// composePackshot centres the matted photo in (matted for opts' canvas with packshotMatte) on
// white. It only reads in.
func composePackshot(in mattedInput, opts PackshotOptions) (*image.NRGBA, placement) {
	W, H, mr := in.w, in.h, in.mr

	fw, fh := float64(W), float64(H)
	lw, lh := float64(mr.layer.w), float64(mr.layer.h)
	s := math.Min(packshotFill*fw/lw, packshotFill*fh/lh)
	pw := min(max(1, int(math.Round(lw*s))), W)
	ph := min(max(1, int(math.Round(lh*s))), H)
	x0, y0 := (W-pw)/2, (H-ph)/2
	prod := scaleTo(mr.layer, pw, ph)

	out := image.NewNRGBA(image.Rect(0, 0, W, H))
	fillWhite(out.Pix)
	h := splitmix(uint64(opts.Seed) ^ 0x5ca1ab1e)
	soft := 0.85 + 0.3*float64(h&0xffff)/0xffff
	depth := 0.9 + 0.2*float64(h>>16&0xffff)/0xffff
	drawContactShadow(out, prod, x0, y0+ph, soft, depth)
	over(out, prod, x0, y0)

	pl := placement{
		product: image.Rect(x0, y0, x0+pw, y0+ph),
		bbox:    in.srcBox,
		matted:  mr.matted,
		baseY:   float64(y0 + ph),
	}
	return out, pl
}

// fillWhite sets every byte of pix to 255 (opaque white NRGBA pixels).
func fillWhite(pix []uint8) {
	if len(pix) == 0 {
		return
	}
	pix[0] = 255
	for n := 1; n < len(pix); n *= 2 {
		copy(pix[n:], pix[:n])
	}
}

// drawContactShadow darkens the white ground under a product whose bottom
// edge is at row baseY: a blurred band along the footprint of its bottom rows
// (so separate feet cast separate cores) and a wide, faint elliptical halo.
// soft scales the blur and halo size, depth the darkness (both ≈ 1).
func drawContactShadow(dst *image.NRGBA, prod raster, x0, baseY int, soft, depth float64) {
	W, H := dst.Rect.Dx(), dst.Rect.Dy()
	pw, ph := prod.w, prod.h

	// Footprint: per-column coverage of the bottom rows.
	foot := make([]float32, pw)
	minx, maxx := pw, -1
	for y := max(ph-max(2, ph/40), 0); y < ph; y++ {
		row := prod.row(y)
		for x := range foot {
			if a := float32(row[x*4+3]) / 255; a > foot[x] {
				foot[x] = a
			}
		}
	}
	for x, a := range foot {
		if a > 0.5 {
			minx, maxx = min(minx, x), max(maxx, x)
		}
	}
	if maxx < minx {
		return
	}
	fcx := float64(x0) + float64(minx+maxx+1)/2
	frx := math.Max(float64(maxx-minx+1)/2, 2)

	fph := float64(ph)
	blurR := max(1, int(soft*0.01*fph+0.5))
	band := math.Max(1.5, 0.01*fph)
	hrx, hry := (frx+0.06*fph)*soft, math.Max(3, 0.05*fph*soft)
	pad := 3*blurR + 2
	rx0 := max(min(x0, int(fcx-hrx))-pad, 0)
	rx1 := min(max(x0+pw, int(fcx+hrx)+1)+pad, W)
	ry0 := max(baseY-int(hry)-pad, 0)
	ry1 := min(baseY+int(hry)+pad+1, H)
	rw, rh := rx1-rx0, ry1-ry0
	if rw <= 0 || rh <= 0 {
		return
	}
	mask := make([]float32, rw*rh)
	for y := ry0; y < ry1; y++ {
		d := float64(y) + 0.5 - float64(baseY) - band/2
		if d < -band || d > band {
			continue
		}
		mrow := mask[(y-ry0)*rw : (y-ry0+1)*rw]
		for x := range mrow {
			if fx := x + rx0 - x0; fx >= 0 && fx < pw {
				mrow[x] = foot[fx]
			}
		}
	}
	blurMask(mask, rw, rh, blurR)

	for y := ry0; y < ry1; y++ {
		mrow := mask[(y-ry0)*rw : (y-ry0+1)*rw]
		dy := (float64(y) + 0.5 - float64(baseY)) / hry
		prow := dst.Pix[y*dst.Stride : y*dst.Stride+W*4]
		for x := range mrow {
			dx := (float64(x+rx0) + 0.5 - fcx) / hrx
			halo := 0.18 * smoothstep(0, 1, 1-dx*dx-dy*dy)
			m := clamp01(depth * (1 - (1-0.38*float64(mrow[x]))*(1-halo)))
			if m <= 0 {
				continue
			}
			v := to8(255 * (1 - m))
			p := prow[(x+rx0)*4 : (x+rx0)*4+3 : (x+rx0)*4+3]
			p[0], p[1], p[2] = min(p[0], v), min(p[1], v), min(p[2], v)
		}
	}
}

// over lays the premultiplied product over dst at (x0, y0), unaltered.
func over(dst *image.NRGBA, prod raster, x0, y0 int) {
	W, H := dst.Rect.Dx(), dst.Rect.Dy()
	for py := 0; py < prod.h; py++ {
		y := y0 + py
		if y < 0 || y >= H {
			continue
		}
		prow := prod.row(py)
		drow := dst.Pix[y*dst.Stride : y*dst.Stride+W*4]
		for px := 0; px < prod.w; px++ {
			x := x0 + px
			if x < 0 || x >= W {
				continue
			}
			p := prow[px*4 : px*4+4 : px*4+4]
			if p[3] == 0 {
				continue
			}
			inv := 255 - uint32(p[3])
			d := drow[x*4 : x*4+3 : x*4+3]
			d[0] = uint8(min(uint32(p[0])+(uint32(d[0])*inv+127)/255, 255))
			d[1] = uint8(min(uint32(p[1])+(uint32(d[1])*inv+127)/255, 255))
			d[2] = uint8(min(uint32(p[2])+(uint32(d[2])*inv+127)/255, 255))
		}
	}
}
