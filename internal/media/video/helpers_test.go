package video

import (
	"image"
	"image/color"
	"math"
)

// gradientImage returns a w x h image whose colour changes along both axes, so that every
// pan and zoom changes the frames.
func gradientImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{uint8(255 * x / w), uint8(255 * y / h), uint8(255 * (x + y) / (w + h)), 255})
		}
	}
	return img
}

// solidImage returns a w x h image of one colour.
func solidImage(w, h int, c color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

// quadrantColours are the colours of quadrantImage: top left, top right, bottom left,
// bottom right.
var quadrantColours = [4]color.RGBA{
	{220, 40, 40, 255},
	{40, 200, 60, 255},
	{40, 60, 220, 255},
	{230, 210, 40, 255},
}

// quadrantImage returns a w x h image with a different solid colour in each quadrant.
func quadrantImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			q := 0
			if x >= w/2 {
				q++
			}
			if y >= h/2 {
				q += 2
			}
			img.SetRGBA(x, y, quadrantColours[q])
		}
	}
	return img
}

// meanColour returns the average RGB of r in img.
func meanColour(img image.Image, r image.Rectangle) [3]float64 {
	var sum [3]float64
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			sum[0] += float64(c.R)
			sum[1] += float64(c.G)
			sum[2] += float64(c.B)
			n++
		}
	}
	for i := range sum {
		sum[i] /= float64(n)
	}
	return sum
}

// colourDistance is the largest per-channel difference between a mean colour and c.
func colourDistance(mean [3]float64, c color.RGBA) float64 {
	d := 0.0
	for i, v := range [3]uint8{c.R, c.G, c.B} {
		d = max(d, math.Abs(mean[i]-float64(v)))
	}
	return d
}
