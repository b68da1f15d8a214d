// Package openai is the "openai" generation provider: it runs OpenAI's GPT Image model gpt-image-1
// through the Images API (https://platform.openai.com/docs/api-reference/images, guide:
// https://platform.openai.com/docs/guides/image-generation).
//
// Packshots and photo shoots edit the input images: one multipart/form-data POST to /images/edits
// ("Create image edit") with the images as image[] file parts. Model and scenery ideas are drawn
// from text: one JSON POST to /images/generations ("Create image"). Both answer synchronously with
// the image base64-encoded in data[].b64_json, which GPT image models always return. Every failure
// is classified into an errorcat category (see errors.go).
package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png" // decodes the PNG outputs
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/jobtype"
)

// Name is the provider name of the catalog models openai/….
const Name = "openai"

// Defaults of Config.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultTimeout bounds one HTTP request: the image generation guide (Limitations) warns that
	// complex prompts may take up to 2 minutes.
	DefaultTimeout = 5 * time.Minute
	DefaultQuality = "medium" // one of low, medium, high, auto ("Size and quality options")
)

// Model is the only model the provider runs, the part after "openai/" of its catalog ID.
const Model = "gpt-image-1"

// jobTypes are the job types Model generates.
var jobTypes = []string{jobtype.PhotoShoot, jobtype.Packshot, jobtype.ModelIdea, jobtype.SceneryIdea}

// sizes maps the catalog aspect ratios to the output sizes gpt-image-1 renders: 1024x1024 (square),
// 1536x1024 (landscape) and 1024x1536 (portrait), per "Size and quality options".
var sizes = map[string]string{"1:1": "1024x1024", "3:2": "1536x1024", "2:3": "1024x1536"}

// defaultAspectRatio is the catalog's default aspect ratio, used when a request names none.
const defaultAspectRatio = "1:1"

// maxResponseBytes caps an answer: a base64 image of providers.MaxDownloadBytes plus its JSON.
const maxResponseBytes = providers.MaxDownloadBytes/3*4 + 1<<20

// Config configures the provider.
type Config struct {
	APIKey       string       // sent as "Authorization: Bearer <APIKey>"
	BaseURL      string       // default DefaultBaseURL
	Organization string       // optional OpenAI-Organization header
	Project      string       // optional OpenAI-Project header
	HTTPClient   *http.Client // default a client with DefaultTimeout
	Quality      string       // the quality parameter; default DefaultQuality
}

// Provider generates images with gpt-image-1. Build it with New.
type Provider struct {
	key, baseURL, organization, project, quality string
	client                                       *http.Client
}

// New returns a provider for cfg, filling in the defaults.
func New(cfg Config) *Provider {
	p := &Provider{
		key:          cfg.APIKey,
		baseURL:      strings.TrimRight(cfg.BaseURL, "/"),
		organization: cfg.Organization,
		project:      cfg.Project,
		quality:      cfg.Quality,
		client:       cfg.HTTPClient,
	}
	if p.baseURL == "" {
		p.baseURL = DefaultBaseURL
	}
	if p.quality == "" {
		p.quality = DefaultQuality
	}
	if p.client == nil {
		p.client = &http.Client{Timeout: DefaultTimeout}
	}
	return p
}

// Serves reports whether the OpenAI model (the part after "openai/") generates jobs of jobType.
func (p *Provider) Serves(model, jobType string) bool {
	return model == Model && slices.Contains(jobTypes, jobType)
}

// Generate runs one attempt as one synchronous call of the Images API and respects ctx: when ctx
// ends first the call is abandoned with TRANSIENT_INFRA. Requests that cannot be served fail
// before calling OpenAI. Every error is a *providers.Error whose message never holds the API key.
func (p *Provider) Generate(ctx context.Context, req providers.Request) ([]providers.Output, error) {
	outs, err := p.generate(ctx, req)
	if err != nil {
		return nil, providers.Redact(err, p.key)
	}
	return outs, nil
}

func (p *Provider) generate(ctx context.Context, req providers.Request) ([]providers.Output, error) {
	if !p.Serves(req.Model, req.JobType) {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: model %q does not generate %s jobs", Name, req.Model, req.JobType)
	}
	size, err := sizeFor(req.AspectRatio)
	if err != nil {
		return nil, err
	}
	c, err := build(req, params{
		Model: req.Model, Prompt: prompt(req), N: 1, Size: size, Quality: p.quality,
		OutputFormat: "png", Background: "opaque",
	})
	if err != nil {
		return nil, err
	}
	if p.key == "" {
		return nil, providers.Errorf(errorcat.ProviderAccount, "%s: no API key is configured", Name)
	}
	a, err := p.do(ctx, c)
	if err != nil {
		return nil, err
	}
	return outputs(c, a)
}

