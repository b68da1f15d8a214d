package video

// zoomMax is the zoom of the close-up end of each Ken Burns move (the other end is 1.0, the
// whole cover-fitted image).
const zoomMax = 1.15

// viewRect is the visible part of an image, in fractions of its cover-fitted area.
type viewRect struct{ x, y, w, h float64 }

// motion is a Ken Burns move: the view goes linearly from one rectangle to another.
type motion struct{ from, to viewRect }

// at returns the view at progress u in [0, 1].
func (m motion) at(u float64) viewRect {
	lerp := func(a, b float64) float64 { return a + (b-a)*u }
	return viewRect{
		x: lerp(m.from.x, m.to.x),
		y: lerp(m.from.y, m.to.y),
		w: lerp(m.from.w, m.to.w),
		h: lerp(m.from.h, m.to.h),
	}
}

// panDirections are the directions the close-up view can sit in: the four edges and the
// four corners of the image.
var panDirections = [8][2]float64{{-1, -1}, {0, -1}, {1, -1}, {1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}}

// motionFor picks image i's move from the seed: a pan direction and zoom in or out. Both
// ends of the move lie inside the image, so every view in between does too.
func motionFor(seed int64, i int) motion {
	r := splitmix64(uint64(seed) ^ (uint64(i)+1)*0x9e3779b97f4a7c15)
	dir := panDirections[r%uint64(len(panDirections))]
	side := 1 / zoomMax
	closeUp := viewRect{
		x: (0.5 + 0.5*dir[0]) * (1 - side),
		y: (0.5 + 0.5*dir[1]) * (1 - side),
		w: side,
		h: side,
	}
	full := viewRect{w: 1, h: 1}
	if r>>32&1 == 0 {
		return motion{from: full, to: closeUp}
	}
	return motion{from: closeUp, to: full}
}

// splitmix64 is the SplitMix64 mixing function: a stable, well-spread hash of x.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// layer is one image drawn in a frame: which image, its view, and its weight out of 256.
type layer struct {
	src    int
	view   viewRect
	weight uint32
}

// timeline places the images in time: image i owns [i*P, (i+1)*P) of the video, its move
// runs from i*P-X/2 to (i+1)*P+X/2, and consecutive images crossfade over X around their
// boundary (P = perImage, X = crossfade).
type timeline struct {
	motions   []motion
	perImage  float64 // seconds
	crossfade float64 // seconds
	fps       float64
}

// newTimeline builds the moves of every image for s.
func newTimeline(s settings) timeline {
	t := timeline{
		motions:   make([]motion, s.images),
		perImage:  s.perImage.Seconds(),
		crossfade: s.crossfade.Seconds(),
		fps:       float64(s.fps),
	}
	for i := range t.motions {
		t.motions[i] = motionFor(s.seed, i)
	}
	return t
}

// layers returns the one or two images of frame k into buf, sampled at the middle of the
// frame's display interval.
func (t timeline) layers(k int, buf []layer) []layer {
	at := (float64(k) + 0.5) / t.fps
	n := len(t.motions)
	i := min(max(int(at/t.perImage), 0), n-1)
	start := float64(i) * t.perImage
	half := t.crossfade / 2
	switch {
	case i+1 < n && at > start+t.perImage-half:
		return t.blend(i, i+1, at, start+t.perImage-half, buf)
	case i > 0 && at < start+half:
		return t.blend(i-1, i, at, start-half, buf)
	default:
		return append(buf[:0], t.layer(i, at, 256))
	}
}

// blend returns images a and b crossfading, the fade having started at fadeStart.
func (t timeline) blend(a, b int, at, fadeStart float64, buf []layer) []layer {
	wb := uint32(min(max((at-fadeStart)/t.crossfade, 0), 1)*256 + 0.5)
	switch wb {
	case 0:
		return append(buf[:0], t.layer(a, at, 256))
	case 256:
		return append(buf[:0], t.layer(b, at, 256))
	}
	return append(buf[:0], t.layer(a, at, 256-wb), t.layer(b, at, wb))
}

// layer returns image i as seen at time at with the given weight.
func (t timeline) layer(i int, at float64, weight uint32) layer {
	moveStart := float64(i)*t.perImage - t.crossfade/2
	u := min(max((at-moveStart)/(t.perImage+t.crossfade), 0), 1)
	return layer{src: i, view: t.motions[i].at(u), weight: weight}
}
