package video

import "math"

// BT.709 luma weights. Both encoders write limited-range ("TV", Y 16–235, Cb/Cr 16–240)
// BT.709 samples and say so in the stream, which is what players assume for HD video.
const (
	kr = 0.2126
	kb = 0.0722
	kg = 1 - kr - kb
)

// Fixed-point (16.16) coefficients of the sRGB to limited-range BT.709 Y'CbCr conversion.
var (
	yR, yG, yB    = fixed(219 * kr / 255), fixed(219 * kg / 255), fixed(219 * kb / 255)
	cbR, cbG, cbB = fixed(-224 * kr / 255 / (2 * (1 - kb))), fixed(-224 * kg / 255 / (2 * (1 - kb))), fixed(224.0 / 255 / 2)
	crR, crG, crB = fixed(224.0 / 255 / 2), fixed(-224 * kg / 255 / (2 * (1 - kr))), fixed(-224 * kb / 255 / (2 * (1 - kr)))
)

// fixed converts a coefficient to 16.16 fixed point.
func fixed(v float64) int32 { return int32(math.Round(v * 65536)) }

// lumaRow converts a row of RGB pixels (3 bytes each) to Y samples.
func lumaRow(y, rgb []byte) {
	rgb = rgb[:3*len(y)]
	for x := range y {
		p := rgb[3*x : 3*x+3 : 3*x+3]
		v := yR*int32(p[0]) + yG*int32(p[1]) + yB*int32(p[2])
		y[x] = uint8((v + 16<<16 + 1<<15) >> 16)
	}
}

// chromaRow converts two rows of RGB pixels to one row of 4:2:0 Cb and Cr samples, each
// from the average colour of a 2x2 block.
func chromaRow(cb, cr, rgb0, rgb1 []byte) {
	rgb0, rgb1 = rgb0[:6*len(cb)], rgb1[:6*len(cb)]
	cr = cr[:len(cb)]
	for x := range cb {
		a, b := rgb0[6*x:6*x+6:6*x+6], rgb1[6*x:6*x+6:6*x+6]
		r := int32(a[0]) + int32(a[3]) + int32(b[0]) + int32(b[3])
		g := int32(a[1]) + int32(a[4]) + int32(b[1]) + int32(b[4])
		bl := int32(a[2]) + int32(a[5]) + int32(b[2]) + int32(b[5])
		cb[x] = chroma(cbR*r + cbG*g + cbB*bl)
		cr[x] = chroma(crR*r + crG*g + crB*bl)
	}
}

// chroma turns a sum of four pixels' weighted colour (16.16 fixed point) into a chroma
// sample, clamped to 16–240.
func chroma(v int32) uint8 {
	c := (v + 128<<18 + 1<<17) >> 18
	return uint8(min(max(c, 16), 240))
}
