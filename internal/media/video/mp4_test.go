package video

import (
	"context"
	"encoding/binary"
	"image"
	"image/color"
	"slices"
	"testing"
	"time"
)

// mp4Box is one parsed ISO BMFF box.
type mp4Box struct {
	typ      string
	start    int // file offset of the box header
	payload  []byte
	children []*mp4Box
}

// childOffset is, for the box types that hold boxes, where in the payload the child
// boxes start (after full-box headers, entry counts and sample entry fields).
var childOffset = map[string]int{
	"moov": 0, "trak": 0, "mdia": 0, "minf": 0, "dinf": 0, "stbl": 0,
	"dref": 8, "stsd": 8, "avc1": 78,
}

// parseBoxes parses the boxes in data, which starts at file offset base.
func parseBoxes(t *testing.T, data []byte, base int) []*mp4Box {
	t.Helper()
	var boxes []*mp4Box
	for off := 0; off < len(data); {
		if len(data)-off < 8 {
			t.Fatalf("truncated box header at offset %d", base+off)
		}
		size := int(binary.BigEndian.Uint32(data[off:]))
		if size < 8 || off+size > len(data) {
			t.Fatalf("box at offset %d has size %d, only %d bytes left", base+off, size, len(data)-off)
		}
		b := &mp4Box{typ: string(data[off+4 : off+8]), start: base + off, payload: data[off+8 : off+size]}
		if skip, ok := childOffset[b.typ]; ok {
			b.children = parseBoxes(t, b.payload[skip:], b.start+8+skip)
		}
		boxes = append(boxes, b)
		off += size
	}
	return boxes
}

// find returns the box at the given path of types below boxes.
func find(t *testing.T, boxes []*mp4Box, path ...string) *mp4Box {
	t.Helper()
	for i, typ := range path {
		j := slices.IndexFunc(boxes, func(b *mp4Box) bool { return b.typ == typ })
		if j < 0 {
			t.Fatalf("no %q box in %v", typ, path[:i+1])
		}
		if i == len(path)-1 {
			return boxes[j]
		}
		boxes = boxes[j].children
	}
	t.Fatal("empty box path")
	return nil
}

// boxTypes lists the types of boxes.
func boxTypes(boxes []*mp4Box) []string {
	var types []string
	for _, b := range boxes {
		types = append(types, b.typ)
	}
	return types
}

// be32 reads the big-endian uint32 at offset off of b.
func be32(b []byte, off int) int { return int(binary.BigEndian.Uint32(b[off:])) }

