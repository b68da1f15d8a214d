package engine

import (
	"errors"
	"fmt"
	"time"
)

// Kind is the class of a refusal, which each API maps to its status and envelope in one place.
type Kind string

// The kinds of refusal.
const (
	// KindInvalid: the request is malformed or names something it may not (400).
	KindInvalid Kind = "invalid"
	// KindUnauthenticated: the caller's credentials are missing, unknown, expired or revoked (401).
	KindUnauthenticated Kind = "unauthenticated"
	// KindNotFound: the record does not exist or belongs to another tenant (404).
	KindNotFound Kind = "not_found"
	// KindForbidden: the tenant sees the record but may not change it, such as a system preset (403).
	KindForbidden Kind = "forbidden"
	// KindConflict: the record's state does not allow it now (409).
	KindConflict Kind = "conflict"
	// KindInsufficientCredits: the balance does not cover it; nothing was created (402).
	KindInsufficientCredits Kind = "insufficient_credits"
	// KindPrerequisite: something it needs is missing, such as an approved packshot (422).
	KindPrerequisite Kind = "prerequisite"
	// KindUnavailable: a dependency did not answer in time; retry later (503).
	KindUnavailable Kind = "unavailable"
	// KindRateLimited: the caller has used up its budget for now (429).
	KindRateLimited Kind = "rate_limited"
)

// Kinds lists every kind of refusal, so façades can show that each one has its answer.
var Kinds = []Kind{KindInvalid, KindUnauthenticated, KindNotFound, KindForbidden, KindConflict,
	KindInsufficientCredits, KindPrerequisite, KindUnavailable, KindRateLimited}

// Reasons refine a kind with a stable, machine-readable name the APIs may surface as their code.
const (
	ReasonJobNotCancelable = "job_not_cancelable"
	// ReasonPackshotNotApproved refines KindPrerequisite: a product (plugin session) or product
	// photo (external generation) has no approved packshot. Subjects names them: product refs,
	// sorted, or the product photo's id.
	ReasonPackshotNotApproved = "packshot_not_approved"
	// ReasonModelNotResolved refines KindPrerequisite: no generation model serves the job type,
	// which Subjects names.
	ReasonModelNotResolved = "model_not_resolved"
	// ReasonTestQuotaExceeded refines KindRateLimited: a test twin has run models.TestDailyJobs
	// jobs in its UTC day; RetryAfter is the time until the next UTC midnight.
	ReasonTestQuotaExceeded = "test_quota_exceeded"
	// ReasonSpendLimitExceeded refines KindInsufficientCredits: the request would take its
	// installation's or account's month past its spend limit; SpendLimit says which and how far.
	ReasonSpendLimitExceeded = "spend_limit_exceeded"
)

// Error is a refusal of a use case: what kind it is, which input field it concerns (if any), a
// message in the client's terms, and details. Façades map it to their envelopes; they never need
// to look inside the engine to do so.
type Error struct {
	Kind    Kind
	Reason  string   // optional refinement, e.g. ReasonJobNotCancelable
	Field   string   // the input field at fault, in the request's own naming; "" for none
	Message string   // for the client: what is wrong and what to do
	Details []string // machine-readable details (e.g. prerequisite names)
	// Subjects are the records or names the refusal concerns beyond Field, for façades that echo
	// them: the products without an approved packshot, the job type no model serves.
	Subjects []string
	// CreditsRequired is what the refused request costs (KindInsufficientCredits); 0 when unknown.
	CreditsRequired int64
	// SpendLimit is the limit that refused the request (ReasonSpendLimitExceeded).
	SpendLimit *SpendLimitRefusal
	// RetryAfter is when a retry may succeed (KindUnavailable, KindRateLimited); 0 when unknown.
	RetryAfter time.Duration
	// Cause is the underlying error for the logs; it never reaches a client.
	Cause error
}

// SpendLimitRefusal is the spend limit that refused a request: the limit, what the month had used
// before the request, and when the month ends (the start of the next UTC month).
type SpendLimitRefusal struct {
	Limit    int64
	Used     int64
	ResetsAt time.Time
	// Installation is true when the installation's limit refused it, false for the account's.
	Installation bool
}

// Error is the message, prefixed with the field when there is one.
func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// Unwrap is the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Cause }

// As returns the engine Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

func refuse(kind Kind, reason, field, format string, args ...any) *Error {
	return &Error{Kind: kind, Reason: reason, Field: field, Message: fmt.Sprintf(format, args...)}
}

// unavailable is KindUnavailable with its cause kept for the logs.
func unavailable(message string, retryAfter time.Duration, cause error) *Error {
	return &Error{Kind: KindUnavailable, Message: message, RetryAfter: retryAfter, Cause: cause}
}
