package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities"
	actcontract "github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/media/imageprep"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

const (
	docsURL       = "https://docs.example.test"
	publicBaseURL = "http://example.test"
)

// env is one plugin API over a fresh SQLite database (PostgreSQL with onPostgres), with one account
// and one installation.
type env struct {
	t       testing.TB
	db      *gorm.DB
	box     *secrets.Box
	blobs   *blobstore.Store
	signer  *urlsign.Signer
	clock   *apitest.Clock
	handler *plugin.Handler
	router  *api.Router
	// prepared lists the assets whose PrepareInputWorkflow the API started.
	prepared *[]string
	// engineConfig is what the handler's engine was built from.
	engineConfig engine.Config

	account *models.Account
	inst    *models.Installation
	key     string // full X-Api-Key of inst (every plugin scope)
	keyID   string
}

type envConfig struct {
	db            *gorm.DB // a migrated database of the test's (testdb.Dialects); nil: databaseURL
	databaseURL   func(testing.TB) string
	catalog       *catalog.Catalog
	credits       int64
	rateLimit     int
	subProcessors []plugin.SubProcessor
	providers     map[string]providers.Provider
	blobURL       string // the blob store; "": a directory
	publicBase    string // with an S3 blobURL, a CDN base of the bucket's download URLs
}

type envOption func(*envConfig)

// onDatabase runs the env on a migrated database of the test's (testdb.Dialects).
func onDatabase(db *gorm.DB) envOption { return func(c *envConfig) { c.db = db } }

// onPostgres runs the environment on a fresh PostgreSQL database, which refuses text SQLite takes
// (NUL characters, invalid UTF-8).
func onPostgres() envOption { return func(c *envConfig) { c.databaseURL = testdb.MigratedPostgresURL } }

func withRateLimit(n int) envOption { return func(c *envConfig) { c.rateLimit = n } }

func withSubProcessors(s []plugin.SubProcessor) envOption {
	return func(c *envConfig) { c.subProcessors = s }
}

func withCatalog(c *catalog.Catalog) envOption { return func(cfg *envConfig) { cfg.catalog = c } }

// onS3 keeps the files in an S3 bucket (s3server) and, as FILE_URLS=store does, sends uploads and
// downloads straight to and from it, or downloads under publicBase when it is set.
func onS3(blobURL, publicBase string) envOption {
	return func(c *envConfig) { c.blobURL, c.publicBase = blobURL, publicBase }
}

func withCredits(n int64) envOption { return func(c *envConfig) { c.credits = n } }

func withProviders(p map[string]providers.Provider) envOption {
	return func(c *envConfig) { c.providers = p }
}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	cfg := envConfig{databaseURL: testdb.SQLiteURL, credits: 500, providers: map[string]providers.Provider{"local": local.Provider{}}}
	for _, o := range opts {
		o(&cfg)
	}
	db := cfg.db
	if db == nil {
		db = testdb.Open(t, cfg.databaseURL(t))
	}
	var catalog *catalog.Catalog
	if cfg.catalog != nil {
		// A test catalog names models the providers' code does not know; serve them all.
		catalog = cfg.catalog
		for name, p := range cfg.providers {
			cfg.providers[name] = servesAll{p}
		}
	}
	var prepared []string
	// The Temporal client only accepts the start of an upload's preparation: a test that got past
	// an order's reservation fails; ErrInsufficientCredits returns before it.
	d := apitest.NewDeps(t, db, apitest.Options{BlobURL: cfg.blobURL, StoreFiles: cfg.blobURL != "", PublicBase: cfg.publicBase, Catalog: catalog, Providers: cfg.providers, BaseURL: publicBaseURL,
		Temporal: apitest.TemporalOptions{OnlyPrefix: "prepare-input/", OnStart: func(_ client.StartWorkflowOptions, in any) {
			prepared = append(prepared, in.(workflows.PrepareInput).AssetID)
		}}})
	h := &plugin.Handler{
		Engine:           d.Engine,
		Signer:           d.Signer,
		Limiter:          d.Limiter,
		Slots:            d.Slots,
		Log:              zap.NewNop(),
		DocsURL:          docsURL,
		DefaultRateLimit: 60,
		DownloadTTL:      168 * time.Hour,
		UploadTTL:        2 * time.Hour,
		SubProcessors:    cfg.subProcessors,
	}
	if cfg.blobURL != "" {
		h.Files, h.Uploads = d.Files, d.Blobs
	}
	router := api.NewRouter(api.Deps{
		Engine: h.Engine, Blobs: d.Blobs, Signer: d.Signer, Log: zap.NewNop(),
		Ready: func(context.Context) error { return nil },
	}, h)
	e := &env{t: t, db: db, box: d.Box, blobs: d.Blobs, signer: d.Signer, clock: d.Clock, handler: h, router: router, prepared: &prepared,
		engineConfig: d.EngineConfig}
	var err error
	e.account, err = models.CreateAccount(db, "Acme", cfg.credits)
	require.NoError(t, err)
	e.inst, e.key = e.addInstallation(e.account.ID, cfg.rateLimit)
	e.keyID = keyID(t, e.key)
	return e
}

