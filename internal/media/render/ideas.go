package render

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
)

// IdeaKind says what an Idea image shows.
type IdeaKind string

// The kinds of idea images.
const (
	// IdeaModel is an AI fashion model: a stylised figure standing in a set.
	IdeaModel IdeaKind = "model"
	// IdeaScenery is an empty set to photograph products in.
	IdeaScenery IdeaKind = "scenery"
)

// IdeaOptions configures one Idea render.
type IdeaOptions struct {
	AspectRatio string // "W:H", e.g. "4:5"; empty means "1:1"
	LongEdge    int    // long-edge pixels; 0 means DefaultLongEdge
	Seed        int64  // variation seed, hashed together with the preferences text
}

// Idea renders an idea image of kind from an account's free-text preferences,
// returning an opaque image of exactly CanvasSize(opts.AspectRatio,
// opts.LongEdge) pixels. Same kind, text and options, same pixels; a
// different seed or text gives a different image.
//
// A scenery is the procedural set Backdrop renders for the text (so the
// vocabulary of PhotoShoot's Style applies: "marble", "beach", "forest",
// "warm", "night", "minimal", colour names…). A model is a stylised,
// featureless figure in such a set, full-length unless the text asks for a
// "portrait" or "half" body. The text picks its traits: gender ("woman",
// "man"), build ("tall", "petite", "slim", "curvy", "sporty"), style
// ("elegant", "casual", "sporty"), garments ("dress", "skirt", "jeans",
// "coat"…), hair ("long", "bob", "bun", "curly", "bald", "blonde", "dark
// hair"…), skin ("fair skin", "dark skin"), "mannequin", and colours: a
// colour word goes to the garment, hair, skin or set named after it ("navy
// dress", "light grey studio"), or to the main garment when it names none.
// The seed settles everything the text leaves open.
func Idea(kind IdeaKind, preferences string, opts IdeaOptions) (*image.NRGBA, error) {
	switch kind {
	case IdeaScenery:
		return Backdrop(PhotoShootOptions{AspectRatio: opts.AspectRatio, LongEdge: opts.LongEdge, Seed: opts.Seed, Style: preferences})
	case IdeaModel:
		img, _, err := modelIdea(preferences, opts)
		return img, err
	}
	return nil, fmt.Errorf("render: Idea: unknown kind %q", kind)
}

// modelIdea renders a model idea and also reports the figure's rectangle on
// the canvas (clipped to it).
func modelIdea(preferences string, opts IdeaOptions) (*image.NRGBA, image.Rectangle, error) {
	W, H, err := CanvasSize(opts.AspectRatio, opts.LongEdge)
	if err != nil {
		return nil, image.Rectangle{}, err
	}
	s1, s2 := seeds(PhotoShootOptions{Seed: opts.Seed, Style: string(IdeaModel), Suggestions: preferences})
	rng := rand.New(rand.NewPCG(s1, s2))
	p := parsePrefs(preferences)
	sc := buildScene(rng, strings.Join(p.scene, " "))
	l := resolveLook(rng, &p)
	parts := l.parts()
	fw, fh := float64(W), float64(H)
	hz := sc.horizon * fh
	baseY := hz + (fh-hz)*0.62

	// Figure units: the figure is 1 high (top of the head at 0, soles at 1)
	// and centred on x = 0; fit its extent into the canvas.
	box := parts[0].box
	for _, pt := range parts[1:] {
		box = box.union(pt.box)
	}
	scale := math.Min(0.8*fh, baseY-0.06*fh)
	cut := l.crotchY() + 0.6/l.heads // where a half-body figure leaves the canvas
	if l.halfBody {
		scale = 0.9 * fh / cut
	}
	scale = math.Min(scale, 0.92*fw/(box.x1-box.x0))
	ox := fw/2 - (box.x0+box.x1)/2*scale
	oy := baseY - scale
	if l.halfBody {
		oy = fh - cut*scale
	}
	rect := image.Rect(int(math.Floor(ox+box.x0*scale))-1, int(math.Floor(oy+box.y0*scale))-1,
		int(math.Ceil(ox+box.x1*scale))+1, int(math.Ceil(oy+box.y1*scale))+1).Intersect(image.Rect(0, 0, W, H))
	layer := newRaster(rect.Dx(), rect.Dy())
	paint(layer, parts, ox-float64(rect.Min.X), oy-float64(rect.Min.Y), scale)

	out := image.NewNRGBA(image.Rect(0, 0, W, H))
	renderScene(out.Pix, out.Stride, W, H, &sc, fw/2, baseY)
	drawBokeh(out.Pix, out.Stride, W, H, &sc, rng)
	dir := 1.0
	if sc.keyX < 0.5 {
		dir = -1
	}
	tint := rgb{1 + 0.10*(sc.light.r-1), 1 + 0.10*(sc.light.g-1), 1 + 0.10*(sc.light.b-1)}
	if !l.halfBody {
		drawShadow(out, layer, rect.Min.X, rect.Min.Y, baseY, dir, sc.shadow)
		if sc.reflect > 0 {
			drawReflection(out, layer, rect.Min.X, rect.Min.Y, sc.reflect, tint)
		}
	}
	composite(out, layer, rect.Min.X, rect.Min.Y, tint, dir)
	finish(out, sc.vignette, sc.grain, uint32(s1>>32)^uint32(s2))
	return out, rect, nil
}

// target is what a colour or length word in a preferences text describes.
type target int

const (
	tNone    target = iota
	tTop            // shirt, blouse, sweater…
	tBottom         // trousers, jeans, skirt…
	tDress          // dress, gown
	tOuter          // jacket, coat
	tOutfit         // suit, outfit: top and bottom alike
	tHair           // hair, bob, bun…
	tSkin           // skin, complexion
	tShoes          // shoes, sneakers, heels…
	tSleeves        // sleeves
	tSet            // studio, backdrop, wall: the scene's colour
)

