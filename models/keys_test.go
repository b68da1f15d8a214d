package models_test

import (
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
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

// A key's expiry is stored in UTC whatever zone it was given in, as every other time: SQLite keeps
// a time as the text it was given, so an expiry stored with its offset would compare as text
// against UTC times in SQL, and be listed with that offset.
func TestAKeysExpiryIsStoredInUTC(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		acc, err := models.CreateAccount(db, "acme", 0)
		if err != nil {
			t.Fatal(err)
		}
		east := time.FixedZone("UTC+5", 5*3600)
		expires := time.Date(2027, 1, 2, 3, 4, 5, 0, east)
		issued, err := models.IssueKey(db, models.KeyKindExternal, acc.ID, nil, "ci", nil, &expires)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := db.Model(&models.APIKey{}).Where("id = ? AND expires_at = ?", issued.Key.ID, expires.UTC()).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		var k models.APIKey
		if err := db.Take(&k, "id = ?", issued.Key.ID).Error; err != nil {
			t.Fatal(err)
		}
		if n != 1 || k.ExpiresAt == nil || !k.ExpiresAt.Equal(expires) {
			t.Errorf("a key expiring at %v: stored %v, found by its UTC time %d times; want it stored as %v", expires, k.ExpiresAt, n, expires.UTC())
		}
		if _, offset := k.ExpiresAt.Zone(); db.Dialector.Name() == "sqlite" && offset != 0 {
			t.Errorf("SQLite keeps the expiry with an offset of %d s", offset)
		}
	})
}