// prepare runs the preparation of an upload as PrepareInputWorkflow would, with limits that let the
// tests' tiny images through.
func (e *env) prepare(assetID string) actcontract.PrepareResult {
	e.t.Helper()
	acts := &activities.Activities{Store: models.NewStore(e.db), Blobs: e.blobs, Prepare: imageprep.Options{MinEdge: 1, MinLongEdge: 1}}
	res, err := acts.PrepareAsset(context.Background(), assetID)
	require.NoError(e.t, err)
	return res
}

// servesAll is a provider that claims every model and job type of a test catalog.
type servesAll struct{ providers.Provider }

func (servesAll) Serves(string, string) bool { return true }

// addInstallation creates an installation of the account and returns it with its key.
func (e *env) addInstallation(accountID string, rateLimit int) (*models.Installation, string) {
	e.t.Helper()
	created, err := models.CreateInstallation(e.db, e.box, models.NewInstallation{
		AccountID: accountID, Name: "shop-" + models.NewID()[:8], RateLimitPerMin: rateLimit,
	}, "whsec")
	require.NoError(e.t, err)
	return &created.Installation, created.APIKey.Secret
}

// otherInstallation creates a second account with its own installation.
func (e *env) otherInstallation() (*models.Installation, string) {
	e.t.Helper()
	acc, err := models.CreateAccount(e.db, "Other", 100)
	require.NoError(e.t, err)
	return e.addInstallation(acc.ID, 0)
}

// issueKey issues a plugin key of the main installation with exactly the given scopes.
func (e *env) issueKey(scopes ...string) string {
	e.t.Helper()
	k, err := models.IssueKey(e.db, models.KeyKindPlugin, e.account.ID, &e.inst.ID, "k", scopes, nil)
	require.NoError(e.t, err)
	return k.Secret
}

func keyID(t testing.TB, full string) string {
	t.Helper()
	_, id, _, ok := models.ParseKey(full)
	require.True(t, ok, "key %q does not parse", full)
	return id
}

// do sends a request to the router. body may be nil, a string, []byte or a value encoded as JSON.
func (e *env) do(method, target, key string, body any, headers ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(e.t, err)
		r = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, target, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return contract.ServeAndCheck(e.t, e.router, req) // validates the exchange against api/openapi.yaml
}

// p is a path under the plugin API base.
func p(path string) string { return plugin.Base + path }

func decode(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &m), "body: %s", rec.Body.String())
	return m
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// requireError checks the status and the exact envelope (without details) and returns the message.
func (e *env) requireError(rec *httptest.ResponseRecorder, status int, code string) string {
	e.t.Helper()
	msg, _ := e.checkEnvelope(rec, status, code, false)
	return msg
}

// requireErrorDetails is requireError for an envelope that carries details.
func (e *env) requireErrorDetails(rec *httptest.ResponseRecorder, status int, code string) (string, map[string]any) {
	e.t.Helper()
	msg, details := e.checkEnvelope(rec, status, code, true)
	d, ok := details.(map[string]any)
	require.True(e.t, ok, "details is %T, want an object", details)
	return msg, d
}

