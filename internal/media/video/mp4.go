package video

import (
	"encoding/binary"
	"fmt"
)

// MP4 timing: the media timescale is mp4FrameTicks*fps, so every frame lasts exactly
// mp4FrameTicks units; the movie timescale counts milliseconds.
const (
	mp4FrameTicks     = 1000
	mp4MovieTimescale = 1000
)

// mp4Writer builds an MP4 (ISO BMFF) file with one H.264 video track whose samples all
// sit in one chunk: ftyp, then moov (so playback can start before the whole file is
// downloaded), then mdat. The space for ftyp and moov is reserved up front, since their
// size depends only on the number of frames, and filled in by finish.
type mp4Writer struct {
	s        settings
	sps, pps []byte
	buf      []byte // ftyp + moov (reserved) + mdat
	head     int    // size of ftyp + moov + mdat header
	sizes    []uint32
}

// newMP4Writer reserves the file header for s.frames samples; sampleHint is the expected
// size of one sample and only sizes the buffer.
func newMP4Writer(s settings, sps, pps []byte, sampleHint int) *mp4Writer {
	w := &mp4Writer{s: s, sps: sps, pps: pps, sizes: make([]uint32, 0, s.frames)}
	w.head = len(w.header(make([]uint32, s.frames), 0))
	w.buf = make([]byte, w.head, w.head+s.frames*(sampleHint+64))
	return w
}

// addSample adds one sample made of the NAL unit that appendNAL appends to its argument.
func (w *mp4Writer) addSample(appendNAL func([]byte) []byte) {
	start := len(w.buf)
	w.buf = appendNAL(append(w.buf, 0, 0, 0, 0))
	nalSize := len(w.buf) - start - 4
	binary.BigEndian.PutUint32(w.buf[start:], uint32(nalSize))
	w.sizes = append(w.sizes, uint32(nalSize+4))
}

// finish writes the header into its reserved space and returns the file.
func (w *mp4Writer) finish() ([]byte, error) {
	if len(w.sizes) != w.s.frames {
		return nil, fmt.Errorf("video: mp4 has %d samples, want %d", len(w.sizes), w.s.frames)
	}
	mdatSize := uint64(len(w.buf) - w.head + 8)
	if mdatSize > 1<<32-1 {
		return nil, fmt.Errorf("video: mp4 media data too large (%d bytes)", mdatSize)
	}
	head := w.header(w.sizes, uint32(mdatSize))
	if len(head) != w.head {
		return nil, fmt.Errorf("video: mp4 header is %d bytes, reserved %d", len(head), w.head)
	}
	copy(w.buf, head)
	return w.buf, nil
}

// header returns ftyp, moov and the mdat box header for samples of the given sizes.
func (w *mp4Writer) header(sizes []uint32, mdatSize uint32) []byte {
	ftyp := box("ftyp", []byte("isom"), u32(0x200), []byte("isomiso2avc1mp41"))
	moovSize := len(w.moov(sizes, 0))
	mdatStart := uint32(len(ftyp)+moovSize) + 8
	out := append(ftyp, w.moov(sizes, mdatStart)...)
	return append(out, box32Header("mdat", mdatSize)...)
}

