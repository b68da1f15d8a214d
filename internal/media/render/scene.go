package render

import (
	"math"
	"math/rand/v2"
	"strings"
	"unicode"
)

// rgb is a colour with channels in 0..1.
type rgb struct{ r, g, b float64 }

func (c rgb) scale(k float64) rgb { return rgb{c.r * k, c.g * k, c.b * k} }

func (c rgb) lum() float64 { return 0.2126*c.r + 0.7152*c.g + 0.0722*c.b }

func mix(a, b rgb, t float64) rgb {
	return rgb{a.r + (b.r-a.r)*t, a.g + (b.g-a.g)*t, a.b + (b.b-a.b)*t}
}

// hsl converts hue (degrees), saturation and lightness (0..1) to rgb.
func hsl(h, s, l float64) rgb {
	h = math.Mod(h, 360)
	if h < 0 {
		h += 360
	}
	s, l = clamp01(s), clamp01(l)
	c := (1 - math.Abs(2*l-1)) * s
	hp := h / 60
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r, g, b float64
	switch {
	case hp < 1:
		r, g = c, x
	case hp < 2:
		r, g = x, c
	case hp < 3:
		g, b = c, x
	case hp < 4:
		g, b = x, c
	case hp < 5:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := l - c/2
	return rgb{r + m, g + m, b + m}
}

// material is the floor/table surface type.
type material int

const (
	matPlain material = iota
	matWood
	matMarble
	matSand
	matConcrete
	matGrass
	matFabric
)

// scene is a fully resolved procedural backdrop description.
type scene struct {
	wallTop, wallBottom rgb
	floorFar, floorNear rgb
	floorAlt            rgb // veins, grain, seams
	light               rgb // key light colour, luminance ≈ 1
	mat                 material
	horizon             float64 // horizon height as a fraction of the canvas height
	soft                float64 // wall/floor blend half-width (fraction of height)
	vignette            float64
	grain               float64 // noise amplitude in 0..255 units
	reflect             float64 // floor glossiness (product reflection strength)
	keyX, keyStrength   float64 // backdrop light spot position (0..1) and strength
	dark                bool
	sky                 bool
	band                float64 // distant band (sea, hills) height, fraction of height
	bandCol             rgb
	bandFlat            bool
	bokeh               int
	bokehCol            rgb
	shadow              float64 // shadow strength multiplier
	fh                  float64 // canvas height in pixels (set by renderScene)
	noise               uint32  // texture noise seed
}

// colourWord maps colour names to hue, minimum saturation and lightness
// (lightness < 0 keeps the palette's own).
var colourWord = map[string][3]float64{
	"red": {2, 0.45, -1}, "crimson": {350, 0.5, 0.4}, "burgundy": {345, 0.45, 0.28},
	"orange": {28, 0.55, -1}, "peach": {22, 0.5, 0.8}, "coral": {10, 0.55, 0.7},
	"terracotta": {15, 0.45, 0.52}, "yellow": {50, 0.55, -1}, "gold": {44, 0.5, 0.55},
	"golden": {42, 0.5, 0.55}, "mustard": {45, 0.55, 0.5}, "cream": {45, 0.35, 0.9},
	"beige": {35, 0.25, 0.8}, "sand": {38, 0.3, 0.78}, "brown": {25, 0.35, 0.35},
	"chocolate": {20, 0.4, 0.25}, "olive": {75, 0.35, 0.45}, "green": {120, 0.35, -1},
	"sage": {100, 0.18, 0.68}, "mint": {150, 0.35, 0.82}, "emerald": {145, 0.5, 0.35},
	"teal": {178, 0.45, 0.45}, "turquoise": {174, 0.5, 0.6}, "cyan": {186, 0.45, -1},
	"aqua": {180, 0.45, 0.7}, "blue": {214, 0.45, -1}, "navy": {224, 0.45, 0.22},
	"indigo": {240, 0.4, 0.3}, "purple": {275, 0.35, -1}, "violet": {268, 0.4, -1},
	"lavender": {262, 0.35, 0.82}, "lilac": {285, 0.3, 0.78}, "pink": {335, 0.45, 0.8},
	"rose": {345, 0.4, 0.75}, "magenta": {308, 0.45, -1}, "grey": {0, 0, -1},
	"gray": {0, 0, -1}, "silver": {210, 0.04, 0.78}, "black": {0, 0, 0.1},
	"white": {40, 0.03, 0.93}, "ivory": {48, 0.25, 0.92}, "charcoal": {210, 0.05, 0.2},
}

// buildScene resolves a scene from the style/suggestion text, using rng for
// everything the text leaves open (so unknown text still varies by hash).
func buildScene(rng *rand.Rand, text string) scene {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) })
	has := make(map[string]bool, len(words))
	for _, w := range words {
		has[w] = true
		// crude singular so "woods", "pastels", "flowers" match too.
		if len(w) > 3 && strings.HasSuffix(w, "s") {
			has[strings.TrimSuffix(w, "s")] = true
		}
	}
	hasAny := func(ws ...string) bool {
		for _, w := range ws {
			if has[w] {
				return true
			}
		}
		return false
	}

	// Hash-driven defaults.
	hue := rng.Float64() * 360
	sat := 0.08 + rng.Float64()*0.17
	lig := 0.72 + rng.Float64()*0.16
	mats := [...]material{matPlain, matPlain, matConcrete, matFabric, matWood, matMarble}
	mat := mats[rng.IntN(len(mats))]
	sc := scene{
		horizon:     0.60 + rng.Float64()*0.10,
		soft:        0.004,
		vignette:    0.16 + rng.Float64()*0.12,
		grain:       1.6 + rng.Float64()*1.4,
		keyX:        0.5 + (rng.Float64()-0.5)*0.6,
		keyStrength: 0.10 + rng.Float64()*0.08,
		shadow:      1,
		noise:       rng.Uint32(),
		light:       rgb{1, 1, 1},
	}
	floorHueShift := (rng.Float64() - 0.5) * 30
	floorLig := 0.82 + rng.Float64()*0.12
	jitter := rng.Float64() // spare randomness for material colours

	// Colour words (circular mean of the hues named).
	var hx, hy, csat, clig float64
	nCol, nLig := 0, 0
	for _, w := range words {
		c, ok := colourWord[w]
		if !ok {
			continue
		}
		hx += math.Cos(c[0] * math.Pi / 180)
		hy += math.Sin(c[0] * math.Pi / 180)
		csat += c[1]
		nCol++
		if c[2] >= 0 {
			clig += c[2]
			nLig++
		}
	}
	warm := hasAny("warm", "cozy", "cosy", "autumn", "fall", "sunny", "golden", "amber", "rustic", "candle")
	cool := hasAny("cool", "cold", "winter", "icy", "ice", "fresh", "frost", "arctic", "clinical")
	switch {
	case nCol > 0:
		hue = math.Atan2(hy, hx) * 180 / math.Pi
		sat = csat / float64(nCol)
		if nLig > 0 {
			lig = clig / float64(nLig)
		}
	case warm:
		hue = 18 + rng.Float64()*30
		sat = math.Max(sat, 0.22)
	case cool:
		hue = 190 + rng.Float64()*40
		sat = math.Max(sat, 0.16)
	}
	if warm {
		sc.light = rgb{1, 0.9, 0.76}
	} else if cool {
		sc.light = rgb{0.84, 0.92, 1}
	}
	if hasAny("pastel", "spring", "candy", "baby") {
		sat = 0.28 + jitter*0.12
		lig = 0.84 + jitter*0.06
	}
	minimal := hasAny("minimal", "minimalist", "minimalistic", "clean", "simple", "ecommerce", "catalog", "catalogue")
	studio := hasAny("studio", "seamless", "backdrop", "cyclorama", "packshot")
	if minimal {
		sat *= 0.35
		lig = min(max(lig, 0.86), 0.9)
		sc.vignette = 0.07
		mat = matPlain
	}
	if studio || minimal {
		sc.soft = 0.05 + jitter*0.03 // seamless sweep
		if !minimal && nCol == 0 {
			sat *= 0.5
		}
		sc.keyStrength += 0.06
		mat = matPlain
	}
	dark := hasAny("dark", "night", "moody", "noir", "black", "dramatic", "midnight", "luxury", "premium", "elegant")
	if dark {
		sc.dark = true
		lig = 0.13 + jitter*0.1
		if nLig > 0 && clig/float64(nLig) < lig {
			lig = clig / float64(nLig)
		}
		sc.vignette = 0.42 + jitter*0.15
		sc.keyStrength = 0.6 + jitter*0.3
		floorLig = 1.15 + jitter*0.2
	}
	if hasAny("bright", "airy", "daylight", "whitewashed") && !dark {
		lig = math.Max(lig, 0.86)
		sc.vignette *= 0.6
	}

	// Materials.
	switch {
	case hasAny("wood", "wooden", "oak", "walnut", "table", "rustic", "timber", "cabin", "lifestyle", "home", "cozy", "cosy"):
		mat = matWood
	case hasAny("marble", "stone", "granite", "luxury", "bathroom", "spa", "kitchen", "countertop", "elegant"):
		mat = matMarble
	case hasAny("beach", "sand", "desert", "dune", "summer", "tropical", "coast", "seaside"):
		mat = matSand
	case hasAny("concrete", "industrial", "urban", "cement", "loft", "street", "city"):
		mat = matConcrete
	case hasAny("grass", "garden", "lawn", "meadow", "park", "moss", "field"):
		mat = matGrass
	case hasAny("fabric", "linen", "textile", "cloth", "cotton", "silk", "velvet", "bed", "bedroom"):
		mat = matFabric
	}

	wall := hsl(hue, sat, lig)
	sc.wallTop = hsl(hue, sat, lig*(0.86+jitter*0.06))
	sc.wallBottom = hsl(hue, sat*0.95, math.Min(lig*1.05, 0.94))
	floor := hsl(hue+floorHueShift, sat*0.85, math.Min(lig*floorLig, 0.95))
	alt := floor.scale(0.8)
	switch mat {
	case matWood:
		wl := 0.36 + jitter*0.14
		switch {
		case dark:
			wl = 0.2 + jitter*0.08
		case minimal || has["pastel"] || has["light"] || has["oak"]:
			wl = 0.6 + jitter*0.1
		case has["walnut"]:
			wl = 0.26
		}
		floor = hsl(22+jitter*14, 0.38+jitter*0.14, wl)
		alt = hsl(20+jitter*10, 0.45, wl*0.62)
	case matMarble:
		if dark {
			floor = hsl(hue, 0.05, 0.13+jitter*0.05)
			alt = hsl(hue+20, 0.1, 0.55)
		} else {
			floor = hsl(hue, 0.05, 0.88+jitter*0.06)
			alt = hsl(hue+180, 0.06, 0.5+jitter*0.1)
		}
		sc.reflect = 0.13
	case matSand:
		floor = hsl(36+jitter*10, 0.42, 0.74+jitter*0.06)
		alt = hsl(32, 0.4, 0.6)
	case matConcrete:
		cl := 0.55 + jitter*0.12
		if dark {
			cl = 0.24 + jitter*0.06
		}
		floor = hsl(hue, 0.03+sat*0.2, cl)
		alt = floor.scale(0.78)
	case matGrass:
		floor = hsl(95+jitter*25, 0.45, 0.34)
		alt = hsl(80, 0.5, 0.2)
	case matFabric:
		floor = hsl(hue+floorHueShift, sat*0.8+0.04, math.Min(lig*0.95, 0.9))
		alt = floor.scale(0.82)
	default:
		if studio || minimal {
			floor = hsl(hue, sat, math.Min(lig*1.03, 0.96))
			alt = floor
		}
	}

	// Outdoor scenes: a sky instead of a wall, plus a distant band.
	beach := hasAny("beach", "sea", "ocean", "coast", "seaside", "tropical", "summer")
	sunset := hasAny("sunset", "sunrise", "dusk", "dawn")
	outdoor := beach || sunset || hasAny("outdoor", "outdoors", "outside", "nature", "sky", "garden", "park", "mountain", "field", "meadow")
	forest := hasAny("forest", "jungle", "woods", "woodland", "tree", "botanical", "plant", "leaf", "leaves")
	switch {
	case forest:
		g := 100 + jitter*40
		sc.wallTop = hsl(g+20, 0.35, 0.16+jitter*0.06)
		sc.wallBottom = hsl(g, 0.3, 0.34+jitter*0.08)
		sc.bokeh = 28 + rng.IntN(14)
		sc.bokehCol = hsl(70, 0.6, 0.8)
		sc.light = rgb{0.95, 1, 0.86}
		sc.vignette = math.Max(sc.vignette, 0.3)
		if mat == matPlain || mat == matFabric || mat == matConcrete {
			mat = matWood
			floor = hsl(24, 0.35, 0.3+jitter*0.1)
			alt = hsl(20, 0.4, 0.18)
		}
		sc.soft = 0.004
	case outdoor:
		sc.sky = true
		sc.soft = 0.002
		sc.wallTop = hsl(208+jitter*12, 0.55, 0.5+jitter*0.08)
		sc.wallBottom = hsl(200, 0.45, 0.86)
		if sunset {
			sc.wallTop = hsl(255, 0.3, 0.38)
			sc.wallBottom = hsl(26, 0.85, 0.7)
			sc.light = rgb{1, 0.82, 0.62}
		}
		if dark {
			sc.wallTop = hsl(230, 0.45, 0.08)
			sc.wallBottom = hsl(225, 0.35, 0.22)
			sc.bokeh = 20 + rng.IntN(16)
			sc.bokehCol = hsl(40, 0.7, 0.75)
		}
		if beach {
			sc.band = 0.05 + jitter*0.03
			sc.bandCol = hsl(192, 0.55, 0.42)
			sc.bandFlat = true
			if mat != matWood {
				mat = matSand
				floor = hsl(36+jitter*10, 0.42, 0.74+jitter*0.06)
				alt = hsl(32, 0.4, 0.6)
			}
		} else {
			sc.band = 0.06 + jitter*0.05
			sc.bandCol = mix(hsl(120+jitter*40, 0.22, 0.45), sc.wallBottom, 0.45)
			if mat == matPlain || mat == matFabric {
				mat = matConcrete
				floor = hsl(30, 0.1, 0.6)
				alt = floor.scale(0.78)
			}
		}
		sc.keyStrength *= 0.4
	}
	if hasAny("christmas", "xmas", "festive", "holiday", "party", "bokeh", "celebration", "sparkle", "glitter") {
		sc.bokeh = 30 + rng.IntN(20)
		sc.bokehCol = hsl(42, 0.8, 0.72)
		if nCol == 0 && !sc.sky {
			fh := []float64{352, 140}[rng.IntN(2)] // deep red or pine green
			sc.wallTop = hsl(fh, 0.45, 0.14)
			sc.wallBottom = hsl(fh, 0.4, 0.3)
			floor, alt = floor.scale(0.6), alt.scale(0.6)
		}
		if sc.light == (rgb{1, 1, 1}) {
			sc.light = rgb{1, 0.92, 0.8}
		}
	}
	if sc.bokeh == 0 && sc.dark && rng.IntN(2) == 0 {
		sc.bokeh = 10 + rng.IntN(10)
		sc.bokehCol = mix(wall, rgb{1, 1, 1}, 0.6)
	}
	if glossy := hasAny("glass", "glossy", "mirror", "acrylic", "reflection", "reflective", "shiny"); glossy {
		sc.reflect = math.Max(sc.reflect, 0.18)
	}
	if sc.dark {
		sc.shadow = 1.3
	}

	// Nudge the light towards the wall colour so tinting matches the scene,
	// then normalise its luminance.
	sc.light = mix(sc.light, mix(rgb{1, 1, 1}, wall, 0.5), 0.2)
	if l := sc.light.lum(); l > 0 {
		sc.light = sc.light.scale(1 / l)
	}
	sc.mat = mat
	sc.floorFar = mix(floor.scale(0.93), sc.wallBottom, 0.12)
	sc.floorNear = floor
	sc.floorAlt = alt
	return sc
}

