package render

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
	"sync"
	"sync/atomic"
	"testing"
)

// countingCache is a new cache of MatteCacheBytes, the test's own, whose decodes count into the
// returned counter.
func countingCache() (*MatteCache, *atomic.Int64) {
	var n atomic.Int64
	c := NewMatteCache(MatteCacheBytes)
	c.decode = func(data []byte) (image.Image, error) {
		n.Add(1)
		return decodeImage(data)
	}
	return c, &n
}

// inputPNG encodes img as an input file.
func inputPNG(t testing.TB, img *image.NRGBA) []byte {
	t.Helper()
	data, err := EncodePNG(img)
	if err != nil {
		t.Fatal(err)
	}
	return data
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

// fileJob is one render from an input file, as the local provider does for a photo-shoot or
// packshot job: PhotoShootFile (or PackshotFile), then EncodePNG.
type fileJob struct {
	packshot bool // PackshotFile, else PhotoShootFile
	file     []byte
	aspect   string
	longEdge int
	seed     int64
	style    string
	scenery  image.Image // photo shoots only
}

func (j fileJob) String() string {
	kind := "photo shoot"
	if j.packshot {
		kind = "packshot"
	}
	return fmt.Sprintf("%s %q %d seed %d scenery %t", kind, j.aspect, j.longEdge, j.seed, j.scenery != nil)
}

// photoShootOptions are the options of a photo-shoot job.
func (j fileJob) photoShootOptions() PhotoShootOptions {
	return PhotoShootOptions{AspectRatio: j.aspect, LongEdge: j.longEdge, Seed: j.seed, Style: j.style, Scenery: j.scenery}
}

// packshotOptions are the options of a packshot job.
func (j fileJob) packshotOptions() PackshotOptions {
	return PackshotOptions{AspectRatio: j.aspect, LongEdge: j.longEdge, Seed: j.seed}
}

// render renders j through c and encodes the result as PNG.
func (j fileJob) render(c *MatteCache) ([]byte, error) {
	var img *image.NRGBA
	var err error
	if j.packshot {
		img, err = c.PackshotFile(j.file, j.packshotOptions())
	} else {
		img, err = c.PhotoShootFile(j.file, j.photoShootOptions())
	}
	if err != nil {
		return nil, err
	}
	return EncodePNG(img)
}

// generate renders j through c and returns the PNG bytes.
func generate(t testing.TB, c *MatteCache, j fileJob) []byte {
	t.Helper()
	data, err := j.render(c)
	if err != nil {
		t.Fatalf("%s: %v", j, err)
	}
	return data
}

// cachedJobs are photo shoots and packshots over canvases, seeds, styles and a scenery image, all
// from the file input.
func cachedJobs(input []byte) []fileJob {
	scenery := gradient(200, 150)
	var jobs []fileJob
	for _, packshot := range []bool{false, true} {
		for _, c := range []struct {
			aspect   string
			longEdge int
		}{{"", 64}, {"4:5", 64}, {"16:9", 200}, {"3:2", 320}} {
			for seed := range int64(2) {
				j := fileJob{packshot: packshot, file: input, aspect: c.aspect, longEdge: c.longEdge, seed: seed, style: "dark studio"}
				jobs = append(jobs, j)
				if !packshot && seed == 1 {
					j.scenery = scenery
					jobs = append(jobs, j)
				}
			}
		}
	}
	return jobs
}

// TestCachedRendersAreByteIdentical renders every job with a cold cache, again with a warm one, and
// through the uncached PhotoShoot and Packshot, and wants the same PNG bytes all three times.
func TestCachedRendersAreByteIdentical(t *testing.T) {
	input := inputPNG(t, makePackshot(640, 720))
	for _, j := range cachedJobs(input) {
		c, decodes := countingCache()
		cold := generate(t, c, j)
		warm := generate(t, c, j)
		if got := decodes.Load(); got != 1 {
			t.Errorf("%s: %d decodes for a cold and a warm render, want 1", j, got)
		}
		if !bytes.Equal(cold, warm) {
			t.Errorf("%s: warm render differs from the cold one", j)
		}
		if uncached := renderUncached(t, j); !bytes.Equal(cold, uncached) {
			t.Errorf("%s: cached render differs from PhotoShoot/Packshot", j)
		}
	}
}

// renderUncached renders j the way the local provider did before its cache: decode, then
// PhotoShoot or Packshot, then EncodePNG.
func renderUncached(t *testing.T, j fileJob) []byte {
	t.Helper()
	img, err := decodeImage(j.file)
	if err != nil {
		t.Fatal(err)
	}
	var out *image.NRGBA
	if j.packshot {
		out, err = Packshot(img, j.packshotOptions())
	} else {
		out, err = PhotoShoot(img, j.photoShootOptions())
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
	c, decodes := countingCache()
	j := fileJob{file: inputPNG(t, makeMug()), aspect: "4:5", longEdge: 64}
	for seed := range int64(5) {
		j.seed = seed
		generate(t, c, j)
	}
	if n := decodes.Load(); n != 1 {
		t.Errorf("5 photo shoots of one packshot decoded it %d times, want 1", n)
	}
	// The same canvas spelled differently is the same entry.
	j.aspect, j.longEdge = "8:10", 65
	generate(t, c, j)
	if n := decodes.Load(); n != 1 {
		t.Errorf("4:5 at 64 and 8:10 at 65 (the same canvas) decoded %d times, want 1", n)
	}
	j.longEdge = 128
	generate(t, c, j)
	j.packshot = true
	generate(t, c, j)
	if n := decodes.Load(); n != 3 {
		t.Errorf("after another canvas and a packshot: %d decodes, want 3", n)
	}
	if entries, _ := c.stats(); entries != 3 {
		t.Errorf("%d cache entries, want 3", entries)
	}
}

// TestCacheKeepsNoFailures: undecodable and invisible inputs fail as PhotoShoot and Packshot of the
// decoded image do (an undecodable file with a *DecodeError), every time, decoding the file on
// every attempt, and leave nothing in the cache.
func TestCacheKeepsNoFailures(t *testing.T) {
	mattes, decodes := countingCache()
	garbage := []byte("not an image")
	invisible := inputPNG(t, image.NewNRGBA(image.Rect(0, 0, 32, 32)))
	cases := []struct {
		job      fileJob
		want     string
		decoding bool  // the error is a *DecodeError
		is       error // the error wraps it, if not nil
	}{
		{fileJob{}, "image: unknown format", true, nil},
		{fileJob{packshot: true}, "image: unknown format", true, nil},
		{fileJob{file: garbage}, "image: unknown format", true, nil},
		{fileJob{packshot: true, file: garbage}, "image: unknown format", true, nil},
		{fileJob{file: garbage, aspect: "9:1"}, "image: unknown format", true, nil}, // decoded before the canvas is checked
		{fileJob{file: invisible, aspect: "9:1"}, `render: invalid aspect ratio "9:1": more extreme than 4:1`, false, ErrInvalidAspectRatio},
		{fileJob{file: invisible, longEdge: 64}, "render: packshot has no visible pixels", false, errInvisible},
		{fileJob{packshot: true, file: invisible, longEdge: 64}, "render: packshot has no visible pixels", false, errInvisible},
	}
	for _, c := range cases {
		before := decodes.Load()
		for range 2 {
			_, err := c.job.render(mattes)
			_, decoding := errors.AsType[*DecodeError](err)
			if err == nil || err.Error() != c.want || decoding != c.decoding || c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("%s: error %v (decode error %t), want %s", c.job, err, decoding, c.want)
			}
		}
		if n := decodes.Load() - before; n != 2 { // failures are not cached: each attempt decodes
			t.Errorf("%q: %d decodes for two attempts, want 2", c.want, n)
		}
	}
	if entries, n := mattes.stats(); entries != 0 || n != 0 {
		t.Errorf("cache holds %d entries, %d bytes after failures only", entries, n)
	}
}

// TestMatteCacheEvictsLeastRecentlyUsed fills a small cache past its limit: the bytes stay under
// it, the least recently used entries go first, and an entry larger than the limit is not kept.
func TestMatteCacheEvictsLeastRecentlyUsed(t *testing.T) {
	layer := func(side int) mattedInput { return mattedInput{mr: matteResult{layer: newRaster(side, side)}} }
	size := mattedBytes(layer(16)) // 16×16×4 + overhead
	c := NewMatteCache(3*size + size/2)
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
	c := NewMatteCache(MatteCacheBytes)
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
	c, decodes := countingCache()
	input := inputPNG(t, makeMug())
	var jobs []fileJob
	for _, packshot := range []bool{false, true} {
		for seed := range int64(4) {
			jobs = append(jobs, fileJob{packshot: packshot, file: input, aspect: "4:5", longEdge: 96, seed: seed, style: "warm wood"})
		}
	}
	want := make([][]byte, len(jobs))
	for i, j := range jobs {
		want[i] = renderUncached(t, j)
	}
	decodes.Store(0)
	sums := layerSums(c)
	if len(sums) != 0 {
		t.Fatalf("cache not empty: %d entries", len(sums))
	}

	var wg sync.WaitGroup
	const workers = 8
	got := make([][][]byte, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range jobs {
				data, err := jobs[(i+w)%len(jobs)].render(c)
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], data)
			}
		})
	}
	wg.Wait()
	for w, outs := range got {
		for i, data := range outs {
			if j := (i + w) % len(jobs); !bytes.Equal(data, want[j]) {
				t.Errorf("worker %d: %s differs from a sequential render", w, jobs[j])
			}
		}
	}
	if n := decodes.Load(); n != 2 {
		t.Errorf("%d decodes, want 2 (one per job type)", n)
	}

	// Render again, sequentially, and check the cached layers kept their pixels.
	sums = layerSums(c)
	for _, j := range jobs {
		generate(t, c, j)
	}
	after := layerSums(c)
	if len(sums) != 2 || len(after) != 2 {
		t.Fatalf("%d, then %d cache entries, want 2", len(sums), len(after))
	}
	for k, s := range sums {
		if after[k] != s {
			t.Errorf("cached %s layer changed while rendering from it", k.spec.fn)
		}
	}
}

