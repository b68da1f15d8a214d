package render

import (
	"errors"
	"image"
	"math"
)

// errInvisible reports a packshot without a single visible pixel.
var errInvisible = errors.New("render: packshot has no visible pixels")

// Per-pixel flags used while matting.
const (
	fCand    uint8 = 1 << iota // looks like background (border colour or transparent)
	fBG                        // reached by the border flood fill
	fSeen                      // visited by the component labelling
	fRemoved                   // foreground speck discarded as noise
	fHole                      // visited while measuring an enclosed background region
)

// matteResult is an extracted product layer.
type matteResult struct {
	layer  raster          // premultiplied product, matte applied, trimmed
	bbox   image.Rectangle // layer's rectangle in source raster coordinates
	matted bool            // false when the rounded-card fallback was used
}

// extractMatte separates the product from a plain (or transparent)
// background by flood-filling from the borders (and over a soft contact shadow on
// studio white), removes small specks, feathers the matte edge inward by ~2px and
// trims to the matte's bounding box. Without a plain background it falls back to
// the whole image as a rounded card. Background-coloured regions enclosed by the
// product (a white label on a white backdrop) are kept as part of the product,
// unless clearHoles is set: then those of at least minHoleArea pixels (the hole
// of a mug handle) are cleared and smaller ones kept as product detail.
func extractMatte(src raster, clearHoles bool) (matteResult, error) {
	w, h := src.w, src.h
	visible := false
	for y := 0; y < h && !visible; y++ {
		row := src.row(y)
		for i := 3; i < len(row); i += 4 {
			if row[i] >= 8 {
				visible = true
				break
			}
		}
	}
	if !visible {
		return matteResult{}, errInvisible
	}
	if w < 8 || h < 8 {
		return roundedCard(src), nil
	}

	bg, tol, plain := analyseBorder(src)
	if !plain {
		return roundedCard(src), nil
	}

	n := w * h
	flags := make([]uint8, n)
	br, bgg, bb := int(bg[0]), int(bg[1]), int(bg[2])
	for y := 0; y < h; y++ {
		row := src.row(y)
		f := flags[y*w : y*w+w]
		for x := range f {
			p := row[x*4 : x*4+4 : x*4+4]
			if p[3] == 255 { // fast path: opaque
				if tol >= 0 && absInt(int(p[0])-br) <= tol && absInt(int(p[1])-bgg) <= tol && absInt(int(p[2])-bb) <= tol {
					f[x] = fCand
				}
			} else if isBackground(p, bg, tol) {
				f[x] = fCand
			}
		}
	}

	// Flood fill the background from every border pixel (4-connected).
	var stack []int32
	fill := func(x, y int) {
		if flags[y*w+x]&(fCand|fBG) == fCand {
			_, stack = fill4(flags, w, h, x, y, stack, fCand|fBG, fCand, fBG)
		}
	}
	for x := 0; x < w; x++ {
		fill(x, 0)
		fill(x, h-1)
	}
	for y := 1; y < h-1; y++ {
		fill(0, y)
		fill(w-1, y)
	}
	if bg[0] >= studioWhite && bg[1] >= studioWhite && bg[2] >= studioWhite {
		stack = floodShadow(src, flags, stack)
	}
	if clearHoles {
		stack = clearEnclosed(flags, w, h, stack)
	}

	// Label foreground components (8-connected).
	type comp struct {
		x, y, area int
		box        image.Rectangle
	}
	var comps []comp
	largest := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if flags[y*w+x]&(fBG|fSeen) != 0 {
				continue
			}
			var area int
			var box image.Rectangle
			area, box, stack = labelFG(flags, w, h, x, y, stack, fBG|fSeen, fSeen)
			comps = append(comps, comp{x, y, area, box})
			largest = max(largest, area)
		}
	}
	minArea := max(largest/50, n/20000, 4)
	var bbox image.Rectangle
	kept := 0
	for _, c := range comps {
		if c.area < minArea {
			_, _, stack = labelFG(flags, w, h, c.x, c.y, stack, fBG|fRemoved, fRemoved)
			continue
		}
		kept += c.area
		bbox = bbox.Union(c.box)
	}
	if kept < max(64, n/5000) || bbox.Dx() < 4 || bbox.Dy() < 4 {
		return roundedCard(src), nil
	}

	// Feather: separable [1 4 6 4 1]/16 blur of the binary matte, applied
	// inward only (background stays 0) so no background fringe leaks in.
	bw, bh := bbox.Dx(), bbox.Dy()
	tmp := make([]uint16, bw*bh)
	for y := 0; y < bh; y++ {
		f := flags[(y+bbox.Min.Y)*w+bbox.Min.X : (y+bbox.Min.Y)*w+bbox.Max.X]
		t := tmp[y*bw : y*bw+bw]
		for x := range t {
			var s uint16
			for k, kw := range [5]uint16{1, 4, 6, 4, 1} {
				xx := x + k - 2
				if xx >= 0 && xx < bw && f[xx]&(fBG|fRemoved) == 0 {
					s += kw * 255
				}
			}
			t[x] = s
		}
	}
	layer := newRaster(bw, bh)
	for y := 0; y < bh; y++ {
		f := flags[(y+bbox.Min.Y)*w+bbox.Min.X : (y+bbox.Min.Y)*w+bbox.Max.X]
		srow := src.row(y + bbox.Min.Y)[bbox.Min.X*4 : bbox.Max.X*4]
		drow := layer.row(y)
		for x := range f {
			if f[x]&(fBG|fRemoved) != 0 {
				continue
			}
			var s uint32
			for k, kw := range [5]uint32{1, 4, 6, 4, 1} {
				yy := y + k - 2
				if yy >= 0 && yy < bh {
					s += kw * uint32(tmp[yy*bw+x])
				}
			}
			m := (s + 128) >> 8 // 0..255
			p := srow[x*4 : x*4+4 : x*4+4]
			d := drow[x*4 : x*4+4 : x*4+4]
			d[0] = uint8((uint32(p[0])*m + 127) / 255)
			d[1] = uint8((uint32(p[1])*m + 127) / 255)
			d[2] = uint8((uint32(p[2])*m + 127) / 255)
			d[3] = uint8((uint32(p[3])*m + 127) / 255)
		}
	}
	return matteResult{layer: layer, bbox: bbox, matted: true}, nil
}

