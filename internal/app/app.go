// Package app wires shotflow's processes from a Config: database, blob store, Temporal client,
// providers, the HTTP server and the worker. `shotflow dev`, `api` and `worker` all start here.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/media/imageprep"
	"github.com/shotflow/shotflow/internal/media/render"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/linger"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/platform/temporalconn"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/fal"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/internal/providers/openai"
	"github.com/shotflow/shotflow/internal/providers/sim"
	"github.com/shotflow/shotflow/internal/providers/testmode"
	"github.com/shotflow/shotflow/internal/reference"
	"github.com/shotflow/shotflow/internal/retention"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/worker"
	"github.com/shotflow/shotflow/workflows"
)

// App is one running shotflow process's dependencies.
type App struct {
	// Config is the process's configuration, with the effective Temporal address and namespace.
	Config    config.Config
	Log       *zap.Logger
	Store     *models.Store
	Blobs     *blobstore.Store
	Temporal  client.Client
	Generator *providers.Registry
	Signer    *urlsign.Signer
	// Files makes the download URLs of stored files: the store's with FILE_URLS=store, else the API's.
	Files   *fileurl.Maker
	Box     *secrets.Box
	Limiter ratelimit.Limiter
	Slots   ratelimit.Slots // requests of a key open at once; in Limiter's Redis when REDIS_URL is set
	Engine  *engine.Engine
	// EngineConfig is what Engine was built from.
	EngineConfig engine.Config
	Metrics      *metrics.Metrics

	closers []func() error
	health  *worker.Health // whether RunWorker polls, for the worker's /healthz
}

// Option adjusts what Open builds.
type Option struct {
	// Engine, when set, adjusts the engine's configuration before the engine is built (tests
	// shorten the job retry schedule with it).
	Engine func(*engine.Config)
}

// Open connects everything the processes share. The database must be at the schema version this
// binary knows; `shotflow migrate` gets it there.
func Open(ctx context.Context, cfg config.Config, log *zap.Logger, opts ...Option) (*App, error) {
	master := cfg.SecretKeyBytes()
	if master == nil {
		return nil, errors.New("config: SECRET_KEY must be set (base64 of 32 random bytes, the same in every api and worker process)")
	}
	// Resolved first, so a bad Temporal setting stops the process before anything is opened; the
	// effective address and namespace replace the configured ones (which may be empty).
	temporal, err := temporalconn.Resolve(cfg)
	if err != nil {
		return nil, err
	}
	cfg.TemporalAddress, cfg.TemporalNamespace = temporal.Options.HostPort, temporal.Options.Namespace
	a := &App{Config: cfg, Log: log, Metrics: metrics.New(), health: &worker.Health{}}
	a.closers = append(a.closers, a.Metrics.Close)
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()

	store, err := models.OpenStore(cfg.DatabaseURL, models.OpenOptions{MaxOpenConns: cfg.DatabaseMaxOpenConns,
		ConnectTimeout: cfg.DatabaseConnectTimeout, StatementTimeout: cfg.DatabaseStatementTimeout})
	if err != nil {
		return nil, err
	}
	a.Store = store
	a.closers = append(a.closers, store.Close)
	if err := store.CheckSchema(); err != nil {
		return nil, err
	}

	if a.Blobs, err = blobstore.Open(ctx, cfg.BlobURL); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.Blobs.Close)
	// The shared marketplace and the system presets: idempotent, safe from many processes at once.
	// Their images are drawn when first downloaded (`shotflow dev` draws them all at start).
	if err := reference.Seed(ctx, store, a.Blobs, false); err != nil {
		return nil, err
	}

	if a.Generator, err = NewGenerator(cfg); err != nil {
		return nil, err
	}
	a.Signer = NewSigner(cfg, master)
	if a.Files, err = NewFileURLs(cfg, a.Signer, a.Blobs); err != nil {
		return nil, err
	}
	if a.Box, err = secrets.NewBox(master); err != nil {
		return nil, err
	}
	limits, err := ratelimit.Open(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("rate limiter: %w", err)
	}
	a.Limiter, a.Slots = limits.Limiter, limits.Slots
	a.closers = append(a.closers, limits.Close)

	// The SDK's metrics (task latencies, pollers, sticky cache) appear on both /metrics.
	temporal.Options.MetricsHandler = a.Metrics.Temporal()
	if a.Temporal, err = temporal.Dial(ctx, log); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() error { a.Temporal.Close(); return nil })
	a.EngineConfig = engineConfig(cfg, store, a.Temporal, log, a.Signer)
	a.EngineConfig.Models, a.EngineConfig.Metrics, a.EngineConfig.Blobs = a.Generator, a.Metrics, a.Blobs
	a.EngineConfig.Secrets, a.EngineConfig.Files = a.Box, a.Files
	for _, opt := range opts {
		if opt.Engine != nil {
			opt.Engine(&a.EngineConfig)
		}
	}
	a.Engine = engine.New(a.EngineConfig)
	ok = true
	return a, nil
}

