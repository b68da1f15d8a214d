// Package testenv runs shotflow for end-to-end tests: the real gin router over httptest, a real
// Temporal dev server (bin/temporal), a real worker and a fresh PostgreSQL database.
package testenv

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/shotflow/shotflow/internal/app"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/testsupport/faultproxy"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// RepoRoot returns the directory holding go.mod, searching upwards from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// StartTemporal starts a Temporal dev server from bin/temporal with shotflow's search attributes.
// Call it once per test package (in TestMain) and Stop it at the end.
func StartTemporal(ctx context.Context) (*testsuite.DevServer, error) {
	return StartTemporalAt(ctx, "", "")
}

// StartTemporalAt is StartTemporal on a chosen host:port with a persistent SQLite file, so a test
// can stop the server and start it again with its workflows intact ("" for either: any free
// port, in memory).
func StartTemporalAt(ctx context.Context, hostPort, dbFile string) (*testsuite.DevServer, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	cli := filepath.Join(root, "bin", "temporal")
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Errorf("%s is missing: run `make test` (it installs the Temporal CLI) or `make temporal-cli`", cli)
	}
	var extra []string
	for _, spec := range workflows.SearchAttributeSpecs() {
		extra = append(extra, "--search-attribute", spec)
	}
	return testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath: cli,
		LogLevel:     "error",
		DBFilename:   dbFile,
		ClientOptions: &client.Options{
			HostPort:  hostPort,
			Namespace: "default",
			Logger:    log.NewStructuredLogger(slog.New(slog.DiscardHandler)),
		},
		ExtraArgs: extra,
	})
}

// Env is one running shotflow: its own database, task queue, HTTP server and worker.
type Env struct {
	App     *app.App
	DB      *testdb.DB // a direct connection to the database, for the test's own setup and checks
	BaseURL string
	Config  config.Config
	// DBProxy, with Options.ProxyDatabase, is the fault proxy between the app and its database.
	DBProxy *faultproxy.Proxy
	// Logs holds the app's log entries at warn level and above.
	Logs *observer.ObservedLogs
	// WorkerMetricsURL is the base URL of the worker's metrics listener (GET /metrics and
	// /healthz); it serves for the whole test, whether or not a worker runs.
	WorkerMetricsURL string

	t          *testing.T
	mu         sync.Mutex
	stopWorker context.CancelFunc
	workerDone chan struct{}
}

// Options tune New.
type Options struct {
	// Environment adds variables to the app's configuration, over testenv's own (Temporal TLS
	// settings, for example); Env.Config, and so every process a test starts, carries them too.
	Environment map[string]string
	// Configure may adjust the configuration before the app opens.
	Configure func(*config.Config)
	// Engine, when set, adjusts the engine's configuration before the app builds it.
	Engine func(*engine.Config)
	// NoWorker leaves the task queue without an in-process worker (the test runs its own).
	NoWorker bool
	// ProxyDatabase points the app's DATABASE_URL at a faultproxy (Env.DBProxy) in front of the
	// database, so a test can refuse or black-hole it; Env.DB stays a direct connection.
	ProxyDatabase bool
}

// New starts shotflow against the dev server and a fresh PostgreSQL database, and stops it at cleanup.
func New(t *testing.T, ts *testsuite.DevServer, opts Options) *Env {
	t.Helper()
	dbURL := testdb.MigratedPostgresURL(t)
	db := testdb.Open(t, dbURL)
	appDBURL := dbURL
	var proxy *faultproxy.Proxy
	if opts.ProxyDatabase {
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		if proxy, err = faultproxy.Start(u.Host); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proxy.Close() })
		u.Host = proxy.Addr()
		appDBURL = u.String()
	}
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	environ := map[string]string{
		"DATABASE_URL":        appDBURL,
		"TEMPORAL_ADDRESS":    ts.FrontendHostPort(),
		"TEMPORAL_TASK_QUEUE": "e2e-" + secrets.Token(6),
		"PUBLIC_BASE_URL":     base,
		"BLOB_URL":            "file://" + t.TempDir(),
		"SECRET_KEY":          secrets.NewMasterKey(),
		"SHUTDOWN_TIMEOUT":    "5s",
		"WORKER_METRICS_ADDR": "127.0.0.1:0",
	}
	maps.Copy(environ, opts.Environment)
	cfg, err := config.LoadFrom(environ)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	observed, logs := observer.New(zap.WarnLevel)
	logger := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel), zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, observed)
	})))
	a, err := app.Open(context.Background(), cfg, logger, app.Option{Engine: opts.Engine})
	if err != nil {
		t.Fatalf("testenv: open app: %v", err)
	}
	srv.Config.Handler = a.Handler()
	srv.Start()
	metricsAddr, stopMetrics, err := a.StartWorkerMetrics()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	// The app's configuration carries the effective Temporal address and namespace.
	e := &Env{App: a, DB: db, BaseURL: base, Config: a.Config, DBProxy: proxy, Logs: logs, WorkerMetricsURL: "http://" + metricsAddr.String(), t: t}
	if !opts.NoWorker {
		e.StartWorker()
	}
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			srv.Close()
			e.StopWorker()
			stopMetrics()
			a.Close()
		})
	})
	return e
}

// StartWorker starts a worker for this environment's task queue.
func (e *Env) StartWorker() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	e.mu.Lock()
	e.stopWorker, e.workerDone = cancel, done
	e.mu.Unlock()
	go func() {
		defer close(done)
		if err := e.App.RunWorker(ctx); err != nil {
			e.t.Errorf("testenv: worker: %v", err)
		}
	}()
}

// StopWorker stops the running worker, if any, and waits for it.
func (e *Env) StopWorker() {
	e.mu.Lock()
	stop, done := e.stopWorker, e.workerDone
	e.stopWorker, e.workerDone = nil, nil
	e.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// Tenant is an account with one plugin installation and its keys.
type Tenant struct {
	AccountID      string
	InstallationID string
	PluginKey      string
	ExternalKey    string
	WebhookSecret  string
}

// NewTenant creates an account with credits and an installation with every plugin scope.
func (e *Env) NewTenant(t *testing.T, credits int64) Tenant {
	t.Helper()
	acc, err := models.CreateAccount(e.DB, "tenant "+secrets.Token(4), credits)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := models.CreateInstallation(e.DB, e.App.Box, models.NewInstallation{
		AccountID: acc.ID, Name: "shop", RateLimitPerMin: 600,
	}, webhooks.NewSecret())
	if err != nil {
		t.Fatal(err)
	}
	ext, err := models.IssueKey(e.DB, models.KeyKindExternal, acc.ID, nil, "e2e", models.ExternalScopes, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Tenant{AccountID: acc.ID, InstallationID: inst.Installation.ID, PluginKey: inst.APIKey.Secret,
		ExternalKey: ext.Secret, WebhookSecret: inst.WebhookSecret}
}

// Eventually polls cond every 100 ms until it returns true or the timeout passes.
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