// targets maps nouns to what they name.
var targets = map[string]target{
	"shirt": tTop, "tshirt": tTop, "tee": tTop, "top": tTop, "blouse": tTop, "sweater": tTop, "jumper": tTop,
	"hoodie": tTop, "sweatshirt": tTop, "knit": tTop, "polo": tTop, "tank": tTop, "turtleneck": tTop, "vest": tTop,
	"trousers": tBottom, "pants": tBottom, "jeans": tBottom, "chinos": tBottom, "leggings": tBottom, "slacks": tBottom,
	"joggers": tBottom, "shorts": tBottom, "skirt": tBottom,
	"dress": tDress, "gown": tDress,
	"jacket": tOuter, "blazer": tOuter, "coat": tOuter, "trench": tOuter, "overcoat": tOuter, "parka": tOuter,
	"cardigan": tOuter, "bomber": tOuter,
	"suit": tOutfit, "outfit": tOutfit, "jumpsuit": tOutfit, "tracksuit": tOutfit, "clothes": tOutfit,
	"clothing": tOutfit, "attire": tOutfit, "uniform": tOutfit,
	"hair": tHair, "bob": tHair, "bun": tHair, "ponytail": tHair, "curls": tHair, "braid": tHair, "afro": tHair,
	"skin": tSkin, "skinned": tSkin, "complexion": tSkin,
	"shoes": tShoes, "sneakers": tShoes, "trainers": tShoes, "boots": tShoes, "heels": tShoes, "loafers": tShoes,
	"sandals": tShoes,
	"sleeve":  tSleeves, "sleeves": tSleeves, "sleeved": tSleeves,
	"studio": tSet, "backdrop": tSet, "background": tSet, "wall": tSet, "set": tSet, "room": tSet, "seamless": tSet,
}

// fashionColour adds garment colour names scene.go's colourWord lacks (same
// layout: hue, saturation, lightness).
var fashionColour = map[string][3]float64{
	"camel": {33, 0.4, 0.55}, "khaki": {50, 0.3, 0.55}, "denim": {215, 0.15, 0.4}, "maroon": {350, 0.5, 0.27},
	"wine": {345, 0.45, 0.3}, "rust": {18, 0.6, 0.42}, "blush": {350, 0.45, 0.84}, "mauve": {300, 0.18, 0.6},
	"plum": {300, 0.3, 0.3}, "tan": {30, 0.35, 0.55}, "nude": {25, 0.35, 0.78}, "fuchsia": {318, 0.6, 0.5},
}

// modifiers qualify the colour or target that follows them.
var modifiers = map[string]bool{
	"light": true, "dark": true, "pale": true, "deep": true, "bright": true, "pastel": true, "soft": true,
	"muted": true, "dusty": true, "fair": true, "medium": true, "tanned": true, "porcelain": true,
}

// colourOf looks a colour word up.
func colourOf(w string) ([3]float64, bool) {
	if c, ok := colourWord[w]; ok {
		return c, true
	}
	c, ok := fashionColour[w]
	return c, ok
}

// targetOf looks a noun up, trying a crude singular too.
func targetOf(w string) target {
	if t, ok := targets[w]; ok {
		return t
	}
	if len(w) > 3 && strings.HasSuffix(w, "s") {
		return targets[w[:len(w)-1]]
	}
	return tNone
}

// tint is a colour asked for: a colour word (possibly empty) and the
// modifiers before it.
type tint struct {
	word string
	mods []string
}

// has reports whether modifier m qualifies the tint.
func (t tint) has(m string) bool { return slices.Contains(t.mods, m) }

// prefs is a parsed preferences text.
type prefs struct {
	words   map[string]bool   // every word, and its crude singular
	tints   map[target]tint   // the first colour named for each target
	free    []tint            // colours named for no target, in order
	lengths map[target]string // "long", "short", "maxi", "mini" said of a target
	petite  bool              // "short" said of the figure itself
	scene   []string          // the words that describe the set
}

// parsePrefs splits text into clauses (at punctuation) and words, attaches
// every colour (with its modifiers) and length word to the first target noun
// after it in its clause, else the nearest one before it, and keeps for the
// scene every word not spent on the figure (its colours, lengths and the
// nouns of its parts), adding "studio" when none of them names a setting.
func parsePrefs(text string) prefs {
	p := prefs{words: map[string]bool{}, tints: map[target]tint{}, lengths: map[target]string{}}
	clauses := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return strings.ContainsRune(",;.!?:()\n", r) })
	for _, clause := range clauses {
		ws := strings.FieldsFunc(clause, func(r rune) bool { return !unicode.IsLetter(r) })
		for _, w := range ws {
			p.words[w] = true
			if len(w) > 3 && strings.HasSuffix(w, "s") {
				p.words[strings.TrimSuffix(w, "s")] = true
			}
		}
		spent := make([]bool, len(ws))
		attach := func(i int) target {
			for j := i + 1; j < len(ws); j++ {
				if t := targetOf(ws[j]); t != tNone {
					return t
				}
			}
			for j := i - 1; j >= 0; j-- {
				if t := targetOf(ws[j]); t != tNone {
					return t
				}
			}
			return tNone
		}
		for i := 0; i < len(ws); i++ {
			w := ws[i]
			switch {
			case w == "long" || w == "short" || w == "maxi" || w == "mini":
				t := attach(i)
				switch t {
				case tHair, tDress, tBottom, tOuter, tSleeves:
					if _, ok := p.lengths[t]; !ok {
						p.lengths[t] = w
					}
				case tNone:
					p.petite = p.petite || w == "short"
				}
				spent[i] = true
			case modifiers[w] || isColour(w):
				// A run of modifiers ending in a colour word or a target noun.
				j := i
				for j < len(ws) && modifiers[ws[j]] {
					j++
				}
				t := tint{mods: ws[i:j]}
				switch {
				case j < len(ws) && isColour(ws[j]):
					t.word = ws[j]
				case j < len(ws) && targetOf(ws[j]) != tNone:
					j-- // the target itself is not spent
				default:
					continue // mood words such as "dark moody": the scene's
				}
				tg := attach(j)
				if tg == tSet {
					i = j
					continue
				}
				if tg == tNone {
					p.free = append(p.free, t)
				} else if _, ok := p.tints[tg]; !ok {
					p.tints[tg] = t
				}
				for k := i; k <= j; k++ {
					spent[k] = true
				}
				i = j
			}
		}
		for i, w := range ws {
			if t := targetOf(w); !spent[i] && (t == tNone || t == tSet) {
				p.scene = append(p.scene, w)
			}
		}
	}
	if !slices.ContainsFunc(p.scene, isSetting) {
		p.scene = append(p.scene, "studio")
	}
	return p
}

