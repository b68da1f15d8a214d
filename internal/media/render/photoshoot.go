package render

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
)

// PhotoShootOptions configures one PhotoShoot render.
type PhotoShootOptions struct {
	AspectRatio string      // "W:H", e.g. "4:5"; empty means "1:1"
	LongEdge    int         // long-edge pixels; 0 means DefaultLongEdge
	Seed        int64       // variation seed; same inputs give identical output
	Style       string      // free-text style ("warm wood", "dark studio", …)
	Suggestions string      // free-text scene suggestions, hashed in like Style
	Scenery     image.Image // optional scene photo used as the background
}

// placement records where the product landed (used by tests).
type placement struct {
	product image.Rectangle // product rectangle on the canvas
	bbox    image.Rectangle // matte bounding box in packshot coordinates
	matted  bool            // false when the rounded-card fallback was used
	baseY   float64         // floor contact line
}

// PhotoShoot composites the product in packshot into a scene at the requested
// aspect ratio and size, returning an opaque image of exactly
// CanvasSize(opts.AspectRatio, opts.LongEdge) pixels.
func PhotoShoot(packshot image.Image, opts PhotoShootOptions) (*image.NRGBA, error) {
	img, _, err := photoShoot(packshot, opts)
	return img, err
}

// mattedInput is an input image matted for a canvas. Values are shared by every render of the
// same input through a MatteCache, so the renders only read them, never write into mr.layer.
type mattedInput struct {
	w, h   int             // the canvas
	mr     matteResult     // the product layer, trimmed
	srcBox image.Rectangle // the product's box in the input image's coordinates
}

// matteSpec is how a render mattes its input: everything besides the input and the canvas that
// matteInput's result depends on.
type matteSpec struct {
	fn, noun   string  // the caller and its input, in errors
	span       float64 // inputs longer than span times the canvas's long edge are box-shrunk first
	clearHoles bool    // as extractMatte's clearHoles
}

// The matte specs of PhotoShoot and Packshot.
var (
	// photoShootMatte keeps enclosed background and mattes at no more than 1.5 times the canvas.
	photoShootMatte = matteSpec{fn: "PhotoShoot", noun: "packshot", span: 1.5}
	// packshotMatte clears the holes of handles and mattes at no more than twice the canvas: a
	// product filling at least 40% of a large photo is still not upscaled.
	packshotMatte = matteSpec{fn: "Packshot", noun: "photo", span: 2, clearHoles: true}
)

// matteInput checks img against the canvas of aspect and longEdge, box-shrinks an input larger than
// spec.span times the canvas's long edge, and mattes it (spec.clearHoles as extractMatte).
// spec.fn and spec.noun name the caller and its input in errors.
func matteInput(img image.Image, spec matteSpec, aspect string, longEdge int) (mattedInput, error) {
	var in mattedInput
	var err error
	if in.w, in.h, err = CanvasSize(aspect, longEdge); err != nil {
		return in, err
	}
	if img == nil {
		return in, fmt.Errorf("render: %s: nil %s", spec.fn, spec.noun)
	}
	b := img.Bounds()
	if b.Empty() {
		return in, fmt.Errorf("render: %s: empty %s", spec.fn, spec.noun)
	}
	src := toRaster(img, b)
	shrink := 1
	if k := max(src.w, src.h) / int(float64(max(in.w, in.h))*spec.span); k >= 2 {
		src, shrink = boxShrink(src, k), k
	}
	if in.mr, err = extractMatte(src, spec.clearHoles); err != nil {
		return in, err
	}
	bb := in.mr.bbox
	in.srcBox = image.Rect(bb.Min.X*shrink, bb.Min.Y*shrink, bb.Max.X*shrink, bb.Max.Y*shrink).Add(b.Min)
	return in, nil
}

// photoShoot is PhotoShoot that also reports the product placement.
func photoShoot(packshot image.Image, opts PhotoShootOptions) (*image.NRGBA, placement, error) {
	// Product: reduce huge inputs first, then matte and trim.
	in, err := matteInput(packshot, photoShootMatte, opts.AspectRatio, opts.LongEdge)
	if err != nil {
		return nil, placement{}, err
	}
	return composePhotoShoot(in, opts)
}