// hash32 is a small integer hash (lowbias32).
func hash32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// lattice returns a pseudo-random value in [0, 1) for an integer lattice point.
func lattice(ix, iy int32, seed uint32) float64 {
	return float64(hash32(uint32(ix)*0x27d4eb2d^hash32(uint32(iy)+seed))) * (1.0 / 4294967296.0)
}

// vnoise is smooth 2-D value noise in [0, 1).
func vnoise(x, y float64, seed uint32) float64 {
	fx, fy := math.Floor(x), math.Floor(y)
	ix, iy := int32(fx), int32(fy)
	tx, ty := x-fx, y-fy
	sx, sy := tx*tx*(3-2*tx), ty*ty*(3-2*ty)
	a := lattice(ix, iy, seed)
	b := lattice(ix+1, iy, seed)
	c := lattice(ix, iy+1, seed)
	d := lattice(ix+1, iy+1, seed)
	top := a + (b-a)*sx
	bot := c + (d-c)*sx
	return top + (bot-top)*sy
}

// fbm sums octaves of value noise, normalised to [0, 1).
func fbm(x, y float64, oct int, seed uint32) float64 {
	sum, amp, norm := 0.0, 1.0, 0.0
	for i := 0; i < oct; i++ {
		sum += amp * vnoise(x, y, seed+uint32(i)*0x9e3779b9)
		norm += amp
		amp *= 0.5
		x, y = x*2.03, y*2.03
	}
	return sum / norm
}

