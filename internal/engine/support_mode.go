package engine

import (
	"fmt"
	"slices"
)

// Mode is the world a support list shows (docs/operations.md, "Test mode"): the live records, the
// test-mode ones (those of the test keys' twins), or both.
type Mode string

// The modes of the support lists.
const (
	ModeAll  Mode = "all"
	ModeLive Mode = "live"
	ModeTest Mode = "test"
)

// DefaultMode is the mode of a support list that names none: both worlds, every item saying which
// it belongs to (livemode), so that nothing an operator looks for is hidden.
const DefaultMode = ModeAll

// Modes are the names ParseMode accepts.
var Modes = []string{string(ModeLive), string(ModeTest), string(ModeAll)}

// ParseMode reads a mode; "" is DefaultMode, anything else not in Modes wraps ErrInvalidFilter.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return DefaultMode, nil
	}
	if !slices.Contains(Modes, s) {
		return "", fmt.Errorf("%w: mode %q is not one of %v", ErrInvalidFilter, s, Modes)
	}
	return Mode(s), nil
}

// valid reports whether m is a mode ("" is DefaultMode).
func (m Mode) valid() bool { return m == "" || slices.Contains(Modes, string(m)) }

// testMode is the test_mode the store keeps for m: nil for both worlds.
func (m Mode) testMode() *bool {
	switch m {
	case ModeLive:
		live := false
		return &live
	case ModeTest:
		test := true
		return &test
	}
	return nil
}

// includes reports whether m shows a record whose test_mode is test.
func (m Mode) includes(test bool) bool {
	switch m {
	case ModeLive:
		return !test
	case ModeTest:
		return test
	}
	return true
}
