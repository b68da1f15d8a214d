package fal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
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
	testKey   = "fal-test-key-3f9a:secret-d41d8cd98f00"
	requestID = "764cabcf-b745-4b3e-ae38-1200304cf45b"
)

// reply is a canned HTTP answer of the fake queue.
type reply struct {
	status int
	header map[string]string
	body   string
}

func (r reply) write(w http.ResponseWriter) {
	if _, ok := r.header["Content-Type"]; !ok {
		w.Header().Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(r.status)
	_, _ = io.WriteString(w, r.body)
}

// submission is what the fake queue received on a submit.
type submission struct {
	path  string
	auth  string
	ctype string
	input map[string]any
}

// fakeQueue imitates queue.fal.run as https://docs.fal.ai/model-endpoints/queue describes it:
// POST /{endpoint_id} answers the request's URLs, which name only the owner and app of the endpoint;
// GET …/status answers 202 while the request is IN_QUEUE or IN_PROGRESS and 200 once COMPLETED;
// GET …/requests/{id} answers the model output; PUT …/cancel answers 202 CANCELLATION_REQUESTED.
// Output files are served under /files/ of the same server.
type fakeQueue struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	statuses []string // answers of the status polls in order; the last one repeats
	submit   *reply   // replaces the submit answer
	status   []*reply // replace the status answers in order (nil entries answer normally)
	result   *reply   // replaces the result answer
	output   string   // the result body; "%s" is the server URL
	files    map[string]reply

	submits []submission
	polls   int
	results int
	cancels int
	polled  chan int // receives the number of every poll, when not nil
}

func newFakeQueue(t *testing.T) *fakeQueue {
	f := &fakeQueue{
		t:        t,
		statuses: []string{statusInQueue, statusInProgress, statusCompleted},
		files: map[string]reply{
			"out.png": {status: 200, header: map[string]string{"Content-Type": "image/png"}, body: string(testimage.GradientPNG(t, 12, 9))},
			"out.mp4": {status: 200, header: map[string]string{"Content-Type": "video/mp4"}, body: mp4Bytes},
		},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{path...}", f.handleSubmit)
	mux.HandleFunc("GET /{owner}/{app}/requests/{id}/status", f.handleStatus)
	mux.HandleFunc("GET /{owner}/{app}/requests/{id}", f.handleResult)
	mux.HandleFunc("PUT /{owner}/{app}/requests/{id}/cancel", f.handleCancel)
	mux.HandleFunc("GET /files/{name}", f.handleFile)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeQueue) provider() *Provider {
	return New(Config{APIKey: testKey, QueueURL: f.srv.URL, PollInterval: 5 * time.Millisecond})
}

// requestURL is the base of the request's URLs: owner and app only, as the queue page says.
func (f *fakeQueue) requestURL(endpointID string) string {
	parts := strings.SplitN(endpointID, "/", 3)
	return f.srv.URL + "/" + parts[0] + "/" + parts[1] + "/requests/" + requestID
}

func (f *fakeQueue) handleSubmit(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var input map[string]any
	if err := json.Unmarshal(body, &input); err != nil {
		f.t.Errorf("submit body is not JSON: %v", err)
	}
	f.mu.Lock()
	f.submits = append(f.submits, submission{path: r.URL.Path, auth: r.Header.Get("Authorization"),
		ctype: r.Header.Get("Content-Type"), input: input})
	override := f.submit
	f.mu.Unlock()
	if override != nil {
		override.write(w)
		return
	}
	base := f.requestURL(strings.TrimPrefix(r.URL.Path, "/"))
	w.Header().Set("X-Fal-Request-Id", requestID)
	reply{status: 200, body: fmt.Sprintf(`{"request_id":%q,"response_url":%q,"status_url":%q,"cancel_url":%q,"queue_position":0}`,
		requestID, base, base+"/status", base+"/cancel")}.write(w)
}

func (f *fakeQueue) handleStatus(w http.ResponseWriter, r *http.Request) {
	f.checkAuth(r)
	f.mu.Lock()
	n := f.polls
	f.polls++
	var override *reply
	if n < len(f.status) {
		override = f.status[n]
	}
	st := f.statuses[min(n, len(f.statuses)-1)]
	polled := f.polled
	f.mu.Unlock()
	if polled != nil {
		defer func() { polled <- n + 1 }()
	}
	if override != nil {
		override.write(w)
		return
	}
	base := f.srv.URL + strings.TrimSuffix(r.URL.Path, "/status")
	switch st {
	case statusInQueue:
		reply{status: 202, body: fmt.Sprintf(`{"status":"IN_QUEUE","queue_position":%d,"response_url":%q}`, 2, base)}.write(w)
	case statusInProgress:
		reply{status: 202, body: fmt.Sprintf(`{"status":"IN_PROGRESS","logs":null,"response_url":%q}`, base)}.write(w)
	default:
		reply{status: 200, body: fmt.Sprintf(`{"status":%q,"logs":null,"metrics":{"inference_time":1.25},"response_url":%q}`, st, base)}.write(w)
	}
}

func (f *fakeQueue) handleResult(w http.ResponseWriter, r *http.Request) {
	f.checkAuth(r)
	f.mu.Lock()
	f.results++
	override, output := f.result, f.output
	f.mu.Unlock()
	if override != nil {
		override.write(w)
		return
	}
	w.Header().Set("X-Fal-Request-Id", requestID)
	reply{status: 200, body: strings.ReplaceAll(output, "%s", f.srv.URL)}.write(w)
}

func (f *fakeQueue) handleCancel(w http.ResponseWriter, r *http.Request) {
	f.checkAuth(r)
	f.mu.Lock()
	f.cancels++
	f.mu.Unlock()
	reply{status: 202, body: `{"status":"CANCELLATION_REQUESTED"}`}.write(w)
}

func (f *fakeQueue) handleFile(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		f.t.Errorf("the API key was sent to the output URL %s", r.URL.Path)
	}
	f.mu.Lock()
	rep, ok := f.files[r.PathValue("name")]
	f.mu.Unlock()
	if !ok {
		rep = reply{status: 404, body: "not found"}
	}
	rep.write(w)
}

