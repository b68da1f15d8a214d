package render

import (
	"bytes"
	"errors"
	"image"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestIdeaSizes(t *testing.T) {
	for _, kind := range []IdeaKind{IdeaModel, IdeaScenery} {
		for _, ar := range []string{"1:1", "4:5", "16:9", "9:16", "4:1", "1:4", ""} {
			for _, text := range []string{"", "tall woman, red dress, beach", "portrait of a man, night"} {
				img, err := Idea(kind, text, IdeaOptions{AspectRatio: ar, LongEdge: 256, Seed: 2})
				if err != nil {
					t.Fatalf("Idea(%s, %q, %q): %v", kind, text, ar, err)
				}
				w, h, _ := CanvasSize(ar, 256)
				if img.Bounds() != image.Rect(0, 0, w, h) {
					t.Errorf("Idea(%s, %q, %q) bounds %v, want %dx%d", kind, text, ar, img.Bounds(), w, h)
				}
				for i := 3; i < len(img.Pix); i += 4 {
					if img.Pix[i] != 255 {
						t.Fatalf("Idea(%s, %q, %q) is not opaque", kind, text, ar)
					}
				}
			}
		}
	}
	if _, err := Idea("product", "", IdeaOptions{}); err == nil {
		t.Error("Idea with an unknown kind succeeded")
	}
	if _, err := Idea(IdeaModel, "", IdeaOptions{AspectRatio: "6:1"}); !errors.Is(err, ErrInvalidAspectRatio) {
		t.Errorf("Idea(6:1) = %v, want ErrInvalidAspectRatio", err)
	}
}

func TestIdeaDeterministicAndSeeded(t *testing.T) {
	for _, kind := range []IdeaKind{IdeaModel, IdeaScenery} {
		render := func(text string, seed int64) *image.NRGBA {
			img, err := Idea(kind, text, IdeaOptions{AspectRatio: "4:5", LongEdge: 320, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
		const text = "casual woman, denim jacket, warm kitchen"
		a := render(text, 1)
		if b := render(text, 1); !bytes.Equal(a.Pix, b.Pix) {
			t.Errorf("%s: same text and seed gave different pixels", kind)
		}
		for _, o := range []struct {
			text string
			seed int64
		}{{text, 2}, {text, 3}, {text + " ", 1}, {"sporty man, forest", 1}} {
			if d := meanAbsDiff(a, render(o.text, o.seed)); d < 3 {
				t.Errorf("%s: %q seed %d looks like %q seed 1 (mean difference %.1f)", kind, o.text, o.seed, text, d)
			}
		}
	}
}

// figureColours counts the reddish and the bluish pixels of a model idea's
// figure.
func figureColours(t *testing.T, text string, seed int64) (red, blue int) {
	t.Helper()
	img, rect, err := modelIdea(text, IdeaOptions{AspectRatio: "4:5", LongEdge: 320, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			c := pix(img, image.Pt(x, y))
			switch {
			case c[0] > 100 && 10*c[0] > 16*c[1] && 10*c[0] > 16*c[2]:
				red++
			case c[2] > 100 && 10*c[2] > 13*c[0] && c[2] > c[1]+25:
				blue++
			}
		}
	}
	return red, blue
}

func TestModelIdeaFollowsColour(t *testing.T) {
	for seed := range int64(6) {
		for _, tc := range []struct{ red, blue string }{{"red", "blue"}, {"woman in a red dress", "woman in a blue dress"}, {"man, red jacket", "man, blue jacket"}} {
			rr, rb := figureColours(t, tc.red, seed)
			br, bb := figureColours(t, tc.blue, seed)
			if rr < 400 || rr < 4*rb {
				t.Errorf("seed %d %q: %d red and %d blue figure pixels, want mostly red", seed, tc.red, rr, rb)
			}
			if bb < 400 || bb < 4*br {
				t.Errorf("seed %d %q: %d red and %d blue figure pixels, want mostly blue", seed, tc.blue, br, bb)
			}
		}
	}
}

func TestModelIdeaFigure(t *testing.T) {
	for seed := range int64(8) {
		for _, ar := range []string{"4:5", "1:1", "16:9", "9:16"} {
			for _, text := range []string{"woman in a red dress, grey studio", "man, navy suit, beach", "petite curvy mannequin", "sporty tall man"} {
				img, rect, err := modelIdea(text, IdeaOptions{AspectRatio: ar, LongEdge: 400, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				W, H := img.Rect.Dx(), img.Rect.Dy()
				if rect.Dy() <= rect.Dx() || rect.Dy() < H/2 {
					t.Errorf("seed %d %s %q: figure %v in %dx%d, want taller than wide and at least half the height", seed, ar, text, rect, W, H)
				}
				if c := rect.Min.X + rect.Max.X - W; abs(c) > 4 {
					t.Errorf("seed %d %s %q: figure %v not centred in %d", seed, ar, text, rect, W)
				}
				if rect.Min.Y < 0 || rect.Max.Y > H*19/20 {
					t.Errorf("seed %d %s %q: full-length figure %v leaves the canvas (height %d)", seed, ar, text, rect, H)
				}
			}
		}
	}
	// A portrait is cut at the canvas's bottom edge.
	img, rect, err := modelIdea("portrait of a woman, half body", IdeaOptions{AspectRatio: "4:5", LongEdge: 400, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rect.Max.Y != img.Rect.Dy() || rect.Min.Y < img.Rect.Dy()/40 || rect.Dy() <= rect.Dx() {
		t.Errorf("portrait figure %v in %v, want from near the top down to the bottom edge", rect, img.Rect)
	}
}

func TestModelIdeaFigureVisible(t *testing.T) {
	// The red dress stands out of a plain grey studio: its pixels form a
	// centred region taller than wide.
	img, err := Idea(IdeaModel, "woman in a long red dress, light grey studio, minimal", IdeaOptions{AspectRatio: "1:1", LongEdge: 512, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	box := colourBox(img, func(c [3]int) bool { return c[0] > 100 && 10*c[0] > 16*c[1] && 10*c[0] > 16*c[2] })
	if box.Empty() || box.Dy() <= box.Dx() || box.Dy() < 150 || abs(box.Min.X+box.Max.X-512) > 40 {
		t.Errorf("red dress region %v, want a centred region taller than wide", box)
	}
	if c := pix(img, image.Pt(8, 256)); c[0] > c[2]+20 {
		t.Errorf("backdrop %v is reddish: the garment colour leaked into the set", c)
	}
}

func TestSceneryIdeaPalette(t *testing.T) {
	mean := func(img *image.NRGBA, y0, y1 int) [3]float64 {
		var s [3]float64
		n := 0.0
		for y := y0; y < y1; y++ {
			for x := 0; x < img.Rect.Dx(); x++ {
				c := pix(img, image.Pt(x, y))
				for i := range 3 {
					s[i] += float64(c[i])
				}
				n++
			}
		}
		return [3]float64{s[0] / n, s[1] / n, s[2] / n}
	}
	for seed := range int64(4) {
		opts := IdeaOptions{AspectRatio: "3:2", LongEdge: 300, Seed: seed}
		beach, err := Idea(IdeaScenery, "beach", opts)
		if err != nil {
			t.Fatal(err)
		}
		forest, err := Idea(IdeaScenery, "forest", opts)
		if err != nil {
			t.Fatal(err)
		}
		H := beach.Rect.Dy()
		sky, sand := mean(beach, 0, H/5), mean(beach, H*9/10, H)
		if sky[2] < sky[0]+40 || sky[2] < 150 {
			t.Errorf("seed %d beach: top %v, want a blue sky", seed, sky)
		}
		if sand[0] < sand[2]+25 || sand[0] < 150 {
			t.Errorf("seed %d beach: bottom %v, want sand", seed, sand)
		}
		leaves := mean(forest, 0, H/5)
		if leaves[1] < leaves[0]+15 || leaves[1] < leaves[2]+5 || leaves[1] > sky[2] {
			t.Errorf("seed %d forest: top %v, want darker greens than the beach sky %v", seed, leaves, sky)
		}
	}
}

func TestParsePrefs(t *testing.T) {
	tests := []struct {
		text   string
		tints  map[target]tint
		free   []string
		length map[target]string
		scene  []string
	}{
		{"woman, early 30s, long dark brown hair, navy dress, light grey studio",
			map[target]tint{tHair: {"brown", []string{"dark"}}, tDress: {word: "navy"}}, nil,
			map[target]string{tHair: "long"}, []string{"woman", "early", "s", "light", "grey", "studio"}},
		{"white shirt and charcoal trousers, warm studio",
			map[target]tint{tTop: {word: "white"}, tBottom: {word: "charcoal"}}, nil, nil,
			[]string{"and", "warm", "studio"}},
		{"red", nil, []string{"red"}, nil, []string{"studio"}},
		{"a man in pastel blue, short hair, dark moody marble kitchen",
			nil, []string{"blue"}, map[target]string{tHair: "short"},
			[]string{"a", "man", "in", "dark", "moody", "marble", "kitchen"}},
		{"dark skin, fair hair, sneakers in white", map[target]tint{tSkin: {mods: []string{"dark"}}, tHair: {mods: []string{"fair"}}, tShoes: {word: "white"}},
			nil, nil, []string{"in", "studio"}},
	}
	for _, tc := range tests {
		p := parsePrefs(tc.text)
		for tg, want := range tc.tints {
			got := p.tints[tg]
			if got.word != want.word || !slices.Equal(got.mods, want.mods) {
				t.Errorf("%q: target %d tint %+v, want %+v", tc.text, tg, got, want)
			}
		}
		if len(p.tints) != len(tc.tints) {
			t.Errorf("%q: tints %+v, want %+v", tc.text, p.tints, tc.tints)
		}
		var free []string
		for _, f := range p.free {
			free = append(free, f.word)
		}
		if !slices.Equal(free, tc.free) {
			t.Errorf("%q: free colours %v, want %v", tc.text, free, tc.free)
		}
		for tg, want := range tc.length {
			if p.lengths[tg] != want {
				t.Errorf("%q: length of target %d %q, want %q", tc.text, tg, p.lengths[tg], want)
			}
		}
		if !slices.Equal(p.scene, tc.scene) {
			t.Errorf("%q: scene words %q, want %q", tc.text, p.scene, tc.scene)
		}
	}
}

func TestResolveLook(t *testing.T) {
	resolve := func(text string, seed uint64) look {
		p := parsePrefs(text)
		return resolveLook(rand.New(rand.NewPCG(seed, 7)), &p)
	}
	for seed := range uint64(10) {
		if l := resolve("a man", seed); l.female {
			t.Errorf("seed %d: a man is female", seed)
		}
		if l := resolve("a woman", seed); !l.female {
			t.Errorf("seed %d: a woman is not female", seed)
		}
		if tall, petite := resolve("tall", seed), resolve("petite", seed); tall.heads <= petite.heads {
			t.Errorf("seed %d: tall is %.2f heads, petite %.2f", seed, tall.heads, petite.heads)
		}
		if slim, curvy := resolve("slim", seed), resolve("curvy", seed); slim.build >= curvy.build {
			t.Errorf("seed %d: slim build %.2f, curvy %.2f", seed, slim.build, curvy.build)
		}
		if l := resolve("bald man", seed); l.hairStyle != hairBald {
			t.Errorf("seed %d: bald man has hair style %d", seed, l.hairStyle)
		}
		if l := resolve("blonde woman", seed); l.hair.lum() < 0.4 {
			t.Errorf("seed %d: blonde hair %+v is dark", seed, l.hair)
		}
		if l := resolve("woman with dark hair", seed); l.hair.lum() > 0.15 {
			t.Errorf("seed %d: dark hair %+v is light", seed, l.hair)
		}
		if l := resolve("dark skin", seed); l.skin != skinTones[len(skinTones)-1] {
			t.Errorf("seed %d: dark skin %+v", seed, l.skin)
		}
		if l := resolve("man in jeans", seed); l.garment != gTrousers {
			t.Errorf("seed %d: jeans give garment %d", seed, l.garment)
		}
		if l := resolve("elegant woman in a gown", seed); l.garment != gDress || l.hem < 0.9 {
			t.Errorf("seed %d: a gown gives garment %d, hem %.2f", seed, l.garment, l.hem)
		}
		if l := resolve("elegant man", seed); l.garment != gTrousers || l.outerKind != outerJacket {
			t.Errorf("seed %d: an elegant man wears garment %d, outer layer %d", seed, l.garment, l.outerKind)
		}
		if l := resolve("mannequin, portrait", seed); !l.mannequin || !l.halfBody || l.hairStyle != hairBald {
			t.Errorf("seed %d: mannequin portrait %+v", seed, l)
		}
		if sporty, elegant := resolve("sporty", seed), resolve("elegant", seed); sporty.stance <= elegant.stance {
			t.Errorf("seed %d: sporty stance %.2f, elegant %.2f", seed, sporty.stance, elegant.stance)
		}
		if l := resolve("red", seed); l.top.r < l.top.b+0.3 && l.outer.r < l.outer.b+0.3 {
			t.Errorf("seed %d: red gives top %+v, outer %+v", seed, l.top, l.outer)
		}
	}
}
