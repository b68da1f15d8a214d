package video

import (
	"bytes"
	"fmt"
	"image"
	"strings"
	"testing"
)

// bitReader reads an RBSP most significant bit first, as an H.264 decoder does.
type bitReader struct {
	t    *testing.T
	data []byte
	pos  int // in bits
}

// u reads n bits.
func (r *bitReader) u(n int) uint32 {
	r.t.Helper()
	var v uint32
	for range n {
		if r.pos >= 8*len(r.data) {
			r.t.Fatalf("read past the end of a %d-byte RBSP", len(r.data))
		}
		v = v<<1 | uint32(r.data[r.pos/8]>>(7-r.pos%8)&1)
		r.pos++
	}
	return v
}

// ue reads an unsigned Exp-Golomb code.
func (r *bitReader) ue() uint32 {
	r.t.Helper()
	zeros := 0
	for r.u(1) == 0 {
		zeros++
	}
	return 1<<zeros - 1 + r.u(zeros)
}

// se reads a signed Exp-Golomb code.
func (r *bitReader) se() int32 {
	r.t.Helper()
	k := r.ue()
	if k%2 == 1 {
		return int32(k+1) / 2
	}
	return -int32(k / 2)
}

// align skips to the next byte boundary, checking that the skipped bits are zero.
func (r *bitReader) align() {
	r.t.Helper()
	for r.pos%8 != 0 {
		if r.u(1) != 0 {
			r.t.Fatalf("non-zero alignment bit at bit %d", r.pos-1)
		}
	}
}

// unescape removes emulation_prevention_three_bytes from a NAL unit payload.
func unescape(nal []byte) []byte {
	return bytes.ReplaceAll(nal, []byte{0, 0, 3}, []byte{0, 0})
}

// parseSPSSize parses an SPS NAL unit of the pure-Go encoder and returns the picture size
// after cropping.
func parseSPSSize(t *testing.T, nal []byte) (int, int) {
	t.Helper()
	if nal[0] != nalSPS {
		t.Fatalf("SPS NAL header %#x, want %#x", nal[0], nalSPS)
	}
	r := &bitReader{t: t, data: unescape(nal[1:])}
	if p, c, l := r.u(8), r.u(8), r.u(8); p != profileBaseline || c != constraintFlags || l != levelIDC {
		t.Fatalf("SPS profile %d constraints %#x level %d", p, c, l)
	}
	r.ue() // seq_parameter_set_id
	r.ue() // log2_max_frame_num_minus4
	if poc := r.ue(); poc != 2 {
		t.Fatalf("pic_order_cnt_type %d, want 2", poc)
	}
	r.ue() // max_num_ref_frames
	r.u(1) // gaps_in_frame_num_value_allowed_flag
	mbW, mbH := int(r.ue())+1, int(r.ue())+1
	if r.u(1) != 1 {
		t.Fatal("frame_mbs_only_flag is 0")
	}
	r.u(1) // direct_8x8_inference_flag
	w, h := mbW*16, mbH*16
	if r.u(1) == 1 {
		left, right, top, bottom := r.ue(), r.ue(), r.ue(), r.ue()
		w -= 2 * int(left+right)
		h -= 2 * int(top+bottom)
	}
	return w, h
}

func TestExpGolomb(t *testing.T) {
	var w bitWriter
	w.ue(0)  // 1
	w.ue(1)  // 010
	w.ue(2)  // 011
	w.ue(3)  // 00100
	w.ue(25) // 000011010
	w.se(1)  // 010
	w.se(-1) // 011
	w.se(-3) // 00111
	w.trailing()
	var bits strings.Builder
	for _, b := range w.bytes() {
		fmt.Fprintf(&bits, "%08b", b)
	}
	want := "1" + "010" + "011" + "00100" + "000011010" + "010" + "011" + "00111" + "1"
	if got := strings.TrimRight(bits.String(), "0"); got != want {
		t.Fatalf("bits %s, want %s", got, want)
	}
	r := &bitReader{t: t, data: w.bytes()}
	for _, v := range []uint32{0, 1, 2, 3, 25} {
		if got := r.ue(); got != v {
			t.Fatalf("read ue %d, want %d", got, v)
		}
	}
	for _, v := range []int32{1, -1, -3} {
		if got := r.se(); got != v {
			t.Fatalf("read se %d, want %d", got, v)
		}
	}
}

