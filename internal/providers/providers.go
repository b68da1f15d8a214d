// Package providers defines what a generation provider is and keeps the registry of providers,
// keyed by the provider part of a catalog model ID (provider/model).
package providers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/catalog"
)

// Input is one source file of a generation request.
type Input struct {
	Data        []byte
	ContentType string
	// Key is the blob key Data was read from, when it was read from the blob store: a provider may
	// keep what it derives from the file by it (the local provider's decoded sceneries). "" for none.
	Key string
}

// SessionConfig is the part of an order's session_config a provider reads.
type SessionConfig struct {
	Style       string `json:"style,omitempty"`
	Suggestions string `json:"suggestions,omitempty"`
	SceneryID   string `json:"scenery_id,omitempty"`
	ModelID     string `json:"model_id,omitempty"`
}

// Request asks a provider for the outputs of one job attempt.
//
// What Inputs hold depends on JobType (the models/jobtype constants):
//   - packshot: the product photo to cut out;
//   - photo_shoot: the approved packshot (Scenery optionally holds a scene image);
//   - model_idea, scenery_idea: nothing; Prompt holds the account's preferences text;
//   - video: one image; reel: 1 to 10 images. Prompt holds the optional suggestion.
type Request struct {
	JobID       string
	JobType     string
	Model       string // the model part of provider/model
	Attempt     int    // 1-based attempt number within the job run; 0 when unknown
	Position    int    // the job's 0-based position in its order
	AspectRatio string
	LongEdge    int
	Seed        int64
	Session     SessionConfig
	Prompt      string // free text of the request: an idea's preferences, a video's suggestion
	Inputs      []Input
	Scenery     *Input // optional scene image
	// Watermark asks for test mode's "TEST" watermark on every output (render.DrawWatermark):
	// set for test-mode jobs, which only the local provider renders (internal/providers/testmode).
	Watermark bool
}

// Output is one generated file.
type Output struct {
	Data          []byte
	ContentType   string
	Ext           string
	Width, Height int
	Duration      time.Duration // videos only
}

// Provider generates outputs for one provider's models.
type Provider interface {
	Generate(ctx context.Context, req Request) ([]Output, error)
	// Serves reports whether the provider's model (the part after "provider/") generates jobs of
	// jobType. The registry refuses a catalog that lists a model its provider cannot serve.
	Serves(model, jobType string) bool
}

// Error is a classified generation failure. Message is the raw detail for logs and the workflow
// history; clients only ever see the category's hint.
type Error struct {
	Category   errorcat.Category
	Message    string
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Category, e.Message) }

// Errorf builds a classified error.
func Errorf(c errorcat.Category, format string, args ...any) *Error {
	return &Error{Category: c, Message: fmt.Sprintf(format, args...)}
}

// Classify returns the category of err: its own if it is an *Error, TRANSIENT_INFRA for context
// deadlines, INTERNAL_BUG otherwise.
func Classify(err error) *Error {
	var ge *Error
	if errors.As(err, &ge) {
		return ge
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Category: errorcat.TransientInfra, Message: err.Error()}
	}
	return &Error{Category: errorcat.InternalBug, Message: err.Error()}
}

// Redact is Classify with every occurrence of secret (a provider's API key) in the message
// replaced, so no error text can leak it.
func Redact(err error, secret string) *Error {
	ge := Classify(err)
	if secret == "" || !strings.Contains(ge.Message, secret) {
		return ge
	}
	out := *ge
	out.Message = strings.ReplaceAll(out.Message, secret, "[redacted]")
	return &out
}

// MaxDetail caps the provider text an error message keeps.
const MaxDetail = 1000

// ClipDetail cuts provider text to MaxDetail bytes (on a character boundary), marking the cut.
func ClipDetail(s string) string {
	if len(s) <= MaxDetail {
		return s
	}
	return strings.ToValidUTF8(s[:MaxDetail], "") + "…"
}

// ContainsAny reports whether s contains any of the markers.
func ContainsAny(s string, markers []string) bool {
	return slices.ContainsFunc(markers, func(m string) bool { return strings.Contains(s, m) })
}