// isColour reports whether w is a colour word.
func isColour(w string) bool {
	_, ok := colourOf(w)
	return ok
}

// settingWords name a place or set; a model idea without one stands in a
// studio.
var settingWords = []string{
	"studio", "backdrop", "background", "wall", "room", "seamless", "cyclorama", "beach", "sea", "ocean",
	"coast", "seaside", "tropical", "forest", "jungle", "wood", "woods", "woodland", "garden", "park", "meadow",
	"field", "outdoor", "outdoors", "outside", "nature", "mountain", "sky", "city", "street", "urban",
	"industrial", "loft", "concrete", "kitchen", "bathroom", "bedroom", "home", "marble", "wooden", "desert",
	"dune", "sand", "sunset", "sunrise", "spa", "table", "grass", "lawn",
}

// isSetting reports whether w names a place or set.
func isSetting(w string) bool { return slices.Contains(settingWords, w) }

// any reports whether the text has any of ws.
func (p *prefs) any(ws ...string) bool {
	return slices.ContainsFunc(ws, func(w string) bool { return p.words[w] })
}

// Garment kinds of a look's lower half.
const (
	gTrousers = iota
	gShorts
	gSkirt
	gDress
)

// Hair styles.
const (
	hairShort = iota
	hairLong
	hairBob
	hairBun
	hairCurly
	hairBald
)

// Arm poses: where the wrist goes.
const (
	armDown   = iota // hanging, slightly away from the body
	armHip           // hand on the hip, elbow out
	armPocket        // hand in a pocket
	armHead          // hand raised to the back of the head
)

// Outer layers.
const (
	outerNone = iota
	outerJacket
	outerCoat
)

// look is a fully resolved fashion model figure.
type look struct {
	female, mannequin, halfBody bool
	heads                       float64 // height in head heights (7 to 8.2)
	build                       float64 // width factor (about 0.85 to 1.2)
	skin, hair                  rgb
	hairStyle                   int
	top, bottom, outer, shoes   rgb
	garment                     int
	hem                         float64 // skirt or dress hem, in figure units
	outerKind                   int
	sleeves                     float64 // sleeve length as a fraction of the arm: 0, 0.45 or 1
	arms                        [2]int  // left and right arm poses
	stance, shift, tilt         float64 // feet half-distance, hip shift, head tilt (head units)
}

// Palettes the seed picks from when the text names nothing.
var (
	skinTones = []rgb{
		{0.95, 0.84, 0.76}, {0.91, 0.77, 0.66}, {0.88, 0.73, 0.56}, {0.79, 0.6, 0.45},
		{0.63, 0.41, 0.29}, {0.42, 0.26, 0.15}, {0.29, 0.18, 0.11},
	}
	mannequinTones = []rgb{{0.93, 0.92, 0.9}, {0.75, 0.75, 0.76}, {0.84, 0.7, 0.55}, {0.17, 0.17, 0.18}}
	hairShades     = []rgb{hsl(25, 0.12, 0.07), hsl(22, 0.35, 0.12), hsl(24, 0.45, 0.22), hsl(30, 0.4, 0.36), hsl(44, 0.55, 0.64), hsl(16, 0.6, 0.36)}
	tops           = []rgb{
		hsl(40, 0.3, 0.92), hsl(0, 0, 0.12), hsl(222, 0.45, 0.25), hsl(210, 0.05, 0.33), hsl(33, 0.4, 0.55),
		hsl(75, 0.25, 0.38), hsl(350, 0.45, 0.3), hsl(15, 0.5, 0.5), hsl(100, 0.15, 0.62), hsl(350, 0.4, 0.8),
		hsl(205, 0.35, 0.6), hsl(45, 0.6, 0.55),
	}
	bottoms = []rgb{
		hsl(215, 0.35, 0.38), hsl(0, 0, 0.12), hsl(210, 0.05, 0.3), hsl(222, 0.4, 0.22), hsl(35, 0.25, 0.75),
		hsl(40, 0.1, 0.92), hsl(50, 0.3, 0.55), hsl(75, 0.25, 0.35),
	}
	outers = []rgb{hsl(33, 0.4, 0.52), hsl(222, 0.4, 0.22), hsl(210, 0.05, 0.28), hsl(0, 0, 0.1), hsl(75, 0.25, 0.33), hsl(350, 0.4, 0.28)}
)

// pick returns a random element of s.
func pick[T any](rng *rand.Rand, s []T) T { return s[rng.IntN(len(s))] }

