// Package contract checks HTTP exchanges against the service's OpenAPI documents (the plugin API's
// api/openapi.yaml, embedded as api.OpenAPIDocument, and the external API's
// api/external/openapi.yaml), so that the documents cannot drift from the code: the plugin unit
// tests (api/plugin env.do), the end-to-end tests (internal/e2e client.do) and the external API's
// tests pass every request and response they make through Check or External.Check.
//
// Check matches the request to an operation of the document (the plugin routes under
// /api/v1/plugin and the routes outside it that the document describes: the signed /files
// downloads, the error documentation and the health checks), validates the request (path, query
// and header parameters, the X-Api-Key requirement and the body) and then the response: its
// status must be one the operation documents, the headers marked required must be there and
// match their schemas, and the body must match the documented media type and schema. Response
// schemas are closed (additionalProperties: false), so a field the code sends but the document
// does not describe fails the test.
//
// Tests send invalid requests on purpose (a malformed body to get a 400, no key to get a 401, …).
// Such a request is not a contract failure when the service refuses it: when the request does not
// match the document and the answer is a 4xx, only the answer is validated. A request the document
// calls invalid that the service accepts (2xx, 3xx) or fails on (5xx) is a failure, because then
// the document and the code disagree about what is valid. Likewise an undocumented route is fine
// only when the service answers it with the 404 or 405 error envelope.
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/external"
)

// spec is the loaded document and its router.
type spec struct {
	doc      *openapi3.T
	router   routers.Router
	envelope string // the schema of the error body of unknown routes
}

// Document is one OpenAPI document that exchanges are checked against, loaded once.
type Document struct {
	name     string
	data     []byte
	envelope string

	once   sync.Once
	loaded *spec
	err    error
}

// The service's documents: the plugin API (api/openapi.yaml, what the package-level functions
// check) and the external content API (api/external/openapi.yaml).
var (
	Plugin   = &Document{name: "api/openapi.yaml", data: api.OpenAPIDocument, envelope: "ErrorEnvelope"}
	External = &Document{name: "api/external/openapi.yaml", data: external.OpenAPIDocument, envelope: "Error"}
)

// Load parses and validates api.OpenAPIDocument once and returns it.
func Load() (*openapi3.T, error) { return Plugin.Load() }

// Load parses and validates the document once and returns it.
func (d *Document) Load() (*openapi3.T, error) {
	s, err := d.load()
	if err != nil {
		return nil, err
	}
	return s.doc, nil
}

func (d *Document) load() (*spec, error) {
	d.once.Do(func() {
		d.loaded, d.err = parse(d.name, d.data)
		if d.err == nil {
			d.loaded.envelope = d.envelope
		}
	})
	return d.loaded, d.err
}