// moov returns the movie box; chunkOffset is the file offset of the first sample.
func (w *mp4Writer) moov(sizes []uint32, chunkOffset uint32) []byte {
	mediaDuration := uint32(len(sizes) * mp4FrameTicks)
	movieDuration := uint32(w.s.duration().Milliseconds())
	return box("moov",
		fullBox("mvhd", 0, 0,
			u32(0), u32(0), u32(mp4MovieTimescale), u32(movieDuration),
			u32(0x00010000), u16(0x0100), make([]byte, 10), identityMatrix(),
			make([]byte, 24), u32(2)),
		box("trak",
			fullBox("tkhd", 0, 3, // track enabled, in movie
				u32(0), u32(0), u32(1), u32(0), u32(movieDuration),
				make([]byte, 8), u16(0), u16(0), u16(0), u16(0), identityMatrix(),
				u32(uint32(w.s.width)<<16), u32(uint32(w.s.height)<<16)),
			box("mdia",
				fullBox("mdhd", 0, 0,
					u32(0), u32(0), u32(uint32(w.s.fps*mp4FrameTicks)), u32(mediaDuration),
					u16(0x55c4), u16(0)), // language "und"
				fullBox("hdlr", 0, 0, u32(0), []byte("vide"), make([]byte, 12), []byte("VideoHandler\x00")),
				box("minf",
					fullBox("vmhd", 0, 1, u16(0), make([]byte, 6)),
					box("dinf", fullBox("dref", 0, 0, u32(1), fullBox("url ", 0, 1))),
					w.stbl(sizes, chunkOffset)))))
}

// stbl returns the sample table: one sample description, every sample one frame long and
// a sync sample, all samples in one chunk.
func (w *mp4Writer) stbl(sizes []uint32, chunkOffset uint32) []byte {
	n := uint32(len(sizes))
	stss := make([]byte, 0, 4*n)
	stsz := make([]byte, 0, 4*n)
	for i, size := range sizes {
		stss = binary.BigEndian.AppendUint32(stss, uint32(i+1))
		stsz = binary.BigEndian.AppendUint32(stsz, size)
	}
	return box("stbl",
		fullBox("stsd", 0, 0, u32(1), w.avc1()),
		fullBox("stts", 0, 0, u32(1), u32(n), u32(mp4FrameTicks)),
		fullBox("stss", 0, 0, u32(n), stss),
		fullBox("stsc", 0, 0, u32(1), u32(1), u32(n), u32(1)),
		fullBox("stsz", 0, 0, u32(0), u32(n), stsz),
		fullBox("stco", 0, 0, u32(1), u32(chunkOffset)))
}

// avc1 returns the visual sample entry with its avcC decoder configuration.
func (w *mp4Writer) avc1() []byte {
	compressor := make([]byte, 32)
	compressor[0] = byte(copy(compressor[1:], "shotflow I_PCM"))
	return box("avc1",
		make([]byte, 6), u16(1), // reserved, data_reference_index
		make([]byte, 16), u16(uint16(w.s.width)), u16(uint16(w.s.height)),
		u32(0x00480000), u32(0x00480000), u32(0), u16(1), // 72 dpi, frame_count 1
		compressor, u16(0x0018), u16(0xffff), // depth 24, pre_defined -1
		box("avcC",
			[]byte{1, profileBaseline, constraintFlags, levelIDC, 0xff, 0xe1}, // 4-byte NAL lengths, 1 SPS
			u16(uint16(len(w.sps))), w.sps,
			[]byte{1}, u16(uint16(len(w.pps))), w.pps))
}

// box returns an ISO BMFF box of the given type holding the concatenated parts.
func box(typ string, parts ...[]byte) []byte {
	size := 8
	for _, p := range parts {
		size += len(p)
	}
	out := box32Header(typ, uint32(size))
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// fullBox returns a box that starts with a version byte and 24 bits of flags.
func fullBox(typ string, version byte, flags uint32, parts ...[]byte) []byte {
	return box(typ, append([][]byte{u32(uint32(version)<<24 | flags)}, parts...)...)
}

// box32Header returns a box header with a 32-bit size.
func box32Header(typ string, size uint32) []byte {
	return append(u32(size), typ...)
}

// identityMatrix is the unity transformation matrix of mvhd and tkhd.
func identityMatrix() []byte {
	var m []byte
	for _, v := range []uint32{0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000} {
		m = binary.BigEndian.AppendUint32(m, v)
	}
	return m
}

// u32 returns v as 4 big-endian bytes.
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// u16 returns v as 2 big-endian bytes.
func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
