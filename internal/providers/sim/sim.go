// Package sim is the "sim" (simulated) generation provider, for tests and demos: each of its models
// injects a fixed failure pattern so that every retry path of the job engine can be exercised end to
// end, and renders a real photo with the local renderer when it succeeds.
//
// The outcome of an attempt depends only on the model name and Request.Attempt (1-based), never on
// process state, so a job behaves the same when its attempts land on different or restarted workers.
package sim

import (
	"context"
	_ "image/jpeg" // decodes JPEG inputs
	_ "image/png"  // decodes PNG inputs
	"slices"
	"strconv"
	"strings"
	"time"

	_ "golang.org/x/image/webp" // decodes WebP inputs

	"go.temporal.io/sdk/activity"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/models/jobtype"
)

// Name is the provider name of the catalog models sim/….
const Name = "sim"

// The model names (the part after "sim/").
const (
	ModelOK              = "ok"               // always succeeds
	ModelRateLimitTwice  = "rate-limit-twice" // attempts 1–2 fail RATE_LIMIT (RetryAfter 2s), then succeeds
	ModelTransientOnce   = "transient-once"   // attempt 1 fails TRANSIENT_INFRA, then succeeds
	ModelCapacityThenOK  = "capacity-then-ok" // attempt 1 fails PROVIDER_CAPACITY, then succeeds
	ModelAlwaysTransient = "always-transient" // every attempt fails TRANSIENT_INFRA
	ModelContentPolicy   = "content-policy"   // every attempt fails CONTENT_POLICY
	ModelInputMissing    = "input-missing"    // every attempt fails INPUT_MISSING
	ModelProviderAccount = "provider-account" // every attempt fails PROVIDER_ACCOUNT
	ModelInternalBug     = "internal-bug"     // every attempt fails INTERNAL_BUG
	ModelSlow            = "slow"             // sleeps DelayOption (default DefaultDelay), then succeeds
	ModelVideoOK         = "video-ok"         // videos and reels; always succeeds
)

// RateLimitRetryAfter is the RetryAfter of the RATE_LIMIT failures of sim/rate-limit-twice.
const RateLimitRetryAfter = 2 * time.Second

// DefaultDelay is how long sim/slow works when the session does not say.
const DefaultDelay = 2 * time.Second

// DelayOption is the key of the session suggestions token that sets the delay of sim/slow, as
// "sim-delay=<Go duration>", e.g. "sim-delay=3s".
const DelayOption = "sim-delay"

// FaultOption is the key of the session suggestions token that gives sim/ok and sim/video-ok the
// failure pattern of another sim model, as "sim-fault=<model>", e.g. "sim-fault=rate-limit-twice":
// a way to drive a retry path from a session without choosing another model.
const FaultOption = "sim-fault"

// FaultAtOption is the key of the session suggestions token that limits the fault of a FaultOption
// token to the job at one 0-based position of its order, as "sim-fault-at=<position>": every other
// job of the order succeeds, so an order ends partly completed.
const FaultAtOption = "sim-fault-at"

// HeartbeatInterval is how often sim/slow heartbeats while it waits inside a Temporal activity.
const HeartbeatInterval = time.Second

// fault is the failure pattern of one model.
type fault struct {
	category   errorcat.Category
	attempts   int // the first attempts that fail; 0 means every attempt
	retryAfter time.Duration
	message    string // raw provider message; %s is the model ID, %d the attempt
}

var faults = map[string]fault{
	ModelRateLimitTwice: {errorcat.RateLimit, 2, RateLimitRetryAfter,
		"429 Too Many Requests: rate limit exceeded for model %s (attempt %d); retry after " + RateLimitRetryAfter.String()},
	ModelTransientOnce: {errorcat.TransientInfra, 1, 0,
		"503 Service Unavailable: upstream connect error or disconnect/reset before headers (model %s, attempt %d)"},
	ModelCapacityThenOK: {errorcat.ProviderCapacity, 1, 0,
		"529 Overloaded: no GPU capacity available for model %s, try again later (attempt %d)"},
	ModelAlwaysTransient: {errorcat.TransientInfra, 0, 0,
		"502 Bad Gateway: connection reset by peer while calling model %s (attempt %d)"},
	ModelContentPolicy: {errorcat.ContentPolicy, 0, 0,
		"400 Bad Request: content_policy_violation: model %s rejected the prompt or input image (attempt %d)"},
	ModelInputMissing: {errorcat.InputMissing, 0, 0,
		"422 Unprocessable Entity: model %s could not fetch input image: object not found (attempt %d)"},
	ModelProviderAccount: {errorcat.ProviderAccount, 0, 0,
		"402 Payment Required: billing hard limit reached for the account serving model %s (attempt %d)"},
	ModelInternalBug: {errorcat.InternalBug, 0, 0,
		"decode response of model %s: json: cannot unmarshal string into Go struct field response.images of type []sim.image (attempt %d)"},
}