// analyseBorder estimates the background colour (per-channel median of the
// opaque border pixels, un-premultiplied), a colour tolerance from the border's
// spread, and whether the border looks like a plain background at all.
func analyseBorder(src raster) (bg [3]uint8, tol int, plain bool) {
	w, h := src.w, src.h
	var hist [3][256]int
	var dhist [256]int
	opaque, transparent, total := 0, 0, 0
	visit := func(fn func(p []uint8)) {
		for x := 0; x < w; x++ {
			fn(src.row(0)[x*4 : x*4+4])
			fn(src.row(h - 1)[x*4 : x*4+4])
		}
		for y := 1; y < h-1; y++ {
			fn(src.row(y)[0:4])
			fn(src.row(y)[(w-1)*4 : w*4])
		}
	}
	visit(func(p []uint8) {
		total++
		switch {
		case p[3] < 16:
			transparent++
		case p[3] >= 200:
			opaque++
			c := unpremul(p)
			for i := range 3 {
				hist[i][c[i]]++
			}
		}
	})
	if opaque > 0 {
		for i := range 3 {
			acc := 0
			for v, c := range hist[i] {
				acc += c
				if 2*acc >= opaque {
					bg[i] = uint8(v)
					break
				}
			}
		}
	}
	d75 := 0
	if opaque > 0 {
		visit(func(p []uint8) {
			if p[3] >= 200 {
				dhist[colourDist(unpremul(p), bg)]++
			}
		})
		acc := 0
		for v, c := range dhist {
			acc += c
			if 4*acc >= 3*opaque {
				d75 = v
				break
			}
		}
	}
	tol = min(max(16+5*d75/2, 16), 56)
	if opaque == 0 {
		tol = -1 // only transparency counts as background
	}
	cand := 0
	visit(func(p []uint8) {
		if isBackground(p, bg, tol) {
			cand++
		}
	})
	plain = 10*cand >= 6*total && (2*transparent >= total || d75 <= 28)
	return bg, tol, plain
}

