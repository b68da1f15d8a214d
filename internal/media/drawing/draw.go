package drawing

import (
	"fmt"
	"image"
	"math"
	"strconv"
)

// A tiny anti-aliased vector renderer: shapes are signed distance functions in figure units
// (negative inside), drawn in order with 3×3 supersampling and shaded darker towards their edges
// so flat colours read as volumes.

type rgb struct{ r, g, b float64 } // 0..255

// parseColours parses colours written #rrggbb.
func parseColours(ss ...string) ([]rgb, error) {
	out := make([]rgb, len(ss))
	for i, s := range ss {
		if len(s) != 7 || s[0] != '#' {
			return nil, fmt.Errorf("drawing: bad colour %q: want #rrggbb", s)
		}
		v, err := strconv.ParseUint(s[1:], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("drawing: bad colour %q: want #rrggbb", s)
		}
		out[i] = rgb{float64(v >> 16 & 0xff), float64(v >> 8 & 0xff), float64(v & 0xff)}
	}
	return out, nil
}

type shape struct {
	sdf   func(x, y float64) float64
	col   rgb
	depth float64 // distance (units) over which the edge darkening fades; 0: flat
}

func sdCircle(cx, cy, r float64) func(x, y float64) float64 {
	return func(x, y float64) float64 { return math.Hypot(x-cx, y-cy) - r }
}

func sdEllipse(cx, cy, rx, ry float64) func(x, y float64) float64 {
	return func(x, y float64) float64 { return (math.Hypot((x-cx)/rx, (y-cy)/ry) - 1) * math.Min(rx, ry) }
}

func sdCapsule(ax, ay, bx, by, r float64) func(x, y float64) float64 {
	return func(x, y float64) float64 {
		px, py, dx, dy := x-ax, y-ay, bx-ax, by-ay
		h := math.Max(0, math.Min(1, (px*dx+py*dy)/(dx*dx+dy*dy)))
		return math.Hypot(px-dx*h, py-dy*h) - r
	}
}

func sdRoundBox(cx, cy, hx, hy, r float64) func(x, y float64) float64 {
	return func(x, y float64) float64 {
		qx, qy := math.Abs(x-cx)-hx+r, math.Abs(y-cy)-hy+r
		return math.Hypot(math.Max(qx, 0), math.Max(qy, 0)) + math.Min(math.Max(qx, qy), 0) - r
	}
}

// sdTrapezoid is a trapezoid centred on (cx, cy), half-width top at its top edge and bottom at its
// bottom edge, half-height he, with rounded corners of radius round.
func sdTrapezoid(cx, cy, top, bottom, he, round float64) func(x, y float64) float64 {
	r1, r2 := top-round, bottom-round
	he -= round
	return func(x, y float64) float64 {
		px, py := math.Abs(x-cx), y-cy
		k1x, k1y := r2, he
		k2x, k2y := r2-r1, 2*he
		w := r1
		if py >= 0 {
			w = r2
		}
		cax, cay := px-math.Min(px, w), math.Abs(py)-he
		t := math.Max(0, math.Min(1, ((k1x-px)*k2x+(k1y-py)*k2y)/(k2x*k2x+k2y*k2y)))
		cbx, cby := px-k1x+k2x*t, py-k1y+k2y*t
		s := 1.0
		if cbx < 0 && cay < 0 {
			s = -1
		}
		return s*math.Sqrt(math.Min(cax*cax+cay*cay, cbx*cbx+cby*cby)) - round
	}
}

func intersect(a, b func(x, y float64) float64) func(x, y float64) float64 {
	return func(x, y float64) float64 { return math.Max(a(x, y), b(x, y)) }
}