// sizeFor returns the size parameter of a catalog aspect ratio ("" is the catalog's default). A
// ratio gpt-image-1 cannot render is INTERNAL_BUG: the catalog never offers it for this model.
func sizeFor(aspectRatio string) (string, error) {
	if aspectRatio == "" {
		aspectRatio = defaultAspectRatio
	}
	size, ok := sizes[aspectRatio]
	if !ok {
		return "", providers.Errorf(errorcat.InternalBug, "%s: %s cannot render aspect ratio %q", Name, Model, aspectRatio)
	}
	return size, nil
}

// params are the request parameters both endpoints share (images/create and images/createEdit).
// background is opaque: the outputs are photos, and "auto" may choose a transparent background for
// a cut-out product ("Transparency").
type params struct {
	Model        string `json:"model"`
	Prompt       string `json:"prompt"`
	N            int    `json:"n"`
	Size         string `json:"size"`
	Quality      string `json:"quality"`
	OutputFormat string `json:"output_format"`
	Background   string `json:"background"`
}

// call is a built request: its endpoint path, body and content type.
type call struct {
	path        string
	contentType string
	body        []byte
}

// build encodes the request of the job type: an edit of the input images for packshots and photo
// shoots, a generation from text for ideas.
func build(req providers.Request, ps params) (call, error) {
	switch req.JobType {
	case jobtype.Packshot, jobtype.PhotoShoot:
		files, err := editImages(req)
		if err != nil {
			return call{}, err
		}
		return editCall(ps, files)
	}
	body, err := json.Marshal(ps)
	if err != nil {
		return call{}, providers.Errorf(errorcat.InternalBug, "%s: encoding request: %v", Name, err)
	}
	return call{path: "/images/generations", contentType: "application/json", body: body}, nil
}

// answer is an HTTP answer of the API.
type answer struct {
	status    int
	header    http.Header
	body      []byte
	requestID string // x-request-id ("Debugging requests")
}

// do sends the call and reads its answer; a non-2xx answer is classified into a *providers.Error.
func (p *Provider) do(ctx context.Context, c call) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL+c.path, bytes.NewReader(c.body))
	if err != nil {
		return answer{}, providers.Errorf(errorcat.InternalBug, "%s: building request: %v", Name, err)
	}
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Content-Type", c.contentType)
	req.Header.Set("Accept", "application/json")
	if p.organization != "" {
		req.Header.Set("OpenAI-Organization", p.organization)
	}
	if p.project != "" {
		req.Header.Set("OpenAI-Project", p.project)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return answer{}, providers.TransportError(Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return answer{}, providers.TransportError(Name, err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: body, requestID: resp.Header.Get("X-Request-Id")}
	if a.status < 200 || a.status > 299 {
		return answer{}, classify(c.path, a)
	}
	if len(body) > maxResponseBytes {
		return answer{}, providers.Errorf(errorcat.InternalBug, "%s: POST %s%s: answer is larger than %d bytes", Name, c.path, a.ref(), maxResponseBytes)
	}
	return a, nil
}

// ref names the request in messages, " (request <x-request-id>)", or "" when the answer had none.
func (a answer) ref() string {
	if a.requestID == "" {
		return ""
	}
	return " (request " + a.requestID + ")"
}

// imagesResponse is the part of the image generation response object ("The image generation
// response") the provider reads: data[].b64_json, the base64-encoded image.
type imagesResponse struct {
	Data []struct {
		B64JSON string `json:"b64_json"`
	} `json:"data"`
}

// outputs decodes the images of a successful answer. An answer that is not the documented JSON,
// holds no image or holds one that is not a PNG is INTERNAL_BUG.
func outputs(c call, a answer) ([]providers.Output, error) {
	var r imagesResponse
	if err := json.Unmarshal(a.body, &r); err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: POST %s%s: decoding answer: %v", Name, c.path, a.ref(), err)
	}
	var outs []providers.Output
	for i, d := range r.Data {
		if d.B64JSON == "" {
			continue
		}
		out, err := decodeImage(d.B64JSON)
		if err != nil {
			return nil, providers.Errorf(errorcat.InternalBug, "%s: POST %s%s: data[%d]: %v", Name, c.path, a.ref(), i, err)
		}
		outs = append(outs, out)
	}
	if len(outs) == 0 {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: POST %s%s: answer holds no image", Name, c.path, a.ref())
	}
	return outs, nil
}

// decodeImage decodes one b64_json image, which output_format png makes a PNG.
func decodeImage(b64 string) (providers.Output, error) {
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return providers.Output{}, err
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return providers.Output{}, err
	}
	if format != "png" {
		return providers.Output{}, fmt.Errorf("image is %s, not the png requested", format)
	}
	return providers.Output{Data: data, ContentType: "image/png", Ext: providers.ExtFor("image/png"), Width: cfg.Width, Height: cfg.Height}, nil
}
