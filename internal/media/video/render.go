package video

import (
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"math"
	"runtime"
	"sync"
)

// movie renders the frames of one video, one at a time, into a reused buffer.
type movie struct {
	s       settings
	sources []*image.RGBA
	tl      timeline
	out     *frame
	r       *rasterizer
	layers  []layer
	stamp   *stamp // painted on every frame; nil for none
}

// newMovie prepares the images for s. It stops early when ctx ends.
func newMovie(ctx context.Context, images []image.Image, s settings) (*movie, error) {
	m := &movie{
		s:       s,
		sources: make([]*image.RGBA, len(images)),
		tl:      newTimeline(s),
		out:     newFrame(s.width, s.height),
		r:       newRasterizer(s.width, s.height),
		layers:  make([]layer, 0, 2),
	}
	for i, img := range images {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("video: preparing image %d: %w", i, err)
		}
		m.sources[i] = prepareSource(img, s.width, s.height)
	}
	return m, nil
}

// frame renders frame k. The returned frame is reused by the next call.
func (m *movie) frame(ctx context.Context, k int) (*frame, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("video: rendering frame %d of %d: %w", k, m.s.frames, err)
	}
	m.layers = m.tl.layers(k, m.layers)
	m.r.render(m.out.img, m.layers, m.sources)
	m.stamp.paint(m.out.img)
	return m.out, nil
}

// frame is one 4:2:0 picture whose planes lie back to back in raw, the layout of ffmpeg's
// rawvideo yuv420p.
type frame struct {
	img *image.YCbCr
	raw []byte
}

// newFrame allocates a w x h frame; w and h are even.
func newFrame(w, h int) *frame {
	ySize, cSize := w*h, w*h/4
	raw := make([]byte, ySize+2*cSize)
	return &frame{
		raw: raw,
		img: &image.YCbCr{
			Y:              raw[:ySize:ySize],
			Cb:             raw[ySize : ySize+cSize : ySize+cSize],
			Cr:             raw[ySize+cSize:],
			YStride:        w,
			CStride:        w / 2,
			SubsampleRatio: image.YCbCrSubsampleRatio420,
			Rect:           image.Rect(0, 0, w, h),
		},
	}
}

// Bilinear weights have weightBits bits of precision (1/64 pixel), few enough that a whole
// bilinear interpolation of one RGB pixel fits three 21-bit lanes of a uint64.
const (
	weightBits = 6
	weightOne  = 1 << weightBits
	laneBits   = 21
)

// tap is one bilinear sampling position along an axis: two byte offsets into the source
// and the weight of the second one, out of weightOne.
type tap struct {
	o0, o1 int
	f      uint64
}

// rasterizer draws layers into frames with bilinear sampling, splitting the rows among
// GOMAXPROCS goroutines. Its tables and scratch rows are reused from frame to frame.
type rasterizer struct {
	w, h    int
	cols    [2][]tap
	rows    [2][]tap
	scratch [][3][]byte // per worker: two composed RGB rows and one row of the second layer
}

// newRasterizer allocates the tables and scratch rows for w x h frames.
func newRasterizer(w, h int) *rasterizer {
	r := &rasterizer{w: w, h: h}
	for i := range r.cols {
		r.cols[i] = make([]tap, w)
		r.rows[i] = make([]tap, h)
	}
	workers := min(runtime.GOMAXPROCS(0), h/2)
	r.scratch = make([][3][]byte, workers)
	for i := range r.scratch {
		for j := range r.scratch[i] {
			r.scratch[i][j] = make([]byte, 3*w)
		}
	}
	return r
}

