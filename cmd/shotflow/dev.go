package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/app"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/devserver"
	"github.com/shotflow/shotflow/internal/platform/logging"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/platform/temporalconn"
	"github.com/shotflow/shotflow/internal/reference"
	"github.com/shotflow/shotflow/workflows"
)

// DevCredentials is what `shotflow dev` writes to DATA_DIR/dev-credentials.json.
type DevCredentials struct {
	BaseURL        string `json:"base_url"`
	TemporalUIURL  string `json:"temporal_ui_url"`
	PluginAPIKey   string `json:"plugin_api_key"`
	InstallationID string `json:"installation_id"`
	ExternalAPIKey string `json:"external_api_key"`
	AccountID      string `json:"account_id"`
	WebhookSecret  string `json:"webhook_secret"`
	// Test keys (docs/test-mode.md): their records, credits and renders are test mode's.
	PluginTestAPIKey   string `json:"plugin_test_api_key"`
	ExternalTestAPIKey string `json:"external_test_api_key"`
	// PluginTestWebhookSecret signs the webhooks of the plugin test key's endpoints.
	PluginTestWebhookSecret string `json:"plugin_test_webhook_secret"`
}

// devConfig is the configuration of `shotflow dev`: the environment, with defaults that keep
// everything under DATA_DIR and on loopback.
func devConfig() (config.Config, error) {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	def := func(k, v string) {
		if env[k] == "" {
			env[k] = v
		}
	}
	def("DATA_DIR", ".data")
	def("HTTP_ADDR", "127.0.0.1:8080")
	def("DEV_TEMPORAL_PORT", "7233")
	def("DEV_TEMPORAL_UI_PORT", "8233")
	// Next to the API, on loopback: clear of the dev Temporal server's ports (7233, 8233 and free
	// ports it picks) and of a local Prometheus on 9090.
	def("WORKER_METRICS_ADDR", "127.0.0.1:8081")
	def("LOG_FORMAT", "console")
	def("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true") // a receiver on this machine can get the webhooks
	_, port, err := net.SplitHostPort(env["HTTP_ADDR"])
	if err != nil {
		return config.Config{}, fmt.Errorf("config: HTTP_ADDR=%q is invalid (host:port or :port)", env["HTTP_ADDR"])
	}
	def("PUBLIC_BASE_URL", "http://localhost:"+port)
	// dev talks plaintext to the Temporal server it starts, whatever address, profile, API key or
	// TLS settings the shell exports.
	env["TEMPORAL_ADDRESS"] = "127.0.0.1:" + env["DEV_TEMPORAL_PORT"]
	for _, name := range config.TemporalConnectionVariables() {
		delete(env, name)
	}
	def("TEMPORAL_NAMESPACE", temporalconn.DefaultNamespace) // the namespace dev creates on its server
	def("TEMPORAL_GRPC_COMPRESSION", "none")                 // its server is on loopback
	env["TEMPORAL_UI_URL"] = "http://localhost:" + env["DEV_TEMPORAL_UI_PORT"]
	cfg, err := config.LoadFrom(env)
	if err != nil {
		return cfg, err
	}
	if cfg.SecretKey == "" {
		master, err := masterKey(cfg, true)
		if err != nil {
			return cfg, err
		}
		cfg.SecretKey = base64.StdEncoding.EncodeToString(master)
	}
	return cfg, nil
}

func runDev(ctx context.Context, stdout io.Writer) error {
	err := dev(ctx, stdout)
	if err != nil && ctx.Err() != nil {
		return nil // interrupted during start-up: stopping is what was asked for
	}
	return err
}

