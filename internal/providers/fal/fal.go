// Package fal is the "fal" generation provider: it runs models hosted on fal.ai through fal's Queue
// API (https://docs.fal.ai/model-endpoints/queue, https://fal.ai/docs/api-reference/inference-api).
//
// An attempt submits the model input to https://queue.fal.run/{endpoint_id}, polls the status_url
// the submit answer returns until the request is COMPLETED, reads the model output from its
// response_url and downloads the files the output links to. Input images travel inside the request
// as base64 data URIs, which the model pages accept for image_url, so the service never exposes its
// files. Every failure is classified into an errorcat category (see errors.go).
package fal

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
)

// Name is the provider name of the catalog models fal/….
const Name = "fal"

// Defaults of Config.
const (
	DefaultQueueURL     = "https://queue.fal.run"
	DefaultTimeout      = 60 * time.Second // per HTTP request, not per attempt
	DefaultPollInterval = 2 * time.Second
)

// DefaultRetryAfter is the RetryAfter of a RATE_LIMIT failure whose answer carries no Retry-After.
const DefaultRetryAfter = 10 * time.Second

// Config configures the provider.
type Config struct {
	APIKey       string        // sent as "Authorization: Key <APIKey>"
	QueueURL     string        // default DefaultQueueURL
	HTTPClient   *http.Client  // default a client with DefaultTimeout
	PollInterval time.Duration // between status polls; default DefaultPollInterval
}

// Provider generates with fal-hosted models. Build it with New.
type Provider struct {
	key    string
	queue  string
	client *http.Client
	poll   time.Duration
}

// New returns a provider for cfg, filling in the defaults.
func New(cfg Config) *Provider {
	p := &Provider{
		key:    cfg.APIKey,
		queue:  strings.TrimRight(cfg.QueueURL, "/"),
		client: cfg.HTTPClient,
		poll:   cfg.PollInterval,
	}
	if p.queue == "" {
		p.queue = DefaultQueueURL
	}
	if p.client == nil {
		p.client = &http.Client{Timeout: DefaultTimeout}
	}
	if p.poll <= 0 {
		p.poll = DefaultPollInterval
	}
	return p
}

// Serves reports whether the fal model (the part after "fal/") generates jobs of jobType.
func (p *Provider) Serves(model, jobType string) bool {
	ep, ok := endpoints[model]
	return ok && slices.Contains(ep.jobTypes, jobType)
}

// Generate runs one attempt: it submits the request to the model's fal endpoint, waits for it
// (heartbeating on every poll when ctx belongs to an activity) and downloads the outputs. When ctx
// ends before the request completes, the request is cancelled on fal and Generate fails with
// TRANSIENT_INFRA. Every error is a *providers.Error whose message never holds the API key.
func (p *Provider) Generate(ctx context.Context, req providers.Request) ([]providers.Output, error) {
	outs, err := p.generate(ctx, req)
	if err != nil {
		return nil, providers.Redact(err, p.key)
	}
	return outs, nil
}

func (p *Provider) generate(ctx context.Context, req providers.Request) ([]providers.Output, error) {
	ep, ok := endpoints[req.Model]
	if !ok || !slices.Contains(ep.jobTypes, req.JobType) {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: model %q does not generate %s jobs", Name, req.Model, req.JobType)
	}
	input, err := ep.request(req)
	if err != nil {
		return nil, err
	}
	if p.key == "" {
		return nil, providers.Errorf(errorcat.ProviderAccount, "%s: no API key is configured", Name)
	}
	q, err := p.submit(ctx, ep.id, input)
	if err != nil {
		return nil, err
	}
	if err := p.wait(ctx, q); err != nil {
		return nil, err
	}
	body, err := p.result(ctx, q)
	if err != nil {
		return nil, err
	}
	if ep.video {
		return p.videoOutputs(ctx, q, body)
	}
	return p.imageOutputs(ctx, q, body)
}
