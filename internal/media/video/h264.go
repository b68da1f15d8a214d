package video

import (
	"bytes"
	"image"
	"math/bits"
)

// H.264 stream parameters of the pure-Go encoder: Constrained Baseline profile (Baseline
// with constraint_set0 and constraint_set1: no FMO, ASO or redundant slices, so Main
// decoders accept it too), level 4.1 (50 Mbit/s, enough for 480x480 I_PCM at 12 fps).
const (
	profileBaseline   = 66
	constraintFlags   = 0xc0 // constraint_set0_flag and constraint_set1_flag
	levelIDC          = 41
	nalSPS            = 0x67 // nal_ref_idc 3, nal_unit_type 7
	nalPPS            = 0x68 // nal_ref_idc 3, nal_unit_type 8
	nalIDR            = 0x65 // nal_ref_idc 3, nal_unit_type 5
	mbTypeIPCM        = 25   // mb_type of I_PCM in I slices
	sliceTypeAllI     = 7    // I, and every slice of the picture is I
	log2MaxFrameNum   = 4
	mbSize            = 16
	colourBT709       = 1 // colour_primaries, transfer_characteristics, matrix_coefficients
	videoFormatUnspec = 5
)

// bitWriter writes an RBSP most significant bit first.
type bitWriter struct {
	buf  []byte
	acc  uint64 // pending bits, right-aligned
	nacc uint   // number of pending bits, < 8 between calls
}

// u writes the n low bits of v (n <= 32).
func (w *bitWriter) u(n uint, v uint32) {
	w.acc = w.acc<<n | uint64(v)&(1<<n-1)
	w.nacc += n
	for w.nacc >= 8 {
		w.nacc -= 8
		w.buf = append(w.buf, byte(w.acc>>w.nacc))
	}
}

// flag writes one bit.
func (w *bitWriter) flag(b bool) {
	if b {
		w.u(1, 1)
	} else {
		w.u(1, 0)
	}
}

// ue writes v as an unsigned Exp-Golomb code.
func (w *bitWriter) ue(v uint32) {
	x := uint64(v) + 1
	n := uint(bits.Len64(x))
	w.u(n-1, 0)
	w.u(n, uint32(x))
}

// se writes v as a signed Exp-Golomb code.
func (w *bitWriter) se(v int32) {
	if v > 0 {
		w.ue(uint32(2*v - 1))
	} else {
		w.ue(uint32(-2 * v))
	}
}

// alignZero writes zero bits up to the next byte boundary (pcm_alignment_zero_bit).
func (w *bitWriter) alignZero() {
	if w.nacc > 0 {
		w.u(8-w.nacc, 0)
	}
}

// trailing writes rbsp_trailing_bits: a one bit, then zero bits up to a byte boundary.
func (w *bitWriter) trailing() {
	w.u(1, 1)
	w.alignZero()
}

// bytes returns the written RBSP; the writer must be byte aligned.
func (w *bitWriter) bytes() []byte { return w.buf }

// mbCount is the number of macroblocks that cover n pixels.
func mbCount(n int) int { return (n + mbSize - 1) / mbSize }