// parse loads a document, validates it and builds its router.
func parse(name string, data []byte) (*spec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("contract: load %s: %w", name, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("contract: %s is not a valid OpenAPI document: %w", name, err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("contract: route %s: %w", name, err)
	}
	return &spec{doc: doc, router: router}, nil
}

// Check validates one exchange against the document and fails t (with Errorf, so it may be called
// from any goroutine) when the request or the response does not match. reqBody is the body that
// was sent; when it is nil, Check reads it from req.GetBody if there is one (http.NewRequest sets
// it for in-memory bodies).
func Check(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, respBody []byte) {
	t.Helper()
	Plugin.Check(t, req, reqBody, status, header, respBody)
}

// Check is the package-level Check against this document.
func (d *Document) Check(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, respBody []byte) {
	t.Helper()
	if err := d.Validate(req, reqBody, status, header, respBody); err != nil {
		t.Errorf("%v", err)
	}
}

// ServeAndCheck serves req with h, checks the exchange with Check and returns the recorded answer.
// It is what a test harness calls instead of h.ServeHTTP.
func ServeAndCheck(t testing.TB, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	return Plugin.ServeAndCheck(t, h, req)
}

// ServeAndCheck is the package-level ServeAndCheck against this document.
func (d *Document) ServeAndCheck(t testing.TB, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		if err != nil {
			t.Errorf("contract: read request body: %v", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	d.Check(t, req, body, res.StatusCode, res.Header, rec.Body.Bytes())
	return rec
}

// Validate is Check without a test: it returns what does not match, or nil.
func Validate(req *http.Request, reqBody []byte, status int, header http.Header, respBody []byte) error {
	return Plugin.Validate(req, reqBody, status, header, respBody)
}

// Validate is the package-level Validate against this document.
func (d *Document) Validate(req *http.Request, reqBody []byte, status int, header http.Header, respBody []byte) error {
	s, err := d.load()
	if err != nil {
		return err
	}
	if reqBody == nil && req.GetBody != nil {
		if rc, err := req.GetBody(); err == nil {
			reqBody, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	return s.validate(req, reqBody, status, header, respBody)
}

func (s *spec) validate(req *http.Request, reqBody []byte, status int, header http.Header, respBody []byte) error {
	ctx := context.Background()
	// A copy to validate: the path and query only, and a fresh body.
	r := req.Clone(ctx)
	r.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	r.Host = ""
	r.RequestURI = ""
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	r.GetBody = nil
	r.ContentLength = int64(len(reqBody))
	exchange := fmt.Sprintf("%s %s → %d", req.Method, req.URL.RequestURI(), status)

	route, pathParams, err := s.router.FindRoute(r)
	if err != nil {
		return s.unrouted(exchange, err, status, header, respBody)
	}
	op := fmt.Sprintf("%s %s (%s)", route.Method, documentedPath(route), route.Operation.OperationID)

	reqInput := &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: pathParams,
		Route:      route,
		Options: &openapi3filter.Options{
			MultiError:          true,
			SkipSettingDefaults: true,
			AuthenticationFunc:  authenticate,
		},
	}
	if reqErr := openapi3filter.ValidateRequest(ctx, reqInput); reqErr != nil {
		if status < 400 || status >= 500 {
			return fmt.Errorf("contract: %s: the request does not match operation %s, yet the service answered %d (the document and the code disagree on what is valid):\n%s\nresponse body: %s",
				exchange, op, status, describe(reqErr), truncate(respBody))
		}
		// The service refused a request the document calls invalid: only the answer is checked.
	}

	if route.Operation.Responses.Status(status) == nil {
		return fmt.Errorf("contract: %s: status %d is not documented for operation %s (documented: %s)\nresponse body: %s",
			exchange, status, op, strings.Join(documentedStatuses(route.Operation), ", "), truncate(respBody))
	}
	respInput := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqInput,
		Status:                 status,
		Header:                 header,
		Options: &openapi3filter.Options{
			MultiError:            true,
			IncludeResponseStatus: true,
		},
	}
	respInput.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, respInput); err != nil {
		return fmt.Errorf("contract: %s: the response does not match operation %s:\n%s\nresponse body: %s",
			exchange, op, describe(err), truncate(respBody))
	}
	if resp := route.Operation.Responses.Status(status).Value; len(resp.Content) == 0 && len(respBody) > 0 && status != http.StatusNotModified {
		return fmt.Errorf("contract: %s: operation %s documents no body for status %d, but the response has %d bytes: %s",
			exchange, op, status, len(respBody), truncate(respBody))
	}
	recordCoverage(route.Operation.OperationID, status)
	return nil
}

// CoverageEnv names a file to which every validated exchange appends "<operationId> <status>",
// so that a run of the tests can tell which documented answers they exercise.
const CoverageEnv = "SHOTFLOW_CONTRACT_COVERAGE"

var coverageMu sync.Mutex

func recordCoverage(operationID string, status int) {
	path := os.Getenv(CoverageEnv)
	if path == "" {
		return
	}
	coverageMu.Lock()
	defer coverageMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %d\n", operationID, status)
}

// unrouted handles a request that matches no operation: fine only when the service answered it
// with the error envelope of an unknown route (404) or method (405).
func (s *spec) unrouted(exchange string, findErr error, status int, header http.Header, respBody []byte) error {
	want := http.StatusNotFound
	what := "no path of the document matches it"
	if errors.Is(findErr, routers.ErrMethodNotAllowed) {
		want = http.StatusMethodNotAllowed
		what = "the document has the path but not this method"
	} else if !errors.Is(findErr, routers.ErrPathNotFound) {
		return fmt.Errorf("contract: %s: routing failed: %v", exchange, findErr)
	}
	if status != want {
		return fmt.Errorf("contract: %s: %s, yet the service answered %d (document the route, or answer %d)\nresponse body: %s",
			exchange, what, status, want, truncate(respBody))
	}
	envelope := s.doc.Components.Schemas[s.envelope]
	if envelope == nil || envelope.Value == nil {
		return fmt.Errorf("contract: the document has no components.schemas.%s", s.envelope)
	}
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("contract: %s: %s; the %d answer should be the JSON error envelope but its Content-Type is %q", exchange, what, status, ct)
	}
	var value any
	if err := json.Unmarshal(respBody, &value); err != nil {
		return fmt.Errorf("contract: %s: %s; the %d answer is not JSON: %v\nresponse body: %s", exchange, what, status, err, truncate(respBody))
	}
	if err := envelope.Value.VisitJSON(value, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors(), openapi3.VisitAsResponse()); err != nil {
		return fmt.Errorf("contract: %s: %s; the %d answer is not the error envelope:\n%s\nresponse body: %s",
			exchange, what, status, describe(err), truncate(respBody))
	}
	return nil
}

// authenticate checks an API key header or bearer security scheme: the header must be present.
// Whether the key is valid is for the service to say (a 401).
func authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme := in.SecurityScheme
	hdr := in.RequestValidationInput.Request.Header
	switch {
	case scheme != nil && scheme.Type == "apiKey" && scheme.In == "header":
		if strings.TrimSpace(hdr.Get(scheme.Name)) == "" {
			return fmt.Errorf("header %s is missing", scheme.Name)
		}
	case scheme != nil && scheme.Type == "http" && strings.EqualFold(scheme.Scheme, "bearer"):
		if a := hdr.Get("Authorization"); len(a) < 8 || !strings.EqualFold(a[:7], "bearer ") {
			return errors.New("header Authorization: Bearer is missing")
		}
	default:
		return fmt.Errorf("security scheme %q is neither an API key header nor a bearer token", in.SecuritySchemeName)
	}
	return nil
}