// floorTexture returns (alt-colour mix, brightness multiplier) for the floor
// material at perspective coordinates u (across) and v (depth).
func (sc *scene) floorTexture(u, v float64, px, py int) (float64, float64) {
	s := sc.noise
	// detail fades fine structure out towards the horizon (anti-aliasing).
	detail := clamp01(1.6 - v/2.5)
	switch sc.mat {
	case matWood:
		const plankW = 0.22
		pu := u / plankW
		p := math.Floor(pu)
		local := pu - p
		ph := hash32(uint32(int32(p)) ^ s)
		tint := 0.92 + 0.16*float64(ph&0xffff)/65535
		warp := fbm(u*5, v*0.7, 2, s+7)
		ring := math.Abs(math.Sin((u*38 + warp*9) + float64(ph>>16&0xff)))
		grain := 0.5*ring*ring + 0.5*vnoise(u*90, v*3, s+3)
		t := 0.22 + 0.4*(0.5+(grain-0.5)*detail)
		m := tint * (1 - 0.05*fbm(u*3, v*1.2, 2, s+11))
		edge := math.Min(local, 1-local) * plankW * sc.fh / v // pixels to the seam
		if edge < 1.2 {
			m *= 0.78 + 0.22*edge/1.2
		}
		joint := math.Mod(v/1.6+float64(ph>>8&0xff)/255, 1)
		if jd := math.Min(joint, 1-joint) * 1.6 * camH * sc.fh / (v * v); jd < 1 {
			m *= 0.82 + 0.18*jd
		}
		return t, m
	case matMarble:
		n := fbm(u*1.3, v*1.3, 4, s)
		vein := math.Abs(math.Sin((u*2.1+v*0.8)*2.6 + n*7))
		fine := math.Abs(math.Sin((u*-1.4+v*2.3)*4.1 + n*11))
		cloud := fbm(u*0.6+3, v*0.6, 2, s+5)
		t := 0.5*math.Pow(1-vein, 10) + 0.25*detail*math.Pow(1-fine, 28) + 0.2*cloud
		return math.Min(t, 1), 0.96 + 0.07*n
	case matSand:
		n := fbm(u*7, v*7, 2, s)
		rip := 0.5 + 0.5*math.Sin(v*28+u*4+n*5)
		spk := float64(hash32(uint32(px)*0x9e3779b1^uint32(py)*0x85ebca77^s)&0xff)/255 - 0.5
		return 0.25*n + 0.2*rip*detail, 0.96 + (0.05*rip+0.06*spk)*detail
	case matConcrete:
		n := fbm(u*2.5, v*2.5, 3, s)
		spk := float64(hash32(uint32(px)*0x9e3779b1^uint32(py)*0x85ebca77^s)&0xff)/255 - 0.5
		return 0.35 * n, 0.9 + 0.16*n + 0.05*spk
	case matGrass:
		n := fbm(u*18, v*3, 2, s)
		spk := float64(hash32(uint32(px)*0x9e3779b1^uint32(py)*0x85ebca77^s)&0xff) / 255
		return 0.5*n + 0.5*(0.5+(spk-0.5)*detail), 0.85 + 0.3*n
	case matFabric:
		n := fbm(u*2, v*2, 2, s)
		weave := math.Sin(u*260) * math.Sin(v*260) * clamp01(1.6-v)
		return 0.3 * n, 1 + 0.035*weave + 0.05*(n-0.5)
	}
	n := vnoise(u*1.6, v*1.6, s)
	return 0, 1 + 0.035*(n-0.5)
}