// composePhotoShoot lays the matted packshot in (matted for opts' canvas with photoShootMatte)
// into the scene of opts. It only reads in.
func composePhotoShoot(in mattedInput, opts PhotoShootOptions) (*image.NRGBA, placement, error) {
	var pl placement
	W, H, mr := in.w, in.h, in.mr
	s1, s2 := seeds(opts)
	rng := rand.New(rand.NewPCG(s1, s2))
	sc := buildScene(rng, opts.Style+" "+opts.Suggestions)
	fw, fh := float64(W), float64(H)

	// Layout: ~49–61% of the height, limited by width, standing on the floor.
	lw, lh := float64(mr.layer.w), float64(mr.layer.h)
	th := (0.49 + rng.Float64()*0.12) * fh
	tw := th * lw / lh
	if tw > 0.78*fw {
		tw = 0.78 * fw
		th = tw * lh / lw
	}
	pw, ph := max(1, int(math.Round(tw))), max(1, int(math.Round(th)))
	baseY := 0.87 * fh
	if opts.Scenery == nil {
		hz := sc.horizon * fh
		baseY = hz + (fh-hz)*0.62
	}
	baseY = math.Min(math.Max(baseY, float64(ph)+0.04*fh), fh-2)
	cx := fw/2 + (rng.Float64()-0.5)*0.06*fw
	margin := math.Min(0.04*fw, (fw-float64(pw))/2)
	x0 := int(math.Round(math.Min(math.Max(cx-float64(pw)/2, margin), fw-float64(pw)-margin)))
	y0 := int(math.Round(baseY)) - ph
	cx = float64(x0) + float64(pw)/2
	dir := 1.0
	if sc.keyX < 0.5 {
		dir = -1
	}
	prod := scaleTo(mr.layer, pw, ph)

	// Background.
	out := image.NewNRGBA(image.Rect(0, 0, W, H))
	light, shadowK, vignette, grain := sc.light, sc.shadow, sc.vignette, sc.grain
	if opts.Scenery != nil {
		if err := drawScenery(out, opts.Scenery, &sc, cx, baseY); err != nil {
			return nil, pl, err
		}
		light = averageLight(out)
		vignette, grain = 0.1, 1.2
	} else {
		renderScene(out.Pix, out.Stride, W, H, &sc, cx, baseY)
		drawBokeh(out.Pix, out.Stride, W, H, &sc, rng)
	}

	drawShadow(out, prod, x0, y0, baseY, dir, shadowK)
	tint := rgb{1 + 0.10*(light.r-1), 1 + 0.10*(light.g-1), 1 + 0.10*(light.b-1)}
	if sc.dark && opts.Scenery == nil {
		tint = tint.scale(0.95)
	}
	if sc.reflect > 0 && opts.Scenery == nil {
		drawReflection(out, prod, x0, y0, sc.reflect, tint)
	}
	composite(out, prod, x0, y0, tint, dir)
	finish(out, vignette, grain, uint32(s1>>32)^uint32(s2))

	pl = placement{
		product: image.Rect(x0, y0, x0+pw, y0+ph),
		bbox:    in.srcBox,
		matted:  mr.matted,
		baseY:   baseY,
	}
	return out, pl, nil
}

// seeds hashes Seed, Style and Suggestions (FNV-1a, then splitmix64) into
// the two PCG seed words.
func seeds(opts PhotoShootOptions) (uint64, uint64) {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := range 8 {
		h = (h ^ uint64(byte(opts.Seed>>(8*i)))) * prime
	}
	for _, s := range [2]string{opts.Style, opts.Suggestions} {
		h = (h ^ 0xff) * prime // separator
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * prime
		}
	}
	a := splitmix(h)
	return a, splitmix(a ^ 0x9e3779b97f4a7c15)
}

