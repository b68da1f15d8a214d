package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
)

const (
	testKey   = "sk-proj-test-3f9a1c7e5b2d4f60a8e9"
	requestID = "req_5f1c2a9e0b7d4c3e8a6f9b2d1e0c7a4b"
)

// reply is a canned HTTP answer of the fake API.
type reply struct {
	status int
	header map[string]string
	body   string
}

// file is an image[] part the fake API received.
type file struct {
	filename    string
	contentType string
	data        []byte
}

// received is what the fake API saw of one request.
type received struct {
	method, path, auth, organization, project, mediaType string
	fields                                               map[string]string // multipart fields
	files                                                []file            // multipart image[] parts in order
	json                                                 map[string]any    // JSON body
}

// fakeAPI imitates api.openai.com/v1 for POST /images/edits and /images/generations: it records
// every request and answers with reply, by default a success holding the image out.
type fakeAPI struct {
	t     *testing.T
	srv   *httptest.Server
	out   []byte // the PNG of the default success answer
	mu    sync.Mutex
	reply *reply
	calls []received
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, out: testimage.GradientPNG(t, 12, 8)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) provider() *Provider {
	return New(Config{APIKey: testKey, BaseURL: f.srv.URL + "/v1", Organization: "org-shotflow", Project: "proj_images"})
}

func (f *fakeAPI) handle(w http.ResponseWriter, r *http.Request) {
	rec := received{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"),
		organization: r.Header.Get("OpenAI-Organization"), project: r.Header.Get("OpenAI-Project")}
	rec.mediaType, _, _ = mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch rec.mediaType {
	case "multipart/form-data":
		f.readForm(r, &rec)
	case "application/json":
		if err := json.NewDecoder(r.Body).Decode(&rec.json); err != nil {
			f.t.Errorf("JSON body: %v", err)
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, rec)
	rp := f.reply
	f.mu.Unlock()
	if rp == nil {
		rp = &reply{status: 200, body: successBody(f.out)}
	}
	rp.write(w)
}

func (f *fakeAPI) readForm(r *http.Request, rec *received) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		f.t.Errorf("multipart body: %v", err)
		return
	}
	rec.fields = map[string]string{}
	for k, v := range r.MultipartForm.Value {
		rec.fields[k] = strings.Join(v, ",")
	}
	for _, fh := range r.MultipartForm.File["image[]"] {
		fd, err := fh.Open()
		if err != nil {
			f.t.Error(err)
			return
		}
		data, _ := io.ReadAll(fd)
		_ = fd.Close()
		rec.files = append(rec.files, file{filename: fh.Filename, contentType: fh.Header.Get("Content-Type"), data: data})
	}
	if len(r.MultipartForm.File) != 1 {
		f.t.Errorf("file fields %v, want only image[]", r.MultipartForm.File)
	}
}

func (f *fakeAPI) received() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.calls...)
}

func (r reply) write(w http.ResponseWriter) {
	if _, ok := r.header["Content-Type"]; !ok {
		w.Header().Set("Content-Type", "application/json")
	}
	if _, ok := r.header["X-Request-Id"]; !ok {
		w.Header().Set("X-Request-Id", requestID)
	}
	for k, v := range r.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(r.status)
	_, _ = io.WriteString(w, r.body)
}

// successBody is the image generation response object of the API reference, with usage.
func successBody(img []byte) string {
	return `{"created": 1713833628, "background": "opaque", "output_format": "png", "quality": "medium",
		"size": "1024x1024", "data": [{"b64_json": "` + base64.StdEncoding.EncodeToString(img) + `"}],
		"usage": {"total_tokens": 100, "input_tokens": 50, "output_tokens": 50,
		"input_tokens_details": {"text_tokens": 10, "image_tokens": 40}}}`
}

func editRequest(t *testing.T, jobType string) providers.Request {
	return providers.Request{
		JobID: "job-1", JobType: jobType, Model: Model, Attempt: 1, AspectRatio: "3:2",
		Session: providers.SessionConfig{Style: "warm minimalist kitchen", Suggestions: "morning light, marble counter"},
		Inputs:  []providers.Input{{Data: testimage.GradientPNG(t, 10, 10), ContentType: "image/png"}},
	}
}

func ideaRequest(jobType string) providers.Request {
	return providers.Request{JobID: "job-2", JobType: jobType, Model: Model, Attempt: 1, AspectRatio: "2:3",
		Prompt: "tall, curly red hair, linen summer clothes"}
}