// buildSPS returns the sequence parameter set NAL unit (header byte included, escaped)
// for w x h pictures, w and h even.
func buildSPS(w, h int) []byte {
	var b bitWriter
	b.u(8, profileBaseline)
	b.u(8, constraintFlags)
	b.u(8, levelIDC)
	b.ue(0)                   // seq_parameter_set_id
	b.ue(log2MaxFrameNum - 4) // log2_max_frame_num_minus4
	b.ue(2)                   // pic_order_cnt_type: output order is decoding order
	b.ue(1)                   // max_num_ref_frames
	b.flag(false)             // gaps_in_frame_num_value_allowed_flag
	mbW, mbH := mbCount(w), mbCount(h)
	b.ue(uint32(mbW - 1)) // pic_width_in_mbs_minus1
	b.ue(uint32(mbH - 1)) // pic_height_in_map_units_minus1
	b.flag(true)          // frame_mbs_only_flag
	b.flag(true)          // direct_8x8_inference_flag
	// Frame cropping, in 4:2:0 crop units of 2 pixels, hides the padding macroblocks.
	cropRight, cropBottom := (mbW*mbSize-w)/2, (mbH*mbSize-h)/2
	cropping := cropRight > 0 || cropBottom > 0
	b.flag(cropping)
	if cropping {
		b.ue(0) // frame_crop_left_offset
		b.ue(uint32(cropRight))
		b.ue(0) // frame_crop_top_offset
		b.ue(uint32(cropBottom))
	}
	b.flag(true) // vui_parameters_present_flag
	writeVUI(&b)
	b.trailing()
	return nalUnit(nalSPS, b.bytes())
}

// writeVUI writes VUI parameters that declare limited-range BT.709 colour and that no
// picture is ever reordered or held back. Timing is left to the MP4 container.
func writeVUI(b *bitWriter) {
	b.flag(false)             // aspect_ratio_info_present_flag (square pixels by default)
	b.flag(false)             // overscan_info_present_flag
	b.flag(true)              // video_signal_type_present_flag
	b.u(3, videoFormatUnspec) // video_format
	b.flag(false)             // video_full_range_flag
	b.flag(true)              // colour_description_present_flag
	b.u(8, colourBT709)       // colour_primaries
	b.u(8, colourBT709)       // transfer_characteristics
	b.u(8, colourBT709)       // matrix_coefficients
	b.flag(false)             // chroma_loc_info_present_flag
	b.flag(false)             // timing_info_present_flag
	b.flag(false)             // nal_hrd_parameters_present_flag
	b.flag(false)             // vcl_hrd_parameters_present_flag
	b.flag(false)             // pic_struct_present_flag
	b.flag(true)              // bitstream_restriction_flag
	b.flag(true)              // motion_vectors_over_pic_boundaries_flag
	b.ue(0)                   // max_bytes_per_pic_denom: no limit
	b.ue(0)                   // max_bits_per_mb_denom: no limit
	b.ue(16)                  // log2_max_mv_length_horizontal
	b.ue(16)                  // log2_max_mv_length_vertical
	b.ue(0)                   // max_num_reorder_frames
	b.ue(1)                   // max_dec_frame_buffering
}

// buildPPS returns the picture parameter set NAL unit (header byte included, escaped).
func buildPPS() []byte {
	var b bitWriter
	b.ue(0)       // pic_parameter_set_id
	b.ue(0)       // seq_parameter_set_id
	b.flag(false) // entropy_coding_mode_flag: CAVLC
	b.flag(false) // bottom_field_pic_order_in_frame_present_flag
	b.ue(0)       // num_slice_groups_minus1
	b.ue(0)       // num_ref_idx_l0_default_active_minus1
	b.ue(0)       // num_ref_idx_l1_default_active_minus1
	b.flag(false) // weighted_pred_flag
	b.u(2, 0)     // weighted_bipred_idc
	b.se(0)       // pic_init_qp_minus26
	b.se(0)       // pic_init_qs_minus26
	b.se(0)       // chroma_qp_index_offset
	b.flag(true)  // deblocking_filter_control_present_flag
	b.flag(false) // constrained_intra_pred_flag
	b.flag(false) // redundant_pic_cnt_present_flag
	b.trailing()
	return nalUnit(nalPPS, b.bytes())
}

// nalUnit returns a NAL unit: the header byte, then rbsp with emulation prevention.
func nalUnit(header byte, rbsp []byte) []byte {
	return appendEscaped([]byte{header}, rbsp)
}

