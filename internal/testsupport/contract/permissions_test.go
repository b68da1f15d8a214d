package contract_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// TestDocumentedPermissionsAreEnforced checks each operation's x-permissions against the router:
// a key without any of them gets 403, a key with any one of them does not get 401 or 403, and an
// operation with an empty list answers any valid key. Every exchange is validated against the
// document as well.
func TestDocumentedPermissionsAreEnforced(t *testing.T) {
	t.Parallel()
	doc, err := contract.Load()
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, 10000)
	router, issue := srv.router, srv.issue
	var allPerms []string
	for _, perms := range plugin.ScopePermissions {
		allPerms = append(allPerms, perms...)
	}
	slices.Sort(allPerms)
	allPerms = slices.Compact(allPerms)

	send := func(t *testing.T, method, target, key string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, target, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", key)
		return contract.ServeAndCheck(t, router, req)
	}
	checked := 0
	for _, o := range operations(doc) {
		if o.op.Security != nil && len(*o.op.Security) == 0 {
			continue // signed URLs, error docs, health checks, this document
		}
		perms := []string{}
		for _, p := range o.op.Extensions["x-permissions"].([]any) {
			perms = append(perms, p.(string))
		}
		target := pathParam.ReplaceAllStringFunc(o.fullPath, func(string) string { return models.NewID() })
		checked++
		t.Run(o.method+" "+o.path, func(t *testing.T) {
			if len(perms) == 0 {
				if rec := send(t, o.method, target, issue()); rec.Code == http.StatusForbidden || rec.Code == http.StatusUnauthorized {
					t.Errorf("x-permissions is empty (any valid key), but a key without scopes got %d: %s", rec.Code, rec.Body.String())
				}
				return
			}
			var others []string
			for _, p := range allPerms {
				if !slices.Contains(perms, p) {
					others = append(others, p)
				}
			}
			if rec := send(t, o.method, target, issue(others...)); rec.Code != http.StatusForbidden {
				t.Errorf("a key with every permission but %v got %d, want 403: %s", perms, rec.Code, rec.Body.String())
			}
			for _, p := range perms {
				if rec := send(t, o.method, target, issue(p)); rec.Code == http.StatusForbidden || rec.Code == http.StatusUnauthorized {
					t.Errorf("x-permissions lists %s, but a key with it got %d: %s", p, rec.Code, rec.Body.String())
				}
			}
		})
	}
	if checked < 25 {
		t.Fatalf("only %d operations checked", checked)
	}
}

// server is the production router over a fresh SQLite database with one installation.
type server struct {
	ready  error // what the readiness check reports
	router *api.Router
	db     *gorm.DB
	signer *urlsign.Signer
	blobs  *blobstore.Store
	acc    *models.Account
	inst   *models.Installation
}

func newServer(t *testing.T, rateLimit int) *server {
	t.Helper()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	d := apitest.NewDeps(t, db, apitest.Options{})
	h := &plugin.Handler{
		Engine: d.Engine, Signer: d.Signer,
		Limiter: d.Limiter, Slots: d.Slots, Log: zap.NewNop(), DocsURL: "https://docs.example.test",
		DefaultRateLimit: rateLimit, DownloadTTL: 168 * time.Hour, UploadTTL: 2 * time.Hour, Secrets: d.Box,
	}
	s := &server{db: db, signer: d.Signer, blobs: d.Blobs}
	s.router = api.NewRouter(api.Deps{Engine: h.Engine, Blobs: d.Blobs, Signer: d.Signer, Log: zap.NewNop(),
		Ready: func(context.Context) error { return s.ready }}, h)
	var err error
	if s.acc, err = models.CreateAccount(db, "Acme", 100); err != nil {
		t.Fatal(err)
	}
	inst, err := models.CreateInstallation(db, d.Box, models.NewInstallation{AccountID: s.acc.ID, Name: "shop", RateLimitPerMin: rateLimit}, "whsec")
	if err != nil {
		t.Fatal(err)
	}
	s.inst = &inst.Installation
	return s
}

// issue makes a plugin key of the installation with exactly the scopes.
func (s *server) issue(scopes ...string) string {
	k, err := models.IssueKey(s.db, models.KeyKindPlugin, s.acc.ID, &s.inst.ID, "k", scopes, nil)
	if err != nil {
		panic(err)
	}
	return k.Secret
}