// resolveLook settles every trait of the figure: what the text says, and the
// seed for the rest (a fixed number of draws, whatever the text says).
func resolveLook(rng *rand.Rand, p *prefs) look {
	r := func() float64 { return rng.Float64() }
	dice := [16]float64{}
	for i := range dice {
		dice[i] = r()
	}
	var l look
	male := p.any("man", "men", "male", "masculine", "boy", "guy", "gentleman", "gent", "menswear", "he", "his", "him", "beard", "bearded")
	female := p.any("woman", "women", "female", "feminine", "girl", "lady", "ladies", "womenswear", "she", "her")
	l.female = female && !male || female == male && dice[0] < 0.5
	sporty := p.any("sporty", "athletic", "sport", "fit", "fitness", "active", "gym", "running", "activewear", "athleisure", "sportswear", "yoga")
	elegant := p.any("elegant", "formal", "chic", "classy", "sophisticated", "glamorous", "evening", "luxury", "business", "office", "smart", "tailored")
	casual := p.any("casual", "relaxed", "everyday", "streetwear", "weekend", "laid")
	l.mannequin = p.any("mannequin", "dummy", "faceless", "manikin")
	l.halfBody = p.any("portrait", "half", "upper", "headshot", "bust", "closeup") && !p.any("full")

	// Body.
	l.heads = 7.4 + 0.4*dice[1]
	l.build = 0.97 + 0.08*dice[2]
	switch {
	case p.any("tall", "statuesque", "lanky", "leggy"):
		l.heads, l.build = 8.1, l.build*0.96
	case p.petite || p.any("petite", "small", "tiny"):
		l.heads, l.build = 6.9, l.build*0.95
	}
	switch {
	case p.any("slim", "slender", "thin", "skinny", "lean", "willowy"):
		l.build *= 0.88
	case p.any("curvy", "plus", "broad", "stocky", "strong", "muscular", "heavy", "chubby", "big"):
		l.build *= 1.18
	case sporty:
		l.build *= 1.05
	}

	// Skin and hair.
	l.skin = skinTones[int(dice[3]*float64(len(skinTones)))]
	if t, ok := p.tints[tSkin]; ok {
		l.skin = skinTones[skinTone(t, int(dice[3]*float64(len(skinTones))))]
	}
	if l.mannequin {
		l.skin = mannequinTones[int(dice[3]*float64(len(mannequinTones)))]
	}
	l.hair = hairShades[int(dice[4]*float64(len(hairShades)))]
	switch {
	case p.tints[tHair].word != "" || len(p.tints[tHair].mods) > 0:
		l.hair = hairColour(p.tints[tHair])
	case p.any("blonde", "blond", "platinum"):
		l.hair = hairColour(tint{word: "blonde"})
	case p.any("brunette"):
		l.hair = hairColour(tint{word: "brown"})
	case p.any("redhead", "ginger", "auburn"):
		l.hair = hairColour(tint{word: "red"})
	}
	styles := []int{hairShort, hairShort, hairShort, hairShort, hairShort, hairShort, hairCurly, hairBald, hairLong}
	if l.female {
		styles = []int{hairLong, hairLong, hairLong, hairLong, hairBob, hairBob, hairBun, hairBun, hairCurly}
	}
	l.hairStyle = styles[int(dice[5]*float64(len(styles)))]
	if l.mannequin {
		l.hairStyle = hairBald
	}
	switch {
	case p.lengths[tHair] == "long" || p.any("braid", "braids"):
		l.hairStyle = hairLong
	case p.lengths[tHair] == "short" || p.any("pixie", "buzz", "crew", "cropped"):
		l.hairStyle = hairShort
	case p.any("bob"):
		l.hairStyle = hairBob
	case p.any("bun", "updo", "ponytail"):
		l.hairStyle = hairBun
	case p.any("curly", "curls", "afro", "coily"):
		l.hairStyle = hairCurly
	case p.any("bald", "shaved"):
		l.hairStyle = hairBald
	}

	// Garments: what is named, else what suits the style, else the seed.
	g := dice[6]
	switch {
	case p.any("dress", "gown"):
		l.garment = gDress
	case p.any("skirt"):
		l.garment = gSkirt
	case p.any("shorts"):
		l.garment = gShorts
	case p.any("trousers", "pants", "jeans", "chinos", "leggings", "slacks", "joggers", "suit", "jumpsuit", "tracksuit"):
		l.garment = gTrousers
	case l.female && elegant:
		l.garment = [3]int{gDress, gDress, gTrousers}[int(g*3)]
	case elegant:
		l.garment = gTrousers
	case sporty:
		l.garment = [2]int{gShorts, gTrousers}[int(g*2)]
	case l.female:
		l.garment = [6]int{gDress, gDress, gSkirt, gTrousers, gTrousers, gTrousers}[int(g*6)]
	default:
		l.garment = [6]int{gTrousers, gTrousers, gTrousers, gTrousers, gTrousers, gShorts}[int(g*6)]
	}
	switch {
	case p.any("coat", "trench", "overcoat", "parka"):
		l.outerKind = outerCoat
	case p.any("jacket", "blazer", "bomber", "cardigan", "suit"):
		l.outerKind = outerJacket
	case elegant && !l.female:
		l.outerKind = outerJacket
	case !sporty && dice[7] < 0.2:
		l.outerKind = outerJacket
	}
	l.sleeves = [3]float64{0, 0.45, 1}[1+int(dice[8]*2)]
	switch {
	case p.lengths[tSleeves] == "long":
		l.sleeves = 1
	case p.any("sleeveless", "strapless", "tank", "singlet"):
		l.sleeves = 0
	case p.lengths[tSleeves] == "short" || p.any("tshirt", "tee") || p.words["t"] && p.words["shirt"] || sporty:
		l.sleeves = 0.45
	}
	l.hem = 0.73 + 0.06*dice[9]
	switch {
	case p.lengths[tDress] == "long" || p.lengths[tDress] == "maxi" || p.lengths[tBottom] == "long" ||
		p.lengths[tBottom] == "maxi" || p.any("gown", "evening"):
		l.hem = 0.97
	case p.lengths[tDress] == "short" || p.lengths[tDress] == "mini" || p.lengths[tBottom] == "short" ||
		p.lengths[tBottom] == "mini" || p.any("miniskirt"):
		l.hem = 0.62
	}

	// Colours: named ones first, free ones for the main garments in order,
	// the palette for the rest.
	l.top, l.bottom, l.outer = pick(rng, tops), pick(rng, bottoms), pick(rng, outers)
	if p.any("jeans", "denim") {
		l.bottom = garmentColour(tint{word: "denim"})
	}
	l.shoes = rgb{0.15, 0.14, 0.14}
	if sporty || casual && dice[10] < 0.5 {
		l.shoes = rgb{0.93, 0.93, 0.92}
	}
	free := p.free
	next := func() (tint, bool) {
		if len(free) == 0 {
			return tint{}, false
		}
		t := free[0]
		free = free[1:]
		return t, true
	}
	set := func(c *rgb, t tint, ok bool) {
		if ok {
			*c = garmentColour(t)
		}
	}
	if t, ok := p.tints[tOutfit]; ok {
		set(&l.top, t, true)
		set(&l.bottom, t, true)
		set(&l.outer, t, true)
	}
	for _, tg := range []target{tTop, tBottom, tDress, tOuter, tShoes} {
		t, ok := p.tints[tg]
		switch tg {
		case tTop, tDress:
			set(&l.top, t, ok)
		case tBottom:
			set(&l.bottom, t, ok)
		case tOuter:
			set(&l.outer, t, ok)
		case tShoes:
			set(&l.shoes, t, ok)
		}
	}
	_, named := p.tints[tOuter]
	if l.outerKind != outerNone && !named {
		t, ok := next()
		set(&l.outer, t, ok)
	}
	if _, named := p.tints[tTop]; !named {
		if _, named := p.tints[tDress]; !named {
			t, ok := next()
			set(&l.top, t, ok)
		}
	}
	if _, named := p.tints[tBottom]; !named {
		t, ok := next()
		set(&l.bottom, t, ok)
	}
	if slices.Contains(p.scene, "pastel") { // said of nothing in particular
		for _, c := range []*rgb{&l.top, &l.bottom, &l.outer} {
			*c = mix(*c, rgb{1, 1, 1}, 0.45)
		}
	}

	// Pose.
	poses := []int{armDown, armDown, armDown, armHip, armPocket, armHead}
	switch {
	case elegant:
		poses = []int{armDown, armDown, armHip, armHip}
	case casual:
		poses = []int{armDown, armPocket, armPocket, armHip}
	case sporty:
		poses = []int{armDown, armHip, armHead, armHead}
	}
	l.arms[0] = poses[int(dice[11]*float64(len(poses)))]
	l.arms[1] = poses[int(dice[12]*float64(len(poses)))]
	if l.arms[0] == armHead && l.arms[1] == armHead {
		l.arms[1] = armHip
	}
	l.stance = 0.3 + 0.3*dice[13]
	switch {
	case sporty:
		l.stance += 0.3
	case elegant:
		l.stance *= 0.6
	}
	l.shift = 0.25 * (dice[14] - 0.5)
	l.tilt = 0.12 * (dice[15] - 0.5)
	return l
}

