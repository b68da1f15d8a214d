package render

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultLongEdge is the long-edge pixel size used when none is requested.
const DefaultLongEdge = 1024

// MinLongEdge is the smallest long-edge pixel size CanvasSize accepts.
const MinLongEdge = 16

// MaxLongEdge is the largest long-edge pixel size CanvasSize accepts.
const MaxLongEdge = 8192

// MaxAspectSpan is the most extreme ratio between the two aspect terms (4:1).
const MaxAspectSpan = 4

// ErrInvalidAspectRatio is wrapped by every aspect-ratio parsing error.
var ErrInvalidAspectRatio = errors.New("render: invalid aspect ratio")

// ParseAspectRatio parses a "W:H" aspect ratio such as "16:9" into its two
// positive terms (as written, not reduced), rejecting zero, garbage and
// ratios more extreme than 4:1.
func ParseAspectRatio(s string) (w, h int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, 0, fmt.Errorf("%w %q: want W:H, e.g. 4:3", ErrInvalidAspectRatio, s)
	}
	if w, err = parseTerm(a); err != nil {
		return 0, 0, fmt.Errorf("%w %q: width term: %v", ErrInvalidAspectRatio, s, err)
	}
	if h, err = parseTerm(b); err != nil {
		return 0, 0, fmt.Errorf("%w %q: height term: %v", ErrInvalidAspectRatio, s, err)
	}
	if w > MaxAspectSpan*h || h > MaxAspectSpan*w {
		return 0, 0, fmt.Errorf("%w %q: more extreme than %d:1", ErrInvalidAspectRatio, s, MaxAspectSpan)
	}
	return w, h, nil
}

// parseTerm parses one aspect term: 1 to 5 ASCII digits, value > 0.
func parseTerm(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 5 {
		return 0, errors.New("want 1 to 5 digits")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("not a whole number")
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if v <= 0 {
		return 0, errors.New("must be positive")
	}
	return v, nil
}

// CanvasSize returns the pixel size for an aspect ratio ("" means "1:1")
// whose long edge is longEdge (0 means DefaultLongEdge); both dimensions are
// even.
func CanvasSize(aspect string, longEdge int) (width, height int, err error) {
	if strings.TrimSpace(aspect) == "" {
		aspect = "1:1"
	}
	aw, ah, err := ParseAspectRatio(aspect)
	if err != nil {
		return 0, 0, err
	}
	if longEdge == 0 {
		longEdge = DefaultLongEdge
	}
	if longEdge < MinLongEdge || longEdge > MaxLongEdge {
		return 0, 0, fmt.Errorf("render: long edge %d out of range [%d, %d]", longEdge, MinLongEdge, MaxLongEdge)
	}
	long := longEdge &^ 1
	l, s := aw, ah
	if ah > aw {
		l, s = ah, aw
	}
	// short = long*s/l rounded to the nearest even number.
	short := 2 * ((long*s + l) / (2 * l))
	if short < 2 {
		short = 2
	}
	if aw >= ah {
		return long, short, nil
	}
	return short, long, nil
}
