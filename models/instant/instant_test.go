package instant_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/shotflow/shotflow/models/instant"
)

func TestParse(t *testing.T) {
	for raw, want := range map[string]error{
		"2026-06-01T12:00:00Z":            nil,
		"2026-06-01T12:00:00.123456789Z":  nil,
		"2026-06-01T14:00:00+02:00":       nil,
		"0000-01-01T00:00:00Z":            nil,
		"9999-12-31T23:59:59.999999999Z":  nil,
		"9999-12-31T23:00:00-01:00":       instant.ErrOutOfRange, // 10000-01-01T00:00:00Z
		"0000-01-01T00:30:00+01:00":       instant.ErrOutOfRange, // the year -1 in UTC
		"2026-06-01":                      instant.ErrSyntax,
		"2026-06-01 12:00:00Z":            instant.ErrSyntax,
		"":                                instant.ErrSyntax,
		"2026-06-01T12:00:00":             instant.ErrSyntax,
		"10000-01-01T00:00:00Z":           instant.ErrSyntax,
		"2026-06-01T12:00:00.1234567891Z": instant.ErrSyntax, // a tenth digit time.Parse would drop
		"2026-06-01T12:00:00,5Z":          instant.ErrSyntax, // a comma for the point
		"2026-06-01T12:00:00+24:00":       instant.ErrSyntax,
		"2026-06-01T12:00:00+23:60":       instant.ErrSyntax,
		"2026-06-01t12:00:00z":            nil, // RFC 3339 allows lower case
		"2026-06-01T12:00:00.Z":           instant.ErrSyntax,
		"2026-06-01T12:00:00-23:59":       nil,
	} {
		got, err := instant.Parse(raw)
		assert.ErrorIs(t, err, want, raw)
		if want == nil {
			assert.Equal(t, time.UTC, got.Location(), raw)
		}
	}
	at, err := instant.Parse("2026-06-01T14:00:00+02:00")
	assert.NoError(t, err)
	assert.Equal(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), at)
}

// PlusHint speaks up only for a date-time whose offset's "+" arrived as a space.
func TestPlusHint(t *testing.T) {
	t.Parallel()
	assert.Contains(t, instant.PlusHint("2026-06-01T14:00:00 02:00"), "%2B")
	assert.Contains(t, instant.PlusHint("2026-06-01T14:00:00.5 02:00"), "%2B")
	for _, raw := range []string{"2026-06-01 12:00:00Z", "2026-06-01T14:00:00 24:00", "yesterday", "", "2026-06-01T14:00:00+02:00", " "} {
		assert.Empty(t, instant.PlusHint(raw), raw)
	}
}