// category returns err as a *providers.Error and checks its message never holds the API key.
func category(t *testing.T, err error) *providers.Error {
	t.Helper()
	var ge *providers.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v (%T) is not a *providers.Error", err, err)
	}
	if strings.Contains(ge.Message, testKey) {
		t.Errorf("message holds the API key: %s", ge.Message)
	}
	return ge
}

// checkOutput checks the one output is the fake API's PNG with its size.
func checkOutput(t *testing.T, f *fakeAPI, outs []providers.Output) {
	t.Helper()
	if len(outs) != 1 {
		t.Fatalf("%d outputs, want 1", len(outs))
	}
	o := outs[0]
	if !bytes.Equal(o.Data, f.out) || o.ContentType != "image/png" || o.Ext != ".png" || o.Width != 12 || o.Height != 8 {
		t.Errorf("output %s %s %dx%d (%d bytes), want the 12x8 PNG", o.ContentType, o.Ext, o.Width, o.Height, len(o.Data))
	}
}

// checkHeaders checks the call's method, authentication and optional headers.
func checkHeaders(t *testing.T, c received, path string) {
	t.Helper()
	if c.method != http.MethodPost || c.path != path {
		t.Errorf("%s %s, want POST %s", c.method, c.path, path)
	}
	if c.auth != "Bearer "+testKey || c.organization != "org-shotflow" || c.project != "proj_images" {
		t.Errorf("Authorization %q, OpenAI-Organization %q, OpenAI-Project %q", c.auth, c.organization, c.project)
	}
}

// TestGenerateEdits: packshots and photo shoots POST the input images to /images/edits.
func TestGenerateEdits(t *testing.T) {
	scenery := testimage.GradientJPEG(t, 6, 4)
	withScenery := editRequest(t, jobtype.PhotoShoot)
	withScenery.Scenery = &providers.Input{Data: scenery, ContentType: "image/jpg"}
	undeclared := editRequest(t, jobtype.Packshot)
	undeclared.Inputs[0].ContentType = "application/octet-stream"
	tests := []struct {
		name      string
		req       providers.Request
		filenames []string
		types     []string
		phrases   []string
	}{
		{"packshot", editRequest(t, jobtype.Packshot), []string{"product.png"}, []string{"image/png"},
			[]string{"pure white", "seamless background", "centred", "contact shadow", "No props", "exactly", "marble counter"}},
		{"photo shoot", editRequest(t, jobtype.PhotoShoot), []string{"packshot.png"}, []string{"image/png"},
			[]string{"exact product", "photorealistic e-commerce lifestyle photo", "warm minimalist kitchen", "morning light"}},
		{"photo shoot with scenery", withScenery, []string{"packshot.png", "scenery.jpg"}, []string{"image/png", "image/jpeg"},
			[]string{"second image as the scene", "warm minimalist kitchen"}},
		{"content type sniffed", undeclared, []string{"product.png"}, []string{"image/png"}, []string{"pure white"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			outs, err := f.provider().Generate(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			checkOutput(t, f, outs)
			calls := f.received()
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1", len(calls))
			}
			c := calls[0]
			checkHeaders(t, c, "/v1/images/edits")
			if c.mediaType != "multipart/form-data" {
				t.Errorf("Content-Type %s", c.mediaType)
			}
			want := map[string]string{"model": "gpt-image-1", "n": "1", "size": "1536x1024", "quality": "medium",
				"output_format": "png", "background": "opaque"}
			for k, v := range want {
				if c.fields[k] != v {
					t.Errorf("field %s = %q, want %q", k, c.fields[k], v)
				}
			}
			for _, p := range tt.phrases {
				if !strings.Contains(c.fields["prompt"], p) {
					t.Errorf("prompt %q lacks %q", c.fields["prompt"], p)
				}
			}
			if len(c.files) != len(tt.filenames) {
				t.Fatalf("%d image[] parts, want %d", len(c.files), len(tt.filenames))
			}
			inputs := [][]byte{tt.req.Inputs[0].Data, scenery}
			for i, fl := range c.files {
				if fl.filename != tt.filenames[i] || fl.contentType != tt.types[i] || !bytes.Equal(fl.data, inputs[i]) {
					t.Errorf("part %d: %s %s (%d bytes), want %s %s", i, fl.filename, fl.contentType, len(fl.data), tt.filenames[i], tt.types[i])
				}
			}
		})
	}
}

