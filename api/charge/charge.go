// Package charge writes the charge headers of an accepted generation request, the same on both
// APIs (docs/api-guide.md, "Charge headers"): what the request reserved and what the account has
// available after it, as told by the reservation's own statement.
package charge

import (
	"net/http"
	"strconv"
)

// The charge headers.
const (
	// ReservedHeader is the credits the request reserved.
	ReservedHeader = "X-Credits-Reserved"
	// RemainingHeader is the account's available balance right after the request's reservation.
	RemainingHeader = "X-Credits-Remaining"
)

// Headers are the charge headers of a request that reserved reserved credits and left remaining
// available, to set on its answer and record with it (an Idempotency-Key replay sends them again).
func Headers(reserved, remaining int64) http.Header {
	return http.Header{
		ReservedHeader:  {strconv.FormatInt(reserved, 10)},
		RemainingHeader: {strconv.FormatInt(remaining, 10)},
	}
}

// Set sets the charge headers on h.
func Set(h http.Header, reserved, remaining int64) {
	for k, v := range Headers(reserved, remaining) {
		h[k] = v
	}
}
