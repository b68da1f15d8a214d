// Package drawing draws the images of the seeded reference data, offline and deterministically:
// a fashion model is a figure standing in front of a studio backdrop, a preset image a drawn
// product photographed in a style, a scenery a procedural backdrop. Figures and products are
// drawn by a tiny anti-aliased vector renderer of its own; backdrops and photo shoots are
// internal/media/render's. Same arguments, same pixels. The package imports nothing of shotflow
// outside the media tier.
package drawing

import (
	"image"

	"github.com/shotflow/shotflow/internal/media/render"
)

// Image sizes (long edge in pixels).
const (
	sceneryLongEdge = 1024
	modelLongEdge   = 640
	presetLongEdge  = 640
)

// Look describes a drawn figure: colours as #rrggbb, HairStyle "long", "short" or "bob" (any
// other is drawn short), Build the relative width of the figure (1 is average; the reference seed
// allows 0.7 to 1.3).
type Look struct {
	Skin      string
	Hair      string
	HairStyle string
	Top       string
	Bottom    string
	Dress     bool // a dress instead of trousers: the legs show skin
	Build     float64
}

// Product describes a drawn product: Shape "bottle", "jar", "mug" or "box" (any other is drawn as
// a box), its body Color and its Accent (label, cap, lid) as #rrggbb.
type Product struct {
	Shape  string
	Color  string
	Accent string
}

// Scenery draws a scenery: render's procedural backdrop of preferences (a style text such as
// "warm oak table, morning light") and seed, 4:3 at 1024×768 pixels.
func Scenery(preferences string, seed int64) (*image.NRGBA, error) {
	return render.Backdrop(render.PhotoShootOptions{AspectRatio: "4:3", LongEdge: sceneryLongEdge, Seed: seed, Style: preferences})
}

// FashionModel draws the figure of look, standing, with a contact shadow, in front of render's
// backdrop of the style backdrop and seed, 4:5 at 512×640 pixels. A colour of look not written
// #rrggbb is an error.
func FashionModel(look Look, backdrop string, seed int64) (*image.NRGBA, error) {
	shapes, err := figure(look)
	if err != nil {
		return nil, err
	}
	bg, err := render.Backdrop(render.PhotoShootOptions{AspectRatio: "4:5", LongEdge: modelLongEdge, Seed: seed, Style: backdrop})
	if err != nil {
		return nil, err
	}
	W, H := float64(bg.Rect.Dx()), float64(bg.Rect.Dy())
	scale, top := 0.84*H, 0.085*H
	cx := W / 2
	floorShadow(bg, cx, top+0.962*scale, 0.16*scale*look.Build, 0.022*scale, 0.45)
	half := 0.25 * scale
	draw(bg, image.Rect(int(cx-half), int(top-2), int(cx+half)+1, int(top+scale)+2), shapes, cx, top, scale)
	return bg, nil
}

// PresetImage draws p on white and photographs it with render.PhotoShoot in style with seed, at
// aspect ("W:H") with a long edge of 640 pixels. A colour of p not written #rrggbb is an error, as
// is an aspect ratio render refuses.
func PresetImage(p Product, style string, seed int64, aspect string) (*image.NRGBA, error) {
	shapes, err := product(p)
	if err != nil {
		return nil, err
	}
	const w, h = 400, 500
	shot := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range shot.Pix {
		shot.Pix[i] = 255
	}
	scale := 0.8 * h
	draw(shot, shot.Rect, shapes, w/2, 0.1*h, scale)
	return render.PhotoShoot(shot, render.PhotoShootOptions{AspectRatio: aspect, LongEdge: presetLongEdge, Seed: seed, Style: style})
}