func (f *fakeQueue) checkAuth(r *http.Request) {
	if got := r.Header.Get("Authorization"); got != "Key "+testKey {
		f.t.Errorf("%s %s: Authorization = %q", r.Method, r.URL.Path, got)
	}
}

func (f *fakeQueue) counts() (submits, polls, results, cancels int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.submits), f.polls, f.results, f.cancels
}

// mp4Bytes starts like an MP4 file (an ftyp box).
const mp4Bytes = "\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom\x00\x00\x00\x08free"

// imageOutput is a FLUX result in the documented shape, with one unflagged image.
const imageOutput = `{"images":[{"url":"%s/files/out.png","width":1024,"height":768,"content_type":"image/png"}],` +
	`"timings":{"inference":2.1},"seed":42,"has_nsfw_concepts":[false],"prompt":"p"}`

// videoOutput is a Kling result in the documented shape.
const videoOutput = `{"video":{"url":"%s/files/out.mp4","content_type":"video/mp4","file_name":"output.mp4","file_size":36}}`

func photoRequest(t *testing.T, jobType string) providers.Request {
	return providers.Request{
		JobID: "job-1", JobType: jobType, Model: "flux-pro-kontext", Attempt: 1, AspectRatio: "3:2", Seed: 1234567,
		Session: providers.SessionConfig{Style: "sunlit marble kitchen", Suggestions: "morning light, fresh lemons."},
		Inputs:  []providers.Input{{Data: testimage.GradientPNG(t, 4, 4), ContentType: "image/png"}},
	}
}

func ideaRequest(jobType string) providers.Request {
	return providers.Request{JobID: "job-2", JobType: jobType, Model: "flux-dev", AspectRatio: "9:16", Seed: -5,
		Prompt: "scandinavian living room, oak table"}
}

