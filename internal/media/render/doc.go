// Package render is the offline renderer behind the local provider: it renders real product
// photographs in pure Go by matting a packshot and compositing it into a procedural (or supplied)
// scene, cuts products out of photos as packshots on white, draws model and scenery ideas from
// free-text preferences, and encodes the results as PNG, deterministically from its inputs.
//
// MatteCache.PhotoShootFile and MatteCache.PackshotFile render from an image file through a cache
// of matted inputs that the caller owns (the local provider's, at most MatteCacheBytes), so the
// jobs of one product decode and matte its packshot once. The package keeps no state of its own
// and imports nothing of shotflow.
package render
