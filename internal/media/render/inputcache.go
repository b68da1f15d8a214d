package render

import (
	"container/list"
	"crypto/sha256"
	"fmt"
	"image"
	"sync"

	"golang.org/x/sync/singleflight"
)

// MatteCacheBytes is the bound a worker gives its MatteCache: the pixel bytes of the matted inputs
// it keeps.
// 64 MiB holds over a thousand packshots matted for 64-pixel canvases (at most 96×96 pixels each),
// and at RENDER_LONG_EDGE=4096 still a few large ones, while the heap of a worker stays bounded.
// A matted input larger than the bound is not kept at all.
const MatteCacheBytes = 64 << 20

// matteEntryOverhead is what an entry costs besides its pixels (key, list element, map slot),
// counted so that many tiny entries cannot exceed the bound either.
const matteEntryOverhead = 256

// matteKey identifies a matted input: matteInput's result depends on the input image (its file's
// SHA-256), the canvas (the size CanvasSize gives the render's aspect ratio and long edge) and
// the spec, nothing else.
type matteKey struct {
	sum  [sha256.Size]byte // SHA-256 of the input file
	w, h int               // the canvas
	spec matteSpec         // how the input is matted (spec.fn also keeps the error texts apart)
}

// String is the key in the form singleflight needs.
func (k matteKey) String() string {
	return fmt.Sprintf("%x/%dx%d/%s/%s/%g/%t", k.sum, k.w, k.h, k.spec.fn, k.spec.noun, k.spec.span, k.spec.clearHoles)
}

// matteEntry is one cached matted input in the LRU list.
type matteEntry struct {
	key   matteKey
	in    mattedInput
	bytes int // what the entry counts against the limit
}

// MatteCache keeps matted inputs, least recently used first out once their bytes exceed its limit,
// so that the jobs of one product (which all start from the same approved packshot) decode and
// matte it once. Concurrent misses for one key are computed once. The cached values are shared
// between renders, which only read them. Safe for concurrent use.
//
// The cache is an instance its owner creates (NewMatteCache) and passes along (the local provider
// holds the worker's): no state is kept at package level, so tests, or two providers in one
// process, cannot see each other's entries. A nil *MatteCache keeps nothing: every render
// decodes and mattes its input.
type MatteCache struct {
	limit  int                               // most bytes the entries may count
	decode func([]byte) (image.Image, error) // decodes an input file (decodeImage; tests count calls)
	flight singleflight.Group                // the misses being computed, by matteKey.String

	mu    sync.Mutex
	bytes int                        // bytes of the entries in lru
	lru   *list.List                 // of *matteEntry, most recently used first
	byKey map[matteKey]*list.Element // the elements of lru
}

// NewMatteCache returns an empty cache that keeps at most limit bytes of matted inputs
// (MatteCacheBytes for a worker).
func NewMatteCache(limit int) *MatteCache {
	return &MatteCache{limit: limit, decode: decodeImage, lru: list.New(), byKey: map[matteKey]*list.Element{}}
}

// get returns the matted input of key, computing it with compute on a miss and keeping it when
// compute succeeds. Errors are not kept: the next get computes again.
func (c *MatteCache) get(key matteKey, compute func() (mattedInput, error)) (mattedInput, error) {
	if in, ok := c.lookup(key); ok {
		return in, nil
	}
	v, err, _ := c.flight.Do(key.String(), func() (any, error) {
		// A call that just finished may have stored it between lookup and Do.
		if in, ok := c.lookup(key); ok {
			return in, nil
		}
		in, err := compute()
		if err != nil {
			return nil, err
		}
		c.add(key, in)
		return in, nil
	})
	if err != nil {
		return mattedInput{}, err
	}
	return v.(mattedInput), nil
}

// lookup returns the cached input of key and marks it most recently used.
func (c *MatteCache) lookup(key matteKey) (mattedInput, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return mattedInput{}, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*matteEntry).in, true
}

// add keeps in under key as the most recently used entry and evicts the least recently used ones
// beyond the limit. An input larger than the limit on its own is not kept.
func (c *MatteCache) add(key matteKey, in mattedInput) {
	n := mattedBytes(in)
	if n > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.lru.PushFront(&matteEntry{key: key, in: in, bytes: n})
	c.bytes += n
	for c.bytes > c.limit {
		c.remove(c.lru.Back())
	}
}

// remove drops the entry of el; the caller holds mu.
func (c *MatteCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*matteEntry)
	delete(c.byKey, e.key)
	c.bytes -= e.bytes
}

// mattedBytes is what in counts against the cache's limit: its layer's pixel buffer (the only
// memory it holds; the decoded input is not retained) plus the fixed overhead of an entry.
func mattedBytes(in mattedInput) int {
	return cap(in.mr.layer.pix) + matteEntryOverhead
}
