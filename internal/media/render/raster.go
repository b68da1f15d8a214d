package render

import (
	"image"
	"image/draw"
	"math"
)

// raster is a premultiplied RGBA8 pixel buffer (the layout of image.RGBA).
type raster struct {
	pix    []uint8
	w, h   int
	stride int
}

// newRaster allocates a zeroed w×h raster.
func newRaster(w, h int) raster {
	return raster{pix: make([]uint8, w*h*4), w: w, h: h, stride: w * 4}
}

// row returns the 4*w bytes of row y.
func (r raster) row(y int) []uint8 {
	o := y * r.stride
	return r.pix[o : o+r.w*4 : o+r.w*4]
}

// toRaster converts rect of img (which must lie inside img.Bounds()) to a
// premultiplied raster. *image.RGBA inputs are viewed without copying, so the
// result must be treated as read-only.
func toRaster(img image.Image, rect image.Rectangle) raster {
	if m, ok := img.(*image.RGBA); ok {
		o := m.PixOffset(rect.Min.X, rect.Min.Y)
		return raster{pix: m.Pix[o:], w: rect.Dx(), h: rect.Dy(), stride: m.Stride}
	}
	dst := image.NewRGBA(image.Rect(0, 0, rect.Dx(), rect.Dy()))
	draw.Draw(dst, dst.Bounds(), img, rect.Min, draw.Src)
	return raster{pix: dst.Pix, w: rect.Dx(), h: rect.Dy(), stride: dst.Stride}
}

// boxShrink averages k×k blocks (premultiplied, so the average is exact);
// trailing rows and columns that do not fill a block are dropped.
func boxShrink(src raster, k int) raster {
	if k <= 1 {
		return src
	}
	dw, dh := src.w/k, src.h/k
	if dw < 1 || dh < 1 {
		return src
	}
	dst := newRaster(dw, dh)
	sums := make([]uint32, dw*4)
	kk := uint32(k * k)
	half := kk / 2
	for oy := 0; oy < dh; oy++ {
		clear(sums)
		for dy := 0; dy < k; dy++ {
			row := src.row(oy*k + dy)
			for ox := 0; ox < dw; ox++ {
				s := sums[ox*4 : ox*4+4 : ox*4+4]
				p := row[ox*k*4 : (ox+1)*k*4]
				for i := 0; i+3 < len(p); i += 4 {
					s[0] += uint32(p[i])
					s[1] += uint32(p[i+1])
					s[2] += uint32(p[i+2])
					s[3] += uint32(p[i+3])
				}
			}
		}
		drow := dst.row(oy)
		for i, s := range sums {
			drow[i] = uint8((s + half) / kk)
		}
	}
	return dst
}

// taps holds, for each destination index, n source indices and weights.
type taps struct {
	n   int
	idx []int32
	w   []float32
}

// catmullRom is the Catmull-Rom cubic kernel (support 2).
func catmullRom(x float64) float64 {
	if x < 0 {
		x = -x
	}
	switch {
	case x < 1:
		return (1.5*x-2.5)*x*x + 1
	case x < 2:
		return ((-0.5*x+2.5)*x-4)*x + 2
	}
	return 0
}

// makeTaps computes normalised Catmull-Rom weights mapping srcN samples onto
// dstN samples, widening the kernel when downsampling (anti-aliasing).
func makeTaps(srcN, dstN int) taps {
	scale := float64(srcN) / float64(dstN)
	fs := math.Max(scale, 1)
	support := 2 * fs
	n := int(math.Ceil(2*support)) + 1
	t := taps{n: n, idx: make([]int32, dstN*n), w: make([]float32, dstN*n)}
	for i := 0; i < dstN; i++ {
		c := (float64(i)+0.5)*scale - 0.5
		lo := int(math.Floor(c-support)) + 1
		sum := 0.0
		ws := t.w[i*n : i*n+n]
		for j := 0; j < n; j++ {
			x := lo + j
			wt := catmullRom((float64(x) - c) / fs)
			ws[j] = float32(wt)
			sum += wt
			t.idx[i*n+j] = int32(min(max(x, 0), srcN-1))
		}
		if sum != 0 {
			inv := float32(1 / sum)
			for j := range ws {
				ws[j] *= inv
			}
		}
	}
	return t
}

// resample scales src to dw×dh with a separable Catmull-Rom filter, writing
// premultiplied RGBA8 into dst (row stride dstStride). It streams the vertical
// pass one output row at a time, so it needs only one float row of scratch.
func resample(src raster, dw, dh int, dst []uint8, dstStride int) {
	tx := makeTaps(src.w, dw)
	ty := makeTaps(src.h, dh)
	tmp := make([]float32, src.w*4)
	for oy := 0; oy < dh; oy++ {
		clear(tmp)
		for j := 0; j < ty.n; j++ {
			wt := ty.w[oy*ty.n+j]
			if wt == 0 {
				continue
			}
			row := src.row(int(ty.idx[oy*ty.n+j]))
			tt := tmp[:len(row)]
			for i, v := range row {
				tt[i] += wt * float32(v)
			}
		}
		drow := dst[oy*dstStride : oy*dstStride+dw*4]
		for ox := 0; ox < dw; ox++ {
			var r, g, b, a float32
			ws := tx.w[ox*tx.n : ox*tx.n+tx.n]
			is := tx.idx[ox*tx.n : ox*tx.n+tx.n]
			for j, wt := range ws {
				p := tmp[int(is[j])*4 : int(is[j])*4+4 : int(is[j])*4+4]
				r += wt * p[0]
				g += wt * p[1]
				b += wt * p[2]
				a += wt * p[3]
			}
			a = clampF(a, 0, 255)
			d := drow[ox*4 : ox*4+4 : ox*4+4]
			d[0] = uint8(clampF(r, 0, a) + 0.5)
			d[1] = uint8(clampF(g, 0, a) + 0.5)
			d[2] = uint8(clampF(b, 0, a) + 0.5)
			d[3] = uint8(a + 0.5)
		}
	}
}

// scaleTo resizes src to exactly dw×dh (box pre-shrink for big reductions,
// then Catmull-Rom) and returns a new raster.
func scaleTo(src raster, dw, dh int) raster {
	k := min(src.w/dw, src.h/dh)
	if k >= 2 {
		src = boxShrink(src, k)
	}
	dst := newRaster(dw, dh)
	resample(src, dw, dh, dst.pix, dst.stride)
	return dst
}

// clampF clamps v to [lo, hi].
func clampF(v, lo, hi float32) float32 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// clamp01 clamps v to [0, 1].
func clamp01(v float64) float64 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

// smoothstep is the cubic Hermite step from e0 to e1.
func smoothstep(e0, e1, x float64) float64 {
	t := clamp01((x - e0) / (e1 - e0))
	return t * t * (3 - 2*t)
}

// to8 converts a 0..255 float to a rounded, clamped byte.
func to8(v float64) uint8 {
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return uint8(v + 0.5)
}