// NewFileURLs makes the download URLs of stored files as FILE_URLS says (config.EffectiveFileURLs):
// the store's (presigned GETs of blobs, or URLs under BLOB_PUBLIC_BASE_URL), or the API's.
func NewFileURLs(cfg config.Config, signer *urlsign.Signer, blobs *blobstore.Store) (*fileurl.Maker, error) {
	if cfg.EffectiveFileURLs() != fileurl.ModeStore {
		return fileurl.API(signer), nil
	}
	var store fileurl.Presigner
	if blobs.CanSign() {
		store = blobs
	}
	return fileurl.Store(signer, store, cfg.BlobPublicBaseURL)
}

// NewSigner signs and checks the URLs of files with the key derived from the master key.
func NewSigner(cfg config.Config, master []byte) *urlsign.Signer {
	return urlsign.New(secrets.Derive(master, secrets.PurposeURLSigning), cfg.PublicBaseURL)
}

// sceneryCacheImages is how many decoded scene images the local provider keeps (a 2048-pixel
// scene is 16 MiB decoded): enough for the sessions a worker runs at once, which share theirs.
const sceneryCacheImages = 16

// Providers returns the generation providers the configuration enables: the local studio always
// (with new caches of matted inputs and decoded scenes, which the sim provider shares), the sim provider when
// SIM_PROVIDER is set, and each hosted provider whose API key is set.
func Providers(cfg config.Config) map[string]providers.Provider {
	studio := local.Provider{VideoEncoder: videoEncoder(cfg.VideoEncoder), Mattes: render.NewMatteCache(render.MatteCacheBytes),
		Sceneries: local.NewSceneryCache(sceneryCacheImages)}
	enabled := map[string]providers.Provider{local.Name: studio}
	if cfg.SimProvider {
		enabled[sim.Name] = sim.Provider{Local: studio}
	}
	if cfg.OpenAIAPIKey != "" {
		enabled[openai.Name] = openai.New(openai.Config{APIKey: cfg.OpenAIAPIKey, BaseURL: cfg.OpenAIBaseURL})
	}
	if cfg.FalKey != "" {
		enabled[fal.Name] = fal.New(fal.Config{APIKey: cfg.FalKey, QueueURL: cfg.FalQueueURL})
	}
	return enabled
}

// NewGenerator is the registry of the seed catalog over the configured providers, with
// DEFAULT_PROVIDER as its default; it fails when that provider is not configured.
func NewGenerator(cfg config.Config) (*providers.Registry, error) {
	catalog, err := catalog.Load()
	if err != nil {
		return nil, err
	}
	enabled := Providers(cfg)
	if _, ok := enabled[cfg.DefaultProvider]; !ok {
		return nil, fmt.Errorf("DEFAULT_PROVIDER %q is not configured: set its key (or SIM_PROVIDER=true for sim)", cfg.DefaultProvider)
	}
	return providers.NewRegistry(catalog, enabled, cfg.DefaultProvider)
}

