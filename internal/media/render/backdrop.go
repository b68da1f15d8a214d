package render

import (
	"image"
	"math/rand/v2"
)

// Backdrop renders the procedural scene PhotoShoot would place a product in, without a product:
// a scenery image of CanvasSize(opts.AspectRatio, opts.LongEdge) pixels. Style, Suggestions and
// Seed choose the scene as they do for PhotoShoot; Scenery is ignored. Same options, same pixels.
func Backdrop(opts PhotoShootOptions) (*image.NRGBA, error) {
	W, H, err := CanvasSize(opts.AspectRatio, opts.LongEdge)
	if err != nil {
		return nil, err
	}
	s1, s2 := seeds(opts)
	rng := rand.New(rand.NewPCG(s1, s2))
	sc := buildScene(rng, opts.Style+" "+opts.Suggestions)
	fh := float64(H)
	hz := sc.horizon * fh
	baseY := hz + (fh-hz)*0.62
	out := image.NewNRGBA(image.Rect(0, 0, W, H))
	renderScene(out.Pix, out.Stride, W, H, &sc, float64(W)/2, baseY)
	drawBokeh(out.Pix, out.Stride, W, H, &sc, rng)
	finish(out, sc.vignette, sc.grain, uint32(s1>>32)^uint32(s2))
	return out, nil
}
