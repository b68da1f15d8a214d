package plugin

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-playground/validator/v10"

	"github.com/shotflow/shotflow/api/jsonbody"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/models/merchantref"
)

// Error codes of the plugin API envelope (docs at {docs_url}/plugin-api/errors/<code>).
const (
	CodeInvalidInput        = "invalid_input"
	CodeUnauthorized        = "unauthorized"
	CodeInsufficientCredits = "insufficient_credits"
	CodeForbidden           = "forbidden"
	CodeNotFound            = "not_found"
	CodeIdempotencyConflict = "idempotency_conflict"
	CodeJobNotCancelable    = "job_not_cancelable"
	CodeJobNotCompleted     = "job_not_completed"
	CodeConflict            = "conflict"
	CodeUploadConflict      = "upload_not_accepted"
	CodeOutputsPurged       = "outputs_purged"
	CodeURLExpired          = "url_expired"
	CodeRangeNotSatisfiable = "range_not_satisfiable"
	CodeMethodNotAllowed    = "method_not_allowed"
	CodePayloadTooLarge     = "payload_too_large"
	CodeHeadersTooLarge     = "headers_too_large"
	CodePackshotNotApproved = "packshot_not_approved"
	CodeRateLimited         = "rate_limited"
	CodeTestQuotaExceeded   = "test_quota_exceeded"
	CodeSpendLimitExceeded  = "spend_limit_exceeded"
	CodeInternal            = "internal_error"
	CodeUnavailable         = "service_unavailable"
)

// ErrorDocs describes every error code; the API serves it under /docs/plugin-api/errors/<code>.
var ErrorDocs = map[string]string{
	CodeInvalidInput:        "The request is malformed or a field is invalid; the message names the field. Fix the request before sending it again.",
	CodeUnauthorized:        "The X-Api-Key header is missing, malformed, unknown or revoked.",
	CodeInsufficientCredits: "The account's available credits do not cover the session. Nothing was created and nothing was charged.",
	CodeForbidden:           "The key is valid but lacks the permission this route needs.",
	CodeNotFound:            "The record does not exist or belongs to another installation.",
	CodeIdempotencyConflict: "The Idempotency-Key was already used with a different request payload (use a new key for a new request), or the first request with this key is still being processed (retry after Retry-After seconds to get its answer).",
	CodeJobNotCancelable:    "The job's first generate attempt has begun (it has a started_at) or it has ended, so it can no longer be cancelled.",
	CodeJobNotCompleted:     "The job has not completed; ratings and fresh URLs need a completed job.",
	CodeConflict:            "The record's current state does not allow this change; read it again before retrying.",
	CodeUploadConflict:      "The upload URL is expired or already used, or the bytes do not match the declared size or type.",
	CodeOutputsPurged:       "The job's files were removed by the retention policy.",
	CodeURLExpired:          "The signed URL has expired; ask the API for a fresh one (POST /jobs/{id}/refresh-url for outputs).",
	CodeRangeNotSatisfiable: "The Range header of a file download asks for bytes past the end of the file; Content-Range gives its size (bytes */size). Ask for a range within it, or for the whole file without a Range header.",
	CodeMethodNotAllowed:    "The route exists but does not accept this HTTP method.",
	CodePayloadTooLarge:     "The request body or file is larger than allowed.",
	CodeHeadersTooLarge:     "The request line and headers take more than 64 KiB (65,536 bytes); send fewer or shorter headers.",
	CodePackshotNotApproved: "A product of the session has no approved packshot. Nothing was created and nothing was charged.",
	CodeRateLimited:         "The key exceeded its request limit; wait for Retry-After seconds.",
	CodeTestQuotaExceeded:   "Test mode runs at most 1,000 jobs per installation or account per UTC day, and the request's jobs would go past it. Nothing was created and nothing was charged; Retry-After gives the seconds until midnight UTC, when the quota resets. Live keys have no such quota.",
	CodeSpendLimitExceeded:  "The request would take the month's credits (reserved less released, UTC calendar month) past the installation's or account's spend limit. Nothing was created and nothing was charged; details give the limit, what the month has used, when it resets (resets_at) and whose limit it is (scope). Raise or remove the limit (PUT or DELETE /spend-limit) or wait for the reset.",
	CodeInternal:            "An unexpected error on the service side; retry later and contact support if it persists.",
	CodeUnavailable:         "A dependency of the service (its database, workflow engine or file store) is unavailable or did not answer within the request timeout; retry after the Retry-After delay.",
}