// draw paints shapes onto dst within rect. A pixel (px, py) maps to figure units as
// ((px - ox) / scale, (py - oy) / scale). Pixels well outside every shape, or well inside the
// topmost shape covering them, are decided from their centre alone; edge pixels are supersampled.
func draw(dst *image.NRGBA, rect image.Rectangle, shapes []shape, ox, oy, scale float64) {
	rect = rect.Intersect(dst.Rect)
	const n = 3
	margin := 1.5 / scale // more than half a pixel diagonal, in units
	dist := make([]float64, len(shapes))
	for py := rect.Min.Y; py < rect.Max.Y; py++ {
		row := dst.Pix[py*dst.Stride:]
		cy := (float64(py) + 0.5 - oy) / scale
		for px := rect.Min.X; px < rect.Max.X; px++ {
			cx := (float64(px) + 0.5 - ox) / scale
			top, near := -1, false
			for i := len(shapes) - 1; i >= 0; i-- {
				dist[i] = shapes[i].sdf(cx, cy)
				if dist[i] < margin {
					near = near || dist[i] > -margin
					if top < 0 && dist[i] < 0 {
						top = i
					}
				}
				if top >= 0 {
					break // shapes below the topmost covering one cannot show at the centre
				}
			}
			if top < 0 && !near {
				continue // outside every shape
			}
			var sum rgb
			hits := 0
			if top >= 0 && !near {
				sum, hits = shapes[top].colourAt(cx, dist[top]), n*n
				sum = rgb{sum.r * n * n, sum.g * n * n, sum.b * n * n}
			} else {
				for sy := range n {
					y := (float64(py) + (float64(sy)+0.5)/n - oy) / scale
					for sx := range n {
						x := (float64(px) + (float64(sx)+0.5)/n - ox) / scale
						for i := len(shapes) - 1; i >= 0; i-- {
							d := shapes[i].sdf(x, y)
							if d >= 0 {
								continue
							}
							c := shapes[i].colourAt(x, d)
							sum.r, sum.g, sum.b = sum.r+c.r, sum.g+c.g, sum.b+c.b
							hits++
							break
						}
					}
				}
			}
			if hits == 0 {
				continue
			}
			cov := float64(hits) / (n * n)
			p := row[px*4 : px*4+4 : px*4+4]
			for ch, v := range [3]float64{sum.r, sum.g, sum.b} {
				mixed := float64(p[ch])*(1-cov) + v/float64(hits)*cov
				p[ch] = uint8(math.Max(0, math.Min(255, math.Round(mixed))))
			}
			p[3] = 255
		}
	}
}

// colourAt shades the shape's colour at horizontal position x and signed distance d < 0: darker
// towards its edge, lit from the left.
func (s shape) colourAt(x, d float64) rgb {
	k := 1.0
	if s.depth > 0 {
		k = 0.7 + 0.3*math.Sqrt(math.Min(1, -d/s.depth))
	}
	k *= 1.06 - 0.12*math.Max(-1, math.Min(1, x/0.25))
	return rgb{s.col.r * k, s.col.g * k, s.col.b * k}
}

// figure lists the shapes of a standing person of height 1: y runs from 0 (top of the head) to 1
// (soles), x is centred on 0.
func figure(l Look) ([]shape, error) {
	b := l.Build
	cs, err := parseColours(l.Skin, l.Hair, l.Top, l.Bottom)
	if err != nil {
		return nil, err
	}
	skin, hair, top, bottom := cs[0], cs[1], cs[2], cs[3]
	shoes := rgb{38, 36, 36}
	legs := bottom
	if l.Dress {
		legs = skin
	}
	var s []shape
	switch l.HairStyle {
	case "long":
		s = append(s, shape{sdRoundBox(0, 0.17, 0.066, 0.1, 0.05), hair, 0.03},
			shape{sdEllipse(0, 0.072, 0.064, 0.074), hair, 0.03})
	case "bob":
		s = append(s, shape{sdEllipse(0, 0.086, 0.07, 0.078), hair, 0.03})
	default:
		s = append(s, shape{sdEllipse(0, 0.067, 0.056, 0.064), hair, 0.02})
	}
	for _, side := range []float64{-1, 1} {
		s = append(s,
			shape{sdCapsule(side*0.042*b, 0.45, side*0.047*b, 0.935, 0.037*b), legs, 0.03},
			shape{sdCapsule(side*0.048*b, 0.958, side*0.072*b, 0.962, 0.021), shoes, 0.015},
			shape{sdCapsule(side*0.104*b, 0.205, side*0.128*b, 0.48, 0.029*b), top, 0.025},
			shape{sdCircle(side*0.131*b, 0.505, 0.026*b), skin, 0.02},
		)
	}
	s = append(s, shape{sdTrapezoid(0, 0.305, 0.108*b, 0.082*b, 0.115, 0.02), top, 0.06})
	if l.Dress {
		s = append(s, shape{sdTrapezoid(0, 0.53, 0.084*b, 0.158*b, 0.15, 0.01), top, 0.06})
	} else {
		s = append(s, shape{sdRoundBox(0, 0.45, 0.086*b, 0.05, 0.03), bottom, 0.04})
	}
	s = append(s,
		shape{sdCapsule(0, 0.12, 0, 0.19, 0.022), skin, 0.015},
		shape{sdEllipse(0, 0.08, 0.05, 0.064), skin, 0.035},
	)
	return s, nil
}