func TestAppendEscaped(t *testing.T) {
	cases := []struct{ in, want []byte }{
		{[]byte{1, 2, 3}, []byte{1, 2, 3}},
		{[]byte{0, 0, 0}, []byte{0, 0, 3, 0}},
		{[]byte{0, 0, 1}, []byte{0, 0, 3, 1}},
		{[]byte{0, 0, 2}, []byte{0, 0, 3, 2}},
		{[]byte{0, 0, 3}, []byte{0, 0, 3, 3}},
		{[]byte{0, 0, 4}, []byte{0, 0, 4}},
		{[]byte{0, 0, 0, 0, 0}, []byte{0, 0, 3, 0, 0, 3, 0}},
		{[]byte{5, 0, 0, 1, 0, 0, 0x80}, []byte{5, 0, 0, 3, 1, 0, 0, 0x80}},
		{[]byte{0, 1, 0, 0, 9, 0}, []byte{0, 1, 0, 0, 9, 0}},
	}
	for _, tc := range cases {
		if got := appendEscaped([]byte{0x65}, tc.in); !bytes.Equal(got[1:], tc.want) || got[0] != 0x65 {
			t.Errorf("appendEscaped(% x) = % x, want 65 % x", tc.in, got, tc.want)
		}
	}
}

func TestSPSSignalsSize(t *testing.T) {
	for _, size := range [][2]int{{16, 16}, {480, 480}, {480, 270}, {330, 202}, {1920, 1080}, {18, 34}} {
		if w, h := parseSPSSize(t, buildSPS(size[0], size[1])); w != size[0] || h != size[1] {
			t.Errorf("SPS for %dx%d says %dx%d", size[0], size[1], w, h)
		}
	}
}

// TestPCMSliceLayout parses an IDR slice back and checks that every macroblock carries the
// frame's samples in raster order, edge samples repeated into the padding.
func TestPCMSliceLayout(t *testing.T) {
	const w, h = 40, 22 // 3 x 2 macroblocks, the last column and row partly padding
	f := newFrame(w, h)
	for i := range f.raw {
		f.raw[i] = byte(16 + i*7%220) // no zero bytes, varied content
	}
	nal := newPCMEncoder(w, h).appendIDR(nil, f.img, 3)
	r := &bitReader{t: t, data: unescape(nal)}
	header := []uint32{r.ue(), r.ue(), r.ue(), r.u(log2MaxFrameNum), r.ue(), r.u(1), r.u(1)}
	if want := []uint32{0, sliceTypeAllI, 0, 0, 1, 0, 0}; fmt.Sprint(header) != fmt.Sprint(want) {
		t.Fatalf("slice header %v, want %v (first_mb, slice_type, pps, frame_num, idr_pic_id, flags)", header, want)
	}
	if qp, deblock := r.se(), r.ue(); qp != 0 || deblock != 1 {
		t.Fatalf("slice_qp_delta %d, disable_deblocking_filter_idc %d; want 0 and 1", qp, deblock)
	}
	for my := range 2 {
		for mx := range 3 {
			if mb := r.ue(); mb != mbTypeIPCM {
				t.Fatalf("macroblock (%d,%d) mb_type %d, want I_PCM", mx, my, mb)
			}
			r.align()
			checkPCMBlock(t, r, f.img.Y, f.img.YStride, w, h, mx*16, my*16, 16)
			checkPCMBlock(t, r, f.img.Cb, f.img.CStride, w/2, h/2, mx*8, my*8, 8)
			checkPCMBlock(t, r, f.img.Cr, f.img.CStride, w/2, h/2, mx*8, my*8, 8)
		}
	}
	if r.u(8) != 0x80 || r.pos != 8*len(r.data) {
		t.Fatalf("slice does not end with rbsp_trailing_bits at the end of the NAL unit")
	}
}

// checkPCMBlock reads a size x size block of samples and compares it with the plane.
func checkPCMBlock(t *testing.T, r *bitReader, plane []byte, stride, w, h, x0, y0, size int) {
	t.Helper()
	for y := range size {
		for x := range size {
			want := plane[min(y0+y, h-1)*stride+min(x0+x, w-1)]
			if got := byte(r.u(8)); got != want {
				t.Fatalf("sample (%d,%d) of the block at (%d,%d) is %d, want %d", x, y, x0, y0, got, want)
			}
		}
	}
}

func TestFrameLayoutIsRawYUV420(t *testing.T) {
	f := newFrame(8, 4)
	f.img.Y[8*4-1], f.img.Cb[0], f.img.Cr[7] = 1, 2, 3
	if len(f.raw) != 8*4*3/2 || f.raw[31] != 1 || f.raw[32] != 2 || f.raw[47] != 3 {
		t.Fatalf("frame planes are not back to back: % x", f.raw)
	}
	if f.img.Bounds() != image.Rect(0, 0, 8, 4) || f.img.SubsampleRatio != image.YCbCrSubsampleRatio420 {
		t.Fatalf("frame image %v %v", f.img.Bounds(), f.img.SubsampleRatio)
	}
}