// ErrorBody is the plugin API error envelope.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the content of the envelope.
type ErrorDetail struct {
	Code        string            `json:"code"`
	MessageI18n map[string]string `json:"message_i18n"`
	Retryable   bool              `json:"retryable"`
	DocURL      string            `json:"doc_url"`
	Details     any               `json:"details,omitempty"`
}

// Fail aborts the request with the envelope.
func (h *Handler) Fail(c *gin.Context, status int, code, message string) {
	h.FailWith(c, status, code, message, nil)
}

// FailWith aborts the request with the envelope and machine-readable details. A 503 always
// carries Retry-After (unavailable.RetryAfterSeconds unless the handler chose another delay).
func (h *Handler) FailWith(c *gin.Context, status int, code, message string, details any) {
	c.Abort()
	if status == http.StatusServiceUnavailable && c.Writer.Header().Get("Retry-After") == "" {
		c.Header("Retry-After", strconv.Itoa(unavailable.RetryAfterSeconds))
	}
	c.PureJSON(status, h.Envelope(status, code, message, details))
}

// Envelope builds the error body for a status and code.
func (h *Handler) Envelope(status int, code, message string, details any) ErrorBody {
	return ErrorBody{Error: ErrorDetail{
		Code:        code,
		MessageI18n: map[string]string{"en": message},
		Retryable:   status == http.StatusTooManyRequests || status >= 500,
		DocURL:      h.DocsURL + "/plugin-api/errors/" + code,
		Details:     details,
	}}
}

// FileNotFound answers a file route's 404 (files.Responder).
func (h *Handler) FileNotFound(c *gin.Context, message string) {
	h.Fail(c, http.StatusNotFound, CodeNotFound, message)
}

// FileForbidden answers a file route's 403: an invalid signature.
func (h *Handler) FileForbidden(c *gin.Context, message string) {
	h.Fail(c, http.StatusForbidden, CodeForbidden, message)
}

// FileURLExpired answers a file route's 410 for an expired signed URL.
func (h *Handler) FileURLExpired(c *gin.Context, message string) {
	h.Fail(c, http.StatusGone, CodeURLExpired, message)
}

// FilePurged answers a file route's 410 for a file the retention policy removed.
func (h *Handler) FilePurged(c *gin.Context, message string) {
	h.Fail(c, http.StatusGone, CodeOutputsPurged, message)
}

// FileRangeNotSatisfiable answers a file route's 416: the requested range is past the file's end.
func (h *Handler) FileRangeNotSatisfiable(c *gin.Context, message string) {
	h.Fail(c, http.StatusRequestedRangeNotSatisfiable, CodeRangeNotSatisfiable, message)
}