func videoRequest(t *testing.T) providers.Request {
	return providers.Request{JobID: "job-3", JobType: jobtype.Video, Model: "kling-video-v2.1", AspectRatio: "9:16",
		Prompt: "slow orbit", Inputs: []providers.Input{{Data: testimage.GradientPNG(t, 4, 4), ContentType: "image/png"}}}
}

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

// TestGenerateImages runs photo_shoot, packshot, model_idea and scenery_idea through the whole queue
// cycle with a plain context: heartbeats outside an activity do nothing.
func TestGenerateImages(t *testing.T) {
	dataURI := providers.DataURI(providers.Input{Data: testimage.GradientPNG(t, 4, 4), ContentType: "image/png"})
	tests := []struct {
		name  string
		req   providers.Request
		path  string
		input map[string]any
		words []string // in the prompt
	}{
		{"photo_shoot", photoRequest(t, jobtype.PhotoShoot), "/fal-ai/flux-pro/kontext",
			map[string]any{"image_url": dataURI, "aspect_ratio": "3:2", "seed": 1234567.0, "num_images": 1.0,
				"output_format": "png", "safety_tolerance": "2"},
			[]string{"Place this exact product", "sunlit marble kitchen", "morning light, fresh lemons.", "Keep the product exactly"}},
		{"packshot", photoRequest(t, jobtype.Packshot), "/fal-ai/flux-pro/kontext",
			map[string]any{"image_url": dataURI, "aspect_ratio": "3:2", "seed": 1234567.0},
			[]string{"pure white", "seamless", "centred", "contact shadow", "Keep the product exactly"}},
		{"model_idea", ideaRequest(jobtype.ModelIdea), "/fal-ai/flux/dev",
			map[string]any{"image_size": "portrait_16_9", "seed": float64(-5 & 0x7fffffff), "num_images": 1.0, "enable_safety_checker": true},
			[]string{"fashion model", "scandinavian living room, oak table"}},
		{"scenery_idea", ideaRequest(jobtype.SceneryIdea), "/fal-ai/flux/dev",
			map[string]any{"image_size": "portrait_16_9"},
			[]string{"Empty scene", "scandinavian living room, oak table"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newFakeQueue(t)
			q.output = imageOutput
			outs, err := q.provider().Generate(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 1 {
				t.Fatalf("%d outputs, want 1", len(outs))
			}
			out := outs[0]
			if out.ContentType != "image/png" || out.Ext != ".png" || out.Width != 1024 || out.Height != 768 {
				t.Errorf("output %s %s %dx%d, want image/png .png 1024x768", out.ContentType, out.Ext, out.Width, out.Height)
			}
			if !bytes.Equal(out.Data, []byte(q.files["out.png"].body)) {
				t.Error("output data differs from the served file")
			}
			submits, polls, results, cancels := q.counts()
			if submits != 1 || polls != 3 || results != 1 || cancels != 0 {
				t.Errorf("submits, polls, results, cancels = %d, %d, %d, %d; want 1, 3, 1, 0", submits, polls, results, cancels)
			}
			s := q.submits[0]
			if s.path != tt.path || s.auth != "Key "+testKey || s.ctype != "application/json" {
				t.Errorf("submit %s with Authorization %q, Content-Type %q", s.path, s.auth, s.ctype)
			}
			for k, want := range tt.input {
				if got := s.input[k]; got != want {
					t.Errorf("input %s = %#v, want %#v", k, got, want)
				}
			}
			prompt, _ := s.input["prompt"].(string)
			for _, w := range tt.words {
				if !strings.Contains(prompt, w) {
					t.Errorf("prompt %q lacks %q", prompt, w)
				}
			}
		})
	}
}

func TestGenerateVideo(t *testing.T) {
	q := newFakeQueue(t)
	q.output = videoOutput
	outs, err := q.provider().Generate(context.Background(), videoRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	want := providers.Output{Data: []byte(mp4Bytes), ContentType: "video/mp4", Ext: ".mp4", Duration: 5 * time.Second}
	if len(outs) != 1 || !bytes.Equal(outs[0].Data, want.Data) || outs[0].ContentType != want.ContentType ||
		outs[0].Ext != want.Ext || outs[0].Duration != want.Duration {
		t.Fatalf("outputs %+v, want one %s %s of %s", outs, want.ContentType, want.Ext, want.Duration)
	}
	s := q.submits[0]
	if s.path != "/fal-ai/kling-video/v2.1/standard/image-to-video" {
		t.Errorf("submit path %s", s.path)
	}
	if !strings.HasPrefix(s.input["image_url"].(string), "data:image/png;base64,") || s.input["duration"] != "5" ||
		!strings.Contains(s.input["prompt"].(string), "slow orbit") || s.input["negative_prompt"] == "" {
		t.Errorf("input %v", s.input)
	}
	if _, ok := s.input["seed"]; ok {
		t.Error("Kling takes no seed")
	}
}

// TestImageSizeFromFile reads the size of an image whose result gives none.
func TestImageSizeFromFile(t *testing.T) {
	q := newFakeQueue(t)
	q.output = `{"images":[{"url":"%s/files/out.png","content_type":"image/png"}],"has_nsfw_concepts":[false],"seed":1}`
	outs, err := q.provider().Generate(context.Background(), ideaRequest(jobtype.SceneryIdea))
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Width != 12 || outs[0].Height != 9 {
		t.Errorf("size %dx%d, want 12x9", outs[0].Width, outs[0].Height)
	}
}

// TestNSFWImagesLeftOut keeps the unflagged image of a partly flagged result.
func TestNSFWImagesLeftOut(t *testing.T) {
	q := newFakeQueue(t)
	q.output = `{"images":[{"url":"%s/files/black.png"},{"url":"%s/files/out.png","width":12,"height":9}],"has_nsfw_concepts":[true,false]}`
	outs, err := q.provider().Generate(context.Background(), ideaRequest(jobtype.ModelIdea))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Width != 12 {
		t.Errorf("outputs %+v, want the unflagged image only", outs)
	}
}

// failureCases are fal error answers in the documented shapes and their categories.
var failureCases = []struct {
	name  string
	reply reply
	want  errorcat.Category
	after time.Duration // RetryAfter
}{
	{"429 with Retry-After", reply{status: 429, header: map[string]string{"Retry-After": "7"},
		body: `{"detail":"Too many concurrent requests"}`}, errorcat.RateLimit, 7 * time.Second},
	{"429 without Retry-After", reply{status: 429, body: `{"detail":"Rate limit exceeded"}`}, errorcat.RateLimit, DefaultRetryAfter},
	{"401 bad key", reply{status: 401, body: `{"detail":"Invalid API key"}`}, errorcat.ProviderAccount, 0},
	{"403 forbidden", reply{status: 403, body: `{"detail":"Forbidden"}`}, errorcat.ProviderAccount, 0},
	{"403 exhausted balance", reply{status: 403, body: `{"detail":"User is locked. Reason: Exhausted balance. Top up your balance at fal.ai/dashboard/billing."}`},
		errorcat.ProviderAccount, 0},
	{"402", reply{status: 402, body: `{"detail":"Payment required"}`}, errorcat.ProviderAccount, 0},
	{"400 billing", reply{status: 400, body: `{"detail":"Billing limit reached for this account"}`}, errorcat.ProviderAccount, 0},
	{"503 runner scheduling", reply{status: 503, header: map[string]string{"X-Fal-Error-Type": "runner_scheduling_failure"},
		body: `{"detail":"No runner could be allocated","error_type":"runner_scheduling_failure"}`}, errorcat.ProviderCapacity, 0},
	{"529", reply{status: 529, body: `{"detail":"Overloaded"}`}, errorcat.ProviderCapacity, 0},
	{"500 no capacity", reply{status: 500, body: `{"detail":"Partner API error: no capacity available"}`}, errorcat.ProviderCapacity, 0},
	{"500 internal", reply{status: 500, header: map[string]string{"X-Fal-Retryable": "true"},
		body: `{"detail":[{"loc":["body"],"msg":"Internal server error","type":"internal_server_error"}]}`}, errorcat.TransientInfra, 0},
	{"502 proxy page", reply{status: 502, header: map[string]string{"Content-Type": "text/html"},
		body: "<html><body>502 Bad Gateway nginx</body></html>"}, errorcat.TransientInfra, 0},
	{"504 request timeout", reply{status: 504, body: `{"detail":"Request timed out","error_type":"request_timeout"}`}, errorcat.TransientInfra, 0},
	{"422 image_load_error", reply{status: 422, header: map[string]string{"X-Fal-Retryable": "false"},
		body: `{"detail":[{"loc":["body","image_url"],"msg":"Image load error","type":"image_load_error","url":"https://docs.fal.ai/errors/#image_load_error"}]}`},
		errorcat.InputMissing, 0},
	{"422 image_url", reply{status: 422, body: `{"detail":[{"loc":["body","image_url"],"msg":"Input should be a valid URL","type":"url_parsing"}]}`},
		errorcat.InputMissing, 0},
	{"422 could not download", reply{status: 422, body: `{"detail":"Could not download the image from the given URL"}`}, errorcat.InputMissing, 0},
	{"422 content policy", reply{status: 422, body: `{"detail":[{"loc":["body","prompt"],"msg":"The content could not be processed because it contained material flagged by a content checker.","type":"content_policy_violation","url":"https://docs.fal.ai/errors/#content_policy_violation"}]}`},
		errorcat.ContentPolicy, 0},
	{"400 nsfw", reply{status: 400, body: `{"detail":"NSFW content detected in the input image"}`}, errorcat.ContentPolicy, 0},
	{"422 safety_tolerance value", reply{status: 422, body: `{"detail":[{"loc":["body","safety_tolerance"],"msg":"Input should be '1', '2', '3', '4', '5' or '6' for safety_tolerance","type":"one_of"}]}`},
		errorcat.InternalBug, 0},
	{"422 aspect ratio", reply{status: 422, body: `{"detail":[{"loc":["body","aspect_ratio"],"msg":"Input should be '21:9', '16:9'","type":"one_of"}]}`},
		errorcat.InternalBug, 0},
	{"400 retryable downstream", reply{status: 400, header: map[string]string{"X-Fal-Retryable": "true"},
		body: `{"detail":[{"loc":["body"],"msg":"Downstream service error","type":"downstream_service_error"}]}`}, errorcat.TransientInfra, 0},
	{"400 bad request", reply{status: 400, body: `{"detail":"Bad request"}`}, errorcat.InternalBug, 0},
	{"404 not found", reply{status: 404, body: `{"detail":"Application 'kontextt' not found"}`}, errorcat.InternalBug, 0},
}

// TestFailureClassification answers every documented failure at submit time and as the result of
// a completed request (where fal returns the model's error), and checks the category, RetryAfter
// and the raw message (status and request ID, never the key).
func TestFailureClassification(t *testing.T) {
	for _, stage := range []string{"submit", "result"} {
		for _, tc := range failureCases {
			t.Run(stage+"/"+tc.name, func(t *testing.T) {
				q := newFakeQueue(t)
				rep := tc.reply
				rep.header = map[string]string{"X-Fal-Request-Id": requestID}
				for k, v := range tc.reply.header {
					rep.header[k] = v
				}
				if stage == "submit" {
					q.submit = &rep
				} else {
					q.result = &rep
				}
				_, err := q.provider().Generate(context.Background(), photoRequest(t, jobtype.PhotoShoot))
				ge := category(t, err)
				if ge.Category != tc.want || ge.RetryAfter != tc.after {
					t.Errorf("%s (RetryAfter %s), want %s (%s): %s", ge.Category, ge.RetryAfter, tc.want, tc.after, ge.Message)
				}
				for _, part := range []string{fmt.Sprintf("HTTP %d", tc.reply.status), requestID} {
					if !strings.Contains(ge.Message, part) {
						t.Errorf("message %q lacks %q", ge.Message, part)
					}
				}
				if _, _, _, cancels := q.counts(); cancels != 0 {
					t.Errorf("%d cancellations, want none", cancels)
				}
			})
		}
	}
}

// TestResultFailures covers the failures of a 200 result: flagged, empty or malformed outputs and
// output files that cannot be downloaded.
func TestResultFailures(t *testing.T) {
	tests := []struct {
		name   string
		req    func(*testing.T) providers.Request
		output string
		want   errorcat.Category
	}{
		{"all images nsfw", func(t *testing.T) providers.Request { return photoRequest(t, jobtype.Packshot) },
			`{"images":[{"url":"%s/files/out.png","width":8,"height":8}],"has_nsfw_concepts":[true]}`, errorcat.ContentPolicy},
		{"no images", func(t *testing.T) providers.Request { return ideaRequest(jobtype.ModelIdea) },
			`{"images":[],"has_nsfw_concepts":[]}`, errorcat.InternalBug},
		{"no video", videoRequest, `{"detail":"ok"}`, errorcat.InternalBug},
		{"malformed", func(t *testing.T) providers.Request { return photoRequest(t, jobtype.Packshot) },
			`{"images":"out.png"}`, errorcat.InternalBug},
		{"image URL gone", func(t *testing.T) providers.Request { return photoRequest(t, jobtype.Packshot) },
			`{"images":[{"url":"%s/files/expired.png"}],"has_nsfw_concepts":[false]}`, errorcat.TransientInfra},
		{"video URL gone", videoRequest, `{"video":{"url":"%s/files/expired.mp4"}}`, errorcat.TransientInfra},
		{"not an image", func(t *testing.T) providers.Request { return photoRequest(t, jobtype.Packshot) },
			`{"images":[{"url":"%s/files/out.mp4"}],"has_nsfw_concepts":[false]}`, errorcat.TransientInfra},
		{"malformed data URI", func(t *testing.T) providers.Request { return photoRequest(t, jobtype.Packshot) },
			`{"images":[{"url":"data:image/png,not-base64"}],"has_nsfw_concepts":[false]}`, errorcat.InternalBug},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newFakeQueue(t)
			q.output = tt.output
			_, err := q.provider().Generate(context.Background(), tt.req(t))
			if ge := category(t, err); ge.Category != tt.want || !strings.Contains(ge.Message, requestID) {
				t.Errorf("%s, want %s naming the request: %s", ge.Category, tt.want, ge.Message)
			}
		})
	}
}

