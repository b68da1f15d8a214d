package local

import (
	"context"
	"image"
	"image/color"
	"sync"
	"testing"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models/jobtype"
)

// The photo shoots of a session share their scenery: with a SceneryCache the local provider
// decodes it once for all of them, by its blob key, and draws the same pixels as without (issue
// 23, item 21a).
func TestPhotoShootsOfOneSceneryDecodeItOnce(t *testing.T) {
	scene := testimage.PNG(t, testimage.Product(320, 320, color.NRGBA{120, 160, 200, 255}, image.Rect(0, 200, 320, 320), testimage.White))
	cache := NewSceneryCache(4)
	p := Provider{Sceneries: cache}
	packshot := productPNG(t)
	var wg sync.WaitGroup
	for seed := range int64(4) {
		wg.Go(func() {
			req := providers.Request{JobType: jobtype.PhotoShoot, AspectRatio: "1:1", LongEdge: 96, Seed: seed,
				Inputs:  []providers.Input{{Data: packshot, ContentType: "image/png"}},
				Scenery: &providers.Input{Data: scene, ContentType: "image/png", Key: "outputs/acc/job/1-0.png"}}
			outs, err := p.Generate(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			if want := rendered(t, req); string(outs[0].Data) != string(want) {
				t.Errorf("seed %d: the cached scenery draws other pixels", seed)
			}
		})
	}
	wg.Wait()
	// Concurrent first jobs may each decode; the ones after them decode nothing.
	first := cache.Decodes()
	if first < 1 || first > 4 {
		t.Fatalf("%d decodes of the scenery", first)
	}
	for seed := range int64(3) {
		req := providers.Request{JobType: jobtype.PhotoShoot, AspectRatio: "1:1", LongEdge: 96, Seed: 10 + seed,
			Inputs:  []providers.Input{{Data: packshot, ContentType: "image/png"}},
			Scenery: &providers.Input{Data: scene, ContentType: "image/png", Key: "outputs/acc/job/1-0.png"}}
		if _, err := p.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if got := cache.Decodes(); got != first {
		t.Fatalf("three more photo shoots of the scenery decoded it %d more times, want none", got-first)
	}
}

// The cache holds at most its capacity, least recently used out first, and keeps no failure.
func TestSceneryCacheIsBounded(t *testing.T) {
	decodes := map[string]int{}
	c := newSceneryCache(2, func(data []byte) (image.Image, error) {
		decodes[string(data)]++
		if string(data) == "bad" {
			return nil, image.ErrFormat
		}
		return image.NewNRGBA(image.Rect(0, 0, 1, 1)), nil
	})
	get := func(key, data string) {
		t.Helper()
		if _, err := c.Image(key, []byte(data)); (err != nil) != (data == "bad") {
			t.Fatalf("%s: %v", key, err)
		}
	}
	get("a", "A")
	get("b", "B")
	get("a", "A") // a is now the most recent
	get("c", "C") // b goes
	get("a", "A")
	get("b", "B")
	get("x", "bad")
	get("x", "bad")
	get("", "A") // no key: decoded, not kept
	want := map[string]int{"A": 2, "B": 2, "C": 1, "bad": 2}
	for data, n := range want {
		if decodes[data] != n {
			t.Errorf("%s decoded %d times, want %d (all: %v)", data, decodes[data], n, decodes)
		}
	}
	if c.order.Len() != 2 || len(c.byKey) != 2 {
		t.Errorf("the cache holds %d images (%d keys), want 2", c.order.Len(), len(c.byKey))
	}
}