// camH is the virtual camera height above the floor (in canvas heights).
const camH = 0.3

// renderScene paints the procedural backdrop into the opaque canvas pix.
// (cx, baseY) is where the product will stand, for the floor light pool.
func renderScene(pix []uint8, stride, W, H int, sc *scene, cx, baseY float64) {
	fw, fh := float64(W), float64(H)
	unit := fh / 1024 // texture scale relative to a 1024px-high canvas
	// Separable light terms: backdrop key light and floor light pool.
	colKey := make([]float64, W)
	colPool := make([]float64, W)
	for x := range W {
		dx := ((float64(x)+0.5)/fw - sc.keyX) * fw / fh
		colKey[x] = math.Exp(-dx * dx / (2 * 0.3 * 0.3))
		dp := (float64(x) + 0.5 - cx) / fh
		colPool[x] = math.Exp(-dp * dp / (2 * 0.28 * 0.28))
	}
	hz := sc.horizon
	bandTop := make([]float64, W)
	if sc.band > 0 {
		for x := range W {
			bt := hz - sc.band
			if !sc.bandFlat {
				bt = hz - sc.band*(0.45+0.55*fbm(float64(x)/fw*5, 0.5, 3, sc.noise+99))
			}
			bandTop[x] = bt
		}
	}
	sc.fh = fh
	for y := range H {
		fy := (float64(y) + 0.5) / fh
		row := pix[y*stride : y*stride+W*4]
		wt := smoothstep(0, hz, fy)
		wallRow := mix(sc.wallTop, sc.wallBottom, wt)
		wallLum := wallRow.lum()
		dyk := (fy - 0.36) / 0.34
		keyRow := sc.keyStrength * math.Exp(-dyk*dyk/2)
		blend := smoothstep(hz-sc.soft, hz+sc.soft, fy)
		ao := 1.0
		if sc.soft < 0.01 {
			ao = 1 - 0.07*math.Exp(-math.Abs(fy-hz)/0.012)
		}
		// Floor perspective for this row.
		d := math.Max(fy-hz, 0.0015)
		z := camH / d
		fade := smoothstep(0.0, 0.06, d)
		floorRow := mix(sc.floorFar, sc.floorNear, smoothstep(0, 1-hz, d))
		dpy := (fy - baseY/fh) / 0.09
		poolRow := 0.10 * math.Exp(-dpy*dpy/2)
		if sc.dark {
			poolRow *= 2
		}
		for x := range W {
			var c rgb
			if blend < 1 {
				wc := wallRow
				if !sc.sky {
					n := vnoise(float64(x)/(90*unit), float64(y)/(90*unit), sc.noise+1)
					k := keyRow * colKey[x]
					wc = wc.scale(1 + 0.025*(n-0.5) + k*math.Min(1, 2.2*(1-wallLum)))
				} else {
					wc = wc.scale(1 + 0.5*keyRow*colKey[x])
				}
				if sc.band > 0 && fy >= bandTop[x] && fy < hz {
					bt := smoothstep(bandTop[x], bandTop[x]+1.5/fh, fy)
					k := 0.85 + 0.15*(fy-bandTop[x])/sc.band
					wc = mix(wc, sc.bandCol.scale(k), bt)
				}
				c = wc
			}
			if blend > 0 {
				u := (float64(x) + 0.5 - fw/2) / fh * z
				t, m := sc.floorTexture(u, z, x, y)
				t, m = t*fade, 1+(m-1)*fade
				fc := mix(floorRow, sc.floorAlt, t).scale(m * (1 + poolRow*colPool[x]))
				c = mix(c, fc, blend)
			}
			c = c.scale(ao)
			p := row[x*4 : x*4+4 : x*4+4]
			p[0] = to8(c.r * 255)
			p[1] = to8(c.g * 255)
			p[2] = to8(c.b * 255)
			p[3] = 255
		}
	}
}

