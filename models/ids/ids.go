// Package ids is how shotflow spells record IDs: random UUIDs, kept and compared in lower case.
// It is a leaf (no storage, no database driver), so the APIs check and canonicalise the IDs
// clients send with the very rules the store keeps them by.
package ids

import (
	"strings"

	"github.com/google/uuid"
)

// New returns a new random UUID string for a primary key.
func New() string { return uuid.NewString() }

// IsUUID reports whether s is a UUID in the 8-4-4-4-12 form, in either case.
func IsUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// Canonical is the form the store keeps IDs in: a UUID (IsUUID) in lower case. Anything else is
// returned as it is, so that a lookup by it finds nothing rather than something else. Clients may
// send IDs in either case; the APIs pass what they receive through Canonical before looking it up.
func Canonical(s string) string {
	if IsUUID(s) {
		return strings.ToLower(s)
	}
	return s
}