// modelNames lists every sim model in catalog order.
var modelNames = []string{
	ModelOK, ModelRateLimitTwice, ModelTransientOnce, ModelCapacityThenOK, ModelAlwaysTransient,
	ModelContentPolicy, ModelInputMissing, ModelProviderAccount, ModelInternalBug, ModelSlow, ModelVideoOK,
}

// Models returns the catalog IDs (sim/…) of every sim model.
func Models() []string {
	out := make([]string, len(modelNames))
	for i, m := range modelNames {
		out[i] = Name + "/" + m
	}
	return out
}

// Fault returns the failure model injects on the given 1-based attempt (an attempt below 1 counts
// as the first), or nil when that attempt succeeds. An unknown model is an INTERNAL_BUG.
func Fault(model string, attempt int) *providers.Error {
	attempt = max(attempt, 1)
	switch model {
	case ModelOK, ModelSlow, ModelVideoOK:
		return nil
	}
	f, ok := faults[model]
	if !ok {
		return providers.Errorf(errorcat.InternalBug, "sim provider has no model %q", model)
	}
	if f.attempts > 0 && attempt > f.attempts {
		return nil
	}
	e := providers.Errorf(f.category, f.message, Name+"/"+model, attempt)
	e.RetryAfter = f.retryAfter
	return e
}

// Delay returns the delay of sim/slow set by a "sim-delay=<duration>" token in the session
// suggestions (tokens are separated by spaces, commas or semicolons), or DefaultDelay when there is
// none or it is not a valid non-negative Go duration.
func Delay(suggestions string) time.Duration {
	if d, err := time.ParseDuration(option(suggestions, DelayOption)); err == nil && d >= 0 {
		return d
	}
	return DefaultDelay
}

// option returns the value of the first "key=value" token of the suggestions (tokens are
// separated by spaces, commas or semicolons), or "".
func option(suggestions, key string) string {
	for _, tok := range strings.FieldsFunc(suggestions, func(r rune) bool {
		return r == ' ' || r == ',' || r == ';' || r == '\t' || r == '\n' || r == '\r'
	}) {
		k, val, ok := strings.Cut(tok, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), key) {
			return strings.TrimSpace(val)
		}
	}
	return ""
}

// faultModel is the model whose failure pattern an attempt follows: the model itself, or for
// sim/ok and sim/video-ok the model named by a FaultOption token of the session suggestions (for the
// job at the FaultAtOption position only, when that token is present).
func faultModel(model, suggestions string, position int) string {
	if model != ModelOK && model != ModelVideoOK {
		return model
	}
	if at := option(suggestions, FaultAtOption); at != "" && at != strconv.Itoa(position) {
		return model
	}
	if f := option(suggestions, FaultOption); f != "" {
		if _, ok := faults[f]; ok {
			return f
		}
	}
	return model
}

// Serves reports whether a sim model generates jobs of jobType: sim/video-ok makes videos and
// reels, every other sim model makes every kind of image.
func (Provider) Serves(model, jobType string) bool {
	if !slices.Contains(modelNames, model) {
		return false
	}
	video := jobType == jobtype.Video || jobType == jobtype.Reel
	return video == (model == ModelVideoOK) && slices.Contains(jobtype.All, jobType)
}

// Provider is the simulated provider. The zero value is ready to use.
type Provider struct {
	// Local renders the success path. The worker passes its local provider, so that both share one
	// cache of matted inputs; the zero value renders without a cache.
	Local local.Provider
}

// Generate runs one attempt of a sim model: it fails as the model's pattern says for req.Attempt,
// or renders the first input like the local provider does.
func (p Provider) Generate(ctx context.Context, req providers.Request) ([]providers.Output, error) {
	if err := ctx.Err(); err != nil {
		return nil, providers.Errorf(errorcat.TransientInfra, "cancelled before calling model %s/%s: %v", Name, req.Model, err)
	}
	if f := Fault(faultModel(req.Model, req.Session.Suggestions, req.Position), req.Attempt); f != nil {
		return nil, f
	}
	if req.Model == ModelSlow {
		if err := wait(ctx, Delay(req.Session.Suggestions)); err != nil {
			return nil, err
		}
	}
	return p.Local.Generate(ctx, req)
}

// wait sleeps d, heartbeating every HeartbeatInterval when ctx is an activity's, and fails with
// TRANSIENT_INFRA as soon as ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	start := time.Now()
	timer := time.NewTimer(d)
	defer timer.Stop()
	var beat <-chan time.Time
	if activity.IsActivity(ctx) {
		ticker := time.NewTicker(HeartbeatInterval)
		defer ticker.Stop()
		beat = ticker.C
	}
	for {
		select {
		case <-ctx.Done():
			return providers.Errorf(errorcat.TransientInfra, "504 Gateway Timeout: request to model %s/%s abandoned after %s of %s: %v",
				Name, ModelSlow, time.Since(start).Round(time.Millisecond), d, ctx.Err())
		case <-timer.C:
			return nil
		case <-beat:
			providers.Heartbeat(ctx)
		}
	}
}