// documentedPath is the route's path with its server's base, e.g. /api/v1/plugin/jobs/{id}.
func documentedPath(route *routers.Route) string {
	base := ""
	if route.Server != nil {
		base = strings.TrimRight(route.Server.URL, "/")
	}
	return base + route.Path
}

func documentedStatuses(op *openapi3.Operation) []string {
	var out []string
	for code := range op.Responses.Map() {
		out = append(out, code)
	}
	sort.Strings(out)
	return out
}

// describe flattens kin-openapi's (multi-)errors into one line per problem, each saying where
// (parameter, header, body) and what.
func describe(err error) string {
	var lines []string
	withCause := func(reason string, cause error) string {
		if cause == nil {
			return reason
		}
		if reason == "" {
			return oneLine(cause)
		}
		return reason + ": " + oneLine(cause)
	}
	var walk func(err error)
	walk = func(err error) {
		switch e := err.(type) {
		case openapi3.MultiError:
			for _, inner := range e {
				walk(inner)
			}
		case *openapi3filter.SecurityRequirementsError:
			msgs := make([]string, 0, len(e.Errors))
			for _, inner := range e.Errors {
				msgs = append(msgs, oneLine(inner))
			}
			lines = append(lines, "security: "+strings.Join(msgs, "; "))
		case *openapi3filter.RequestError:
			where := "request"
			switch {
			case e.Parameter != nil:
				where = fmt.Sprintf("%s parameter %q", e.Parameter.In, e.Parameter.Name)
			case e.RequestBody != nil:
				where = "request body"
			}
			lines = append(lines, where+": "+withCause(e.Reason, e.Err))
		case *openapi3filter.ResponseError:
			lines = append(lines, "response: "+withCause(e.Reason, e.Err))
		default:
			lines = append(lines, oneLine(err))
		}
	}
	walk(err)
	for i, l := range lines {
		lines[i] = "  - " + l
	}
	return strings.Join(lines, "\n")
}

func oneLine(err error) string {
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		parts := make([]string, 0, len(multi))
		for _, e := range multi {
			parts = append(parts, oneLine(e))
		}
		return strings.Join(parts, " | ")
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	// The JSON Schema 2020-12 validator appends the whole schema and value; the location and the
	// reason are what matter, and the response body is printed once anyway.
	if i := strings.Index(msg, " Schema: "); i > 0 {
		msg = msg[:i]
	}
	if r := []rune(msg); len(r) > 600 {
		msg = string(r[:600]) + "…"
	}
	return msg
}

func truncate(b []byte) string {
	if !utf8.Valid(b) {
		return fmt.Sprintf("<%d bytes of binary data>", len(b))
	}
	if r := []rune(string(b)); len(r) > 2000 {
		return string(r[:2000]) + "…"
	}
	return string(b)
}

// CheckWebhook validates a webhook request a receiver got (its headers and body) against the
// document's webhooks: the webhook is the payload's event, and the headers and the body must
// match that event's operation.
func CheckWebhook(t testing.TB, r *http.Request, body []byte) {
	t.Helper()
	if err := ValidateWebhook(r.Header, body); err != nil {
		t.Errorf("%v", err)
	}
}

// ValidateWebhook is CheckWebhook without a test: it returns what does not match, or nil.
func ValidateWebhook(header http.Header, body []byte) error {
	return Plugin.ValidateWebhook(header, body)
}

// ValidateWebhook checks a webhook (its headers and body) against the document's webhook of the
// body's event.
func (d *Document) ValidateWebhook(header http.Header, body []byte) error {
	s, err := d.load()
	if err != nil {
		return err
	}
	var event struct {
		Event string `json:"event"`
	}
	if err := json.Unmarshal(body, &event); err != nil {
		return fmt.Errorf("contract: webhook body is not JSON: %v\nbody: %s", err, truncate(body))
	}
	item := s.doc.Webhooks[event.Event]
	if item == nil || item.Post == nil {
		return fmt.Errorf("contract: webhook event %q is not one of the document's webhooks\nbody: %s", event.Event, truncate(body))
	}
	req, err := http.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = header.Clone()
	input := &openapi3filter.RequestValidationInput{
		Request: req,
		Route: &routers.Route{Spec: s.doc, Path: event.Event, PathItem: item, Method: http.MethodPost,
			Operation: item.Post},
		Options: &openapi3filter.Options{MultiError: true, SkipSettingDefaults: true, AuthenticationFunc: authenticate},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
		return fmt.Errorf("contract: webhook %s (%s) does not match the document:\n%s\nbody: %s",
			event.Event, item.Post.OperationID, describe(err), truncate(body))
	}
	return nil
}
