package models

import (
	"fmt"
	"strings"
	"unicode"
)

// Merchant references: the external_ref of a product, source image or packshot is the merchant's
// own identifier, and the plugin API addresses records by it in paths (GET /products/{id_or_ref},
// percent-encoded). So that every registered reference can be addressed and read back as it was
// written, a reference is 1 to MaxRefLength characters, each printable (unicode.IsPrint: letters,
// marks, numbers, punctuation, symbols and the ASCII space; no control, format or other whitespace
// characters such as tabs, line breaks or zero-width spaces); it does not start or end with a
// space, and it is not "." or "..", which HTTP clients remove from paths. "/", "?", "#", "%" and
// the like are allowed; clients percent-encode them in paths.

// MaxRefLength is the most characters a merchant reference may hold.
const MaxRefLength = 200

// RefProblem says why s cannot be a merchant reference, "" when it can. Its length is checked
// with the request's other bounds.
func RefProblem(s string) string {
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