// isBackground reports whether premultiplied pixel p is (nearly) transparent
// or within tol of the background colour.
func isBackground(p []uint8, bg [3]uint8, tol int) bool {
	if p[3] < 16 {
		return true
	}
	if tol < 0 {
		return false
	}
	return colourDist(unpremul(p), bg) <= tol
}

// unpremul returns the straight (non-premultiplied) colour of pixel p.
func unpremul(p []uint8) [3]uint8 {
	a := uint32(p[3])
	if a == 255 {
		return [3]uint8{p[0], p[1], p[2]}
	}
	if a == 0 {
		return [3]uint8{}
	}
	return [3]uint8{
		uint8(min(uint32(p[0])*255/a, 255)),
		uint8(min(uint32(p[1])*255/a, 255)),
		uint8(min(uint32(p[2])*255/a, 255)),
	}
}

// absInt is |v|.
func absInt(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// colourDist is the largest per-channel difference between two colours.
func colourDist(a, b [3]uint8) int {
	d := 0
	for i := range 3 {
		v := int(a[i]) - int(b[i])
		if v < 0 {
			v = -v
		}
		d = max(d, v)
	}
	return d
}

// minHoleArea is the smallest enclosed background region, in pixels of a
// w×h image, that clearEnclosed treats as a hole rather than product detail.
func minHoleArea(w, h int) int { return max(w*h/4000, 24) }

// clearEnclosed marks as background every 4-connected region of candidate
// pixels the border fill did not reach whose area is at least minHoleArea;
// it returns the (reusable) stack.
func clearEnclosed(flags []uint8, w, h int, stack []int32) []int32 {
	minArea := minHoleArea(w, h)
	for i, f := range flags {
		if f&(fCand|fBG|fHole) != fCand {
			continue
		}
		x, y := i%w, i/w
		var area int
		area, stack = fill4(flags, w, h, x, y, stack, fCand|fBG|fHole, fCand, fHole)
		if area >= minArea {
			_, stack = fill4(flags, w, h, x, y, stack, fCand|fBG, fCand, fBG)
		}
	}
	return stack
}

// fill4 sets mark on the 4-connected region of pixels whose flags&mask equal
// want containing (x, y), using a scanline fill (mark must be one of the mask
// bits outside want, so marked pixels leave the region); it returns the
// region's area and the (reusable) stack.
func fill4(flags []uint8, w, h, x, y int, stack []int32, mask, want, mark uint8) (int, []int32) {
	area := 0
	stack = append(stack[:0], int32(y*w+x))
	for len(stack) > 0 {
		i := int(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		cy, cx := i/w, i%w
		row := flags[cy*w : cy*w+w]
		if row[cx]&mask != want {
			continue
		}
		xl, xr := cx, cx
		for xl > 0 && row[xl-1]&mask == want {
			xl--
		}
		for xr < w-1 && row[xr+1]&mask == want {
			xr++
		}
		for k := xl; k <= xr; k++ {
			row[k] |= mark
		}
		area += xr - xl + 1
		for _, ny := range [2]int{cy - 1, cy + 1} {
			if ny < 0 || ny >= h {
				continue
			}
			nrow := flags[ny*w : ny*w+w]
			in := false
			for k := xl; k <= xr; k++ {
				if nrow[k]&mask == want {
					if !in {
						stack = append(stack, int32(ny*w+k))
						in = true
					}
				} else {
					in = false
				}
			}
		}
	}
	return area, stack
}

// labelFG fills the 8-connected region of pixels with none of the stop flags
// set, starting at (x, y), marking them with mark; it returns the region's
// area and bounding box, and the (reusable) stack.
func labelFG(flags []uint8, w, h, x, y int, stack []int32, stop, mark uint8) (int, image.Rectangle, []int32) {
	area := 0
	x0, y0, x1, y1 := x, y, x, y
	stack = append(stack[:0], int32(y*w+x))
	for len(stack) > 0 {
		i := int(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		cy, cx := i/w, i%w
		row := flags[cy*w : cy*w+w]
		if row[cx]&stop != 0 {
			continue
		}
		xl, xr := cx, cx
		for xl > 0 && row[xl-1]&stop == 0 {
			xl--
		}
		for xr < w-1 && row[xr+1]&stop == 0 {
			xr++
		}
		for k := xl; k <= xr; k++ {
			row[k] |= mark
		}
		area += xr - xl + 1
		x0, x1 = min(x0, xl), max(x1, xr)
		y0, y1 = min(y0, cy), max(y1, cy)
		lo, hi := max(xl-1, 0), min(xr+1, w-1)
		for _, ny := range [2]int{cy - 1, cy + 1} {
			if ny < 0 || ny >= h {
				continue
			}
			nrow := flags[ny*w : ny*w+w]
			in := false
			for k := lo; k <= hi; k++ {
				if nrow[k]&stop == 0 {
					if !in {
						stack = append(stack, int32(ny*w+k))
						in = true
					}
				} else {
					in = false
				}
			}
		}
	}
	return area, image.Rect(x0, y0, x1+1, y1+1), stack
}

// roundedCard is the fallback matte: the whole image with rounded corners and
// a ~1.5px feathered edge.
func roundedCard(src raster) matteResult {
	w, h := src.w, src.h
	layer := newRaster(w, h)
	r := math.Max(2, 0.05*float64(min(w, h)))
	hw, hh := float64(w)/2, float64(h)/2
	for y := 0; y < h; y++ {
		srow := src.row(y)
		drow := layer.row(y)
		qy := math.Abs(float64(y)+0.5-hh) - (hh - r)
		for x := 0; x < w; x++ {
			qx := math.Abs(float64(x)+0.5-hw) - (hw - r)
			var m float64
			if qx < -2 && qy < -2 {
				m = 1
			} else {
				sd := math.Hypot(math.Max(qx, 0), math.Max(qy, 0)) + math.Min(math.Max(qx, qy), 0) - r
				m = clamp01(-sd / 1.5)
			}
			if m <= 0 {
				continue
			}
			mi := uint32(m*255 + 0.5)
			for c := range 4 {
				drow[x*4+c] = uint8((uint32(srow[x*4+c])*mi + 127) / 255)
			}
		}
	}
	return matteResult{layer: layer, bbox: image.Rect(0, 0, w, h), matted: false}
}

// studioWhite is the darkest border channel of a studio packshot's white backdrop, the only
// background on which floodShadow looks for a contact shadow.
const studioWhite = 245

// floodShadow extends the background over the soft contact shadow of a packshot on white (such as
// Packshot draws): from background pixels into neutral grey neighbours whose brightness changes
// gently, so the shadow is not kept as part of the product. Product edges are coloured or change
// sharply, which stops it; very dark pixels are never taken.
func floodShadow(src raster, flags []uint8, stack []int32) []int32 {
	const (
		maxChroma = 12 // max-min channel spread of a neutral grey
		maxStep   = 10 // brightness change between neighbours within a shadow
		minLuma   = 110
	)
	w, h := src.w, src.h
	luma := func(i int) (int, bool) {
		p := src.row(i / w)[(i%w)*4 : (i%w)*4+4]
		if p[3] < 250 {
			return 0, false
		}
		r, g, b := int(p[0]), int(p[1]), int(p[2])
		if max(r, g, b)-min(r, g, b) > maxChroma {
			return 0, false
		}
		return (r + g + b) / 3, true
	}
	stack = stack[:0]
	for i := range flags {
		if flags[i]&fBG != 0 {
			stack = append(stack, int32(i))
		}
	}
	for len(stack) > 0 {
		i := int(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		li, ok := luma(i)
		if !ok {
			li = 255 // a transparent background pixel
		}
		x, y := i%w, i/w
		for _, d := range [4][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			nx, ny := x+d[0], y+d[1]
			if nx < 0 || ny < 0 || nx >= w || ny >= h {
				continue
			}
			j := ny*w + nx
			if flags[j]&fBG != 0 {
				continue
			}
			lj, ok := luma(j)
			if !ok || lj < minLuma || absInt(lj-li) > maxStep {
				continue
			}
			flags[j] |= fBG | fCand
			stack = append(stack, int32(j))
		}
	}
	return stack
}