// videoEncoder maps VIDEO_ENCODER to the local provider's setting ("" chooses by itself).
func videoEncoder(v string) string {
	if v == "auto" {
		return ""
	}
	return v
}

// ProviderLimits are the worker throttles of the configured providers, sorted by provider.
func (a *App) ProviderLimits() []worker.ProviderLimits {
	names := a.Generator.Providers()
	slices.Sort(names)
	out := make([]worker.ProviderLimits, 0, len(names))
	for _, name := range names {
		out = append(out, worker.ProviderLimits{
			Provider:      name,
			RatePerSecond: a.Config.ProviderRateLimits[name],
			Concurrency:   cmp.Or(a.Config.ProviderConcurrency[name], a.Config.WorkerActivityConcurrency),
		})
	}
	return out
}

// Close releases everything Open acquired, newest first.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil {
			a.Log.Warn("close", zap.Error(err))
		}
	}
	a.closers = nil
}

// Handler returns the HTTP handler of the API.
func (a *App) Handler() http.Handler {
	p := &plugin.Handler{
		Engine: a.Engine, Signer: a.Signer, Limiter: a.Limiter, Slots: a.Slots,
		Log: a.Log, DocsURL: a.Config.EffectiveDocsURL(), DefaultRateLimit: a.Config.RateLimitPerMinute,
		DownloadTTL: a.Config.DownloadURLTTL, UploadTTL: a.Config.UploadURLTTL, SubProcessors: a.subProcessors(),
		Secrets: a.Box, Files: a.Files,
	}
	if a.Files.Mode() == fileurl.ModeStore && a.Blobs.CanSign() {
		p.Uploads = a.Blobs // uploads go straight to the store
	}
	x := &external.Handler{Engine: a.Engine, Limiter: a.Limiter, Slots: a.Slots, Signer: a.Signer, Files: a.Files, Log: a.Log,
		DownloadTTL: a.Config.DownloadURLTTL, Secrets: a.Box}
	return api.NewRouter(api.Deps{Engine: a.Engine, Blobs: a.Blobs, Signer: a.Signer, Log: a.Log, Ready: a.Ready, External: x,
		RequestTimeout: a.Config.RequestTimeout, UploadTimeout: a.Config.UploadTimeout, Metrics: a.Metrics}, p)
}

// subProcessors lists the third parties the configured providers and storage send data to.
func (a *App) subProcessors() []plugin.SubProcessor {
	out := []plugin.SubProcessor{}
	for _, name := range a.Generator.Providers() {
		if name == "local" || name == sim.Name {
			continue // renders inside this deployment
		}
		out = append(out, plugin.SubProcessor{Name: name, Purpose: "image and video generation", Location: "provider region"})
	}
	return out
}

// Ready checks the database, the blob store and Temporal. Its error is an
// *unavailable.DependencyError naming the first one that fails.
func (a *App) Ready(ctx context.Context) error {
	if err := a.Store.Ping(ctx); err != nil {
		return &unavailable.DependencyError{Dependency: "database", Err: err}
	}
	if err := a.Blobs.Ping(ctx); err != nil {
		return &unavailable.DependencyError{Dependency: "blob store", Err: err}
	}
	if _, err := a.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return &unavailable.DependencyError{Dependency: "temporal", Err: err}
	}
	return nil
}

