package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/app"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/logging"
	"github.com/shotflow/shotflow/models"
)

// openApp loads the configuration from the environment and opens the shared dependencies.
func openApp(ctx context.Context, opts ...app.Option) (*app.App, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, err
	}
	log, err := logging.New(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return nil, err
	}
	return app.Open(ctx, cfg, log, opts...)
}

func runAPI(ctx context.Context) error {
	var opts []app.Option
	if os.Getenv("SHOTFLOW_TEST_CRASH_AFTER_COMMIT") == "1" {
		// Crash tests only: die like a killed process right after an order's commit, before its
		// workflow start, to show the outbox leaves nothing stranded.
		opts = append(opts, app.Option{Engine: func(c *engine.Config) {
			c.AfterCommit = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
		}})
	}
	a, err := openApp(ctx, opts...)
	if err != nil {
		return err
	}
	defer a.Close()
	_, stopProfiler, err := a.StartProfiler()
	if err != nil {
		return err
	}
	defer stopProfiler()
	return a.ServeHTTP(ctx, func(addr net.Addr) {
		a.Log.Info("API listening", zap.String("addr", addr.String()), zap.String("public_base_url", a.Config.PublicBaseURL))
	})
}

func runWorker(ctx context.Context) error {
	a, err := openApp(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	_, stopProfiler, err := a.StartProfiler()
	if err != nil {
		return err
	}
	defer stopProfiler()
	addr, stopMetrics, err := a.StartWorkerMetrics()
	if err != nil {
		return err
	}
	defer stopMetrics() // after RunWorker: /healthz answers 503 while the worker drains
	a.Log.Info("worker polling", zap.String("task_queue", a.Config.TemporalTaskQueue), zap.String("temporal", a.Config.TemporalAddress),
		zap.String("metrics", "http://"+addr.String()+"/metrics"))
	return a.RunWorker(ctx)
}

// runMigrate applies the pending migrations. It takes no arguments: there is no going down, nor
// to a chosen version.
func runMigrate(ctx context.Context, args []string, stdout interface{ Write([]byte) (int, error) }) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: migrate takes no arguments (migrations only go forward), got %q", errUsage, args)
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	applied, err := app.Migrate(ctx, cfg)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintf(stdout, "schema is up to date at version %d\n", models.LatestVersion())
		return nil
	}
	fmt.Fprintf(stdout, "applied migrations %v; schema is at version %d\n", applied, models.LatestVersion())
	return nil
}

func runHealthcheck(ctx context.Context, args []string) error {
	url := "http://127.0.0.1:8080/readyz"
	if len(args) > 0 {
		url = args[0]
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