// TestGenerateIdeas: model and scenery ideas POST JSON to /images/generations.
func TestGenerateIdeas(t *testing.T) {
	tests := map[string][]string{
		jobtype.ModelIdea:   {"full-body", "fashion model", "neutral studio background", "Preferences: tall, curly red hair"},
		jobtype.SceneryIdea: {"empty product photography set", "no people and no products", "Preferences: tall, curly red hair"},
	}
	for jobType, phrases := range tests {
		t.Run(jobType, func(t *testing.T) {
			f := newFakeAPI(t)
			outs, err := f.provider().Generate(context.Background(), ideaRequest(jobType))
			if err != nil {
				t.Fatal(err)
			}
			checkOutput(t, f, outs)
			calls := f.received()
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1", len(calls))
			}
			c := calls[0]
			checkHeaders(t, c, "/v1/images/generations")
			if c.mediaType != "application/json" {
				t.Errorf("Content-Type %s", c.mediaType)
			}
			want := map[string]any{"model": "gpt-image-1", "n": 1.0, "size": "1024x1536", "quality": "medium",
				"output_format": "png", "background": "opaque"}
			for k, v := range want {
				if c.json[k] != v {
					t.Errorf("%s = %v, want %v", k, c.json[k], v)
				}
			}
			prompt, _ := c.json["prompt"].(string)
			for _, p := range phrases {
				if !strings.Contains(prompt, p) {
					t.Errorf("prompt %q lacks %q", prompt, p)
				}
			}
		})
	}
}

// TestSizes: each catalog aspect ratio maps to a gpt-image-1 size; none means the catalog default.
func TestSizes(t *testing.T) {
	for ratio, size := range map[string]string{"1:1": "1024x1024", "3:2": "1536x1024", "2:3": "1024x1536", "": "1024x1024"} {
		f := newFakeAPI(t)
		req := ideaRequest(jobtype.SceneryIdea)
		req.AspectRatio = ratio
		if _, err := f.provider().Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if got := f.received()[0].json["size"]; got != size {
			t.Errorf("aspect ratio %q: size %v, want %s", ratio, got, size)
		}
	}
}

// TestConfig: New fills in the defaults, and a configured quality is sent.
func TestConfig(t *testing.T) {
	p := New(Config{APIKey: testKey})
	if p.baseURL != DefaultBaseURL || p.quality != DefaultQuality || p.client.Timeout != DefaultTimeout {
		t.Errorf("defaults: %s, %s, %s", p.baseURL, p.quality, p.client.Timeout)
	}
	f := newFakeAPI(t)
	p = New(Config{APIKey: testKey, BaseURL: f.srv.URL + "/v1/", Quality: "high"})
	if _, err := p.Generate(context.Background(), ideaRequest(jobtype.ModelIdea)); err != nil {
		t.Fatal(err)
	}
	c := f.received()[0]
	if c.path != "/v1/images/generations" || c.json["quality"] != "high" || c.organization != "" || c.project != "" {
		t.Errorf("%s quality %v, OpenAI-Organization %q, OpenAI-Project %q", c.path, c.json["quality"], c.organization, c.project)
	}
}

