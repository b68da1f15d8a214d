package local

import (
	"bytes"
	"container/list"
	"image"
	"sync"
)

// SceneryCache keeps the decoded scene images of photo shoots by the blob key their file was read
// from (providers.Input.Key), so that the jobs of a session, which share their scenery, decode it
// once instead of once each. It holds at most its capacity of images, the least recently used
// dropped first, and is safe for concurrent use. A file under a blob key never changes (inputs and
// outputs are stored under new keys, reference images under keys of their content); the file's
// length is part of the key all the same, so a changed file is never answered from the cache.
// Failed decodes are not kept. The composition root makes one per provider (internal/app); a
// Provider without one decodes each time.
type SceneryCache struct {
	capacity int
	decode   func([]byte) (image.Image, error)

	mu      sync.Mutex
	order   *list.List // of *sceneryEntry, most recently used first
	byKey   map[sceneryKey]*list.Element
	decodes int
}

type sceneryKey struct {
	blobKey string
	size    int
}

type sceneryEntry struct {
	key sceneryKey
	img image.Image
}

// NewSceneryCache returns a cache of at most capacity decoded scene images (at least 1).
func NewSceneryCache(capacity int) *SceneryCache {
	return newSceneryCache(capacity, func(data []byte) (image.Image, error) {
		img, _, err := image.Decode(bytes.NewReader(data))
		return img, err
	})
}

func newSceneryCache(capacity int, decode func([]byte) (image.Image, error)) *SceneryCache {
	return &SceneryCache{capacity: max(capacity, 1), decode: decode, order: list.New(), byKey: map[sceneryKey]*list.Element{}}
}

// Image returns the decoded image of data, the file stored under blobKey: from the cache, or
// decoded and kept. Without a blob key it decodes and keeps nothing. Concurrent misses of one key
// may each decode; one of their images is kept.
func (c *SceneryCache) Image(blobKey string, data []byte) (image.Image, error) {
	if blobKey == "" {
		return c.decodeCounted(data)
	}
	key := sceneryKey{blobKey: blobKey, size: len(data)}
	c.mu.Lock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		img := e.Value.(*sceneryEntry).img
		c.mu.Unlock()
		return img, nil
	}
	c.mu.Unlock()
	img, err := c.decodeCounted(data)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok { // decoded meanwhile by another job
		c.order.MoveToFront(e)
		return e.Value.(*sceneryEntry).img, nil
	}
	c.byKey[key] = c.order.PushFront(&sceneryEntry{key: key, img: img})
	for c.order.Len() > c.capacity {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.byKey, oldest.Value.(*sceneryEntry).key)
	}
	return img, nil
}

// Decodes is how many files the cache has decoded.
func (c *SceneryCache) Decodes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.decodes
}

func (c *SceneryCache) decodeCounted(data []byte) (image.Image, error) {
	c.mu.Lock()
	c.decodes++
	c.mu.Unlock()
	return c.decode(data)
}
