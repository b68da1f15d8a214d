package fal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
)

// failure is a non-2xx answer of the queue, read as fal documents its errors:
//   - model errors (https://docs.fal.ai/model-apis/errors): {"detail": [{"loc", "msg", "type",
//     "url", "ctx", "input"}]}, with an optional X-Fal-Retryable: true|false header;
//   - request errors (https://fal.ai/docs/documentation/model-apis/request-errors): {"detail":
//     "text", "error_type": "..."}, the type repeated in the X-Fal-Error-Type header;
//   - account errors, e.g. 403 {"detail": "User is locked. Reason: Exhausted balance. Top up your
//     balance at fal.ai/dashboard/billing."}.
//
// A body that is not JSON (a proxy's HTML page) counts as one detail whose msg is the text.
type failure struct {
	status    int
	requestID string // X-Fal-Request-Id, when the operation does not name the request already
	errorType string
	retryable bool
	details   []detail
}

// detail is one error object of a model error.
type detail struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// Markers of the failure kinds in lower-cased error texts and types.
var (
	accountMarkers  = []string{"user is locked", "exhausted balance", "insufficient balance", "billing", "top up", "top_up"}
	capacityMarkers = []string{"no capacity", "no available capacity", "insufficient capacity", "overloaded", "runner_scheduling_failure"}
	policyMarkers   = []string{"content_policy_violation", "content policy", "nsfw", "safety"}
	// The model-error types of https://docs.fal.ai/model-apis/errors that reject an input file.
	inputTypes = []string{"image_load_error", "file_download_error", "image_too_small", "image_too_large",
		"unsupported_image_format", "file_too_large"}
	inputVerbs = []string{"download", "decode", "load", "fetch", "open", "identify"}
)

// classify turns a non-2xx answer into a providers.Error. op names the operation, and the request
// when it is known (knownID); the message adds the X-Fal-Request-Id of the answer when it says more.
func classify(op string, a answer, knownID string) *providers.Error {
	f := parseFailure(a, knownID)
	e := providers.Errorf(f.category(), "%s: %s: %s", Name, op, f)
	if e.Category == errorcat.RateLimit {
		if e.RetryAfter = providers.RetryAfter(a.header, time.Now()); e.RetryAfter == 0 {
			e.RetryAfter = DefaultRetryAfter
		}
	}
	return e
}

func parseFailure(a answer, knownID string) failure {
	f := failure{
		status:    a.status,
		errorType: a.header.Get("X-Fal-Error-Type"),
		retryable: strings.EqualFold(strings.TrimSpace(a.header.Get("X-Fal-Retryable")), "true"),
	}
	if id := a.header.Get("X-Fal-Request-Id"); id != knownID {
		f.requestID = id
	}
	var body struct {
		Detail    json.RawMessage `json:"detail"`
		ErrorType string          `json:"error_type"`
		Message   string          `json:"message"`
	}
	if json.Unmarshal(a.body, &body) != nil {
		if text := strings.TrimSpace(string(a.body)); text != "" {
			f.details = []detail{{Msg: text}}
		}
		return f
	}
	if body.ErrorType != "" {
		f.errorType = body.ErrorType
	}
	var text string
	switch {
	case json.Unmarshal(body.Detail, &f.details) == nil:
	case json.Unmarshal(body.Detail, &text) == nil:
		// A string detail is one error about the whole body, as fal-js reads it
		// (ValidationError.fieldErrors).
		f.details = []detail{{Msg: text}}
	}
	if len(f.details) == 0 && body.Message != "" {
		f.details = []detail{{Msg: body.Message}}
	}
	return f
}

// category applies the classification rules in order: who is at fault is decided by the status
// first, then by what the body says.
func (f failure) category() errorcat.Category {
	text := f.text()
	switch {
	case f.status == http.StatusTooManyRequests:
		return errorcat.RateLimit
	case f.status == http.StatusUnauthorized, f.status == http.StatusPaymentRequired, f.status == http.StatusForbidden,
		providers.ContainsAny(text, accountMarkers):
		return errorcat.ProviderAccount
	case f.status == http.StatusServiceUnavailable, f.status == 529, providers.ContainsAny(text, capacityMarkers):
		return errorcat.ProviderCapacity
	case f.status >= 500:
		return errorcat.TransientInfra
	case slices.ContainsFunc(f.details, detail.policy):
		return errorcat.ContentPolicy
	case slices.ContainsFunc(f.details, detail.input):
		return errorcat.InputMissing
	case f.retryable, f.status == http.StatusRequestTimeout, f.status == http.StatusConflict:
		// 408 and 409 are among the codes fal_client retries (RETRY_CODES in client.py).
		return errorcat.TransientInfra
	}
	return errorcat.InternalBug
}

// text is every message and type of the failure, lower-cased, for the marker searches.
func (f failure) text() string {
	parts := []string{strings.ToLower(f.errorType)}
	for _, d := range f.details {
		parts = append(parts, strings.ToLower(d.Type), strings.ToLower(d.Msg))
	}
	return strings.Join(parts, " ")
}

// policy reports whether the detail is a content-policy rejection of the prompt or an image. The
// names of the safety inputs do not count: a message about their values is a validation error.
func (d detail) policy() bool {
	return providers.ContainsAny(safetyInputs.Replace(strings.ToLower(d.Type+" "+d.Msg)), policyMarkers)
}

var safetyInputs = strings.NewReplacer("safety_tolerance", "", "enable_safety_checker", "")

// input reports whether the detail rejects the input image: one of the documented file error
// types, a location at image_url, or a message saying an image could not be downloaded or decoded.
func (d detail) input() bool {
	if slices.Contains(inputTypes, d.Type) || slices.Contains(d.Loc, any("image_url")) {
		return true
	}
	msg := strings.ToLower(d.Msg)
	return strings.Contains(msg, "image") && providers.ContainsAny(msg, inputVerbs)
}

// String is the raw detail for logs: status, request ID and what fal said.
func (f failure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d %s", f.status, http.StatusText(f.status))
	if f.requestID != "" {
		fmt.Fprintf(&b, " (request %s)", f.requestID)
	}
	if f.errorType != "" {
		fmt.Fprintf(&b, " [%s]", f.errorType)
	}
	for i, d := range f.details {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		b.WriteString(sep + d.String())
	}
	return providers.ClipDetail(b.String())
}

// String renders the detail as "type at loc: msg".
func (d detail) String() string {
	var loc []string
	for _, l := range d.Loc {
		loc = append(loc, fmt.Sprint(l))
	}
	s := d.Msg
	if len(loc) > 0 {
		s = "at " + strings.Join(loc, ".") + ": " + s
	}
	if d.Type != "" {
		s = d.Type + " " + s
	}
	return s
}