// TestStatusFailures covers the answers of status_url: unknown statuses and failures that do not
// pass, which cancel the request, and a passing failure, which polling rides out.
func TestStatusFailures(t *testing.T) {
	unauthorized := &reply{status: 401, body: `{"detail":"Invalid API key"}`}
	unavailable := &reply{status: 502, body: `<html>502 Bad Gateway</html>`, header: map[string]string{"Content-Type": "text/html"}}
	tests := []struct {
		name     string
		statuses []string
		status   []*reply
		want     errorcat.Category // "" for success
		polls    int
		cancels  int
	}{
		{"unknown status", []string{statusInQueue, "FAILED"}, nil, errorcat.InternalBug, 2, 1},
		{"bad key", nil, []*reply{unauthorized}, errorcat.ProviderAccount, 1, 1},
		{"gateway errors persist", nil, slices.Repeat([]*reply{unavailable}, maxPollFailures+1), errorcat.TransientInfra, maxPollFailures + 1, 1},
		{"gateway error passes", nil, []*reply{nil, unavailable, unavailable}, "", 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newFakeQueue(t)
			q.output = imageOutput
			if tt.statuses != nil {
				q.statuses = tt.statuses
			}
			q.status = tt.status
			_, err := q.provider().Generate(context.Background(), ideaRequest(jobtype.SceneryIdea))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.want != "":
				if ge := category(t, err); ge.Category != tt.want || !strings.Contains(ge.Message, "cancellation: HTTP 202 CANCELLATION_REQUESTED") {
					t.Errorf("%s, want %s reporting the cancellation: %s", ge.Category, tt.want, ge.Message)
				}
			}
			if _, polls, _, cancels := q.counts(); polls != tt.polls || cancels != tt.cancels {
				t.Errorf("polls, cancels = %d, %d; want %d, %d", polls, cancels, tt.polls, tt.cancels)
			}
		})
	}
}