// TestFailureClassification: every documented error answer maps to its category.
func TestFailureClassification(t *testing.T) {
	apiError := func(message, typ, param, code string) string {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nullable(param), "code": nullable(code)}})
		return string(b)
	}
	rateLimited := apiError("Rate limit reached for gpt-image-1 in organization org-shotflow on images per minute (IPM): Limit 5, Used 5, Requested 1.",
		"requests", "", "rate_limit_exceeded")
	quota := apiError("You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "", "insufficient_quota")
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		want       errorcat.Category
		retryAfter time.Duration
		detail     string // expected in the message besides status and request ID
	}{
		{"429 rate limit with retry-after-ms", 429, map[string]string{"Retry-After-Ms": "1500", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "12s"},
			rateLimited, errorcat.RateLimit, 1500 * time.Millisecond, "remaining-requests=0 reset-requests=12s"},
		{"429 rate limit with retry-after", 429, map[string]string{"Retry-After": "7"}, rateLimited, errorcat.RateLimit, 7 * time.Second, "requests/rate_limit_exceeded"},
		{"429 rate limit without header", 429, nil, rateLimited, errorcat.RateLimit, DefaultRetryAfter, "images per minute"},
		{"429 slow down", 429, nil, apiError("Slow down: your request rate increased too quickly.", "rate_limit_error", "", "slow_down"),
			errorcat.RateLimit, DefaultRetryAfter, "slow_down"},
		{"429 insufficient quota", 429, map[string]string{"Retry-After": "7"}, quota, errorcat.ProviderAccount, 0, "insufficient_quota"},
		{"429 credit balance exhausted", 429, nil, apiError("Your credit balance is exhausted.", "insufficient_quota", "", "credit_balance_exhausted"),
			errorcat.ProviderAccount, 0, "credit_balance_exhausted"},
		{"400 billing hard limit", 400, nil, apiError("Billing hard limit has been reached", "invalid_request_error", "", "billing_hard_limit_reached"),
			errorcat.ProviderAccount, 0, "billing_hard_limit_reached"},
		{"401 invalid API key echoing the key", 401, nil, apiError("Incorrect API key provided: "+testKey+". You can find your API key at https://platform.openai.com/account/api-keys.",
			"invalid_request_error", "", "invalid_api_key"), errorcat.ProviderAccount, 0, "Incorrect API key provided: [redacted]"},
		{"401 organization mismatch", 401, nil, apiError("OpenAI-Organization header should match organization for API key", "invalid_request_error", "", "mismatched_organization"),
			errorcat.ProviderAccount, 0, "mismatched_organization"},
		{"401 project mismatch", 401, nil, apiError("OpenAI-Project header should match project for API key", "invalid_request_error", "", ""),
			errorcat.ProviderAccount, 0, "OpenAI-Project header"},
		{"403 unsupported region", 403, nil, apiError("Country, region, or territory not supported", "request_forbidden", "", "unsupported_country_region_territory"),
			errorcat.ProviderAccount, 0, "unsupported_country_region_territory"},
		{"403 organization not verified", 403, nil, apiError("Your organization must be verified to use the model `gpt-image-1`.", "invalid_request_error", "", ""),
			errorcat.ProviderAccount, 0, "must be verified"},
		{"402 payment required", 402, nil, apiError("Payment required", "invalid_request_error", "", ""), errorcat.ProviderAccount, 0, "Payment Required"},
		{"400 moderation blocked", 400, nil, apiError("Your request was rejected by the safety system. If you believe this is an error, contact us at help.openai.com and include the request ID "+requestID+".",
			"image_generation_user_error", "", "moderation_blocked"), errorcat.ContentPolicy, 0, "image_generation_user_error/moderation_blocked"},
		{"400 content policy violation", 400, nil, apiError("Your request was rejected as a result of our safety system.", "invalid_request_error", "", "content_policy_violation"),
			errorcat.ContentPolicy, 0, "content_policy_violation"},
		{"400 user error mentioning safety", 400, nil, apiError("Your request was rejected by the safety system.", "image_generation_user_error", "", ""),
			errorcat.ContentPolicy, 0, "safety system"},
		{"400 invalid image file", 400, nil, apiError("Invalid image file or mode for image 1, please check your image file.", "image_generation_user_error", "", "invalid_image_file"),
			errorcat.InputMissing, 0, "invalid_image_file"},
		{"400 invalid image", 400, nil, apiError("The image could not be read.", "invalid_request_error", "", "invalid_image"), errorcat.InputMissing, 0, "invalid_image"},
		{"400 invalid image format", 400, nil, apiError("Image format not supported.", "invalid_request_error", "", "invalid_image_format"),
			errorcat.InputMissing, 0, "invalid_image_format"},
		{"400 image too large", 400, nil, apiError("Image is larger than 50MB.", "invalid_request_error", "image", "image_too_large"),
			errorcat.InputMissing, 0, "param=image"},
		{"400 param image", 400, nil, apiError("Invalid file 'image': unsupported mimetype ('application/octet-stream').", "invalid_request_error", "image", "invalid_value"),
			errorcat.InputMissing, 0, "unsupported mimetype"},
		{"400 invalid size", 400, nil, apiError("Invalid value: '1792x1024'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.",
			"invalid_request_error", "size", "invalid_value"), errorcat.InternalBug, 0, "param=size"},
		{"404 model not found", 404, nil, apiError("The model `gpt-image-1` does not exist or you do not have access to it.", "invalid_request_error", "", "model_not_found"),
			errorcat.InternalBug, 0, "model_not_found"},
		{"422 unprocessable", 422, nil, apiError("Unprocessable request", "invalid_request_error", "", ""), errorcat.InternalBug, 0, "Unprocessable Entity"},
		{"408 request timeout", 408, nil, apiError("Request timed out.", "server_error", "", ""), errorcat.TransientInfra, 0, "Request Timeout"},
		{"409 with x-should-retry", 409, map[string]string{"X-Should-Retry": "true"}, apiError("Conflict", "invalid_request_error", "", ""), errorcat.TransientInfra, 0, "Conflict"},
		{"500 server error", 500, map[string]string{"Retry-After": "2"}, apiError("The server had an error while processing your request. Sorry about that!", "server_error", "", ""),
			errorcat.TransientInfra, 2 * time.Second, "server_error"},
		{"502 HTML page", 502, map[string]string{"Content-Type": "text/html"}, "<html><body>502 Bad Gateway</body></html>", errorcat.TransientInfra, 0, "<html>"},
		{"503 engine overloaded", 503, map[string]string{"Retry-After": "3"}, apiError("The engine is currently overloaded, please try again later.", "server_error", "", ""),
			errorcat.ProviderCapacity, 3 * time.Second, "overloaded"},
		{"503 slow down", 503, nil, apiError("Slow Down", "server_error", "", "slow_down"), errorcat.ProviderCapacity, 0, "slow_down"},
		{"529 overloaded", 529, nil, "overloaded", errorcat.ProviderCapacity, 0, "overloaded"},
		{"500 server overloaded", 500, nil, apiError("The server is overloaded or not ready yet.", "server_error", "", "server_is_overloaded"),
			errorcat.ProviderCapacity, 0, "server_is_overloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.reply = &reply{status: tt.status, header: tt.header, body: tt.body}
			_, err := f.provider().Generate(context.Background(), editRequest(t, jobtype.Packshot))
			ge := category(t, err)
			if ge.Category != tt.want || ge.RetryAfter != tt.retryAfter {
				t.Errorf("%s RetryAfter %s, want %s RetryAfter %s: %s", ge.Category, ge.RetryAfter, tt.want, tt.retryAfter, ge.Message)
			}
			for _, s := range []string{"POST /images/edits", "HTTP " + strconv.Itoa(tt.status), requestID, tt.detail} {
				if !strings.Contains(ge.Message, s) {
					t.Errorf("message %q lacks %q", ge.Message, s)
				}
			}
		})
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestBadSuccessAnswers: a 200 without a decodable PNG is INTERNAL_BUG.
func TestBadSuccessAnswers(t *testing.T) {
	b64 := func(data []byte) string {
		return `{"data": [{"b64_json": "` + base64.StdEncoding.EncodeToString(data) + `"}]}`
	}
	tests := map[string]string{
		"not JSON":      "<html>upstream says hello</html>",
		"no data":       `{"created": 1713833628, "data": []}`,
		"empty image":   `{"data": [{"b64_json": ""}]}`,
		"url only":      `{"data": [{"url": "https://example.com/x.png"}]}`,
		"not base64":    `{"data": [{"b64_json": "@@not base64@@"}]}`,
		"not an image":  b64([]byte("definitely not a picture")),
		"not a PNG":     b64(testimage.GradientJPEG(t, 6, 4)),
		"truncated PNG": b64(testimage.GradientPNG(t, 4, 4)[:20]),
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.reply = &reply{status: 200, body: body}
			_, err := f.provider().Generate(context.Background(), ideaRequest(jobtype.ModelIdea))
			if ge := category(t, err); ge.Category != errorcat.InternalBug || !strings.Contains(ge.Message, requestID) {
				t.Errorf("%s: %s, want INTERNAL_BUG naming the request", ge.Category, ge.Message)
			}
		})
	}
}

