package external_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models"
)

// env is one external API over a test database, with one account and a key of every scope. Its
// Temporal client records the workflows the API starts (orders and input preparations) and
// answers DescribeTaskQueue with a poller unless generatorsDown is set.
type env struct {
	t       testing.TB
	db      *gorm.DB
	router  *gin.Engine
	handler *external.Handler
	blobs   *blobstore.Store
	// engineConfig is what the handler's engine was built from.
	engineConfig engine.Config
	now          time.Time
	account      string
	key          string // content.register, content.read, content.webhooks and content.billing

	mu             sync.Mutex
	starts         []client.StartWorkflowOptions // every workflow start, in order
	startArgs      []any                         // the input of each start
	generatorsDown bool
}

func newEnv(t testing.TB, db *gorm.DB, rateLimit int) *env {
	t.Helper()
	e := &env{t: t, db: db, now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	now := func() time.Time { return e.now }
	d := apitest.NewDeps(t, db, apitest.Options{Now: now, TaskQueue: "shotflow", BaseURL: "http://shotflow.test",
		Temporal: apitest.TemporalOptions{OnStart: e.recordStart, Down: e.down}})
	e.blobs = d.Blobs
	e.engineConfig = d.EngineConfig
	e.handler = &external.Handler{
		Limiter: d.Limiter, Slots: d.Slots, Log: zap.NewNop(), Engine: d.Engine, Signer: d.Signer,
		DownloadTTL: 168 * time.Hour, RateLimit: rateLimit, Now: now, Secrets: d.Box,
	}
	e.router = gin.New()
	// Unknown paths and methods as api.NewRouter answers them under the external prefix: in the
	// external error body, with no trailing-slash redirects (the fuzz target checks every answer).
	e.router.RedirectTrailingSlash, e.router.HandleMethodNotAllowed = false, true
	e.router.NoRoute(e.handler.NotFound)
	e.router.NoMethod(e.handler.MethodNotAllowed)
	e.handler.Register(e.router)
	e.account, e.key = e.newAccount(external.ScopeRegister, external.ScopeRead, external.ScopeWebhooks, external.ScopeBilling)
	return e
}

// recordStart records a workflow start of the Temporal client and its input.
func (e *env) recordStart(o client.StartWorkflowOptions, input any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starts = append(e.starts, o)
	e.startArgs = append(e.startArgs, input)
}

// down tells the Temporal client whether the generators are down.
func (e *env) down() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.generatorsDown
}

// started returns the IDs of the workflows started so far whose ID has the prefix.
func (e *env) started(prefix string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, o := range e.starts {
		if strings.HasPrefix(o.ID, prefix) {
			out = append(out, o.ID)
		}
	}
	return out
}

// newAccount creates an account with 100 credits and an external key of the given scopes.
func (e *env) newAccount(scopes ...string) (accountID, key string) {
	e.t.Helper()
	acc, err := models.CreateAccount(e.db, "Team "+models.NewID()[:6], 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return acc.ID, e.issue(acc.ID, nil, scopes...)
}

func (e *env) issue(accountID string, expires *time.Time, scopes ...string) string {
	e.t.Helper()
	k, err := models.IssueKey(e.db, models.KeyKindExternal, accountID, nil, "k", scopes, expires)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Secret
}

// serve runs the request through the router and the OpenAPI contract check, and decodes the
// JSON answer.
func (e *env) serve(req *http.Request) (int, map[string]any, http.Header) {
	e.t.Helper()
	rec := contract.External.ServeAndCheck(e.t, e.router, req)
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		e.t.Fatalf("%s %s: body %q is not JSON", req.Method, req.URL.Path, rec.Body.String())
	}
	return rec.Code, body, rec.Header()
}

// get sends a GET with the given headers (none: no key at all).
func (e *env) get(path string, headers ...string) (int, map[string]any, http.Header) {
	e.t.Helper()
	req := httptest.NewRequest(http.MethodGet, external.Base+path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return e.serve(req)
}

// getAs sends a GET with the key.
func (e *env) getAs(key, path string) (int, map[string]any) {
	e.t.Helper()
	code, body, _ := e.get(path, "X-Api-Key", key)
	return code, body
}

// post sends body (a string is sent as is, anything else as JSON) with the key.
func (e *env) post(key, path string, body any) (int, map[string]any) {
	e.t.Helper()
	var raw []byte
	if s, ok := body.(string); ok {
		raw = []byte(s)
	} else {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			e.t.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, external.Base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	code, out, _ := e.serve(req)
	return code, out
}

// formFile is a file part of a multipart request.
type formFile struct {
	field, name string
	data        []byte
}

// multipart sends a multipart/form-data request with the fields (name, value pairs; a name may
// repeat) and files.
func (e *env) multipart(key, method, path string, fields []string, files ...formFile) (int, map[string]any) {
	e.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, f := range files {
		part, err := w.CreateFormFile(f.field, f.name)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := io.Copy(part, bytes.NewReader(f.data)); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
	req := httptest.NewRequest(method, external.Base+path, &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-Api-Key", key)
	code, out, _ := e.serve(req)
	return code, out
}

// checkSigned asserts that v is a URL signed for GET of path that is still valid a day from now.
func (e *env) checkSigned(v any, path string) {
	e.t.Helper()
	s, _ := v.(string)
	u, err := url.Parse(s)
	if err != nil || u.Path != path {
		e.t.Fatalf("URL %q, want a signed URL of %s", s, path)
	}
	if err := e.handler.Signer.Verify(http.MethodGet, u.Path, u.Query(), e.now.Add(24*time.Hour)); err != nil {
		e.t.Fatalf("URL %q: %v", s, err)
	}
}

// errorOf checks the external error body: exactly {error: "<text>"}.
func errorOf(t testing.TB, body map[string]any) string {
	t.Helper()
	msg, ok := body["error"].(string)
	if !ok || msg == "" || len(body) != 1 {
		t.Fatalf("error body = %v, want {error: <text>}", body)
	}
	return msg
}