// layerSums hashes the pixels of every layer in c.
func layerSums(c *MatteCache) map[matteKey][sha256.Size]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	sums := map[matteKey][sha256.Size]byte{}
	for k, el := range c.byKey {
		sums[k] = sha256.Sum256(el.Value.(*matteEntry).in.mr.layer.pix)
	}
	return sums
}

// reset empties the cache.
func (c *MatteCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	clear(c.byKey)
	c.bytes = 0
}

// stats reports the number of entries and the bytes they count.
func (c *MatteCache) stats() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}

// TestMatteCachesAreIndependent: what one cache keeps, another never sees. Before the cache was an
// instance, one package-level cache served every render in the process, so a test (or a provider)
// that rendered an input made the next one's first render of it a hit: here the second cache's
// first render would not decode, and the counts below would be off.
func TestMatteCachesAreIndependent(t *testing.T) {
	t.Parallel()
	j := fileJob{file: inputPNG(t, makeMug()), aspect: "4:5", longEdge: 64}
	first, firstDecodes := countingCache()
	second, secondDecodes := countingCache()
	want := generate(t, first, j)
	generate(t, first, j)
	if n := firstDecodes.Load(); n != 1 {
		t.Fatalf("two renders through one cache decoded %d times, want 1", n)
	}
	if entries, _ := second.stats(); entries != 0 {
		t.Fatalf("a new cache holds %d entries after another cache's renders, want 0", entries)
	}
	if got := generate(t, second, j); !bytes.Equal(got, want) {
		t.Error("the second cache renders other pixels")
	}
	if n := secondDecodes.Load(); n != 1 {
		t.Errorf("the first render through a new cache decoded %d times, want 1 (it must not hit another cache's entry)", n)
	}
	if e1, _ := first.stats(); e1 != 1 {
		t.Errorf("the first cache holds %d entries, want 1", e1)
	}
}

// TestNilMatteCacheKeepsNothing: a nil *MatteCache renders the same pixels, decoding every time.
func TestNilMatteCacheKeepsNothing(t *testing.T) {
	t.Parallel()
	for _, j := range []fileJob{
		{file: inputPNG(t, makeMug()), aspect: "4:5", longEdge: 64},
		{packshot: true, file: inputPNG(t, makeMug()), aspect: "1:1", longEdge: 64},
	} {
		var none *MatteCache
		if got, want := generate(t, none, j), renderUncached(t, j); !bytes.Equal(got, want) {
			t.Errorf("%s: a nil cache renders other pixels than an uncached render", j)
		}
		if _, err := none.PhotoShootFile([]byte("not an image"), PhotoShootOptions{}); err == nil {
			t.Errorf("a nil cache rendered garbage")
		}
	}
}