// stall answers nothing until the client goes away, or for 5 seconds. It reads the body first:
// the server notices a closed connection only once the body is consumed.
func stall(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

// TestTransportFailures: a call that times out or whose connection is reset is TRANSIENT_INFRA.
func TestTransportFailures(t *testing.T) {
	tests := map[string]http.HandlerFunc{
		"timeout": stall,
		"connection reset": func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			if tcp, ok := conn.(*net.TCPConn); ok {
				_ = tcp.SetLinger(0) // close with a RST
			}
			_ = conn.Close()
		},
	}
	for name, handler := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			defer srv.Close()
			p := New(Config{APIKey: testKey, BaseURL: srv.URL, HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}})
			_, err := p.Generate(context.Background(), editRequest(t, jobtype.PhotoShoot))
			if ge := category(t, err); ge.Category != errorcat.TransientInfra || !strings.Contains(ge.Message, "/images/edits") {
				t.Errorf("%s: %s, want TRANSIENT_INFRA", ge.Category, ge.Message)
			}
		})
	}
}

// TestContextEnds: a call abandoned because ctx ends is TRANSIENT_INFRA, and returns at once.
func TestContextEnds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(stall))
	defer srv.Close()
	p := New(Config{APIKey: testKey, BaseURL: srv.URL})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	deadline, stop := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer stop()
	for name, ctx := range map[string]context.Context{"cancelled": cancelled, "deadline": deadline} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := p.Generate(ctx, ideaRequest(jobtype.SceneryIdea))
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("Generate took %s after the context ended", elapsed)
			}
			if ge := category(t, err); ge.Category != errorcat.TransientInfra {
				t.Errorf("%s: %s, want TRANSIENT_INFRA", ge.Category, ge.Message)
			}
		})
	}
}

