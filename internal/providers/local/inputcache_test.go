package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/jobtype"
)

// countDecodes makes decodeImage count its calls into the returned counter until the test ends,
// and starts the test with an empty inputCache.
func countDecodes(t *testing.T) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	orig := decodeImage
	decodeImage = func(data []byte) (image.Image, error) {
		n.Add(1)
		return orig(data)
	}
	inputCache.reset()
	t.Cleanup(func() {
		decodeImage = orig
		inputCache.reset()
	})
	return &n
}

// inputPNG encodes img as an input file.
func inputPNG(t testing.TB, img *image.NRGBA) providers.Input {
	t.Helper()
	data, err := EncodePNG(img)
	if err != nil {
		t.Fatal(err)
	}
	return providers.Input{Data: data, ContentType: "image/png"}
}

// gradient is a w×h opaque test image.
func gradient(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	return img
}

// generate renders req with the local provider and returns its single output's bytes.
func generate(t testing.TB, req providers.Request) []byte {
	t.Helper()
	outs, err := Provider{}.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("%s %s %d seed %d: %v", req.JobType, req.AspectRatio, req.LongEdge, req.Seed, err)
	}
	if len(outs) != 1 {
		t.Fatalf("%s: %d outputs", req.JobType, len(outs))
	}
	return outs[0].Data
}

// cachedRequests are the requests of the job types that go through inputCache, over canvases,
// seeds, styles and a scenery image, all from the PNG input.
func cachedRequests(t testing.TB, input providers.Input) []providers.Request {
	scenery := inputPNG(t, gradient(200, 150))
	var reqs []providers.Request
	for _, jt := range []string{jobtype.PhotoShoot, jobtype.Packshot} {
		for _, c := range []struct {
			aspect   string
			longEdge int
		}{{"", 64}, {"4:5", 64}, {"16:9", 200}, {"3:2", 320}} {
			for seed := range int64(2) {
				req := providers.Request{JobType: jt, Model: StudioModel, AspectRatio: c.aspect, LongEdge: c.longEdge,
					Seed: seed, Inputs: []providers.Input{input}, Session: providers.SessionConfig{Style: "dark studio"}}
				reqs = append(reqs, req)
				if jt == jobtype.PhotoShoot && seed == 1 {
					req.Scenery = &scenery
					reqs = append(reqs, req)
				}
			}
		}
	}
	return reqs
}

// TestCachedRendersAreByteIdentical renders every request with a cold cache, again with a warm one,
// and through the uncached PhotoShoot and Packshot, and wants the same PNG bytes all three times.
func TestCachedRendersAreByteIdentical(t *testing.T) {
	decodes := countDecodes(t)
	input := inputPNG(t, makePackshot(640, 720))
	for _, req := range cachedRequests(t, input) {
		name := fmt.Sprintf("%s %q %d seed %d scenery %t", req.JobType, req.AspectRatio, req.LongEdge, req.Seed, req.Scenery != nil)
		inputCache.reset()
		before := decodes.Load()
		cold := generate(t, req)
		warm := generate(t, req)
		if got := decodes.Load() - before; got != 1 {
			t.Errorf("%s: %d decodes for a cold and a warm render, want 1", name, got)
		}
		if !bytes.Equal(cold, warm) {
			t.Errorf("%s: warm render differs from the cold one", name)
		}
		if uncached := renderUncached(t, req); !bytes.Equal(cold, uncached) {
			t.Errorf("%s: cached render differs from PhotoShoot/Packshot", name)
		}
	}
}

