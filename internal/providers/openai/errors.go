package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
)

// DefaultRetryAfter is the RetryAfter of a RATE_LIMIT failure whose answer carries neither
// retry-after-ms nor retry-after.
const DefaultRetryAfter = 10 * time.Second

// failure is a non-2xx answer with the error object of its body.
type failure struct {
	answer
	apiError
}

// apiError is the error object of a failed request's JSON body, {"error": {"message", "type",
// "param", "code"}}, as the error codes guide and the SDKs' APIError read it.
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   loose  `json:"param"`
	Code    loose  `json:"code"`
}

// loose is a JSON string, number or null read as text: param and code are null on many errors.
type loose string

// UnmarshalJSON keeps a string as it is, null as "" and anything else as its JSON text.
func (l *loose) UnmarshalJSON(b []byte) error {
	var s string
	switch {
	case bytes.Equal(b, []byte("null")):
		*l = ""
	case json.Unmarshal(b, &s) == nil:
		*l = loose(s)
	default:
		*l = loose(b)
	}
	return nil
}

// Codes and markers of the failure kinds.
var (
	// billingCodes: the billing failures of the error codes guide ("429 - You exceeded your current
	// quota", credit_balance_exhausted, organization_spend_limit_exceeded, project_spend_limit_exceeded,
	// organization_usage_limit_exceeded, whose error.type is insufficient_quota) and the older
	// billing_hard_limit_reached and billing_not_active. Retrying does not restore access.
	billingCodes = []string{"insufficient_quota", "billing_hard_limit_reached", "billing_not_active",
		"credit_balance_exhausted", "organization_spend_limit_exceeded", "project_spend_limit_exceeded",
		"organization_usage_limit_exceeded"}
	// accountCodes: credentials and access ("401 - Incorrect API key provided", "403 - Country,
	// region, or territory not supported"), whatever the status.
	accountCodes = []string{"invalid_api_key", "unsupported_country_region_territory"}
	// policyCodes: the safety system's rejections; moderation_blocked comes with the type
	// image_generation_user_error, content_policy_violation is the older form.
	policyCodes   = []string{"moderation_blocked", "content_policy_violation"}
	policyMarkers = []string{"safety", "moderation", "content policy"}
	// inputCodes reject an input image ("Invalid image file or mode for image 1").
	inputCodes   = []string{"invalid_image", "invalid_image_file", "invalid_image_format", "image_too_large"}
	inputMarkers = []string{"invalid image", "image file"}
	// capacityMarkers: "503 - The engine is currently overloaded" and "503 - Slow Down".
	capacityMarkers = []string{"overloaded", "slow down", "slow_down", "capacity"}
)

// classify turns a non-2xx answer of POST path into a providers.Error. RATE_LIMIT carries the
// answer's retry-after-ms or retry-after (DefaultRetryAfter without them); PROVIDER_CAPACITY and
// TRANSIENT_INFRA carry them when present.
func classify(path string, a answer) *providers.Error {
	f := parseFailure(a)
	e := providers.Errorf(f.category(), "%s: POST %s: %s", Name, path, f)
	if e.Category.Retryable() {
		e.RetryAfter = providers.RetryAfter(a.header, time.Now())
	}
	if e.Category == errorcat.RateLimit && e.RetryAfter == 0 {
		e.RetryAfter = DefaultRetryAfter
	}
	return e
}

// parseFailure reads the error object of an answer; a body without one (a proxy's HTML page)
// counts as the message.
func parseFailure(a answer) failure {
	f := failure{answer: a}
	var body struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(a.body, &body) == nil && body.Error != nil {
		f.apiError = *body.Error
		return f
	}
	f.Message = strings.TrimSpace(string(a.body))
	return f
}

// category applies the rules in order: billing and rate limits first (both answer 429), then who
// is at fault by the status, then what a 4xx body says.
func (f failure) category() errorcat.Category {
	switch {
	case slices.Contains(billingCodes, string(f.Code)) || f.Type == "insufficient_quota":
		return errorcat.ProviderAccount
	case f.status == http.StatusTooManyRequests:
		return errorcat.RateLimit
	case f.status == http.StatusUnauthorized, f.status == http.StatusPaymentRequired, f.status == http.StatusForbidden,
		slices.Contains(accountCodes, string(f.Code)):
		return errorcat.ProviderAccount
	case f.status == http.StatusServiceUnavailable, f.status == 529,
		f.status >= 500 && providers.ContainsAny(f.text(), capacityMarkers):
		return errorcat.ProviderCapacity
	case f.status >= 500:
		return errorcat.TransientInfra
	case f.policy():
		return errorcat.ContentPolicy
	case f.input():
		return errorcat.InputMissing
	case f.status == http.StatusRequestTimeout, f.status == http.StatusConflict, f.header.Get("X-Should-Retry") == "true":
		// The official SDKs retry 408 and 409, and whatever x-should-retry: true marks
		// (openai-python, _base_client.py, _should_retry).
		return errorcat.TransientInfra
	}
	return errorcat.InternalBug
}

// policy reports whether the safety system rejected the prompt or an image.
func (f failure) policy() bool {
	return slices.Contains(policyCodes, string(f.Code)) ||
		f.Type == "image_generation_user_error" && providers.ContainsAny(strings.ToLower(f.Message), policyMarkers)
}

// input reports whether the failure rejects an input image: a documented code, the image parameter,
// or a message about an invalid image file.
func (f failure) input() bool {
	param := strings.ToLower(string(f.Param))
	return slices.Contains(inputCodes, string(f.Code)) || param == "image" || strings.HasPrefix(param, "image[") ||
		providers.ContainsAny(strings.ToLower(f.Message), inputMarkers)
}

// text is the type, code and message, lower-cased, for the marker searches.
func (f failure) text() string {
	return strings.ToLower(f.Type + " " + string(f.Code) + " " + f.Message)
}

// String is the raw detail for logs: status, request ID, type/code/param, what the API said and,
// on a 429, the rate-limit state of the x-ratelimit-* headers ("Rate limits in headers").
func (f failure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d %s%s", f.status, http.StatusText(f.status), f.ref())
	if kind := strings.Trim(f.Type+"/"+string(f.Code), "/"); kind != "" {
		fmt.Fprintf(&b, " [%s]", kind)
	}
	if f.Param != "" {
		fmt.Fprintf(&b, " param=%s", f.Param)
	}
	if f.Message != "" {
		b.WriteString(": " + f.Message)
	}
	if f.status == http.StatusTooManyRequests {
		b.WriteString(rateLimits(f.header))
	}
	return providers.ClipDetail(b.String())
}

// rateLimitHeaders are the x-ratelimit-* headers the rate limits guide documents.
var rateLimitHeaders = []string{"remaining-requests", "reset-requests", "remaining-tokens", "reset-tokens"}

// rateLimits renders the x-ratelimit-* headers present, as "; remaining-requests=0 reset-requests=1s".
func rateLimits(h http.Header) string {
	var parts []string
	for _, name := range rateLimitHeaders {
		if v := h.Get("X-Ratelimit-" + name); v != "" {
			parts = append(parts, name+"="+v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, " ")
}