// TestCancelWhileQueued cancels the attempt's context while the request waits in the queue: the
// request is cancelled on fal and Generate fails with TRANSIENT_INFRA at once.
func TestCancelWhileQueued(t *testing.T) {
	for _, name := range []string{"cancelled", "deadline"} {
		t.Run(name, func(t *testing.T) {
			q := newFakeQueue(t)
			q.statuses = []string{statusInQueue}
			q.polled = make(chan int, 100)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if name == "deadline" {
				ctx, cancel = context.WithTimeout(ctx, 80*time.Millisecond)
				defer cancel()
			} else {
				go func() {
					for {
						select {
						case n := <-q.polled:
							if n == 2 {
								cancel()
							}
						case <-ctx.Done():
							return
						}
					}
				}()
			}
			start := time.Now()
			_, err := q.provider().Generate(ctx, videoRequest(t))
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("Generate took %s after the context ended", elapsed)
			}
			ge := category(t, err)
			if ge.Category != errorcat.TransientInfra || !strings.Contains(ge.Message, "CANCELLATION_REQUESTED") {
				t.Errorf("%s: %s, want TRANSIENT_INFRA reporting the cancellation", ge.Category, ge.Message)
			}
			if _, polls, results, cancels := q.counts(); cancels != 1 || results != 0 || polls < 1 {
				t.Errorf("polls, results, cancels = %d, %d, %d; want ≥1, 0, 1", polls, results, cancels)
			}
		})
	}
}

