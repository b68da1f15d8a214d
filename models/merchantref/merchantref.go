// Package merchantref holds the rules of merchant references: the external_ref of a product,
// source image or packshot is the merchant's own identifier, and the plugin API addresses records
// by it in paths (GET /products/{id_or_ref}, percent-encoded). It is a leaf (no storage), so the
// plugin API validates a reference by the rule the store registers it under.
//
// So that every registered reference can be addressed and read back as it was written, a
// reference is 1 to MaxLength characters, each printable (unicode.IsPrint: letters, marks,
// numbers, punctuation, symbols and the ASCII space; no control, format or other whitespace
// characters such as tabs, line breaks or zero-width spaces); it does not start or end with a
// space, and it is not "." or "..", which HTTP clients remove from paths. "/", "?", "#", "%" and
// the like are allowed; clients percent-encode them in paths.
package merchantref

import (
	"fmt"
	"strings"
	"unicode"
)

// MaxLength is the most characters a merchant reference may hold.
const MaxLength = 200

// Problem says why s cannot be a merchant reference, "" when it can. Its length is checked with
// the request's other bounds.
func Problem(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case s == "." || s == "..":
		return "must not be \".\" or \"..\", which cannot be addressed in a path"
	case strings.HasPrefix(s, " ") || strings.HasSuffix(s, " "):
		return "must not start or end with a space"
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Sprintf("may hold only printable characters and the space, not %U", r)
		}
	}
	return ""
}