// drawBokeh adds soft out-of-focus light discs to the backdrop (screen blend).
func drawBokeh(pix []uint8, stride, W, H int, sc *scene, rng *rand.Rand) {
	fw, fh := float64(W), float64(H)
	for range sc.bokeh {
		r := (0.012 + rng.Float64()*0.04) * math.Max(fw, fh)
		cx := rng.Float64() * fw
		cy := (0.03 + rng.Float64()*(sc.horizon-sc.band-0.08)) * fh
		alpha := 0.05 + rng.Float64()*0.13
		col := mix(sc.bokehCol, rgb{1, 1, 1}, rng.Float64()*0.3)
		x0, x1 := max(int(cx-r), 0), min(int(cx+r)+1, W)
		y0, y1 := max(int(cy-r), 0), min(int(cy+r)+1, H)
		for y := y0; y < y1; y++ {
			dy := float64(y) + 0.5 - cy
			for x := x0; x < x1; x++ {
				dx := float64(x) + 0.5 - cx
				dd := math.Sqrt(dx*dx+dy*dy) / r
				if dd >= 1 {
					continue
				}
				a := alpha * (1 - smoothstep(0.82, 1, dd)) * (0.8 + 0.2*dd)
				p := pix[y*stride+x*4 : y*stride+x*4+3 : y*stride+x*4+3]
				p[0] = to8(255 - (255-float64(p[0]))*(1-a*col.r))
				p[1] = to8(255 - (255-float64(p[1]))*(1-a*col.g))
				p[2] = to8(255 - (255-float64(p[2]))*(1-a*col.b))
			}
		}
	}
}