// skinTone returns the index in skinTones that t names, or def.
func skinTone(t tint, def int) int {
	tones := map[string]int{
		"pale": 0, "fair": 0, "porcelain": 0, "ivory": 0, "light": 1, "beige": 2, "golden": 2, "medium": 3,
		"olive": 3, "tan": 3, "tanned": 3, "bronze": 4, "brown": 5, "dark": 6, "deep": 6, "black": 6,
		"chocolate": 6,
	}
	if i, ok := tones[t.word]; ok {
		return i
	}
	for _, m := range t.mods {
		if i, ok := tones[m]; ok {
			return i
		}
	}
	return def
}

// hairColour returns the natural shade closest to t ("dark hair", "blonde",
// "silver"), or the named hue for other colours.
func hairColour(t tint) rgb {
	var c rgb
	switch t.word {
	case "black", "charcoal":
		c = hsl(25, 0.12, 0.07)
	case "", "brown", "chocolate", "chestnut":
		c = hsl(24, 0.45, 0.2)
	case "blonde", "gold", "golden", "sand", "beige", "cream", "ivory":
		c = hsl(44, 0.55, 0.64)
	case "red", "orange", "rust", "terracotta", "copper", "crimson", "burgundy":
		c = hsl(16, 0.6, 0.36)
	case "grey", "gray", "silver":
		c = hsl(220, 0.03, 0.7)
	case "white":
		c = hsl(40, 0.05, 0.9)
	default:
		k, _ := colourOf(t.word)
		c = hsl(k[0], 0.5, 0.5)
	}
	switch {
	case t.has("dark") || t.has("deep"):
		c = c.scale(0.55)
	case t.has("light") || t.has("fair") || t.has("pale"):
		c = mix(c, hsl(44, 0.55, 0.64), 0.5)
	}
	return c
}

// garmentColour turns a named colour into fabric: chromatic names more
// saturated than scene.go's wall colours, lightness from the name or 0.45,
// then the modifiers.
func garmentColour(t tint) rgb {
	c, ok := colourOf(t.word)
	if !ok {
		c = [3]float64{30, 0.1, 0.45} // modifiers alone: a neutral
	}
	s, l := c[1], c[2]
	if s >= 0.15 {
		s = math.Min(s+0.25, 0.85)
	}
	if l < 0 {
		l = 0.45
		if s == 0 {
			l = 0.5
		}
	}
	for _, m := range t.mods {
		switch m {
		case "light", "soft":
			l += (1 - l) * 0.4
		case "pale", "pastel":
			s, l = math.Min(s, 0.45), math.Max(l, 0.8)
		case "dark":
			l *= 0.55
		case "deep":
			s, l = math.Min(s+0.1, 0.9), l*0.7
		case "bright":
			s, l = math.Min(s+0.2, 1), math.Min(math.Max(l, 0.45), 0.6)
		case "muted", "dusty":
			s *= 0.55
		}
	}
	return hsl(c[0], s, l)
}

// crotchY is the height of the crotch in figure units.
func (l *look) crotchY() float64 { return 4 / l.heads }

