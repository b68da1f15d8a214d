package render

import (
	"bytes"
	"crypto/sha256"
	"image"
	_ "image/jpeg" // decodes JPEG inputs
	_ "image/png"  // decodes PNG inputs

	_ "golang.org/x/image/webp" // decodes WebP inputs
)

// DecodeError is the error of PhotoShootFile and PackshotFile for an input file that is not a
// decodable PNG, JPEG or WebP image.
type DecodeError struct {
	Err error // the image package's error
}

// Error is the image package's error text.
func (e *DecodeError) Error() string { return e.Err.Error() }

// Unwrap returns the image package's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// PhotoShootFile is PhotoShoot of the packshot in the image file packshot (PNG, JPEG or WebP). The
// matted packshot comes from c (least recently used out first), keyed by the file's SHA-256, the
// canvas and the kind of render: the photo shoots of one product start from the same packshot, so
// only the first decodes and mattes it, and a hit costs a SHA-256 of the file. A file that does not
// decode is a *DecodeError; failures are not cached. Same file and options, same pixels as
// PhotoShoot of the decoded image. A nil c renders without a cache.
func (c *MatteCache) PhotoShootFile(packshot []byte, opts PhotoShootOptions) (*image.NRGBA, error) {
	in, err := c.matteFile(packshot, photoShootMatte, opts.AspectRatio, opts.LongEdge)
	if err != nil {
		return nil, err
	}
	img, _, err := composePhotoShoot(in, opts)
	return img, err
}

// PackshotFile is Packshot of the product photo in the image file photo (PNG, JPEG or WebP),
// through c as PhotoShootFile. A file that does not decode is a *DecodeError; failures are not
// cached. Same file and options, same pixels as Packshot of the decoded image. A nil c renders
// without a cache.
func (c *MatteCache) PackshotFile(photo []byte, opts PackshotOptions) (*image.NRGBA, error) {
	in, err := c.matteFile(photo, packshotMatte, opts.AspectRatio, opts.LongEdge)
	if err != nil {
		return nil, err
	}
	img, _ := composePackshot(in, opts)
	return img, nil
}

// matteFile returns the image file data matted with spec for the canvas of aspect and longEdge. It
// looks the file up in c before decoding it, so a hit costs a SHA-256 of data and no decode. An
// undecodable file is a *DecodeError, and one matteInput refuses fails with its error, exactly as
// without the cache; failures are not cached.
func (c *MatteCache) matteFile(data []byte, spec matteSpec, aspect string, longEdge int) (mattedInput, error) {
	decode := decodeImage
	if c != nil {
		decode = c.decode
	}
	compute := func() (mattedInput, error) {
		img, err := decode(data)
		if err != nil {
			return mattedInput{}, &DecodeError{Err: err}
		}
		return matteInput(img, spec, aspect, longEdge)
	}
	if c == nil {
		return compute()
	}
	w, h, err := CanvasSize(aspect, longEdge)
	if err != nil {
		return compute() // no canvas to key on: fail as an uncached render does
	}
	key := matteKey{sum: sha256.Sum256(data), w: w, h: h, spec: spec}
	return c.get(key, compute)
}

// decodeImage decodes an image file.
func decodeImage(data []byte) (image.Image, error) {
	img, _, err := image.Decode(bytes.NewReader(data))
	return img, err
}