func (e *env) checkEnvelope(rec *httptest.ResponseRecorder, status int, code string, withDetails bool) (string, any) {
	t := e.t
	t.Helper()
	require.Equal(t, status, rec.Code, "body: %s", rec.Body.String())
	require.Contains(t, rec.Header().Get("Content-Type"), "application/json")
	top := decode(t, rec)
	require.Equal(t, []string{"error"}, keysOf(top), "body: %s", rec.Body.String())
	errObj, ok := top["error"].(map[string]any)
	require.True(t, ok, "error is not an object: %s", rec.Body.String())
	want := []string{"code", "doc_url", "message_i18n", "retryable"}
	if withDetails {
		want = []string{"code", "details", "doc_url", "message_i18n", "retryable"}
	}
	require.Equal(t, want, keysOf(errObj), "body: %s", rec.Body.String())
	require.Equal(t, code, errObj["code"])
	require.Equal(t, status == http.StatusTooManyRequests || status >= 500, errObj["retryable"], "retryable for %d", status)
	require.Equal(t, docsURL+"/plugin-api/errors/"+code, errObj["doc_url"])
	i18n, ok := errObj["message_i18n"].(map[string]any)
	require.True(t, ok, "message_i18n is not an object")
	en, ok := i18n["en"].(string)
	require.True(t, ok, "message_i18n.en is not a string")
	require.NotEmpty(t, strings.TrimSpace(en))
	// The doc_url of every error is served by the API.
	doc := httptest.NewRecorder()
	e.router.ServeHTTP(doc, httptest.NewRequest(http.MethodGet, "/docs/plugin-api/errors/"+code, nil))
	require.Equal(t, http.StatusOK, doc.Code, "docs for %q: %s", code, doc.Body.String())
	return en, errObj["details"]
}

// createUpload asks for an upload URL and returns the asset ID and the URL.
func (e *env) createUpload(key, filename, contentType string, size int) (string, string) {
	e.t.Helper()
	rec := e.do(http.MethodPost, p("/assets/upload"), key, map[string]any{
		"mode": "presigned", "filename": filename, "content_type": contentType, "size_bytes": size,
	})
	require.Equal(e.t, http.StatusCreated, rec.Code, rec.Body.String())
	m := decode(e.t, rec)
	id, _ := m["asset_id"].(string)
	u, _ := m["upload_url"].(string)
	require.NotEmpty(e.t, id)
	require.NotEmpty(e.t, u)
	return id, u
}

// put sends the bytes to a signed upload URL. contentLength < 0 sends the body without a length.
func (e *env) put(rawURL, contentType string, data []byte, contentLength int64) *httptest.ResponseRecorder {
	e.t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(e.t, err)
	req := httptest.NewRequest(http.MethodPut, u.RequestURI(), bytes.NewReader(data))
	req.ContentLength = contentLength
	if contentLength < 0 {
		req.Body = io.NopCloser(bytes.NewReader(data)) // unknown length, like a chunked upload
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return contract.ServeAndCheck(e.t, e.router, req) // validates the exchange against api/openapi.yaml
}

func (e *env) asset(id string) models.Asset {
	e.t.Helper()
	var a models.Asset
	require.NoError(e.t, e.db.Take(&a, "id = ?", id).Error)
	return a
}

// readyAsset stores a ready upload of the installation directly.
func (e *env) readyAsset(inst *models.Installation) models.Asset {
	e.t.Helper()
	now := time.Now().UTC()
	id := models.NewID()
	a := models.Asset{ID: id, AccountID: inst.AccountID, InstallationID: &inst.ID, Kind: models.AssetKindUpload,
		Status: status.AssetReady, Filename: "p.png", ContentType: "image/png", SizeBytes: 10,
		BlobKey: "uploads/" + inst.AccountID + "/" + id, Width: 4, Height: 4, CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.db.Create(&a).Error)
	return a
}

// product stores a product of the installation directly.
func (e *env) product(inst *models.Installation, ref string) models.Product {
	e.t.Helper()
	now := time.Now().UTC()
	pr := models.Product{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, ExternalRef: ref,
		DisplayName: "Product " + ref, CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.db.Create(&pr).Error)
	return pr
}

// packshot stores a packshot of the product with the given voting.
func (e *env) packshot(inst *models.Installation, productID, assetID, voting string) models.Packshot {
	e.t.Helper()
	now := time.Now().UTC()
	ps := models.Packshot{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, ProductID: productID,
		AssetID: assetID, Voting: voting, VotingAt: &now, CreatedAt: now}
	require.NoError(e.t, e.db.Create(&ps).Error)
	return ps
}

func (e *env) count(model any, where string, args ...any) int64 {
	e.t.Helper()
	var n int64
	require.NoError(e.t, e.db.Model(model).Where(where, args...).Count(&n).Error)
	return n
}

// withEngine rebuilds the handler's engine from its configuration as change leaves it (another
// Temporal client, for example).
func (e *env) withEngine(change func(*engine.Config)) {
	change(&e.engineConfig)
	e.handler.Engine = engine.New(e.engineConfig)
}