// ServeHTTP serves the API on cfg.HTTPAddr until ctx ends, then drains requests for up to
// ShutdownTimeout. ready, when not nil, receives the bound address once listening.
func (a *App) ServeHTTP(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := net.Listen("tcp", a.Config.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.Config.HTTPAddr, err)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	// A stopping API answers its held requests at once and tells its event streams to reconnect
	// (to another process), so that they do not hold the drain up.
	stopFeed := context.AfterFunc(ctx, a.Engine.Feed.Stop)
	defer stopFeed()
	err = serveHTTP(ctx, ln, a.Handler(), drainTimeout(a.Config), a.Log)
	// The drained requests' workflow starts are marked before the process goes.
	a.Engine.Outbox.FlushStartMarks()
	return err
}

// drainTimeout is how long a stopping API waits for the requests under way: SHUTDOWN_TIMEOUT, but
// never less than REQUEST_TIMEOUT and a second to answer, so that a drain cuts no request still
// within its deadline (a request that waits that long answers 503 by then).
func drainTimeout(cfg config.Config) time.Duration {
	return max(cfg.ShutdownTimeout, cfg.RequestTimeout+time.Second)
}

// serveHTTP serves h on ln until ctx ends, then drains the requests under way for at most drain.
// A connection closed before its request was read whole (a body refused with 413) lingers, so that
// a client still sending reads its answer instead of a connection reset. Every request reaches h,
// "OPTIONS *" included, which net/http would otherwise answer itself, out of the router's
// middleware (no request ID, no access line, not counted): the router answers it (api.Router).
// So is a head longer than the router accepts (api.MaxHeaderBytes): the server reads up to
// api.ServerMaxHeaderBytes, refusing only a longer one itself.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, drain time.Duration, log *zap.Logger) error {
	srv := &http.Server{
		Handler:                      h,
		DisableGeneralOptionsHandler: true,
		MaxHeaderBytes:               api.ServerMaxHeaderBytes,
		ReadHeaderTimeout:            10 * time.Second,
		IdleTimeout:                  2 * time.Minute,
		ErrorLog:                     zap.NewStdLog(log.Named("http")),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(linger.New(ln)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	log.Info("draining HTTP requests", zap.Duration("for_at_most", drain))
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// Activities returns the activity implementations bound to this process's dependencies.
func (a *App) Activities() *activities.Activities {
	studio, _ := a.Generator.Provider(local.Name) // always configured (Providers)
	return &activities.Activities{Store: a.Store, Blobs: a.Blobs, Generator: a.Generator, Log: a.Log, LongEdge: a.Config.RenderLongEdge,
		TestStudio: testmode.Studio{Local: studio},
		Prepare:    imageprep.Options{MinLongEdge: a.Config.InputMinLongEdge},
		Secrets:    a.Box, Signer: a.Signer, Files: a.Files, DownloadTTL: a.Config.DownloadURLTTL,
		Webhooks:   webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: a.Config.WebhookAllowPrivateNetworks}),
		Deliveries: a.Engine.Outbox, DisableAfter: a.Config.WebhookDisableAfter,
		Metrics: a.Metrics}
}

// Purger returns the retention sweep of this process's database and blob store: output files,
// Idempotency-Key records, the webhook log and ended orders' change feed.
func (a *App) Purger() *retention.Purger {
	return &retention.Purger{Store: a.Store, Blobs: a.Blobs, Log: a.Log, Retention: a.Config.OutputRetention,
		WebhookLogRetention: a.Config.WebhookLogRetention, OrderEventsRetention: a.Config.OrderEventsRetention, Metrics: a.Metrics}
}

// StartWorkerMetrics listens on WORKER_METRICS_ADDR and serves the worker's GET /metrics
// (shotflow's worker metrics, the process's and the Temporal SDK's) and GET /healthz (200 while
// RunWorker polls, 503 before and after) until stop is called. Start it before RunWorker and stop
// it after RunWorker returns, so that the draining worker still answers 503.
func (a *App) StartWorkerMetrics() (addr net.Addr, stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Metrics.WorkerHandler())
	mux.Handle("GET /healthz", a.health)
	return a.serveSide("WORKER_METRICS_ADDR", a.Config.WorkerMetricsAddr, "metrics", mux)
}

