package render

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"sync"
)

// encoderPool recycles PNG encoder state between EncodePNG calls.
type encoderPool struct{ p sync.Pool }

// Get returns a pooled encoder buffer, or nil.
func (e *encoderPool) Get() *png.EncoderBuffer {
	b, _ := e.p.Get().(*png.EncoderBuffer)
	return b
}

// Put returns an encoder buffer to the pool.
func (e *encoderPool) Put(b *png.EncoderBuffer) { e.p.Put(b) }

// pngEncoder favours speed over size.
var pngEncoder = &png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &encoderPool{}}

// EncodePNG encodes img as a PNG using the fastest compression level.
func EncodePNG(img image.Image) ([]byte, error) {
	if img == nil {
		return nil, errors.New("render: EncodePNG: nil image")
	}
	b := img.Bounds()
	var buf bytes.Buffer
	buf.Grow(b.Dx()*b.Dy()*2 + 1024)
	if err := pngEncoder.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