// splitmix is the splitmix64 finaliser.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// drawScenery cover-scales and centre-crops img onto dst. Translucent scenery
// is laid over the procedural scene.
func drawScenery(dst *image.NRGBA, img image.Image, sc *scene, cx, baseY float64) error {
	b := img.Bounds()
	if b.Empty() {
		return fmt.Errorf("render: PhotoShoot: empty scenery")
	}
	W, H := dst.Rect.Dx(), dst.Rect.Dy()
	sw, sh := b.Dx(), b.Dy()
	scale := math.Max(float64(W)/float64(sw), float64(H)/float64(sh))
	cw := min(sw, max(1, int(math.Round(float64(W)/scale))))
	ch := min(sh, max(1, int(math.Round(float64(H)/scale))))
	crop := image.Rect(0, 0, cw, ch).Add(b.Min).Add(image.Pt((sw-cw)/2, (sh-ch)/2))
	src := toRaster(img, crop)
	if k := min(cw/W, ch/H); k >= 2 {
		src = boxShrink(src, k)
	}
	resample(src, W, H, dst.Pix, dst.Stride)

	opaque := true
	for i := 3; i < len(dst.Pix); i += 4 {
		if dst.Pix[i] != 255 {
			opaque = false
			break
		}
	}
	if opaque {
		return nil
	}
	under := make([]uint8, len(dst.Pix))
	renderScene(under, dst.Stride, W, H, sc, cx, baseY)
	for i := 0; i < len(under); i += 4 {
		p := dst.Pix[i : i+4 : i+4]
		inv := 255 - uint32(p[3])
		for c := range 3 {
			p[c] = uint8(uint32(p[c]) + (uint32(under[i+c])*inv+127)/255)
		}
		p[3] = 255
	}
	return nil
}

// averageLight estimates the scene's light colour (luminance-normalised mean).
func averageLight(img *image.NRGBA) rgb {
	var sum rgb
	n := 0.0
	W, H := img.Rect.Dx(), img.Rect.Dy()
	for y := 4; y < H; y += 16 {
		for x := 4; x < W; x += 16 {
			p := img.Pix[y*img.Stride+x*4:]
			sum.r += float64(p[0])
			sum.g += float64(p[1])
			sum.b += float64(p[2])
			n++
		}
	}
	if n == 0 || sum.lum() <= 0 {
		return rgb{1, 1, 1}
	}
	l := sum.scale(1 / sum.lum())
	// Keep it gentle: at most ±40% per channel before the 10% tint.
	return rgb{math.Min(math.Max(l.r, 0.6), 1.4), math.Min(math.Max(l.g, 0.6), 1.4), math.Min(math.Max(l.b, 0.6), 1.4)}
}