// parts lists the figure's shapes, back to front, in figure units: the figure
// is 1 high (top of the head at y = 0, soles at y = 1), centred on x = 0.
func (l *look) parts() []part {
	hu := 1 / l.heads // one head height
	b := l.build
	fem := 0.0
	if l.female {
		fem = 1
	}
	sel := func(male, female float64) float64 { return male + (female-male)*fem }

	headCX, headCY := l.tilt*hu, 0.5*hu
	headRX, headRY := sel(0.37, 0.35)*hu, 0.49*hu
	shoulderY := 1.38 * hu
	sw := sel(1.0, 0.88) * hu * b // shoulder half-width
	waistY := sel(2.95, 2.8) * hu
	waist := sel(0.66, 0.55) * hu * b
	hipY := 3.55 * hu
	hip := sel(0.74, 0.86) * hu * b
	crotchY := l.crotchY()
	ankleY := 1 - 0.3*hu
	kneeY := (crotchY + ankleY) / 2
	topY := shoulderY - 0.18*hu
	shift := l.shift * hu

	var ps []part
	add := func(s shape, c rgb, depth float64) { ps = append(ps, part{s, c, depth}) }
	skinD, clothD, hairD := 0.22*hu, 0.45*hu, 0.3*hu

	// Hair behind the head and shoulders.
	switch l.hairStyle {
	case hairLong:
		add(polygon(0.3*hu, [2]float64{headCX - headRX*0.82, headCY}, [2]float64{headCX + headRX*0.82, headCY},
			[2]float64{headCX + headRX*0.86, shoulderY + 0.9*hu}, [2]float64{headCX - headRX*0.86, shoulderY + 0.9*hu}), l.hair, hairD)
		add(ellipse(headCX, headCY-0.02*hu, headRX*1.14, headRY*1.08), l.hair, hairD)
	case hairBob:
		add(ellipse(headCX, headCY+0.1*hu, headRX*1.25, headRY*1.08), l.hair, hairD)
	case hairBun:
		add(ellipse(headCX, -0.02*hu, 0.24*hu, 0.22*hu), l.hair, hairD)
	case hairCurly:
		add(ellipse(headCX, headCY-0.1*hu, headRX*1.5, headRY*1.3), l.hair, hairD)
	}

	// Legs, feet and the lower garment.
	legR := [3]float64{sel(0.42, 0.44) * hu * b, 0.25 * hu * math.Sqrt(b), 0.15 * hu}
	pelvis := polygon(0.08*hu, [2]float64{-waist*1.02 + shift, waistY + 0.1*hu}, [2]float64{waist*1.02 + shift, waistY + 0.1*hu},
		[2]float64{hip + shift, hipY}, [2]float64{hip*0.9 + shift, crotchY}, [2]float64{-hip*0.9 + shift, crotchY},
		[2]float64{-hip + shift, hipY})
	bottoms := []shape{pelvis}
	for _, side := range [2]float64{-1, 1} {
		hx, hy := side*0.44*hu*b+shift, crotchY-0.45*hu
		ax := side * l.stance * hu
		kx := (hx + ax) / 2
		switch l.garment {
		case gTrousers:
			bottoms = append(bottoms, capsule(hx, hy, kx, kneeY, legR[0]+0.05*hu, legR[1]+0.07*hu),
				capsule(kx, kneeY, ax, ankleY+0.08*hu, legR[1]+0.07*hu, legR[1]+0.05*hu))
		case gShorts:
			bottoms = append(bottoms, capsule(hx, hy, hx+(kx-hx)*0.45, hy+(kneeY-hy)*0.45, legR[0]+0.06*hu, legR[0]+0.04*hu))
			fallthrough
		default:
			add(or(capsule(hx, hy, kx, kneeY, legR[0], legR[1]), capsule(kx, kneeY, ax, ankleY, legR[1], legR[2])), l.skin, skinD)
		}
		shoeR := 0.11 * hu
		if l.female && l.garment != gTrousers {
			shoeR = 0.09 * hu
		}
		add(capsule(ax, 1-shoeR-0.02*hu, ax+side*0.3*hu, 1-shoeR, shoeR, shoeR), l.shoes, 0.1*hu)
	}
	switch l.garment {
	case gTrousers, gShorts:
		add(or(bottoms...), l.bottom, clothD)
	case gSkirt, gDress:
		col := l.bottom
		if l.garment == gDress {
			col = l.top
		}
		flare := 1.25
		if l.hem > 0.9 {
			flare = 1.5
		}
		add(polygon(0.05*hu, [2]float64{-waist*1.04 + shift, waistY + 0.05*hu}, [2]float64{waist*1.04 + shift, waistY + 0.05*hu},
			[2]float64{hip*1.05 + shift, hipY}, [2]float64{hip * flare, l.hem}, [2]float64{-hip * flare, l.hem},
			[2]float64{-hip*1.05 + shift, hipY}), col, clothD)
	}

	// Neck, torso and an outer layer.
	add(capsule(headCX*0.5, headCY, 0, shoulderY+0.1*hu, sel(0.19, 0.16)*hu, sel(0.2, 0.17)*hu), l.skin, skinD)
	hem := hipY - 0.05*hu
	if l.garment == gDress {
		hem = hipY
	}
	torsoPts := func(grow, hem float64) [][2]float64 {
		neck, g := 0.22*hu, grow*hu
		chest := sw - 0.15*hu + g
		return [][2]float64{
			{-neck, topY - g}, {neck, topY - g}, {sw - 0.25*hu + g, shoulderY - 0.02*hu - g},
			{sw - 0.05*hu + g, shoulderY + 0.25*hu}, {chest, 2.1 * hu}, {waist + g + shift*0.5, waistY},
			{hip*0.97 + g + shift, hem}, {-hip*0.97 - g + shift, hem}, {-waist - g + shift*0.5, waistY},
			{-chest, 2.1 * hu}, {-sw + 0.05*hu - g, shoulderY + 0.25*hu}, {-sw + 0.25*hu - g, shoulderY - 0.02*hu - g},
		}
	}
	torso := polygon(0.06*hu, torsoPts(0, hem)...)
	add(torso, l.top, clothD)
	neckRX, neckRY := sel(0.2, 0.26)*hu, sel(0.2, 0.3)*hu
	add(torso.and(ellipse(0, topY, neckRX, neckRY)), l.skin, skinD)
	if l.outerKind != outerNone {
		oh := hipY + 0.35*hu
		if l.outerKind == outerCoat {
			oh = kneeY + 0.4*hu
			add(polygon(0.06*hu, [2]float64{-hip*1.05 - 0.06*hu, hipY - 0.2*hu}, [2]float64{hip*1.05 + 0.06*hu, hipY - 0.2*hu},
				[2]float64{hip*1.2 + 0.06*hu, oh}, [2]float64{-hip*1.2 - 0.06*hu, oh}), l.outer, clothD)
		}
		add(polygon(0.06*hu, torsoPts(0.07, math.Min(oh, hipY+0.35*hu))...), l.outer, clothD)
		add(polygon(0.02*hu, [2]float64{-0.24 * hu, topY - 0.05*hu}, [2]float64{0.24 * hu, topY - 0.05*hu},
			[2]float64{0.03 * hu, waistY + 0.15*hu}, [2]float64{-0.03 * hu, waistY + 0.15*hu}), l.top, clothD)
	}

	// Arms.
	sleeves, sleeveCol := l.sleeves, l.top
	if l.outerKind != outerNone {
		sleeves, sleeveCol = 1, l.outer
	}
	armR := [3]float64{sel(0.22, 0.19) * hu * math.Sqrt(b), 0.16 * hu, 0.12 * hu}
	for i, side := range [2]float64{-1, 1} {
		sx, sy := side*(sw-0.2*hu), shoulderY+0.2*hu
		var tx, ty float64
		switch l.arms[i] {
		case armDown:
			tx, ty = sx+side*0.22*hu, sy+2.6*hu
		case armHip:
			tx, ty = side*(hip+0.12*hu)+shift, waistY+0.45*hu
		case armPocket:
			tx, ty = side*hip*0.8+shift, crotchY-0.3*hu
		case armHead:
			tx, ty = headCX+side*(headRX+0.05*hu), headCY+0.1*hu
		}
		ex, ey := elbow(sx, sy, tx, ty, 1.45*hu, 1.25*hu, side)
		wx, wy := ex+(tx-ex)*1.25*hu/math.Hypot(tx-ex, ty-ey), ey+(ty-ey)*1.25*hu/math.Hypot(tx-ex, ty-ey)
		add(or(capsule(sx, sy, ex, ey, armR[0], armR[1]), capsule(ex, ey, wx, wy, armR[1], armR[2])), l.skin, skinD)
		switch {
		case sleeves >= 1:
			add(or(capsule(sx, sy, ex, ey, armR[0]+0.05*hu, armR[1]+0.06*hu),
				capsule(ex, ey, wx-(wx-ex)*0.08, wy-(wy-ey)*0.08, armR[1]+0.06*hu, armR[2]+0.05*hu)), sleeveCol, clothD)
		case sleeves > 0:
			f := sleeves / 0.55
			add(capsule(sx, sy, sx+(ex-sx)*f, sy+(ey-sy)*f, armR[0]+0.05*hu, armR[1]+0.06*hu), sleeveCol, clothD)
		}
		if l.arms[i] != armPocket {
			dx, dy := (wx-ex)/(1.25*hu), (wy-ey)/(1.25*hu)
			add(capsule(wx, wy, wx+dx*0.55*hu, wy+dy*0.55*hu, 0.12*hu, 0.1*hu), l.skin, skinD)
		}
	}

	// Head and the hair over it.
	add(ellipse(headCX, headCY, headRX, headRY), l.skin, 0.3*hu)
	switch l.hairStyle {
	case hairShort, hairBun:
		add(ellipse(headCX, headCY-0.06*hu, headRX*1.08, headRY*1.02).below(headCY-0.1*hu), l.hair, hairD)
	case hairLong, hairBob, hairCurly:
		add(ellipse(headCX, headCY-0.06*hu, headRX*1.1, headRY*1.02).below(headCY-0.06*hu), l.hair, hairD)
	}
	return ps
}