func TestGoMP4Structure(t *testing.T) {
	images := []image.Image{
		solidImage(64, 64, color.RGBA{200, 0, 0, 255}),
		gradientImage(300, 200),
		quadrantImage(100, 300),
	}
	res, err := Render(context.Background(), images, Options{Width: 640, Height: 360, PerImage: time.Second, Encoder: EncoderGo})
	if err != nil {
		t.Fatal(err)
	}
	if res.Width != 480 || res.Height != 270 || res.Frames != 36 || res.Duration != 3*time.Second {
		t.Fatalf("Result %dx%d, %d frames, %v; want 480x270, 36 frames, 3s", res.Width, res.Height, res.Frames, res.Duration)
	}
	top := parseBoxes(t, res.Data, 0)
	if got := boxTypes(top); !slices.Equal(got, []string{"ftyp", "moov", "mdat"}) {
		t.Fatalf("top-level boxes %v, want [ftyp moov mdat] (moov first for progressive playback)", got)
	}
	ftyp := top[0].payload
	if string(ftyp[:4]) != "isom" || !slices.Contains([]string{string(ftyp[8:12]), string(ftyp[12:16]), string(ftyp[16:20])}, "avc1") {
		t.Fatalf("ftyp %q, want major brand isom and avc1 compatible", ftyp)
	}

	mvhd := find(t, top, "moov", "mvhd").payload
	if ts, d := be32(mvhd, 12), be32(mvhd, 16); ts != 1000 || d != 3000 {
		t.Errorf("mvhd timescale %d duration %d, want 1000 and 3000", ts, d)
	}
	tkhd := find(t, top, "moov", "trak", "tkhd").payload
	if w, h := be32(tkhd, 76)>>16, be32(tkhd, 80)>>16; w != 480 || h != 270 {
		t.Errorf("tkhd size %dx%d, want 480x270", w, h)
	}
	mdhd := find(t, top, "moov", "trak", "mdia", "mdhd").payload
	timescale, duration := be32(mdhd, 12), be32(mdhd, 16)
	if got := time.Duration(duration) * time.Second / time.Duration(timescale); got != res.Duration {
		t.Errorf("mdhd duration %d/%d = %v, want %v", duration, timescale, got, res.Duration)
	}
	if h := string(find(t, top, "moov", "trak", "mdia", "hdlr").payload[8:12]); h != "vide" {
		t.Errorf("handler %q, want vide", h)
	}

	stbl := []string{"moov", "trak", "mdia", "minf", "stbl"}
	stts := find(t, top, append(stbl, "stts")...).payload
	if n, count, delta := be32(stts, 4), be32(stts, 8), be32(stts, 12); n != 1 || count != 36 || count*delta != duration {
		t.Errorf("stts entries %d: %d samples of %d, want 1 entry of 36 samples lasting %d in all", n, count, delta, duration)
	}
	stss := find(t, top, append(stbl, "stss")...).payload
	if be32(stss, 4) != 36 || be32(stss, 8) != 1 || be32(stss, 8+35*4) != 36 {
		t.Errorf("stss does not list the 36 samples as sync samples")
	}
	stsc := find(t, top, append(stbl, "stsc")...).payload
	if be32(stsc, 4) != 1 || be32(stsc, 8) != 1 || be32(stsc, 12) != 36 || be32(stsc, 16) != 1 {
		t.Errorf("stsc is not one chunk of 36 samples")
	}
	stsz := find(t, top, append(stbl, "stsz")...).payload
	if be32(stsz, 4) != 0 || be32(stsz, 8) != 36 {
		t.Fatalf("stsz sample_size %d count %d, want 0 and 36", be32(stsz, 4), be32(stsz, 8))
	}
	stco := find(t, top, append(stbl, "stco")...).payload
	mdat := top[2]
	if be32(stco, 4) != 1 || be32(stco, 8) != mdat.start+8 {
		t.Fatalf("stco offset %d, want the start of the mdat payload %d", be32(stco, 8), mdat.start+8)
	}

	// Every sample is one length-prefixed IDR NAL unit, and the samples fill mdat exactly.
	off := mdat.start + 8
	for i := range 36 {
		size := be32(stsz, 12+4*i)
		if nal := be32(res.Data, off); nal != size-4 {
			t.Fatalf("sample %d: NAL length %d, want sample size %d - 4", i, nal, size)
		}
		if h := res.Data[off+4]; h != nalIDR {
			t.Fatalf("sample %d: NAL header %#x, want IDR %#x", i, h, nalIDR)
		}
		off += size
	}
	if off != len(res.Data) {
		t.Fatalf("samples end at %d, file at %d", off, len(res.Data))
	}

	avc1 := find(t, top, append(stbl, "stsd", "avc1")...).payload
	if w, h := binary.BigEndian.Uint16(avc1[24:]), binary.BigEndian.Uint16(avc1[26:]); w != 480 || h != 270 {
		t.Errorf("avc1 size %dx%d, want 480x270", w, h)
	}
	checkAVCC(t, find(t, top, append(stbl, "stsd", "avc1", "avcC")...).payload, 480, 270)
}

// checkAVCC checks an avcC decoder configuration: Constrained Baseline at level 4.1,
// 4-byte NAL lengths, and one SPS (for w x h pictures) and one PPS.
func checkAVCC(t *testing.T, avcC []byte, w, h int) {
	t.Helper()
	if want := []byte{1, profileBaseline, constraintFlags, levelIDC, 0xff, 0xe1}; !slices.Equal(avcC[:6], want) {
		t.Fatalf("avcC starts % x, want % x", avcC[:6], want)
	}
	spsLen := int(binary.BigEndian.Uint16(avcC[6:]))
	sps := avcC[8 : 8+spsLen]
	if gw, gh := parseSPSSize(t, sps); gw != w || gh != h {
		t.Errorf("SPS size %dx%d, want %dx%d", gw, gh, w, h)
	}
	rest := avcC[8+spsLen:]
	if rest[0] != 1 {
		t.Fatalf("avcC has %d PPS, want 1", rest[0])
	}
	ppsLen := int(binary.BigEndian.Uint16(rest[1:]))
	if pps := rest[3:]; len(pps) != ppsLen || pps[0] != nalPPS {
		t.Fatalf("avcC PPS of %d bytes starting %#x, want %d bytes starting %#x", len(pps), pps[0], ppsLen, nalPPS)
	}
}
