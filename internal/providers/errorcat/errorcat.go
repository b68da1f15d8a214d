// Package errorcat names the failure categories of a generation attempt (api/external/openapi.yaml,
// ErrorCategory) and says which of them the job workflow retries.
package errorcat

// Category is the errorCategory of a failed or retried job.
type Category string

// The categories. Their string values double as Temporal ApplicationError types.
const (
	TransientInfra   Category = "TRANSIENT_INFRA"
	RateLimit        Category = "RATE_LIMIT"
	ProviderCapacity Category = "PROVIDER_CAPACITY"
	ContentPolicy    Category = "CONTENT_POLICY"
	InputMissing     Category = "INPUT_MISSING"
	InputNotReady    Category = "INPUT_NOT_READY"
	ProviderAccount  Category = "PROVIDER_ACCOUNT"
	InternalBug      Category = "INTERNAL_BUG"
)

// All lists every category.
var All = []Category{TransientInfra, RateLimit, ProviderCapacity, ContentPolicy, InputMissing, InputNotReady, ProviderAccount, InternalBug}

var hints = map[Category]string{
	TransientInfra:   "A temporary infrastructure problem interrupted generation; it is retried automatically.",
	RateLimit:        "The generation provider rate-limited the service; the job is retried automatically.",
	ProviderCapacity: "The generation provider had no free capacity; the job is retried automatically.",
	ContentPolicy:    "The provider's content rules rejected this request; change the prompt or source image and submit a new order.",
	InputMissing:     "A required input, usually the source image, could not be found; check the references and create a new order.",
	InputNotReady:    "An input is still being prepared; if the job fails, submit it again once the source image is available.",
	ProviderAccount:  "A problem with the service's provider account blocked generation; contact support with the order ID.",
	InternalBug:      "A defect on the service side stopped generation; contact support with the order ID.",
}

// Hint is the one-sentence explanation of a category shown to clients.
func (c Category) Hint() string { return hints[c] }

// Retryable reports whether the job workflow tries again after an attempt failing with c.
func (c Category) Retryable() bool {
	switch c {
	case TransientInfra, RateLimit, ProviderCapacity:
		return true
	}
	return false
}

// Parse returns the category named s, and false for an unknown name.
func Parse(s string) (Category, bool) {
	c := Category(s)
	_, ok := hints[c]
	return c, ok
}