// StartProfiler serves Go's profiler (net/http/pprof under /debug/pprof/) on PPROF_ADDR until
// stop is called; with PPROF_ADDR empty it serves nothing (addr is nil) and stop does nothing.
func (a *App) StartProfiler() (addr net.Addr, stop func(), err error) {
	if a.Config.PprofAddr == "" {
		return nil, func() {}, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	addr, stop, err = a.serveSide("PPROF_ADDR", a.Config.PprofAddr, "pprof", mux)
	if err == nil {
		a.Log.Info("profiler listening", zap.String("addr", "http://"+addr.String()+"/debug/pprof/"))
	}
	return addr, stop, err
}

// serveSide listens on addr (the value of the setting named setting) and serves handler there, off
// the API's router, until stop is called; stop returns once the server has stopped. name names the
// listener in its log lines. handler answers every request, "OPTIONS *" too (an http.ServeMux
// answers it 400), so that the listener answers only what it serves.
func (a *App) serveSide(setting, addr, name string, handler http.Handler) (net.Addr, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s %s: %w", setting, addr, err)
	}
	srv := &http.Server{Handler: handler, DisableGeneralOptionsHandler: true, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: zap.NewStdLog(a.Log.Named(name))}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.Log.Error(name+" listener", zap.Error(err))
		}
	}()
	return ln.Addr(), func() {
		_ = srv.Close()
		<-served
	}, nil
}

// RunWorker polls the task queue, sweeps unstarted orders, reports stranded jobs and purges outputs
// past their retention until ctx ends, then stops the worker, letting running activities finish
// within ShutdownTimeout. A worker that stops for good on its own (a fatal error) stops it too,
// and RunWorker returns that error.
func (a *App) RunWorker(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	missing, err := worker.MissingSearchAttributes(lctx, a.Temporal, a.Config.TemporalNamespace)
	cancel()
	switch {
	case err != nil:
		a.Log.Warn("could not check the namespace's search attributes; make sure they are registered", zap.Error(err),
			zap.Strings("search_attributes", workflows.SearchAttributeSpecs()))
	case len(missing) > 0:
		return worker.MissingSearchAttributesError(a.Config.TemporalNamespace, missing)
	}
	fatal := make(chan error, 1)
	w := worker.New(a.Temporal, a.Activities(), worker.Options{
		TaskQueue: a.Config.TemporalTaskQueue, MaxConcurrentActivity: a.Config.WorkerActivityConcurrency,
		StopTimeout: a.Config.ShutdownTimeout, Providers: a.ProviderLimits(),
		OnFatalError: func(err error) {
			a.health.SetPolling(false)
			select {
			case fatal <- err:
			default:
			}
		},
	})
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	a.health.SetPolling(true)
	sweepCtx, stopSweep := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Engine.Outbox.Sweep(sweepCtx, a.Config.OutboxSweepInterval, a.Config.OutboxStartAfter)
	}()
	deadlines := make(chan struct{})
	go func() {
		defer close(deadlines)
		a.Engine.Jobs.SweepDeadlines(sweepCtx, a.Config.OutboxSweepInterval)
	}()
	purged := make(chan struct{})
	go func() {
		defer close(purged)
		a.Purger().Run(sweepCtx, a.Config.RetentionSweepInterval)
	}()
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		a.Engine.Support.ReportStragglers(sweepCtx, a.Config.StragglerSweepInterval, a.Config.StragglerAge)
	}()
	var stopped error
	select {
	case <-ctx.Done():
	case err := <-fatal:
		stopped = fmt.Errorf("the worker stopped: %w", err)
		a.Log.Error("worker stopped polling", zap.Error(err))
	}
	a.health.SetPolling(false)
	stopSweep()
	<-done
	<-deadlines
	<-purged
	<-reported
	a.Log.Info("stopping worker")
	w.Stop()
	return stopped
}
