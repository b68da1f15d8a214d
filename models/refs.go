package models

import "github.com/shotflow/shotflow/models/merchantref"

// Merchant references: the rules are merchantref's, which the plugin API checks requests with.

// MaxRefLength is the most characters a merchant reference may hold.
const MaxRefLength = merchantref.MaxLength

// RefProblem says why s cannot be a merchant reference, "" when it can (merchantref.Problem).
func RefProblem(s string) string { return merchantref.Problem(s) }