// engineCodes are the plugin codes of the engine's refusals: by reason, else by kind. details, when
// set, shapes the envelope's details from the refusal's; otherwise they are its Details list.
var engineCodes = map[string]struct {
	status  int
	code    string
	details func(e *engine.Error) any
}{
	string(engine.KindInvalid):             {http.StatusBadRequest, CodeInvalidInput, nil},
	string(engine.KindUnauthenticated):     {http.StatusUnauthorized, CodeUnauthorized, nil},
	string(engine.KindNotFound):            {http.StatusNotFound, CodeNotFound, nil},
	string(engine.KindForbidden):           {http.StatusForbidden, CodeForbidden, nil},
	string(engine.KindConflict):            {http.StatusConflict, CodeConflict, nil},
	string(engine.KindInsufficientCredits): {http.StatusPaymentRequired, CodeInsufficientCredits, creditsRequired},
	string(engine.KindPrerequisite):        {http.StatusUnprocessableEntity, CodePackshotNotApproved, nil},
	string(engine.KindUnavailable):         {http.StatusServiceUnavailable, CodeUnavailable, nil},
	string(engine.KindRateLimited):         {http.StatusTooManyRequests, CodeRateLimited, nil},
	engine.ReasonJobNotCancelable:          {http.StatusConflict, CodeJobNotCancelable, nil},
	engine.ReasonJobNotCompleted:           {http.StatusConflict, CodeJobNotCompleted, nil},
	engine.ReasonOutputsPurged:             {http.StatusGone, CodeOutputsPurged, nil},
	engine.ReasonPackshotNotApproved:       {http.StatusUnprocessableEntity, CodePackshotNotApproved, productRefs},
	engine.ReasonUploadNotAccepted:         {http.StatusConflict, CodeUploadConflict, nil},
	engine.ReasonTooLarge:                  {http.StatusRequestEntityTooLarge, CodePayloadTooLarge, nil},
	engine.ReasonTestQuotaExceeded:         {http.StatusTooManyRequests, CodeTestQuotaExceeded, nil},
	engine.ReasonSpendLimitExceeded:        {http.StatusPaymentRequired, CodeSpendLimitExceeded, spendLimitExceeded},
}

// creditsRequired is the details of insufficient_credits: {"credits_required": n}, when the engine
// knows the cost.
func creditsRequired(e *engine.Error) any {
	if e.CreditsRequired <= 0 {
		return nil
	}
	return gin.H{"credits_required": e.CreditsRequired}
}

// productRefs is the details of packshot_not_approved: {"product_refs": [...]}.
func productRefs(e *engine.Error) any {
	return gin.H{"product_refs": e.Subjects}
}

// fail answers an error from the engine: a refusal in the envelope its kind and reason call for
// (with Retry-After when the engine knows it: whole seconds rounded up, as the external API and
// the rate limit give it, so a client never retries early), anything else as internal does.
func (h *Handler) fail(c *gin.Context, err error) {
	h.refuse(c, engineFailure(c, err))
}

// engineFailure is the answer fail gives err, for callers that put it elsewhere (a batch's
// results). A field-naming refusal reads "<field> <message>", e.g. "subjects[0].ai_model is
// required". An error that is no known refusal is logged and answered as internal does.
func engineFailure(c *gin.Context, err error) *failure {
	e, ok := engine.As(err)
	if !ok {
		return unexpected(c, err)
	}
	m, known := engineCodes[e.Reason]
	if !known {
		m, known = engineCodes[string(e.Kind)]
	}
	if !known {
		return unexpected(c, err)
	}
	if e.Cause != nil {
		_ = c.Error(e.Cause)
	}
	message := e.Message
	if e.Field != "" {
		message = e.Field + " " + e.Message
	}
	var details any
	switch {
	case m.details != nil:
		details = m.details(e)
	case len(e.Details) > 0:
		details = e.Details
	}
	return &failure{status: m.status, code: m.code, message: message, details: details, retryAfter: e.RetryAfter}
}

// internal logs err and answers it without exposing it: 503 when a dependency is unavailable or
// the request ran out of time, else 500 (a bug).
func (h *Handler) internal(c *gin.Context, err error) {
	h.refuse(c, unexpected(c, err))
}

// Unexpected is internal for the routes outside the plugin API that answer in its envelope.
func (h *Handler) Unexpected(c *gin.Context, err error) { h.internal(c, err) }