// Registry maps provider names to providers and filters the catalog to the available ones.
type Registry struct {
	providers map[string]Provider
	catalog   *catalog.Catalog
	preferred string // the default provider, when set
}

// NewRegistry returns a registry over the catalog with the given providers. It fails when the
// catalog lists a model of a configured provider for a job type that provider's code cannot
// generate, so the catalog, the prices and the code never disagree.
//
// preferred, when given, names the default provider: DefaultModel picks its models first.
func NewRegistry(catalog *catalog.Catalog, providers map[string]Provider, preferred ...string) (*Registry, error) {
	for _, m := range catalog.AIModels {
		p, ok := providers[m.Provider]
		if !ok {
			continue
		}
		_, model, _ := strings.Cut(m.ID, "/")
		for _, jt := range m.JobTypes {
			if !p.Serves(model, jt) {
				return nil, fmt.Errorf("catalog model %s lists job type %s, which provider %s cannot generate", m.ID, jt, m.Provider)
			}
		}
	}
	r := &Registry{providers: providers, catalog: catalog}
	if len(preferred) > 0 {
		r.preferred = preferred[0]
	}
	return r, nil
}

// Models lists the catalog models whose provider is configured.
func (r *Registry) Models() []catalog.AIModel {
	var out []catalog.AIModel
	for _, m := range r.catalog.AIModels {
		if _, ok := r.providers[m.Provider]; ok {
			out = append(out, m)
		}
	}
	return out
}

// MustNewRegistry is NewRegistry for catalogs known to be consistent (tests): it panics on error.
func MustNewRegistry(catalog *catalog.Catalog, providers map[string]Provider) *Registry {
	r, err := NewRegistry(catalog, providers)
	if err != nil {
		panic(err)
	}
	return r
}

// ModelsFor lists the available models that serve any of jobTypes, each showing only those of its
// job types that are in jobTypes: what a façade that creates only those job types offers.
func (r *Registry) ModelsFor(jobTypes ...string) []catalog.AIModel {
	var out []catalog.AIModel
	for _, m := range r.Models() {
		var served []string
		for _, jt := range m.JobTypes {
			if slices.Contains(jobTypes, jt) {
				served = append(served, jt)
			}
		}
		if len(served) > 0 {
			m.JobTypes = served
			out = append(out, m)
		}
	}
	return out
}

// DefaultModel is the model a request that names no model uses for the job type: the first
// available catalog model, in catalog order, that serves it, restricted to provider when provider
// is not empty, else taken from the default provider when it serves the job type. ok is false when
// none does.
func (r *Registry) DefaultModel(jobType, provider string) (catalog.AIModel, bool) {
	if provider == "" && r.preferred != "" {
		if m, ok := r.DefaultModel(jobType, r.preferred); ok {
			return m, true
		}
	}
	for _, m := range r.Models() {
		if m.Serves(jobType) && (provider == "" || m.Provider == provider) {
			return m, true
		}
	}
	return catalog.AIModel{}, false
}

// Model returns an available catalog model by its provider/model ID.
func (r *Registry) Model(id string) (catalog.AIModel, bool) {
	m, ok := r.catalog.Model(id)
	if !ok {
		return catalog.AIModel{}, false
	}
	_, configured := r.providers[m.Provider]
	return m, configured
}

// Catalog returns the full reference catalog.
func (r *Registry) Catalog() *catalog.Catalog { return r.catalog }

// Providers lists the configured provider names.
func (r *Registry) Providers() []string {
	out := make([]string, 0, len(r.providers))
	for name := range r.providers {
		out = append(out, name)
	}
	return out
}

// Provider returns the configured provider named name.
func (r *Registry) Provider(name string) (Provider, bool) {
	p, ok := r.providers[name]
	return p, ok
}

// Generate dispatches a request for the provider/model ID to its provider.
func (r *Registry) Generate(ctx context.Context, modelID string, req Request) ([]Output, error) {
	m, ok := r.Model(modelID)
	if !ok {
		return nil, Errorf(errorcat.InternalBug, "model %q is not available", modelID)
	}
	_, req.Model, _ = strings.Cut(m.ID, "/")
	return r.providers[m.Provider].Generate(ctx, req)
}