// TestRejectedBeforeCalling: requests that cannot be served fail without reaching the API.
func TestRejectedBeforeCalling(t *testing.T) {
	noImage := editRequest(t, jobtype.Packshot)
	noImage.Inputs = nil
	emptyImage := editRequest(t, jobtype.PhotoShoot)
	emptyImage.Inputs[0].Data = nil
	emptyScenery := editRequest(t, jobtype.PhotoShoot)
	emptyScenery.Scenery = &providers.Input{ContentType: "image/png"}
	notAnImage := editRequest(t, jobtype.Packshot)
	notAnImage.Inputs[0] = providers.Input{Data: []byte("GIF89a not really"), ContentType: "image/gif"}
	tooLarge := editRequest(t, jobtype.Packshot)
	tooLarge.Inputs[0].Data = append(bytes.Clone(tooLarge.Inputs[0].Data), make([]byte, maxInputBytes)...)
	badRatio := ideaRequest(jobtype.ModelIdea)
	badRatio.AspectRatio = "4:5"
	video := editRequest(t, jobtype.Video)
	unknown := ideaRequest(jobtype.ModelIdea)
	unknown.Model = "dall-e-3"
	tests := []struct {
		name string
		req  providers.Request
		key  string
		want errorcat.Category
	}{
		{"packshot without image", noImage, testKey, errorcat.InputMissing},
		{"photo shoot with empty packshot", emptyImage, testKey, errorcat.InputMissing},
		{"photo shoot with empty scenery", emptyScenery, testKey, errorcat.InputMissing},
		{"input not png, jpeg or webp", notAnImage, testKey, errorcat.InputMissing},
		{"input of 50MB", tooLarge, testKey, errorcat.InputMissing},
		{"unsupported aspect ratio", badRatio, testKey, errorcat.InternalBug},
		{"job type not served", video, testKey, errorcat.InternalBug},
		{"unknown model", unknown, testKey, errorcat.InternalBug},
		{"no API key", ideaRequest(jobtype.ModelIdea), "", errorcat.ProviderAccount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			p := New(Config{APIKey: tt.key, BaseURL: f.srv.URL})
			_, err := p.Generate(context.Background(), tt.req)
			if ge := category(t, err); ge.Category != tt.want {
				t.Errorf("%s, want %s: %s", ge.Category, tt.want, ge.Message)
			}
			if n := len(f.received()); n != 0 {
				t.Errorf("%d calls, want none", n)
			}
		})
	}
}

// TestServesAgreesWithCatalog: every job type and aspect ratio the catalog lists for an openai
// model is served, the provider serves nothing the catalog does not list, and the registry accepts it.
func TestServesAgreesWithCatalog(t *testing.T) {
	catalog, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{APIKey: testKey})
	listed := map[string]bool{}
	for _, m := range catalog.AIModels {
		if m.Provider != Name {
			continue
		}
		name := strings.TrimPrefix(m.ID, Name+"/")
		for _, jt := range m.JobTypes {
			listed[name+" "+jt] = true
			if !p.Serves(name, jt) {
				t.Errorf("catalog model %s lists %s, which the provider does not serve", m.ID, jt)
			}
		}
		for _, ar := range m.SupportedAspectRatios {
			if _, ok := sizes[ar]; !ok {
				t.Errorf("catalog model %s lists aspect ratio %s, which has no size", m.ID, ar)
			}
		}
	}
	for _, jt := range jobtype.All {
		if p.Serves(Model, jt) && !listed[Model+" "+jt] {
			t.Errorf("the provider serves %s %s, which the catalog does not list", Model, jt)
		}
	}
	if p.Serves("dall-e-3", jobtype.Packshot) {
		t.Error("serves a model the catalog does not list")
	}
	if _, err := providers.NewRegistry(catalog, map[string]providers.Provider{Name: p}); err != nil {
		t.Error(err)
	}
}
