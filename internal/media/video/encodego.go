package video

import "context"

// encodeGo encodes the frames of m with the pure-Go I_PCM H.264 encoder into an MP4.
func encodeGo(ctx context.Context, m *movie) ([]byte, error) {
	w, h := m.s.width, m.s.height
	enc := newPCMEncoder(w, h)
	sampleHint := mbCount(w) * mbCount(h) * (2 + 3*mbSize*mbSize/2)
	mux := newMP4Writer(m.s, buildSPS(w, h), buildPPS(), sampleHint)
	for k := range m.s.frames {
		f, err := m.frame(ctx, k)
		if err != nil {
			return nil, err
		}
		mux.addSample(func(dst []byte) []byte {
			return enc.appendIDR(append(dst, nalIDR), f.img, k)
		})
	}
	return mux.finish()
}