// floorShadow darkens an elliptical contact shadow centred on (cx, cy) pixels.
func floorShadow(dst *image.NRGBA, cx, cy, rx, ry, strength float64) {
	r := image.Rect(int(cx-2*rx), int(cy-2*ry), int(cx+2*rx)+1, int(cy+2*ry)+1).Intersect(dst.Rect)
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			dx, dy := (float64(px)+0.5-cx)/rx, (float64(py)+0.5-cy)/ry
			k := 1 - strength*math.Exp(-2*(dx*dx+dy*dy))
			p := dst.Pix[py*dst.Stride+px*4 : py*dst.Stride+px*4+3]
			for i := range p {
				p[i] = uint8(float64(p[i]) * k)
			}
		}
	}
}

// product lists the shapes of a product 1 unit high (y 0 to 1) centred on x = 0.
func product(p Product) ([]shape, error) {
	cs, err := parseColours(p.Color, p.Accent)
	if err != nil {
		return nil, err
	}
	c, a := cs[0], cs[1]
	switch p.Shape {
	case "bottle":
		body := sdRoundBox(0, 0.62, 0.15, 0.3, 0.05)
		return []shape{
			{sdRoundBox(0, 0.2, 0.05, 0.1, 0.012), c, 0.02},
			{sdEllipse(0, 0.4, 0.15, 0.1), c, 0.05},
			{body, c, 0.08},
			{intersect(body, sdRoundBox(0, 0.64, 1, 0.11, 0)), a, 0.08},
			{sdRoundBox(0, 0.105, 0.056, 0.04, 0.012), a, 0.02},
		}, nil
	case "jar":
		body := sdRoundBox(0, 0.64, 0.22, 0.28, 0.06)
		return []shape{
			{body, c, 0.1},
			{intersect(body, sdRoundBox(0, 0.66, 1, 0.09, 0)), a, 0.1},
			{sdRoundBox(0, 0.34, 0.23, 0.06, 0.02), a, 0.03},
		}, nil
	case "mug":
		return []shape{
			{func(x, y float64) float64 {
				return math.Max(math.Abs(math.Hypot(x-0.17, y-0.62)-0.1)-0.03, 0.12-x)
			}, c, 0.02},
			{sdRoundBox(-0.03, 0.62, 0.19, 0.26, 0.03), c, 0.09},
			{sdRoundBox(-0.03, 0.62, 0.06, 0.06, 0.03), a, 0},
		}, nil
	default: // box
		body := sdRoundBox(0, 0.58, 0.26, 0.34, 0.012)
		return []shape{
			{body, c, 0.05},
			{intersect(body, sdRoundBox(0, 0.58, 0.035, 1, 0)), a, 0.05},
			{intersect(body, sdRoundBox(0, 0.5, 1, 0.035, 0)), a, 0.05},
			{sdEllipse(-0.06, 0.22, 0.07, 0.035), a, 0.02},
			{sdEllipse(0.06, 0.22, 0.07, 0.035), a, 0.02},
		}, nil
	}
}