// TestTransportFailures: a submit that times out or whose connection is reset is TRANSIENT_INFRA.
func TestTransportFailures(t *testing.T) {
	tests := map[string]http.HandlerFunc{
		"timeout": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client going away
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		},
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
			p := New(Config{APIKey: testKey, QueueURL: srv.URL, HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}})
			_, err := p.Generate(context.Background(), ideaRequest(jobtype.ModelIdea))
			if ge := category(t, err); ge.Category != errorcat.TransientInfra || !strings.Contains(ge.Message, "submit to fal-ai/flux/dev") {
				t.Errorf("%s: %s, want TRANSIENT_INFRA", ge.Category, ge.Message)
			}
		})
	}
}

// An answer over the size fal's answers are read to is refused saying so, not cut and then
// refused as JSON that does not decode.
func TestOversizedAnswerSaysSo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"request_id":"`+strings.Repeat("a", maxAnswerBytes)+`"}`)
	}))
	defer srv.Close()
	p := New(Config{APIKey: testKey, QueueURL: srv.URL})
	_, err := p.Generate(context.Background(), ideaRequest(jobtype.ModelIdea))
	if ge := category(t, err); ge.Category != errorcat.InternalBug || !strings.Contains(ge.Message, "answer is larger than 16777216 bytes") {
		t.Errorf("%s: %s, want INTERNAL_BUG saying the answer is too large", ge.Category, ge.Message)
	}
}

// TestRejectedBeforeCalling: requests that cannot be served fail without reaching fal.
func TestRejectedBeforeCalling(t *testing.T) {
	noImage := photoRequest(t, jobtype.Packshot)
	noImage.Inputs = nil
	emptyVideo := videoRequest(t)
	emptyVideo.Inputs = []providers.Input{{ContentType: "image/png"}}
	badRatio := photoRequest(t, jobtype.PhotoShoot)
	badRatio.AspectRatio = "4:5"
	wrongJob := ideaRequest(jobtype.Packshot)
	unknown := ideaRequest(jobtype.ModelIdea)
	unknown.Model = "flux-schnell"
	tests := []struct {
		name string
		req  providers.Request
		key  string
		want errorcat.Category
	}{
		{"packshot without image", noImage, testKey, errorcat.InputMissing},
		{"video with empty image", emptyVideo, testKey, errorcat.InputMissing},
		{"unsupported aspect ratio", badRatio, testKey, errorcat.InternalBug},
		{"job type not served", wrongJob, testKey, errorcat.InternalBug},
		{"unknown model", unknown, testKey, errorcat.InternalBug},
		{"no API key", ideaRequest(jobtype.ModelIdea), "", errorcat.ProviderAccount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newFakeQueue(t)
			p := New(Config{APIKey: tt.key, QueueURL: q.srv.URL})
			_, err := p.Generate(context.Background(), tt.req)
			if ge := category(t, err); ge.Category != tt.want {
				t.Errorf("%s, want %s: %s", ge.Category, tt.want, ge.Message)
			}
			if submits, _, _, _ := q.counts(); submits != 0 {
				t.Errorf("%d submits, want none", submits)
			}
		})
	}
}

// TestKeyNeverInMessages: an answer that echoes the key does not put it in the error message.
func TestKeyNeverInMessages(t *testing.T) {
	q := newFakeQueue(t)
	q.submit = &reply{status: 401, body: `{"detail":"No user found for Key ` + testKey + `"}`}
	_, err := q.provider().Generate(context.Background(), ideaRequest(jobtype.ModelIdea))
	ge := category(t, err) // fails on the key
	if ge.Category != errorcat.ProviderAccount || !strings.Contains(ge.Message, "[redacted]") {
		t.Errorf("%s: %s", ge.Category, ge.Message)
	}
}

// TestForeignAnswerURLs: the key is never sent to a host other than the queue's.
func TestForeignAnswerURLs(t *testing.T) {
	q := newFakeQueue(t)
	q.submit = &reply{status: 200, body: `{"request_id":"r","status_url":"https://elsewhere.example/s","response_url":"https://elsewhere.example/r"}`}
	_, err := q.provider().Generate(context.Background(), ideaRequest(jobtype.ModelIdea))
	if ge := category(t, err); ge.Category != errorcat.InternalBug {
		t.Errorf("%s: %s", ge.Category, ge.Message)
	}
	if _, polls, _, _ := q.counts(); polls != 0 {
		t.Errorf("%d polls, want none", polls)
	}
}

// TestServesAgreesWithCatalog: every job type and aspect ratio the catalog lists for a fal model
// is served, every model of the table is in the catalog, and the registry accepts the provider.
func TestServesAgreesWithCatalog(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{APIKey: testKey})
	listed := map[string]bool{}
	for _, m := range cat.AIModels {
		if m.Provider != Name {
			continue
		}
		name := strings.TrimPrefix(m.ID, Name+"/")
		listed[name] = true
		for _, jt := range m.JobTypes {
			if !p.Serves(name, jt) {
				t.Errorf("catalog model %s lists %s, which the provider does not serve", m.ID, jt)
			}
		}
		for _, ar := range m.SupportedAspectRatios {
			if _, ok := endpoints[name].ratios[ar]; !ok {
				t.Errorf("catalog model %s lists aspect ratio %s, which the table does not map", m.ID, ar)
			}
		}
		if (m.OutputType == catalog.OutputVideo) != endpoints[name].video {
			t.Errorf("catalog model %s has output type %s", m.ID, m.OutputType)
		}
	}
	for name := range endpoints {
		if !listed[name] {
			t.Errorf("model %s of the table is not in the catalog", name)
		}
	}
	if p.Serves("flux-dev", jobtype.Packshot) || p.Serves("kling-video-v2.1", jobtype.Reel) || p.Serves("nope", jobtype.Video) {
		t.Error("Serves accepts a job type outside the table")
	}
	if _, err := providers.NewRegistry(cat, map[string]providers.Provider{Name: p}); err != nil {
		t.Errorf("registry: %v", err)
	}
}
