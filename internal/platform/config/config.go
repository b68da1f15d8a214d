// Package config loads and validates shotflow's configuration from the environment.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/go-playground/validator/v10"
)

// Config is every setting of every shotflow process. Each field is read from the environment
// variable named in its env tag; the README lists them all.
type Config struct {
	// HTTPAddr is the listen address of the HTTP API.
	HTTPAddr string `env:"HTTP_ADDR" envDefault:":8080" validate:"required,listen_addr"`
	// PublicBaseURL is the URL clients use to reach the API; signed upload and download URLs start with it.
	PublicBaseURL string `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080" validate:"required,http_url"`
	// DocsURL is where error doc_url links point; empty means PublicBaseURL + "/docs".
	DocsURL string `env:"DOCS_URL" validate:"omitempty,http_url"`

	// DatabaseURL selects the database: postgres://… or sqlite://path/to/file.db; unset, the
	// embedded one under DataDir (sqlite://DATA_DIR/shotflow.db), for every command alike.
	DatabaseURL string `env:"DATABASE_URL" validate:"required,database_url"`
	// DatabaseMaxOpenConns caps the connection pool (Postgres; SQLite always uses one writer).
	DatabaseMaxOpenConns int `env:"DATABASE_MAX_OPEN_CONNS" envDefault:"20" validate:"min=1,max=1000"`
	// DatabaseConnectTimeout bounds opening a PostgreSQL connection (its connect_timeout, unless
	// DATABASE_URL sets one).
	DatabaseConnectTimeout time.Duration `env:"DATABASE_CONNECT_TIMEOUT" envDefault:"5s" validate:"min=1s,max=5m"`
	// DatabaseStatementTimeout bounds each PostgreSQL statement of the api and worker processes
	// (statement_timeout, unless DATABASE_URL sets one); 0 leaves statements unbounded.
	DatabaseStatementTimeout time.Duration `env:"DATABASE_STATEMENT_TIMEOUT" envDefault:"30s" validate:"min=0,max=1h"`

	// RequestTimeout is how long an HTTP request may wait for anything (a dependency, the next
	// bytes of its body, or its client to take the next bytes of its answer) and work after its
	// body arrived; past it the API answers 503.
	RequestTimeout time.Duration `env:"REQUEST_TIMEOUT" envDefault:"30s" validate:"min=1s,max=10m"`
	// UploadTimeout caps the whole of any HTTP request, reached only by uploads whose bytes keep
	// arriving slowly and downloads whose client keeps reading slowly.
	UploadTimeout time.Duration `env:"UPLOAD_TIMEOUT" envDefault:"15m" validate:"gtefield=RequestTimeout,max=2h"`

	// TemporalAddress is the host:port of the Temporal frontend. Empty means the Temporal profile's
	// address, else 127.0.0.1:7233 (internal/platform/temporalconn resolves it).
	TemporalAddress string `env:"TEMPORAL_ADDRESS" validate:"omitempty,host_port"`
	// TemporalNamespace is the Temporal namespace of every shotflow workflow. Empty means the
	// Temporal profile's namespace, else "default".
	TemporalNamespace string `env:"TEMPORAL_NAMESPACE"`
	// TemporalGRPCCompression is how the Temporal client compresses its requests (the server
	// answers alike): gzip, the SDK's default, saves bandwidth to a distant frontend; none saves
	// both sides the CPU where bandwidth is free (the same host or network).
	TemporalGRPCCompression string `env:"TEMPORAL_GRPC_COMPRESSION" envDefault:"gzip" validate:"oneof=gzip none"`
	// TemporalConnection is how the Temporal client authenticates and encrypts: a profile, an API
	// key, TLS and mTLS.
	TemporalConnection TemporalConnection
	// TemporalTaskQueue is the task queue shared by the API (starter) and the workers.
	TemporalTaskQueue string `env:"TEMPORAL_TASK_QUEUE" envDefault:"shotflow" validate:"required"`
	// TemporalUIURL is the base URL of the Temporal Web UI, used in operator links.
	TemporalUIURL string `env:"TEMPORAL_UI_URL" envDefault:"http://localhost:8233" validate:"required,http_url"`

	// BlobURL is the gocloud.dev bucket URL for uploads and generated files (file:///dir or
	// s3://bucket?…); unset, a folder under DataDir (file://DATA_DIR/blobs).
	BlobURL string `env:"BLOB_URL" validate:"required,blob_url"`
	// FileURLs is how clients send uploads and fetch files: "store" straight to and from the bucket
	// (presigned PUTs and GETs of an s3:// bucket, or downloads under BlobPublicBaseURL), "api"
	// through the API's signed routes, which stream the bytes. Unset: store for an s3:// bucket
	// whose presigned URLs last DOWNLOAD_URL_TTL (seven days at most) or with BlobPublicBaseURL,
	// else api (docs/files.md).
	FileURLs string `env:"FILE_URLS" validate:"omitempty,oneof=api store"`
	// BlobPublicBaseURL, with FILE_URLS=store, is a public base (a CDN) that serves the bucket's
	// keys: download URLs are base/key, unsigned.
	BlobPublicBaseURL string `env:"BLOB_PUBLIC_BASE_URL" validate:"omitempty,http_url"`
	// SecretKey is the base64 master key for signed URLs and secrets encrypted at rest (32 bytes).
	SecretKey string `env:"SECRET_KEY" validate:"omitempty,secret_key"`

	// DownloadURLTTL is how long a signed download URL stays valid (the spec asks for at least 7 days).
	DownloadURLTTL time.Duration `env:"DOWNLOAD_URL_TTL" envDefault:"168h" validate:"min=168h"`
	// UploadURLTTL is how long a presigned upload URL accepts the PUT.
	UploadURLTTL time.Duration `env:"UPLOAD_URL_TTL" envDefault:"2h" validate:"min=1m,max=24h"`

	// RateLimitPerMinute is the default request limit of a new installation's key.
	RateLimitPerMinute int `env:"RATE_LIMIT_PER_MINUTE" envDefault:"60" validate:"min=1,max=100000"`
	// RedisURL, when set, shares rate-limit budgets between several API processes.
	RedisURL string `env:"REDIS_URL" validate:"omitempty,url"`

	// WebhookAllowPrivateNetworks lets callback URLs reach loopback, private and link-local
	// addresses (development only; `shotflow dev` turns it on).
	WebhookAllowPrivateNetworks bool `env:"WEBHOOK_ALLOW_PRIVATE_NETWORKS" envDefault:"false"`
	// WebhookDisableAfter disables a webhook endpoint whose attempts have all failed for this long;
	// its new deliveries are held until it is enabled again and recovered.
	WebhookDisableAfter time.Duration `env:"WEBHOOK_DISABLE_AFTER" envDefault:"120h" validate:"min=1s"`

	// JobStartDeadline is how long a job may wait to start before it expires and releases its credits.
	JobStartDeadline time.Duration `env:"JOB_START_DEADLINE" envDefault:"24h" validate:"min=1s"`
	// InputWaitTimeout is how long a job waits for an input that is not ready before it fails.
	InputWaitTimeout time.Duration `env:"INPUT_WAIT_TIMEOUT" envDefault:"30m" validate:"min=1s"`
	// OrderMaxConcurrentJobs is how many jobs of one order run at once.
	OrderMaxConcurrentJobs int `env:"ORDER_MAX_CONCURRENT_JOBS" envDefault:"10" validate:"min=1,max=1000"`

	// OutboxSweepInterval is how often every worker looks for accepted orders whose workflow start was
	// lost, and for jobs that have not started by their Cancel-After deadline.
	OutboxSweepInterval time.Duration `env:"OUTBOX_SWEEP_INTERVAL" envDefault:"15s" validate:"min=100ms"`
	// OrderFeedPollInterval is how often an API process reads the event numbers of the orders its
	// requests wait on (Prefer: wait, event streams): the most a waiting client lags a change.
	OrderFeedPollInterval time.Duration `env:"ORDER_FEED_POLL_INTERVAL" envDefault:"100ms" validate:"min=10ms,max=5s"`
	// OutboxStartAfter is how old such an order must be before a worker starts it (the API normally does at once).
	OutboxStartAfter time.Duration `env:"OUTBOX_START_AFTER" envDefault:"30s" validate:"min=0"`

	// StragglerSweepInterval is how often every worker looks for stranded jobs (their workflow has
	// closed while their row is not terminal) and logs each one for support to re-drive.
	StragglerSweepInterval time.Duration `env:"STRAGGLER_SWEEP_INTERVAL" envDefault:"10m" validate:"min=1s"`
	// StragglerAge is how long a job must have been left unchanged before the sweep looks at it.
	StragglerAge time.Duration `env:"STRAGGLER_AGE" envDefault:"10m" validate:"min=0"`

	// OutputRetention is how long generated files are kept; older ones are purged (refresh-url and
	// downloads then answer 410). Files that back a live packshot are kept.
	OutputRetention time.Duration `env:"OUTPUT_RETENTION" envDefault:"2160h" validate:"min=1h"`
	// WebhookLogRetention is how long webhook events and deliveries (with their attempts) are kept;
	// the retention sweep deletes older ones once they have ended (GET /events and
	// GET /webhook-deliveries promise 30 days).
	WebhookLogRetention time.Duration `env:"WEBHOOK_LOG_RETENTION" envDefault:"720h" validate:"min=1h"`
	// OrderEventsRetention is how long the change feed of an ended order (order_events: what
	// GET …/orders/{id}/events replays) is kept after its end; the stream of an order past it
	// answers its end alone.
	OrderEventsRetention time.Duration `env:"ORDER_EVENTS_RETENTION" envDefault:"720h" validate:"min=1h"`
	// RetentionSweepInterval is how often every worker purges generated files past OutputRetention,
	// the webhook log past WebhookLogRetention and ended orders' change feed past OrderEventsRetention.
	RetentionSweepInterval time.Duration `env:"RETENTION_SWEEP_INTERVAL" envDefault:"1h" validate:"min=1s"`

	// WorkerActivityConcurrency caps concurrent activity executions per worker process.
	WorkerActivityConcurrency int `env:"WORKER_ACTIVITY_CONCURRENCY" envDefault:"16" validate:"min=1,max=1000"`
	// WorkerMetricsAddr is the listen address of a worker's /metrics (Prometheus) and /healthz;
	// port 0 picks a free port.
	WorkerMetricsAddr string `env:"WORKER_METRICS_ADDR" envDefault:":9090" validate:"required,listen_addr_any_port"`
	// PprofAddr, when set, is the listen address of Go's profiler (net/http/pprof under
	// /debug/pprof/) in the api and worker processes; empty (the default) serves none.
	PprofAddr string `env:"PPROF_ADDR" validate:"omitempty,listen_addr_any_port"`
	// RenderLongEdge is the long edge in pixels of images the local generator renders.
	RenderLongEdge int `env:"RENDER_LONG_EDGE" envDefault:"1024" validate:"min=64,max=4096"`
	// DefaultProvider generates the external API's requests that name no provider, for every job
	// type it serves; other job types use the first configured provider of the catalog.
	DefaultProvider string `env:"DEFAULT_PROVIDER" envDefault:"local" validate:"required,oneof=local sim openai fal"`
	// SimProvider enables the "sim" provider, whose sim/… models inject failures for tests and demos.
	SimProvider bool `env:"SIM_PROVIDER" envDefault:"false"`
	// OpenAIAPIKey enables the openai/… models (OpenAI Images API); empty leaves them unlisted.
	OpenAIAPIKey string `env:"OPENAI_API_KEY"`
	// OpenAIBaseURL is the OpenAI API root (an Azure or proxy endpoint speaking the same API).
	OpenAIBaseURL string `env:"OPENAI_BASE_URL" envDefault:"https://api.openai.com/v1" validate:"required,http_url"`
	// FalKey enables the fal/… models (fal.ai queue API); empty leaves them unlisted.
	FalKey string `env:"FAL_KEY"`
	// FalQueueURL is the root of fal's queue API.
	FalQueueURL string `env:"FAL_QUEUE_URL" envDefault:"https://queue.fal.run" validate:"required,http_url"`
	// ProviderRateLimits caps each provider's generate calls per second across all workers
	// (provider=rate, comma-separated; a provider not listed is not rate-limited).
	ProviderRateLimits map[string]float64 `env:"PROVIDER_RATE_LIMITS" envDefault:"openai=1,fal=5" envKeyValSeparator:"=" validate:"dive,keys,required,endkeys,min=0"`
	// ProviderConcurrency caps each provider's generate calls at once per worker process
	// (provider=count; a provider not listed gets WORKER_ACTIVITY_CONCURRENCY).
	ProviderConcurrency map[string]int `env:"PROVIDER_CONCURRENCY" envDefault:"local=2,openai=4,fal=8" envKeyValSeparator:"=" validate:"dive,keys,required,endkeys,min=1,max=1000"`
	// VideoEncoder picks how videos are encoded: auto (ffmpeg when installed, else pure Go),
	// ffmpeg or go.
	VideoEncoder string `env:"VIDEO_ENCODER" envDefault:"auto" validate:"oneof=auto ffmpeg go"`
	// InputMinLongEdge is the long edge in pixels below which an upload is upscaled when prepared.
	InputMinLongEdge int `env:"INPUT_MIN_LONG_EDGE" envDefault:"1024" validate:"min=64,max=4096"`

	// LogLevel is the minimum zap level: debug, info, warn or error.
	LogLevel string `env:"LOG_LEVEL" envDefault:"info" validate:"oneof=debug info warn error"`
	// LogFormat is json (production) or console (readable, the dev default).
	LogFormat string `env:"LOG_FORMAT" envDefault:"json" validate:"oneof=json console"`
	// ShutdownTimeout bounds how long a process drains running activities and HTTP requests on
	// SIGTERM; the API's drain lasts at least RequestTimeout and a second (internal/app), so that
	// it cuts no request within its deadline.
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"15s" validate:"min=1s,max=10m"`

	// DataDir is where `shotflow dev` keeps its SQLite files, blobs, secret key and credentials.
	DataDir string `env:"DATA_DIR" envDefault:".data" validate:"required"`
	// TemporalCLIPath is the Temporal CLI binary that `shotflow dev` runs as its dev server.
	TemporalCLIPath string `env:"TEMPORAL_CLI_PATH" envDefault:"bin/temporal" validate:"required"`
	// DevTemporalPort is the frontend port of the dev server that `shotflow dev` starts.
	DevTemporalPort int `env:"DEV_TEMPORAL_PORT" envDefault:"7233" validate:"min=1,max=65535"`
	// DevTemporalUIPort is the Web UI port of that dev server.
	DevTemporalUIPort int `env:"DEV_TEMPORAL_UI_PORT" envDefault:"8233" validate:"min=1,max=65535"`
	// DevSeedCredits is the credit balance of the demo account `shotflow dev` creates.
	DevSeedCredits int64 `env:"DEV_SEED_CREDITS" envDefault:"1000" validate:"min=0"`
}

// TemporalConnection holds the Temporal client settings besides the address and namespace, under
// the variable names of go.temporal.io/sdk/contrib/envconfig. Variables win over the profile
// field by field; a Temporal config file is read only when TEMPORAL_CONFIG_FILE or
// TEMPORAL_PROFILE is set.
type TemporalConnection struct {
	// ConfigFile is the TOML file of Temporal client profiles (the Temporal CLI's format); empty with
	// a Profile set means the CLI's own file, ~/.config/temporalio/temporal.toml.
	ConfigFile string `env:"TEMPORAL_CONFIG_FILE"`
	// Profile is the profile of ConfigFile to use; empty with a ConfigFile set means "default".
	Profile string `env:"TEMPORAL_PROFILE"`
	// APIKey authenticates to Temporal Cloud (or a cluster with an API key authorizer); it turns TLS
	// on unless TLS is false.
	APIKey string `env:"TEMPORAL_API_KEY"`
	// TLS turns TLS on (true) or off (false) whatever the other settings; empty leaves it to them.
	TLS string `env:"TEMPORAL_TLS" validate:"omitempty,oneof=true false"`
	// TLSClientCertPath is the PEM file of the client certificate for mTLS.
	TLSClientCertPath string `env:"TEMPORAL_TLS_CLIENT_CERT_PATH" validate:"excluded_with=TLSClientCertData"`
	// TLSClientCertData is the client certificate itself, in PEM (instead of TLSClientCertPath).
	TLSClientCertData string `env:"TEMPORAL_TLS_CLIENT_CERT_DATA"`
	// TLSClientKeyPath is the PEM file of the client certificate's private key.
	TLSClientKeyPath string `env:"TEMPORAL_TLS_CLIENT_KEY_PATH" validate:"excluded_with=TLSClientKeyData"`
	// TLSClientKeyData is the private key itself, in PEM (instead of TLSClientKeyPath).
	TLSClientKeyData string `env:"TEMPORAL_TLS_CLIENT_KEY_DATA"`
	// TLSServerCACertPath is the PEM file of the CA that signed the server's certificate; empty
	// means the system's roots.
	TLSServerCACertPath string `env:"TEMPORAL_TLS_SERVER_CA_CERT_PATH" validate:"excluded_with=TLSServerCACertData"`
	// TLSServerCACertData is that CA certificate itself, in PEM (instead of TLSServerCACertPath).
	TLSServerCACertData string `env:"TEMPORAL_TLS_SERVER_CA_CERT_DATA"`
	// TLSServerName is the name the server's certificate must carry (and the SNI sent); empty
	// means the host of the address.
	TLSServerName string `env:"TEMPORAL_TLS_SERVER_NAME"`
	// TLSDisableHostVerification skips checking the server certificate's name (true); never in
	// production.
	TLSDisableHostVerification string `env:"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION" validate:"omitempty,oneof=true false"`
}

// Load reads the configuration from the environment and validates it. The error names the
// offending variable.
func Load() (Config, error) {
	return LoadFrom(nil)
}

// LoadFrom is Load over an explicit environment (nil means the process environment).
func LoadFrom(environ map[string]string) (Config, error) {
	var c Config
	opts := env.Options{}
	if environ != nil {
		opts.Environment = environ
	}
	if err := env.ParseWithOptions(&c, opts); err != nil {
		return Config{}, describeParseError(err)
	}
	// The embedded defaults live under DATA_DIR, whichever command reads them: `shotflow admin`
	// and `migrate` with the DATA_DIR a `shotflow dev` was started with open its database, not an
	// empty one in the working directory.
	if c.DatabaseURL == "" {
		c.DatabaseURL = "sqlite://" + filepath.ToSlash(filepath.Join(c.DataDir, "shotflow.db"))
	}
	if c.BlobURL == "" {
		c.BlobURL = "file://" + filepath.ToSlash(filepath.Join(c.DataDir, "blobs"))
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks every field and reports the first problems by variable name.
func (c Config) Validate() error {
	err := validate.Struct(c)
	if err == nil {
		return c.validateFileURLs()
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return fmt.Errorf("config: %w", err)
	}
	msgs := make([]string, 0, len(verrs))
	for _, fe := range verrs {
		if shown, ok := shownValue(fe.Field(), fmt.Sprint(fe.Value())); ok {
			msgs = append(msgs, fmt.Sprintf("%s=%q is invalid (%s)", fe.Field(), shown, describe(fe)))
		} else {
			msgs = append(msgs, fmt.Sprintf("%s is invalid (%s; its value is not repeated: it may hold a secret)", fe.Field(), describe(fe)))
		}
	}
	return fmt.Errorf("config: %s", strings.Join(msgs, "; "))
}

// maxStoreURLTTL is the longest an S3 presigned URL lasts (SigV4): seven days.
const maxStoreURLTTL = 7 * 24 * time.Hour

// EffectiveFileURLs is FILE_URLS, or when unset "store" for an s3:// bucket whose presigned URLs
// last DOWNLOAD_URL_TTL (or with BLOB_PUBLIC_BASE_URL), and "api" otherwise.
func (c Config) EffectiveFileURLs() string {
	if c.FileURLs != "" {
		return c.FileURLs
	}
	if strings.HasPrefix(c.BlobURL, "s3://") && (c.BlobPublicBaseURL != "" || c.DownloadURLTTL <= maxStoreURLTTL) {
		return "store"
	}
	return "api"
}

// validateFileURLs refuses FILE_URLS=store for a bucket that cannot sign, and a DOWNLOAD_URL_TTL
// longer than the store's presigned URLs last.
func (c Config) validateFileURLs() error {
	if c.EffectiveFileURLs() != "store" {
		return nil
	}
	if !strings.HasPrefix(c.BlobURL, "s3://") {
		return fmt.Errorf("config: FILE_URLS=store needs an s3:// BLOB_URL (a bucket that signs URLs), not %q", c.BlobURL)
	}
	if c.BlobPublicBaseURL == "" && c.DownloadURLTTL > maxStoreURLTTL {
		return fmt.Errorf("config: DOWNLOAD_URL_TTL=%s is longer than the %s an S3 presigned URL lasts; lower it, set BLOB_PUBLIC_BASE_URL or FILE_URLS=api", c.DownloadURLTTL, maxStoreURLTTL)
	}
	return nil
}

// EffectiveDocsURL is the base of error documentation links.
func (c Config) EffectiveDocsURL() string {
	if c.DocsURL != "" {
		return strings.TrimRight(c.DocsURL, "/")
	}
	return strings.TrimRight(c.PublicBaseURL, "/") + "/docs"
}

// SecretKeyBytes decodes SecretKey; it is empty when the key is not set.
func (c Config) SecretKeyBytes() []byte {
	if c.SecretKey == "" {
		return nil
	}
	b, _ := decodeKey(c.SecretKey)
	return b
}

// DatabaseDialect is "postgres" or "sqlite", from DatabaseURL.
func (c Config) DatabaseDialect() string {
	if strings.HasPrefix(c.DatabaseURL, "sqlite:") {
		return "sqlite"
	}
	return "postgres"
}

func describe(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "must be set"
	case "min", "max":
		return fmt.Sprintf("%s %s", fe.Tag(), fe.Param())
	case "gtefield":
		return "at least " + envName(fe.Param())
	case "excluded_with":
		return "not together with " + envName(fe.Param())
	case "oneof":
		return "one of " + fe.Param()
	case "database_url":
		return "postgres://… or sqlite://path"
	case "blob_url":
		return "file:///dir, file://relative/dir, s3://bucket?… , gs://… or mem://"
	case "secret_key":
		return "base64 of at least 32 bytes"
	case "http_url":
		return "an http(s) URL"
	case "listen_addr":
		return "host:port or :port"
	case "listen_addr_any_port":
		return "host:port or :port; port 0 picks a free one"
	case "host_port":
		return "host:port"
	}
	return fe.Tag()
}

var validate = newValidator()

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		return name
	})
	mustRegister(v, "listen_addr", func(fl validator.FieldLevel) bool {
		return validHostPort(fl.Field().String(), true, 1)
	})
	mustRegister(v, "listen_addr_any_port", func(fl validator.FieldLevel) bool {
		return validHostPort(fl.Field().String(), true, 0)
	})
	mustRegister(v, "host_port", func(fl validator.FieldLevel) bool {
		return validHostPort(fl.Field().String(), false, 1)
	})
	mustRegister(v, "database_url", func(fl validator.FieldLevel) bool {
		s := fl.Field().String()
		if strings.HasPrefix(s, "sqlite://") {
			return len(s) > len("sqlite://")
		}
		u, err := url.Parse(s)
		return err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && u.Host != ""
	})
	mustRegister(v, "blob_url", func(fl validator.FieldLevel) bool {
		u, err := url.Parse(fl.Field().String())
		if err != nil {
			return false
		}
		switch u.Scheme {
		case "file":
			return u.Host != "" || u.Path != ""
		case "s3", "gs", "azblob":
			return u.Host != ""
		case "mem":
			return true
		}
		return false
	})
	mustRegister(v, "secret_key", func(fl validator.FieldLevel) bool {
		_, err := decodeKey(fl.Field().String())
		return err == nil
	})
	return v
}

// validHostPort accepts host:port (IPv6 hosts in brackets) with a numeric port minPort–65535; an
// empty host is allowed only for listen addresses.
func validHostPort(s string, emptyHost bool, minPort int) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || (host == "" && !emptyHost) {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= minPort && n <= 65535
}

// describeParseError names the environment variable of a value that does not parse.
func describeParseError(err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("config: %w", err)
	}
	msgs := make([]string, 0, len(agg.Errors))
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			msgs = append(msgs, fmt.Sprintf("%s cannot be parsed as %s: %v", envName(pe.Name), pe.Type, pe.Err))
			continue
		}
		msgs = append(msgs, e.Error())
	}
	return fmt.Errorf("config: %s", strings.Join(msgs, "; "))
}

// secretVariables hold secrets whole: a refusal names them, never their value (it goes to the
// process's stderr, a container's log).
var secretVariables = map[string]bool{
	"SECRET_KEY": true, "TEMPORAL_API_KEY": true, "OPENAI_API_KEY": true, "FAL_KEY": true,
	"TEMPORAL_TLS_CLIENT_CERT_DATA": true, "TEMPORAL_TLS_CLIENT_KEY_DATA": true, "TEMPORAL_TLS_SERVER_CA_CERT_DATA": true,
}

// shownValue is how a refusal may print the value of the variable name: as it is, or for a URL
// with its password masked (url.URL.Redacted); ok is false when it must not be printed at all: a
// secret variable, or a URL-valued one that does not parse or is a keyword DSN, whose password
// cannot be told apart.
func shownValue(name, value string) (string, bool) {
	if secretVariables[name] {
		return "", false
	}
	if !strings.HasSuffix(name, "_URL") {
		return value, true
	}
	u, err := url.Parse(value)
	if err != nil || strings.Contains(strings.ToLower(value), "password=") {
		return "", false
	}
	return u.Redacted(), true
}

// envName is the environment variable of a Config or TemporalConnection field.
func envName(field string) string {
	f, ok := reflect.TypeOf(Config{}).FieldByName(field)
	if !ok {
		if f, ok = reflect.TypeOf(TemporalConnection{}).FieldByName(field); !ok {
			return field
		}
	}
	name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
	return name
}

func mustRegister(v *validator.Validate, tag string, fn validator.Func) {
	if err := v.RegisterValidation(tag, fn); err != nil {
		panic(err)
	}
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) < 32 {
				return nil, errors.New("secret key shorter than 32 bytes")
			}
			return b, nil
		}
	}
	return nil, errors.New("secret key is not base64")
}

// Environ renders the configuration as NAME=value pairs, so a child process (a worker started by
// a test, for example) can be given exactly this configuration.
func (c Config) Environ() []string {
	return environ(reflect.ValueOf(c), nil)
}

// TemporalConnectionVariables lists the environment variables of TemporalConnection.
func TemporalConnectionVariables() []string {
	var names []string
	for _, kv := range environ(reflect.ValueOf(TemporalConnection{}), nil) {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	return names
}

// environ appends the NAME=value pairs of v's fields, and of its nested structs', to out.
func environ(v reflect.Value, out []string) []string {
	t := v.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("env"), ",")
		switch {
		case name != "":
			out = append(out, name+"="+envValue(v.Field(i)))
		case v.Field(i).Kind() == reflect.Struct:
			out = environ(v.Field(i), out)
		}
	}
	return out
}

// envValue formats a field as its variable is written: maps as sorted key=value pairs.
func envValue(f reflect.Value) string {
	if f.Kind() != reflect.Map {
		return fmt.Sprint(f.Interface())
	}
	pairs := make([]string, 0, f.Len())
	for it := f.MapRange(); it.Next(); {
		pairs = append(pairs, fmt.Sprint(it.Key().Interface())+"="+fmt.Sprint(it.Value().Interface()))
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}
