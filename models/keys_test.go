package models_test

import (
	"strings"
	"testing"

	"github.com/shotflow/shotflow/models"
)

// A key ID is what IssueKey makes, 16 lowercase hex digits: any other 16 bytes are no key.
func TestParseKeyAcceptsOnlyIssuedKeyIDs(t *testing.T) {
	secret := strings.Repeat("s", 43)
	for _, c := range []struct {
		full string
		ok   bool
	}{
		{models.PluginKeyPrefix + "0123456789abcdef." + secret, true},
		{models.ExternalKeyPrefix + "fedcba9876543210." + secret, true},
		{models.PluginKeyPrefix + "0123456789ABCDEF." + secret, false},
		{models.PluginKeyPrefix + "0123456789abcdeg." + secret, false},
		{models.PluginKeyPrefix + "zzzzzzzzzzzzzzzz." + secret, false},
		{models.PluginKeyPrefix + "0123456789abcd\x00\x01." + secret, false},
		{models.PluginKeyPrefix + "é123456789abcd." + secret, false}, // 16 bytes, 15 characters
		{models.PluginKeyPrefix + "0123456789abcde." + secret, false},
		{models.PluginKeyPrefix + "0123456789abcdef.", false},
		{"sk_other_0123456789abcdef." + secret, false},
	} {
		if _, _, _, ok := models.ParseKey(c.full); ok != c.ok {
			t.Errorf("ParseKey(%q) ok = %v, want %v", c.full, ok, c.ok)
		}
	}
}
