package models_test

import (
	"strings"
	"testing"

	"github.com/shotflow/shotflow/models"
)

func TestRefProblem(t *testing.T) {
	for _, ok := range []string{"a/b c%d", "mug-01", "SKU?#&=+;,@!$'()*[]{}|\\^`~<>\"", "日本語 – ünïcødé", "..a", ".x.", "a.."} {
		if p := models.RefProblem(ok); p != "" {
			t.Errorf("%q refused: %s", ok, p)
		}
	}
	for bad, want := range map[string]string{
		"":         "must not be empty",
		".":        `must not be "." or ".."`,
		"..":       `must not be "." or ".."`,
		" a":       "must not start or end with a space",
		"a ":       "must not start or end with a space",
		"a\tb":     "not U+0009",
		"a\nb":     "not U+000A",
		"a\x7fb":   "not U+007F",
		"a\u00a0b": "not U+00A0",
		"a\u200bb": "not U+200B",
		"a\u202eb": "not U+202E",
		"a\u0085b": "not U+0085",
	} {
		if p := models.RefProblem(bad); !strings.Contains(p, want) {
			t.Errorf("%q: %q, want it to say %q", bad, p, want)
		}
	}
}