// render draws the layers (one, or two crossfading) of sources into dst.
func (r *rasterizer) render(dst *image.YCbCr, layers []layer, sources []*image.RGBA) {
	for i, l := range layers {
		src := sources[l.src]
		sw, sh := src.Rect.Dx(), src.Rect.Dy()
		fillTaps(r.cols[i], l.view.x*float64(sw), l.view.w*float64(sw)/float64(r.w), sw, 4)
		fillTaps(r.rows[i], l.view.y*float64(sh), l.view.h*float64(sh)/float64(r.h), sh, src.Stride)
	}
	pairs := r.h / 2
	workers := len(r.scratch)
	var wg sync.WaitGroup
	for wi := range workers {
		j0, j1 := pairs*wi/workers, pairs*(wi+1)/workers
		wg.Go(func() { r.renderPairs(dst, layers, sources, j0, j1, &r.scratch[wi]) })
	}
	wg.Wait()
}

// fillTaps fills taps for an axis of len(taps) output pixels that shows the source span
// starting at offset with scale source pixels per output pixel. Sample positions are pixel
// centres, clamped to the n source pixels; unit is the byte size of one source step.
func fillTaps(taps []tap, offset, scale float64, n, unit int) {
	last := float64(n - 1)
	for i := range taps {
		s := min(max(offset+(float64(i)+0.5)*scale-0.5, 0), last)
		i0 := math.Floor(s)
		i1 := min(i0+1, last)
		taps[i] = tap{o0: int(i0) * unit, o1: int(i1) * unit, f: uint64(math.Round((s - i0) * weightOne))}
	}
}

// renderPairs renders the luma row pairs j0..j1-1 (and the chroma rows j0..j1-1) of dst.
func (r *rasterizer) renderPairs(dst *image.YCbCr, layers []layer, sources []*image.RGBA, j0, j1 int, scratch *[3][]byte) {
	for j := j0; j < j1; j++ {
		for half := range 2 {
			y := 2*j + half
			rgb := scratch[half]
			r.sampleRow(rgb, sources[layers[0].src], 0, y)
			if len(layers) == 2 {
				other := scratch[2]
				r.sampleRow(other, sources[layers[1].src], 1, y)
				blendRow(rgb, other, layers[1].weight)
			}
			lumaRow(dst.Y[y*dst.YStride:y*dst.YStride+r.w], rgb)
		}
		off := j * dst.CStride
		chromaRow(dst.Cb[off:off+r.w/2], dst.Cr[off:off+r.w/2], scratch[0], scratch[1])
	}
}

// sampleRow samples output row y of layer i from src into rgb (3 bytes per pixel). The
// three channels of a texel are spread into the lanes of a uint64 so that one multiply
// weighs all of them.
func (r *rasterizer) sampleRow(rgb []byte, src *image.RGBA, i, y int) {
	row := r.rows[i][y]
	r0, r1 := src.Pix[row.o0:], src.Pix[row.o1:]
	fy := row.f
	gy := weightOne - fy
	const round = 1<<(2*weightBits-1) | 1<<(2*weightBits-1)<<laneBits | 1<<(2*weightBits-1)<<(2*laneBits)
	for x, c := range r.cols[i] {
		fx := c.f
		gx := weightOne - fx
		top := texel(r0, c.o0)*gx + texel(r0, c.o1)*fx
		bottom := texel(r1, c.o0)*gx + texel(r1, c.o1)*fx
		v := top*gy + bottom*fy + round
		out := rgb[3*x : 3*x+3 : 3*x+3]
		out[0] = uint8(v >> (2 * weightBits))
		out[1] = uint8(v >> (laneBits + 2*weightBits))
		out[2] = uint8(v >> (2*laneBits + 2*weightBits))
	}
}

// texel returns the RGB of the RGBA pixel at byte offset o of pix, one channel per lane.
func texel(pix []byte, o int) uint64 {
	p := uint64(binary.LittleEndian.Uint32(pix[o:]))
	return p&0xff | (p&0xff00)<<(laneBits-8) | (p&0xff0000)<<(2*laneBits-16)
}

// blendRow mixes other into dst with weight w out of 256.
func blendRow(dst, other []byte, w uint32) {
	other = other[:len(dst)]
	v := 256 - w
	for i, a := range dst {
		dst[i] = uint8((uint32(a)*v + uint32(other[i])*w + 128) >> 8)
	}
}