// drawShadow darkens the floor under the product: a blurred, sheared cast
// shadow of the silhouette plus two soft elliptical contact shadows.
func drawShadow(dst *image.NRGBA, prod raster, x0, y0 int, baseY, dir, strength float64) {
	W, H := dst.Rect.Dx(), dst.Rect.Dy()
	pw, ph := prod.w, prod.h
	fph := float64(ph)

	// Footprint: extent of the opaque bottom rows.
	minx, maxx := pw, -1
	for y := max(ph-max(2, ph/25), 0); y < ph; y++ {
		row := prod.row(y)
		for x := 0; x < pw; x++ {
			if row[x*4+3] > 128 {
				minx, maxx = min(minx, x), max(maxx, x)
			}
		}
	}
	if maxx < minx {
		minx, maxx = pw/5, pw*4/5
	}
	fcx := float64(x0) + float64(minx+maxx+1)/2
	frx := math.Max(float64(maxx-minx+1)/2, 2)

	const squash = 0.28
	shear := -dir * 0.75
	castLen := squash * fph
	blurR := max(2, int(0.012*float64(H)+0.5))
	pad := 3*blurR + 2
	rx0 := max(int(math.Min(float64(x0), float64(x0)+shear*castLen))-pad-int(0.5*frx), 0)
	rx1 := min(int(math.Max(float64(x0+pw), float64(x0+pw)+shear*castLen))+pad+int(0.5*frx), W)
	ry0 := max(int(baseY-castLen)-pad, 0)
	ry1 := min(int(baseY+0.12*fph+0.3*frx)+pad, H)
	rw, rh := rx1-rx0, ry1-ry0
	if rw <= 0 || rh <= 0 {
		return
	}
	mask := make([]float32, rw*rh)
	for y := ry0; y < ry1; y++ {
		dy := baseY - (float64(y) + 0.5)
		if dy < 0 {
			continue
		}
		sr := ph - 1 - int(dy/squash)
		if sr < 0 {
			continue
		}
		f := float32(0.30 * (1 - 0.65*dy/castLen))
		prow := prod.row(sr)
		mrow := mask[(y-ry0)*rw : (y-ry0+1)*rw]
		off := float64(x0) + shear*dy
		for x := range mrow {
			sx := int(math.Floor(float64(x+rx0) + 0.5 - off))
			if sx >= 0 && sx < pw {
				mrow[x] = float32(prow[sx*4+3]) / 255 * f
			}
		}
	}
	blurMask(mask, rw, rh, blurR)

	// Contact shadows: a tight dark core and a wider soft halo.
	r1x, r1y := frx*1.04+1.5, math.Max(2, 0.014*fph+1)
	r2x, r2y := frx*1.45+0.04*float64(pw), math.Max(4, 0.05*fph)
	c2x := fcx + shear*0.08*frx
	for y := ry0; y < ry1; y++ {
		mrow := mask[(y-ry0)*rw : (y-ry0+1)*rw]
		fy := float64(y) + 0.5
		d1y := (fy - (baseY - 0.3*r1y)) / r1y
		d2y := (fy - baseY) / r2y
		prow := dst.Pix[y*dst.Stride : y*dst.Stride+W*4]
		for x := range mrow {
			fx := float64(x+rx0) + 0.5
			d1x, d2x := (fx-fcx)/r1x, (fx-c2x)/r2x
			e1 := 0.5 * math.Pow(clamp01(1-d1x*d1x-d1y*d1y), 1.5)
			e2 := 0.26 * smoothstep(0, 1, 1-d2x*d2x-d2y*d2y)
			m := 1 - (1-float64(mrow[x]))*(1-e1)*(1-e2)
			m = clamp01(m * strength)
			if m <= 0 {
				continue
			}
			k := 1 - m
			p := prow[(x+rx0)*4 : (x+rx0)*4+3 : (x+rx0)*4+3]
			p[0] = to8(float64(p[0]) * k)
			p[1] = to8(float64(p[1]) * k)
			p[2] = to8(float64(p[2]) * k)
		}
	}
}

// blurMask approximates a Gaussian blur of a w×h mask with three box passes
// of radius r in each direction.
func blurMask(m []float32, w, h, r int) {
	line := make([]float32, max(w, h))
	for range 3 {
		for y := 0; y < h; y++ {
			boxLine(m[y*w:], line[:w], 1, r)
		}
		for x := 0; x < w; x++ {
			boxLine(m[x:], line[:h], w, r)
		}
	}
}

// boxLine box-blurs len(line) samples of data spaced step apart (edges
// clamped), using line as scratch.
func boxLine(data, line []float32, step, r int) {
	n := len(line)
	for i := range line {
		line[i] = data[i*step]
	}
	inv := 1 / float32(2*r+1)
	var acc float32
	for i := -r; i <= r; i++ {
		acc += line[min(max(i, 0), n-1)]
	}
	for i := 0; i < n; i++ {
		data[i*step] = acc * inv
		acc += line[min(i+r+1, n-1)] - line[max(i-r, 0)]
	}
}