// unexpected logs err and returns the answer internal gives it.
func unexpected(c *gin.Context, err error) *failure {
	_ = c.Error(err)
	if unavailable.InRequest(c.Request.Context(), err) {
		return &failure{status: http.StatusServiceUnavailable, code: CodeUnavailable,
			message: "A service this request needs is unavailable or did not answer in time; retry after the Retry-After delay."}
	}
	return &failure{status: http.StatusInternalServerError, code: CodeInternal,
		message: "An unexpected error occurred; the request ID identifies it in our logs."}
}

// bindJSON decodes the body into dst and validates it; on failure it answers 400 naming the field.
func (h *Handler) bindJSON(c *gin.Context, dst any) bool {
	body, ok := h.readBody(c)
	if !ok {
		return false
	}
	if err := decodeJSON(body, dst); err != nil {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, describeBindError(err))
		return false
	}
	return true
}

// requestValidator checks the plugin API's request structs (their `binding` tags) and names fields
// as clients spell them (their json names). It is the plugin API's own: gin's global validator is
// left as it is.
var requestValidator = newRequestValidator()

func newRequestValidator() *validator.Validate {
	v := validator.New()
	v.SetTagName("binding")
	// nonempty: an optional field that was sent (a non-nil pointer) holds a value, not "".
	if err := v.RegisterValidation("nonempty", func(fl validator.FieldLevel) bool { return fl.Field().String() != "" }); err != nil {
		panic(err) // only for a malformed tag name
	}
	// ref: a merchant reference that can be addressed in a path (merchantref.Problem).
	if err := v.RegisterValidation("ref", func(fl validator.FieldLevel) bool { return merchantref.Problem(fl.Field().String()) == "" }); err != nil {
		panic(err)
	}
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	return v
}

// decodeJSON decodes body, one JSON object, into dst strictly (jsonbody: exact names, no unknown
// or repeated name, valid UTF-8) and validates it with requestValidator.
func decodeJSON(body []byte, dst any) error {
	if err := jsonbody.Decode(body, dst); err != nil {
		return err
	}
	return requestValidator.Struct(dst)
}

// describeBindError turns decoding and validation errors into one message naming the fields.
func describeBindError(err error) string {
	var verrs validator.ValidationErrors
	if errors.As(err, &verrs) {
		msgs := make([]string, 0, len(verrs))
		for _, fe := range verrs {
			msgs = append(msgs, describeField(fe))
		}
		return strings.Join(msgs, "; ")
	}
	var bodyErr *jsonbody.Error
	if errors.As(err, &bodyErr) {
		return bodyErr.Message
	}
	return "The body is not a valid JSON object"
}

func describeField(fe validator.FieldError) string {
	ns := fe.Namespace()
	if _, rest, ok := strings.Cut(ns, "."); ok {
		ns = rest
	}
	switch fe.Tag() {
	case "required":
		return fmt.Sprintf("%s is required", ns)
	case "min":
		if fe.Kind() == reflect.Slice || fe.Kind() == reflect.String {
			return fmt.Sprintf("%s must have at least %s entries/characters", ns, fe.Param())
		}
		return fmt.Sprintf("%s must be at least %s", ns, fe.Param())
	case "max":
		if fe.Kind() == reflect.Slice || fe.Kind() == reflect.String {
			return fmt.Sprintf("%s must have at most %s entries/characters", ns, fe.Param())
		}
		return fmt.Sprintf("%s must be at most %s", ns, fe.Param())
	case "oneof":
		return fmt.Sprintf("%s must be one of: %s", ns, fe.Param())
	case "uuid":
		return fmt.Sprintf("%s must be a UUID", ns)
	case "ref":
		v, _ := fe.Value().(string)
		return fmt.Sprintf("%s %s", ns, merchantref.Problem(v))
	case "nonempty":
		return fmt.Sprintf("%s must not be empty; omit it to use the default", ns)
	}
	return fmt.Sprintf("%s is invalid (%s)", ns, fe.Tag())
}