// elbow places the elbow of an arm from the shoulder (sx, sy) reaching for
// (tx, ty) with upper arm and forearm lengths l1 and l2, bending outwards
// (towards side); an unreachable target straightens the arm towards it.
func elbow(sx, sy, tx, ty, l1, l2, side float64) (float64, float64) {
	dx, dy := tx-sx, ty-sy
	d := math.Hypot(dx, dy)
	if d == 0 {
		return sx, sy + l1
	}
	ux, uy := dx/d, dy/d
	d = math.Min(math.Max(d, math.Abs(l1-l2)+1e-6), (l1+l2)*0.999)
	a := math.Acos((l1*l1 + d*d - l2*l2) / (2 * l1 * d))
	// Rotate the shoulder→target direction by ±a; pick the outward elbow.
	ca, sa := math.Cos(a), math.Sin(a)
	x1, y1 := ux*ca-uy*sa, ux*sa+uy*ca
	x2, y2 := ux*ca+uy*sa, -ux*sa+uy*ca
	if x1*side < x2*side {
		x1, y1 = x2, y2
	}
	return sx + x1*l1, sy + y1*l1
}

// bounds is an axis-aligned box in figure units.
type bounds struct{ x0, y0, x1, y1 float64 }

func (b bounds) union(o bounds) bounds {
	return bounds{math.Min(b.x0, o.x0), math.Min(b.y0, o.y0), math.Max(b.x1, o.x1), math.Max(b.y1, o.y1)}
}

func (b bounds) intersect(o bounds) bounds {
	return bounds{math.Max(b.x0, o.x0), math.Max(b.y0, o.y0), math.Min(b.x1, o.x1), math.Min(b.y1, o.y1)}
}

// shape is a signed distance function (negative inside) and its bounds.
type shape struct {
	sdf func(x, y float64) float64
	box bounds
}

// and is the intersection of two shapes.
func (s shape) and(o shape) shape {
	a, b := s.sdf, o.sdf
	return shape{func(x, y float64) float64 { return max(a(x, y), b(x, y)) }, s.box.intersect(o.box)}
}

// or is the union of shapes.
func or(s ...shape) shape {
	box := s[0].box
	for _, o := range s[1:] {
		box = box.union(o.box)
	}
	return shape{func(x, y float64) float64 {
		d := math.Inf(1)
		for _, o := range s {
			d = min(d, o.sdf(x, y))
		}
		return d
	}, box}
}

// below keeps the part of s above the line y = y0 (y grows downwards).
func (s shape) below(y0 float64) shape {
	f := s.sdf
	box := s.box
	box.y1 = math.Min(box.y1, y0)
	return shape{func(x, y float64) float64 { return max(f(x, y), y-y0) }, box}
}

// part is a shape painted in a colour, shaded darker towards its edge over
// depth figure units so flat colours read as volumes.
type part struct {
	shape
	col   rgb
	depth float64
}