// renderUncached renders req the way the provider did before inputCache: decode, then PhotoShoot
// or Packshot, then EncodePNG.
func renderUncached(t *testing.T, req providers.Request) []byte {
	t.Helper()
	img, err := decodeImage(req.Inputs[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	var out *image.NRGBA
	if req.JobType == jobtype.Packshot {
		out, err = Packshot(img, PackshotOptions{AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed})
	} else {
		opts := PhotoShootOptions{AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed, Style: req.Session.Style}
		if req.Scenery != nil {
			if opts.Scenery, err = decodeImage(req.Scenery.Data); err != nil {
				t.Fatal(err)
			}
		}
		out, err = PhotoShoot(img, opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodePNG(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestCacheHitSkipsDecode: the five photo shoots of a product decode its packshot once; another
// canvas or another job type mattes it again.
func TestCacheHitSkipsDecode(t *testing.T) {
	decodes := countDecodes(t)
	input := inputPNG(t, makeMug())
	req := providers.Request{JobType: jobtype.PhotoShoot, AspectRatio: "4:5", LongEdge: 64, Inputs: []providers.Input{input}}
	for seed := range int64(5) {
		req.Seed = seed
		generate(t, req)
	}
	if n := decodes.Load(); n != 1 {
		t.Errorf("5 photo shoots of one packshot decoded it %d times, want 1", n)
	}
	// The same canvas spelled differently is the same entry.
	req.AspectRatio, req.LongEdge = "8:10", 65
	generate(t, req)
	if n := decodes.Load(); n != 1 {
		t.Errorf("4:5 at 64 and 8:10 at 65 (the same canvas) decoded %d times, want 1", n)
	}
	req.LongEdge = 128
	generate(t, req)
	req.JobType = jobtype.Packshot
	generate(t, req)
	if n := decodes.Load(); n != 3 {
		t.Errorf("after another canvas and a packshot: %d decodes, want 3", n)
	}
	if entries, _ := inputCache.stats(); entries != 3 {
		t.Errorf("%d cache entries, want 3", entries)
	}
}

// TestCacheKeepsNoFailures: undecodable and invisible inputs fail as before, with the same
// categories and messages, every time, and leave nothing in the cache.
func TestCacheKeepsNoFailures(t *testing.T) {
	decodes := countDecodes(t)
	invisible := inputPNG(t, image.NewNRGBA(image.Rect(0, 0, 32, 32)))
	cases := []struct {
		req  providers.Request
		want string
	}{
		{providers.Request{JobType: jobtype.PhotoShoot}, "INPUT_MISSING: photo shoot needs a packshot input"},
		{providers.Request{JobType: jobtype.Packshot}, "INPUT_MISSING: packshot needs a product photo input"},
		{providers.Request{JobType: jobtype.PhotoShoot, Inputs: []providers.Input{{Data: []byte("not an image")}}},
			"INPUT_MISSING: packshot is not a decodable image: image: unknown format"},
		{providers.Request{JobType: jobtype.Packshot, Inputs: []providers.Input{{Data: []byte("not an image")}}},
			"INPUT_MISSING: product photo is not a decodable image: image: unknown format"},
		{providers.Request{JobType: jobtype.PhotoShoot, AspectRatio: "9:1", Inputs: []providers.Input{{Data: []byte("not an image")}}},
			"INPUT_MISSING: packshot is not a decodable image: image: unknown format"},
		{providers.Request{JobType: jobtype.PhotoShoot, AspectRatio: "9:1", Inputs: []providers.Input{invisible}},
			`INPUT_MISSING: render: local: invalid aspect ratio "9:1": more extreme than 4:1`},
		{providers.Request{JobType: jobtype.PhotoShoot, LongEdge: 64, Inputs: []providers.Input{invisible}},
			"INPUT_MISSING: render: local: packshot has no visible pixels"},
		{providers.Request{JobType: jobtype.Packshot, LongEdge: 64, Inputs: []providers.Input{invisible}},
			"INPUT_MISSING: render: local: packshot has no visible pixels"},
	}
	for _, c := range cases {
		before := decodes.Load()
		for range 2 {
			_, err := Provider{}.Generate(context.Background(), c.req)
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Category != errorcat.InputMissing || err.Error() != c.want {
				t.Errorf("%s %+v: error %v, want %s", c.req.JobType, c.req.AspectRatio, err, c.want)
			}
		}
		want := int64(2 * len(c.req.Inputs)) // failures are not cached: each attempt decodes
		if n := decodes.Load() - before; n != want {
			t.Errorf("%q: %d decodes for two attempts, want %d", c.want, n, want)
		}
	}
	if entries, n := inputCache.stats(); entries != 0 || n != 0 {
		t.Errorf("cache holds %d entries, %d bytes after failures only", entries, n)
	}
}

// TestMatteCacheEvictsLeastRecentlyUsed fills a small cache past its limit: the bytes stay under
// it, the least recently used entries go first, and an entry larger than the limit is not kept.
func TestMatteCacheEvictsLeastRecentlyUsed(t *testing.T) {
	layer := func(side int) mattedInput { return mattedInput{mr: matteResult{layer: newRaster(side, side)}} }
	size := mattedBytes(layer(16)) // 16×16×4 + overhead
	c := newMatteCache(3*size + size/2)
	key := func(i int) matteKey {
		return matteKey{sum: sha256.Sum256([]byte{byte(i)}), w: 64, h: 64, spec: photoShootMatte}
	}
	computed := 0
	get := func(i int) {
		if _, err := c.get(key(i), func() (mattedInput, error) { computed++; return layer(16), nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		get(i)
	}
	get(0) // 0 is now the most recently used, 1 the least
	get(3) // evicts 1
	if entries, n := c.stats(); entries != 3 || n != 3*size || n > c.limit {
		t.Fatalf("%d entries, %d bytes, want 3 entries, %d bytes (limit %d)", entries, n, 3*size, c.limit)
	}
	for i, want := range []bool{true, false, true, true} {
		if _, ok := c.lookup(key(i)); ok != want {
			t.Errorf("entry %d cached %t, want %t", i, ok, want)
		}
	}
	for i := 4; i < 40; i++ {
		get(i)
		if _, n := c.stats(); n > c.limit {
			t.Fatalf("after %d inserts: %d bytes over the limit %d", i+1, n, c.limit)
		}
	}
	if _, ok := c.lookup(key(0)); ok {
		t.Error("entry 0 survived 36 newer ones")
	}

	// Too large to keep: computed, returned, not stored, and nothing evicted for it.
	entries, _ := c.stats()
	in, err := c.get(key(100), func() (mattedInput, error) { return layer(64), nil })
	if err != nil || in.mr.layer.w != 64 {
		t.Fatalf("large entry: %v, %d wide", err, in.mr.layer.w)
	}
	if _, ok := c.lookup(key(100)); ok {
		t.Error("an entry larger than the limit was kept")
	}
	if e, _ := c.stats(); e != entries {
		t.Errorf("%d entries after refusing the large one, want %d", e, entries)
	}
	if computed != 40-3+3 {
		t.Errorf("computed %d times", computed)
	}
}

// TestMatteCacheBytesBoundsLargeRenders: a worker rendering 4096-pixel canvases keeps the package
// cache under MatteCacheBytes.
func TestMatteCacheBytesBoundsLargeRenders(t *testing.T) {
	c := newMatteCache(MatteCacheBytes)
	big := mattedInput{mr: matteResult{layer: newRaster(4096, 4096/2)}} // 32 MiB of pixels
	for i := range 5 {
		c.add(matteKey{sum: sha256.Sum256([]byte{byte(i)}), w: 4096, h: 4096}, big)
		if _, n := c.stats(); n > MatteCacheBytes {
			t.Fatalf("after %d: %d bytes", i+1, n)
		}
	}
	if entries, _ := c.stats(); entries != 1 {
		t.Errorf("%d entries of 32 MiB kept under 64 MiB, want 1", entries)
	}
}

// TestConcurrentRendersShareCache renders photo shoots and packshots of one input from many
// goroutines at once (run it with -race): every output matches a sequential render, each matte is
// computed once, and the shared matted layers are never written.
func TestConcurrentRendersShareCache(t *testing.T) {
	decodes := countDecodes(t)
	input := inputPNG(t, makeMug())
	var reqs []providers.Request
	for _, jt := range []string{jobtype.PhotoShoot, jobtype.Packshot} {
		for seed := range int64(4) {
			reqs = append(reqs, providers.Request{JobType: jt, AspectRatio: "4:5", LongEdge: 96, Seed: seed,
				Inputs: []providers.Input{input}, Session: providers.SessionConfig{Style: "warm wood"}})
		}
	}
	want := make([][]byte, len(reqs))
	for i, req := range reqs {
		want[i] = renderUncached(t, req)
	}
	decodes.Store(0)
	sums := layerSums()
	if len(sums) != 0 {
		t.Fatalf("cache not empty: %d entries", len(sums))
	}

	var wg sync.WaitGroup
	const workers = 8
	got := make([][][]byte, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range reqs {
				req := reqs[(i+w)%len(reqs)]
				outs, err := Provider{}.Generate(context.Background(), req)
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], outs[0].Data)
			}
		})
	}
	wg.Wait()
	for w, outs := range got {
		for i, data := range outs {
			if j := (i + w) % len(reqs); !bytes.Equal(data, want[j]) {
				t.Errorf("worker %d: %s seed %d differs from a sequential render", w, reqs[j].JobType, reqs[j].Seed)
			}
		}
	}
	if n := decodes.Load(); n != 2 {
		t.Errorf("%d decodes, want 2 (one per job type)", n)
	}

	// Render again, sequentially, and check the cached layers kept their pixels.
	sums = layerSums()
	for _, req := range reqs {
		generate(t, req)
	}
	after := layerSums()
	if len(sums) != 2 || len(after) != 2 {
		t.Fatalf("%d, then %d cache entries, want 2", len(sums), len(after))
	}
	for k, s := range sums {
		if after[k] != s {
			t.Errorf("cached %s layer changed while rendering from it", k.spec.fn)
		}
	}
}

// layerSums hashes the pixels of every layer in inputCache.
func layerSums() map[matteKey][sha256.Size]byte {
	inputCache.mu.Lock()
	defer inputCache.mu.Unlock()
	sums := map[matteKey][sha256.Size]byte{}
	for k, el := range inputCache.byKey {
		sums[k] = sha256.Sum256(el.Value.(*matteEntry).in.mr.layer.pix)
	}
	return sums
}

// reset empties the cache.
func (c *matteCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	clear(c.byKey)
	c.bytes = 0
}

// stats reports the number of entries and the bytes they count.
func (c *matteCache) stats() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}