// appendEscaped appends rbsp to dst, inserting an emulation_prevention_three_byte (0x03)
// wherever two zero bytes would be followed by a byte of 0x00 to 0x03, so that no start
// code can appear inside a NAL unit.
func appendEscaped(dst, rbsp []byte) []byte {
	zeros := 0
	for len(rbsp) > 0 {
		if zeros < 2 {
			i := bytes.IndexByte(rbsp, 0)
			if i < 0 {
				return append(dst, rbsp...)
			}
			if i > 0 {
				dst = append(dst, rbsp[:i]...)
				rbsp = rbsp[i:]
				zeros = 0
			}
		}
		c := rbsp[0]
		if zeros == 2 && c <= 3 {
			dst = append(dst, 3)
			zeros = 0
		}
		dst = append(dst, c)
		if c == 0 {
			zeros++
		} else {
			zeros = 0
		}
		rbsp = rbsp[1:]
	}
	return dst
}

// pcmEncoder codes pictures as IDR pictures of one I slice whose macroblocks are all
// I_PCM. It reuses its RBSP buffer from picture to picture.
type pcmEncoder struct {
	mbW, mbH int
	b        bitWriter
}

// newPCMEncoder returns an encoder for w x h pictures.
func newPCMEncoder(w, h int) *pcmEncoder {
	return &pcmEncoder{mbW: mbCount(w), mbH: mbCount(h)}
}

// appendIDR appends picture k, escaped, as the payload of an IDR NAL unit (without the
// header byte) to dst.
func (e *pcmEncoder) appendIDR(dst []byte, img *image.YCbCr, k int) []byte {
	e.b = bitWriter{buf: e.b.buf[:0]}
	e.sliceHeader(k)
	for my := range e.mbH {
		for mx := range e.mbW {
			e.macroblock(img, mx, my)
		}
	}
	e.b.trailing()
	return appendEscaped(dst, e.b.bytes())
}

// sliceHeader writes the header of the only slice of IDR picture k.
func (e *pcmEncoder) sliceHeader(k int) {
	b := &e.b
	b.ue(0)                 // first_mb_in_slice
	b.ue(sliceTypeAllI)     // slice_type
	b.ue(0)                 // pic_parameter_set_id
	b.u(log2MaxFrameNum, 0) // frame_num: 0 in IDR pictures
	b.ue(uint32(k & 1))     // idr_pic_id: consecutive IDR pictures differ
	b.flag(false)           // no_output_of_prior_pics_flag
	b.flag(false)           // long_term_reference_flag
	b.se(0)                 // slice_qp_delta
	b.ue(1)                 // disable_deblocking_filter_idc: off (a no-op on I_PCM anyway)
}

// macroblock writes the I_PCM macroblock (mx, my): mb_type, alignment, then 256 luma and
// 2 x 64 chroma samples. Samples outside the picture repeat its last row and column.
func (e *pcmEncoder) macroblock(img *image.YCbCr, mx, my int) {
	e.b.ue(mbTypeIPCM)
	e.b.alignZero()
	w, h := img.Rect.Dx(), img.Rect.Dy()
	buf := appendBlock(e.b.buf, img.Y, img.YStride, w, h, mx*mbSize, my*mbSize, mbSize)
	buf = appendBlock(buf, img.Cb, img.CStride, w/2, h/2, mx*mbSize/2, my*mbSize/2, mbSize/2)
	e.b.buf = appendBlock(buf, img.Cr, img.CStride, w/2, h/2, mx*mbSize/2, my*mbSize/2, mbSize/2)
}

// appendBlock appends the size x size block at (x0, y0) of a w x h plane, row by row,
// clamping coordinates to the plane.
func appendBlock(dst, plane []byte, stride, w, h, x0, y0, size int) []byte {
	for r := range size {
		row := plane[min(y0+r, h-1)*stride:]
		if x0+size <= w {
			dst = append(dst, row[x0:x0+size]...)
			continue
		}
		dst = append(dst, row[x0:w]...)
		for range x0 + size - w {
			dst = append(dst, row[w-1])
		}
	}
	return dst
}