// ellipse is an ellipse centred on (cx, cy); its distance is the first-order
// estimate, exact on the outline.
func ellipse(cx, cy, rx, ry float64) shape {
	return shape{func(x, y float64) float64 {
		u, v := (x-cx)/rx, (y-cy)/ry
		k := math.Hypot(u, v)
		g := math.Hypot(u/rx, v/ry)
		if g == 0 {
			return -math.Min(rx, ry)
		}
		return (k - 1) * k / g
	}, bounds{cx - rx, cy - ry, cx + rx, cy + ry}}
}

// capsule is a segment from (ax, ay) to (bx, by) swept by a radius that goes
// linearly from ra to rb (a limb).
func capsule(ax, ay, bx, by, ra, rb float64) shape {
	box := bounds{math.Min(ax-ra, bx-rb), math.Min(ay-ra, by-rb), math.Max(ax+ra, bx+rb), math.Max(ay+ra, by+rb)}
	dx, dy := bx-ax, by-ay
	h := dx*dx + dy*dy
	r := ra - rb
	if r*r >= h { // one end's disc holds the other
		if ra >= rb {
			return ellipse(ax, ay, ra, ra)
		}
		return ellipse(bx, by, rb, rb)
	}
	cx, cy := math.Sqrt(h-r*r), r
	return shape{func(x, y float64) float64 {
		px, py := x-ax, y-ay
		qx := math.Abs(px*dy-py*dx) / h
		qy := (px*dx + py*dy) / h
		k := cx*qy - cy*qx
		switch {
		case k < 0:
			return math.Sqrt(h*(qx*qx+qy*qy)) - ra
		case k > cx:
			return math.Sqrt(h*(qx*qx+qy*qy+1-2*qy)) - rb
		}
		return cx*qx + cy*qy - ra
	}, box}
}

// polygon is the simple polygon through pts, grown by r (rounded corners).
func polygon(r float64, pts ...[2]float64) shape {
	box := bounds{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	type edge struct{ x, y, ex, ey, inv, yj float64 } // from pts[i] towards the previous point
	edges := make([]edge, len(pts))
	for i, p := range pts {
		box = box.union(bounds{p[0] - r, p[1] - r, p[0] + r, p[1] + r})
		q := pts[(i+len(pts)-1)%len(pts)]
		ex, ey := q[0]-p[0], q[1]-p[1]
		edges[i] = edge{p[0], p[1], ex, ey, 1 / (ex*ex + ey*ey), q[1]}
	}
	return shape{func(x, y float64) float64 {
		d := (x-pts[0][0])*(x-pts[0][0]) + (y-pts[0][1])*(y-pts[0][1])
		s := 1.0
		for _, e := range edges {
			wx, wy := x-e.x, y-e.y
			t := min(max((wx*e.ex+wy*e.ey)*e.inv, 0), 1)
			bx, by := wx-e.ex*t, wy-e.ey*t
			d = min(d, bx*bx+by*by)
			c1, c2, c3 := y >= e.y, y < e.yj, e.ex*wy > e.ey*wx
			if c1 && c2 && c3 || !c1 && !c2 && !c3 {
				s = -s
			}
		}
		return s*math.Sqrt(d) - r
	}, box}
}

// paint draws parts in order onto the premultiplied layer, mapping figure
// units (x, y) to layer pixels (ox + x*scale, oy + y*scale), anti-aliased by
// the distance to each outline. It works in 8×8 blocks: one distance at a
// block's centre, with a safety margin for the estimated distances, settles
// blocks wholly outside a shape or wholly inside its flat interior.
func paint(layer raster, parts []part, ox, oy, scale float64) {
	const blk = 8
	for _, pt := range parts {
		x0 := max(int(math.Floor(ox+pt.box.x0*scale))-1, 0)
		y0 := max(int(math.Floor(oy+pt.box.y0*scale))-1, 0)
		x1 := min(int(math.Ceil(ox+pt.box.x1*scale))+1, layer.w)
		y1 := min(int(math.Ceil(oy+pt.box.y1*scale))+1, layer.h)
		lit := rgb{pt.col.r * 255, pt.col.g * 255, pt.col.b * 255}
		flat := [4]uint8{to8(lit.r), to8(lit.g), to8(lit.b), 255}
		for by := y0; by < y1; by += blk {
			bh := min(blk, y1-by)
			for bx := x0; bx < x1; bx += blk {
				bw := min(blk, x1-bx)
				d := pt.sdf((float64(bx)+float64(bw)/2-ox)/scale, (float64(by)+float64(bh)/2-oy)/scale) * scale
				reach := 1.25*math.Hypot(float64(bw), float64(bh))/2 + 1
				if d-reach >= 0.5 {
					continue
				}
				if -d-reach >= math.Max(0.5, pt.depth*scale) {
					for py := by; py < by+bh; py++ {
						row := layer.row(py)[bx*4 : (bx+bw)*4]
						for i := 0; i < len(row); i += 4 {
							copy(row[i:i+4], flat[:])
						}
					}
					continue
				}
				pt.paintBlock(layer, bx, by, bw, bh, ox, oy, scale, lit)
			}
		}
	}
}

// paintBlock paints the part pixel by pixel over a bw×bh block at (bx, by).
func (pt *part) paintBlock(layer raster, bx, by, bw, bh int, ox, oy, scale float64, lit rgb) {
	for py := by; py < by+bh; py++ {
		fy := (float64(py) + 0.5 - oy) / scale
		row := layer.row(py)
		for px := bx; px < bx+bw; px++ {
			fx := (float64(px) + 0.5 - ox) / scale
			d := pt.sdf(fx, fy)
			cov := clamp01(0.5 - d*scale)
			if cov <= 0 {
				continue
			}
			k := 1.0
			if pt.depth > 0 {
				k = 0.72 + 0.28*math.Sqrt(min(1, max(-d, 0)/pt.depth))
			}
			k *= cov
			inv := 1 - cov
			p := row[px*4 : px*4+4 : px*4+4]
			p[0] = to8(lit.r*k + float64(p[0])*inv)
			p[1] = to8(lit.g*k + float64(p[1])*inv)
			p[2] = to8(lit.b*k + float64(p[2])*inv)
			p[3] = to8(255*cov + float64(p[3])*inv)
		}
	}
}