// drawReflection paints a faint, fading mirror image of the product below its
// base line (glossy floors).
func drawReflection(dst *image.NRGBA, prod raster, x0, y0 int, strength float64, tint rgb) {
	W, H := dst.Rect.Dx(), dst.Rect.Dy()
	pw, ph := prod.w, prod.h
	base := y0 + ph
	n := int(0.3 * float64(ph))
	for dy := 0; dy < n; dy++ {
		y := base + dy
		if y >= H {
			break
		}
		if y < 0 {
			continue
		}
		f := 1 - float64(dy)/float64(n)
		f = strength * f * f
		prow := prod.row(ph - 1 - dy)
		drow := dst.Pix[y*dst.Stride : y*dst.Stride+W*4]
		for px := 0; px < pw; px++ {
			x := x0 + px
			if x < 0 || x >= W {
				continue
			}
			p := prow[px*4 : px*4+4 : px*4+4]
			if p[3] == 0 {
				continue
			}
			a := float64(p[3]) / 255 * f
			d := drow[x*4 : x*4+3 : x*4+3]
			d[0] = to8(float64(p[0])*tint.r*f + float64(d[0])*(1-a))
			d[1] = to8(float64(p[1])*tint.g*f + float64(d[1])*(1-a))
			d[2] = to8(float64(p[2])*tint.b*f + float64(d[2])*(1-a))
		}
	}
}

// composite lays the premultiplied product over dst with a gentle light tint,
// a slight side-light gradient and a touch of ambient darkening at its base.
func composite(dst *image.NRGBA, prod raster, x0, y0 int, tint rgb, dir float64) {
	W, H := dst.Rect.Dx(), dst.Rect.Dy()
	pw, ph := prod.w, prod.h
	side := make([]float32, pw)
	for px := range side {
		side[px] = float32(1 + 0.05*dir*((float64(px)+0.5)/float64(pw)-0.5)*2)
	}
	tr, tg, tb := float32(tint.r), float32(tint.g), float32(tint.b)
	for py := 0; py < ph; py++ {
		y := y0 + py
		if y < 0 || y >= H {
			continue
		}
		v := (float64(py) + 0.5) / float64(ph)
		rowGain := float32(1 - 0.06*v*v*v)
		prow := prod.row(py)
		drow := dst.Pix[y*dst.Stride : y*dst.Stride+W*4]
		for px := 0; px < pw; px++ {
			x := x0 + px
			if x < 0 || x >= W {
				continue
			}
			p := prow[px*4 : px*4+4 : px*4+4]
			if p[3] == 0 {
				continue
			}
			g := side[px] * rowGain
			inv := float32(255-p[3]) / 255
			d := drow[x*4 : x*4+3 : x*4+3]
			d[0] = uint8(clampF(float32(p[0])*tr*g+float32(d[0])*inv+0.5, 0, 255))
			d[1] = uint8(clampF(float32(p[1])*tg*g+float32(d[1])*inv+0.5, 0, 255))
			d[2] = uint8(clampF(float32(p[2])*tb*g+float32(d[2])*inv+0.5, 0, 255))
		}
	}
}

// finish applies a lens vignette and fine luminance grain (which also dithers
// gradients) and forces the canvas opaque.
func finish(img *image.NRGBA, vignette, grain float64, seed uint32) {
	W, H := img.Rect.Dx(), img.Rect.Dy()
	vx := make([]float32, W)
	for x := range vx {
		t := math.Abs(2*(float64(x)+0.5)/float64(W) - 1)
		vx[x] = float32(1 - vignette*0.55*math.Pow(t, 2.2))
	}
	g := float32(grain / 65535)
	for y := 0; y < H; y++ {
		t := math.Abs(2*(float64(y)+0.5)/float64(H) - 1)
		vy := float32(1 - vignette*0.55*math.Pow(t, 2.2))
		row := img.Pix[y*img.Stride : y*img.Stride+W*4]
		hy := uint32(y)*0x85ebca77 ^ seed
		for x := 0; x < W; x++ {
			h := hash32(uint32(x)*0x9e3779b1 ^ hy)
			n := (float32(h&0xffff)+float32(h>>16))*g - float32(grain) // triangular in ±grain
			v := vx[x] * vy
			p := row[x*4 : x*4+4 : x*4+4]
			p[0] = uint8(clampF(float32(p[0])*v+n+0.5, 0, 255))
			p[1] = uint8(clampF(float32(p[1])*v+n+0.5, 0, 255))
			p[2] = uint8(clampF(float32(p[2])*v+n+0.5, 0, 255))
			p[3] = 255
		}
	}
}