func dev(ctx context.Context, stdout io.Writer) error {
	cfg, err := devConfig()
	if err != nil {
		return err
	}
	log, err := logging.New(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	defer log.Sync()
	if err := checkPortFree(cfg.HTTPAddr, "HTTP_ADDR"); err != nil {
		return err
	}
	if err := checkPortFree(cfg.WorkerMetricsAddr, "WORKER_METRICS_ADDR"); err != nil {
		return err
	}

	// Database first: a broken schema should stop us before anything is started.
	applied, err := app.Migrate(ctx, cfg)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		log.Info("applied migrations", zap.Ints("versions", applied))
	}
	credsPath := filepath.Join(cfg.DataDir, "dev-credentials.json")
	creds, err := ensureDemo(ctx, cfg, credsPath)
	if err != nil {
		return fmt.Errorf("seed demo data: %w", err)
	}

	log.Info("starting Temporal dev server", zap.String("cli", cfg.TemporalCLIPath))
	ts, err := devserver.Start(ctx, devserver.Options{
		CLIPath:          cfg.TemporalCLIPath,
		DBFile:           filepath.Join(cfg.DataDir, "temporal.db"),
		Port:             cfg.DevTemporalPort,
		UIPort:           cfg.DevTemporalUIPort,
		Namespace:        cfg.TemporalNamespace,
		SearchAttributes: workflows.SearchAttributeSpecs(),
		LogFile:          filepath.Join(cfg.DataDir, "temporal.log"),
	})
	if err != nil {
		return err
	}
	defer func() {
		log.Info("stopping Temporal dev server")
		if err := ts.Stop(15 * time.Second); err != nil {
			log.Warn("temporal dev server", zap.Error(err))
		}
	}()

	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if _, err := reference.RenderMissing(ctx, a.Blobs); err != nil { // images of the seeded marketplace and presets
		return err
	}

	// The API and the worker share this process: the metrics they share go on the worker's
	// listener alone, so that scraping both listeners counts them once.
	a.Metrics.OneProcess()
	metricsAddr, stopMetrics, err := a.StartWorkerMetrics()
	if err != nil {
		return err
	}
	defer stopMetrics()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs <- a.RunWorker(runCtx)
	}()
	go func() {
		defer wg.Done()
		errs <- a.ServeHTTP(runCtx, func(net.Addr) { printBanner(stdout, creds, credsPath, "http://"+metricsAddr.String()) })
	}()
	var firstErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case <-ts.Exited():
		firstErr = errors.New("the Temporal dev server stopped unexpectedly; see " + filepath.Join(cfg.DataDir, "temporal.log"))
	case firstErr = <-errs:
	}
	cancel()
	wg.Wait()
	return firstErr
}

func checkPortFree(addr, variable string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (is another `shotflow dev` running? set %s): %w", addr, variable, err)
	}
	return ln.Close()
}

// ensureDemo returns the demo credentials: the demo tenant saved in the credentials file while its
// keys still authenticate, or a new one created on the first run (engine.Accounts.EnsureDemoTenant).
func ensureDemo(ctx context.Context, cfg config.Config, path string) (DevCredentials, error) {
	creds := DevCredentials{BaseURL: cfg.PublicBaseURL, TemporalUIURL: cfg.TemporalUIURL}
	var known engine.DemoTenant
	if data, err := os.ReadFile(path); err == nil {
		var saved DevCredentials
		if json.Unmarshal(data, &saved) == nil {
			known = engine.DemoTenant{AccountID: saved.AccountID, ExternalAPIKey: saved.ExternalAPIKey, InstallationID: saved.InstallationID,
				PluginAPIKey: saved.PluginAPIKey, WebhookSecret: saved.WebhookSecret,
				PluginTestAPIKey: saved.PluginTestAPIKey, ExternalTestAPIKey: saved.ExternalTestAPIKey}
		}
	}
	master, err := masterKey(cfg, false)
	if err != nil {
		return creds, err
	}
	box, err := secrets.NewBox(master)
	if err != nil {
		return creds, err
	}
	tools, err := app.OpenTools(cfg)
	if err != nil {
		return creds, err
	}
	defer tools.Close()
	t, err := tools.Engine(nil, nil).Accounts.EnsureDemoTenant(ctx, box, engine.DemoTenantRequest{
		Known: known, Credits: cfg.DevSeedCredits, RateLimitPerMin: cfg.RateLimitPerMinute,
	})
	if err != nil {
		return creds, err
	}
	creds.AccountID, creds.ExternalAPIKey, creds.InstallationID = t.AccountID, t.ExternalAPIKey, t.InstallationID
	creds.PluginAPIKey, creds.WebhookSecret = t.PluginAPIKey, t.WebhookSecret
	creds.PluginTestAPIKey, creds.ExternalTestAPIKey = t.PluginTestAPIKey, t.ExternalTestAPIKey
	creds.PluginTestWebhookSecret = t.PluginTestWebhookSecret
	return creds, writeCredentials(path, creds)
}

func writeCredentials(path string, c DevCredentials) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o600)
}

func printBanner(w io.Writer, c DevCredentials, path, workerMetrics string) {
	fmt.Fprintf(w, `
shotflow is running (Ctrl+C stops it).

  API base URL      %s
  Temporal UI       %s
  Metrics           %s/metrics (API), %s/metrics and /healthz (worker)
  Plugin API key    %s
  Installation ID   %s
  External API key  %s
  Account ID        %s
  Webhook secret    %s
  Plugin test key   %s  (its webhooks' secret: %s)
  External test key %s

  These are saved in %s. Try:
    curl -s -H "X-Api-Key: %s" %s/api/v1/plugin/me

`, c.BaseURL, c.TemporalUIURL, c.BaseURL, workerMetrics, c.PluginAPIKey, c.InstallationID, c.ExternalAPIKey, c.AccountID, c.WebhookSecret, c.PluginTestAPIKey, c.PluginTestWebhookSecret, c.ExternalTestAPIKey, path, c.PluginAPIKey, c.BaseURL)
}
