package render

import (
	"image"
	"image/color"
)

// The "TEST" watermark of test mode's outputs (docs/test-mode.md): the word drawn in block letters
// across the middle of the picture, over a pale band, so that no output of a test key can pass
// for a real one.

// WatermarkText is the word of the watermark.
const WatermarkText = "TEST"

// WatermarkColor is the colour of the watermark's letters.
var WatermarkColor = color.NRGBA{R: 0xE0, G: 0x1B, B: 0x24, A: 0xFF}

// watermarkBand is the pale band behind the letters: white at 60 % opacity.
var watermarkBand = color.NRGBA{R: 0xFF, G: 0xFF, B: 0xFF, A: 0x99}

// glyphs are the letters of WatermarkText, 5 cells wide and 7 high, '#' for a lit cell.
var glyphs = map[rune][7]string{
	'T': {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."},
	'E': {"#####", "#....", "#....", "####.", "#....", "#....", "#####"},
	'S': {".####", "#....", "#....", ".###.", "....#", "....#", "####."},
}

const (
	glyphCols = 5
	glyphRows = 7
	glyphGap  = 1 // empty cells between letters
)

// WatermarkLayout is where the watermark goes on a width x height picture: Letters are its lit
// cells (each one square cell), Band the pale band behind them. Both are empty for a picture too
// small to hold the word.
type WatermarkLayout struct {
	Letters []image.Rectangle
	Band    image.Rectangle
}

// Watermark lays the watermark out on a width x height picture: the word spans about half the
// width (at most a third of the height), centred.
func Watermark(width, height int) WatermarkLayout {
	n := len([]rune(WatermarkText))
	cols := n*glyphCols + (n-1)*glyphGap
	cell := min(width/2/cols, height/3/glyphRows)
	if cell < 1 {
		return WatermarkLayout{}
	}
	x0 := (width - cols*cell) / 2
	y0 := (height - glyphRows*cell) / 2
	var out WatermarkLayout
	for i, r := range WatermarkText {
		g := glyphs[r]
		gx := x0 + i*(glyphCols+glyphGap)*cell
		for row := range glyphRows {
			for col := range glyphCols {
				if g[row][col] != '#' {
					continue
				}
				x, y := gx+col*cell, y0+row*cell
				out.Letters = append(out.Letters, image.Rect(x, y, x+cell, y+cell))
			}
		}
	}
	out.Band = image.Rect(x0-cell, y0-cell, x0+(cols+1)*cell, y0+(glyphRows+1)*cell).Intersect(image.Rect(0, 0, width, height))
	return out
}

// DrawWatermark draws the watermark on img, in place.
func DrawWatermark(img *image.NRGBA) {
	b := img.Bounds()
	l := Watermark(b.Dx(), b.Dy())
	blend(img, l.Band.Add(b.Min), watermarkBand)
	for _, r := range l.Letters {
		blend(img, r.Add(b.Min), WatermarkColor)
	}
}

// blend paints c over the pixels of img within r (source-over, straight alpha).
func blend(img *image.NRGBA, r image.Rectangle, c color.NRGBA) {
	r = r.Intersect(img.Bounds())
	a := uint32(c.A)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			i := img.PixOffset(x, y)
			p := img.Pix[i : i+4 : i+4]
			da := uint32(p[3]) * (255 - a) / 255
			oa := a + da
			if oa == 0 {
				continue
			}
			p[0] = uint8((uint32(c.R)*a + uint32(p[0])*da) / oa)
			p[1] = uint8((uint32(c.G)*a + uint32(p[1])*da) / oa)
			p[2] = uint8((uint32(c.B)*a + uint32(p[2])*da) / oa)
			p[3] = uint8(oa)
		}
	}
}
