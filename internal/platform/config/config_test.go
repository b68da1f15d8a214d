package config_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/config"
)

// key32 returns the base64 (StdEncoding) of 32 random bytes, a valid SECRET_KEY.
func key32(t *testing.T) (string, []byte) {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b), b
}

func TestDefaultsWithEmptyEnvironment(t *testing.T) {
	c, err := config.LoadFrom(map[string]string{})
	if err != nil {
		t.Fatalf("LoadFrom(empty) = %v, want the defaults", err)
	}
	want := config.Config{
		HTTPAddr:                  ":8080",
		PublicBaseURL:             "http://localhost:8080",
		DatabaseURL:               "sqlite://.data/shotflow.db",
		DatabaseMaxOpenConns:      20,
		DatabaseConnectTimeout:    5 * time.Second,
		DatabaseStatementTimeout:  30 * time.Second,
		RequestTimeout:            30 * time.Second,
		UploadTimeout:             15 * time.Minute,
		TemporalGRPCCompression:   "gzip",
		TemporalTaskQueue:         "shotflow",
		TemporalUIURL:             "http://localhost:8233",
		BlobURL:                   "file://.data/blobs",
		DownloadURLTTL:            168 * time.Hour,
		UploadURLTTL:              2 * time.Hour,
		RateLimitPerMinute:        60,
		JobStartDeadline:          24 * time.Hour,
		InputWaitTimeout:          30 * time.Minute,
		OrderMaxConcurrentJobs:    10,
		OutboxSweepInterval:       15 * time.Second,
		OrderFeedPollInterval:     100 * time.Millisecond,
		OutboxStartAfter:          30 * time.Second,
		StragglerSweepInterval:    10 * time.Minute,
		StragglerAge:              10 * time.Minute,
		WebhookDisableAfter:       120 * time.Hour,
		OutputRetention:           2160 * time.Hour,
		WebhookLogRetention:       720 * time.Hour,
		OrderEventsRetention:      720 * time.Hour,
		RetentionSweepInterval:    time.Hour,
		WorkerActivityConcurrency: 16,
		WorkerMetricsAddr:         ":9090",
		RenderLongEdge:            1024,
		DefaultProvider:           "local",
		OpenAIBaseURL:             "https://api.openai.com/v1",
		FalQueueURL:               "https://queue.fal.run",
		ProviderRateLimits:        map[string]float64{"openai": 1, "fal": 5},
		ProviderConcurrency:       map[string]int{"local": 2, "openai": 4, "fal": 8},
		VideoEncoder:              "auto",
		InputMinLongEdge:          1024,
		LogLevel:                  "info",
		LogFormat:                 "json",
		ShutdownTimeout:           15 * time.Second,
		DataDir:                   ".data",
		TemporalCLIPath:           "bin/temporal",
		DevTemporalPort:           7233,
		DevTemporalUIPort:         8233,
		DevSeedCredits:            1000,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if c.SecretKeyBytes() != nil {
		t.Errorf("SecretKeyBytes() without SECRET_KEY = %x, want nil", c.SecretKeyBytes())
	}
	if got := c.DatabaseDialect(); got != "sqlite" {
		t.Errorf("default DatabaseDialect() = %q, want sqlite", got)
	}
	if got := c.EffectiveDocsURL(); got != "http://localhost:8080/docs" {
		t.Errorf("default EffectiveDocsURL() = %q", got)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() of the defaults = %v", err)
	}
}

// TestEmptyValueMeansDefault pins that a variable set to "" is treated as unset.
func TestEmptyValueMeansDefault(t *testing.T) {
	c, err := config.LoadFrom(map[string]string{"LOG_LEVEL": "", "HTTP_ADDR": "", "SECRET_KEY": ""})
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "info" || c.HTTPAddr != ":8080" || c.SecretKey != "" {
		t.Errorf("empty values: LogLevel=%q HTTPAddr=%q SecretKey=%q", c.LogLevel, c.HTTPAddr, c.SecretKey)
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	cases := []struct{ name, value string }{
		{"DATABASE_URL", "mysql://x"},
		{"DATABASE_URL", "sqlite://"},
		{"DATABASE_URL", "postgres:///nohost"},
		{"HTTP_ADDR", "nonsense"},
		{"PUBLIC_BASE_URL", "not a url"},
		{"DOCS_URL", "ftp://docs.example.com"},
		{"LOG_LEVEL", "loud"},
		{"LOG_FORMAT", "xml"},
		{"DOWNLOAD_URL_TTL", "1h"},
		{"DOWNLOAD_URL_TTL", "167h59m"},
		{"UPLOAD_URL_TTL", "30s"},
		{"UPLOAD_URL_TTL", "25h"},
		{"UPLOAD_URL_TTL", "notaduration"},
		{"SHUTDOWN_TIMEOUT", "0s"},
		{"SECRET_KEY", "short"},
		{"SECRET_KEY", base64.StdEncoding.EncodeToString(make([]byte, 31))},
		{"SECRET_KEY", strings.Repeat("!", 44)},
		{"BLOB_URL", "ftp://x"},
		{"BLOB_URL", "s3://"},
		{"RATE_LIMIT_PER_MINUTE", "0"},
		{"RATE_LIMIT_PER_MINUTE", "100001"},
		{"RATE_LIMIT_PER_MINUTE", "many"},
		{"REDIS_URL", "not a url"},
		{"DATABASE_MAX_OPEN_CONNS", "0"},
		{"WORKER_ACTIVITY_CONCURRENCY", "0"},
		{"WORKER_METRICS_ADDR", "9090"},
		{"WORKER_METRICS_ADDR", "127.0.0.1:http"},
		{"WORKER_METRICS_ADDR", ":65536"},
		{"RENDER_LONG_EDGE", "32"},
		{"TEMPORAL_ADDRESS", "nohostport"},
		{"TEMPORAL_ADDRESS", "localhost:99999"},
		{"TEMPORAL_UI_URL", "localhost:8233"},
		{"TEMPORAL_TLS", "yes"},
		{"TEMPORAL_TLS", "1"},
		{"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "on"},
		{"DEV_TEMPORAL_PORT", "70000"},
		{"DEV_TEMPORAL_UI_PORT", "0"},
		{"DEV_SEED_CREDITS", "-1"},
		{"OUTPUT_RETENTION", "59m"},
		{"OUTPUT_RETENTION", "90d"},
		{"WEBHOOK_LOG_RETENTION", "59m"},
		{"WEBHOOK_LOG_RETENTION", "30d"},
		{"WEBHOOK_DISABLE_AFTER", "0s"},
		{"RETENTION_SWEEP_INTERVAL", "500ms"},
		{"OPENAI_BASE_URL", "api.openai.com"},
		{"FAL_QUEUE_URL", "not a url"},
		{"PROVIDER_RATE_LIMITS", "openai=-1"},
		{"PROVIDER_RATE_LIMITS", "openai=fast"},
		{"PROVIDER_RATE_LIMITS", "openai"},
		{"PROVIDER_CONCURRENCY", "fal=0"},
		{"PROVIDER_CONCURRENCY", "=3"},
		{"VIDEO_ENCODER", "vlc"},
		{"DEFAULT_PROVIDER", "midjourney"},
		{"INPUT_MIN_LONG_EDGE", "10"},
		{"REQUEST_TIMEOUT", "0s"},
		{"REQUEST_TIMEOUT", "500ms"},
		{"REQUEST_TIMEOUT", "11m"},
		{"UPLOAD_TIMEOUT", "10s"}, // shorter than REQUEST_TIMEOUT
		{"UPLOAD_TIMEOUT", "3h"},
		{"DATABASE_CONNECT_TIMEOUT", "0s"},
		{"DATABASE_CONNECT_TIMEOUT", "6m"},
		{"DATABASE_STATEMENT_TIMEOUT", "-1s"},
		{"DATABASE_STATEMENT_TIMEOUT", "2h"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			c, err := config.LoadFrom(map[string]string{tc.name: tc.value})
			if err == nil {
				t.Fatalf("LoadFrom(%s=%q) accepted the value: %+v", tc.name, tc.value, c)
			}
			if !strings.Contains(err.Error(), tc.name) {
				t.Errorf("LoadFrom(%s=%q) error does not name the variable %s: %v", tc.name, tc.value, tc.name, err)
			}
			if !reflect.DeepEqual(c, config.Config{}) {
				t.Errorf("LoadFrom returned a partly filled Config with its error: %+v", c)
			}
		})
	}
}

func TestSeveralBadValuesAreAllReported(t *testing.T) {
	_, err := config.LoadFrom(map[string]string{"LOG_LEVEL": "loud", "RATE_LIMIT_PER_MINUTE": "0", "BLOB_URL": "ftp://x"})
	if err == nil {
		t.Fatal("bad values accepted")
	}
	for _, name := range []string{"LOG_LEVEL", "RATE_LIMIT_PER_MINUTE", "BLOB_URL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

func TestGoodValuesParse(t *testing.T) {
	secret, raw := key32(t)
	env := map[string]string{
		"HTTP_ADDR":                              "127.0.0.1:9090",
		"PUBLIC_BASE_URL":                        "https://api.example.com/",
		"DOCS_URL":                               "https://docs.example.com/errors/",
		"DATABASE_URL":                           "postgres://shotflow:pw@db.internal:5432/shotflow?sslmode=disable",
		"DATABASE_MAX_OPEN_CONNS":                "50",
		"DATABASE_CONNECT_TIMEOUT":               "3s",
		"DATABASE_STATEMENT_TIMEOUT":             "0",
		"REQUEST_TIMEOUT":                        "2m",
		"UPLOAD_TIMEOUT":                         "2m",
		"TEMPORAL_ADDRESS":                       "temporal.internal:7233",
		"TEMPORAL_NAMESPACE":                     "prod",
		"TEMPORAL_GRPC_COMPRESSION":              "none",
		"TEMPORAL_CONFIG_FILE":                   "/etc/temporal/temporal.toml",
		"TEMPORAL_PROFILE":                       "prod",
		"TEMPORAL_API_KEY":                       "key-test",
		"TEMPORAL_TLS":                           "true",
		"TEMPORAL_TLS_CLIENT_CERT_PATH":          "/etc/temporal/client.pem",
		"TEMPORAL_TLS_CLIENT_KEY_DATA":           "-----BEGIN PRIVATE KEY-----",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH":       "/etc/temporal/ca.pem",
		"TEMPORAL_TLS_SERVER_NAME":               "temporal.example.com",
		"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION": "false",
		"TEMPORAL_TASK_QUEUE":                    "shotflow-prod",
		"TEMPORAL_UI_URL":                        "https://temporal.example.com",
		"BLOB_URL":                               "s3://bucket?region=eu-west-1",
		"SECRET_KEY":                             secret,
		"DOWNLOAD_URL_TTL":                       "336h",
		"UPLOAD_URL_TTL":                         "90m",
		"RATE_LIMIT_PER_MINUTE":                  "120",
		"REDIS_URL":                              "redis://cache.internal:6379/0",
		"WORKER_ACTIVITY_CONCURRENCY":            "4",
		"WORKER_METRICS_ADDR":                    "10.0.0.7:9464",
		"RENDER_LONG_EDGE":                       "2048",
		"OPENAI_API_KEY":                         "sk-test",
		"OPENAI_BASE_URL":                        "https://openai.internal/v1",
		"FAL_KEY":                                "fal-test",
		"FAL_QUEUE_URL":                          "https://fal.internal",
		"PROVIDER_RATE_LIMITS":                   "openai=0.5,fal=10,local=0",
		"PROVIDER_CONCURRENCY":                   "local=1,fal=32",
		"VIDEO_ENCODER":                          "go",
		"INPUT_MIN_LONG_EDGE":                    "512",
		"LOG_LEVEL":                              "debug",
		"LOG_FORMAT":                             "console",
		"SHUTDOWN_TIMEOUT":                       "1m30s",
		"DATA_DIR":                               "/var/lib/shotflow",
		"TEMPORAL_CLI_PATH":                      "/usr/local/bin/temporal",
		"DEV_TEMPORAL_PORT":                      "17233",
		"DEV_TEMPORAL_UI_PORT":                   "18233",
		"DEV_SEED_CREDITS":                       "0",
	}
	c, err := config.LoadFrom(env)
	if err != nil {
		t.Fatalf("LoadFrom(good values) = %v", err)
	}
	want := config.Config{
		HTTPAddr:                "127.0.0.1:9090",
		PublicBaseURL:           "https://api.example.com/",
		DocsURL:                 "https://docs.example.com/errors/",
		DatabaseURL:             env["DATABASE_URL"],
		DatabaseMaxOpenConns:    50,
		DatabaseConnectTimeout:  3 * time.Second,
		RequestTimeout:          2 * time.Minute,
		UploadTimeout:           2 * time.Minute,
		TemporalAddress:         "temporal.internal:7233",
		TemporalNamespace:       "prod",
		TemporalGRPCCompression: "none",
		TemporalConnection: config.TemporalConnection{
			ConfigFile: "/etc/temporal/temporal.toml", Profile: "prod", APIKey: "key-test", TLS: "true",
			TLSClientCertPath: "/etc/temporal/client.pem", TLSClientKeyData: "-----BEGIN PRIVATE KEY-----",
			TLSServerCACertPath: "/etc/temporal/ca.pem", TLSServerName: "temporal.example.com",
			TLSDisableHostVerification: "false",
		},
		TemporalTaskQueue:         "shotflow-prod",
		TemporalUIURL:             "https://temporal.example.com",
		BlobURL:                   "s3://bucket?region=eu-west-1",
		SecretKey:                 secret,
		DownloadURLTTL:            14 * 24 * time.Hour,
		UploadURLTTL:              90 * time.Minute,
		RateLimitPerMinute:        120,
		RedisURL:                  "redis://cache.internal:6379/0",
		JobStartDeadline:          24 * time.Hour,
		InputWaitTimeout:          30 * time.Minute,
		OrderMaxConcurrentJobs:    10,
		OutboxSweepInterval:       15 * time.Second,
		OrderFeedPollInterval:     100 * time.Millisecond,
		OutboxStartAfter:          30 * time.Second,
		StragglerSweepInterval:    10 * time.Minute,
		StragglerAge:              10 * time.Minute,
		WebhookDisableAfter:       120 * time.Hour,
		OutputRetention:           2160 * time.Hour,
		WebhookLogRetention:       720 * time.Hour,
		OrderEventsRetention:      720 * time.Hour,
		RetentionSweepInterval:    time.Hour,
		WorkerActivityConcurrency: 4,
		WorkerMetricsAddr:         "10.0.0.7:9464",
		RenderLongEdge:            2048,
		DefaultProvider:           "local",
		OpenAIAPIKey:              "sk-test",
		OpenAIBaseURL:             "https://openai.internal/v1",
		FalKey:                    "fal-test",
		FalQueueURL:               "https://fal.internal",
		ProviderRateLimits:        map[string]float64{"openai": 0.5, "fal": 10, "local": 0},
		ProviderConcurrency:       map[string]int{"local": 1, "fal": 32},
		VideoEncoder:              "go",
		InputMinLongEdge:          512,
		LogLevel:                  "debug",
		LogFormat:                 "console",
		ShutdownTimeout:           90 * time.Second,
		DataDir:                   "/var/lib/shotflow",
		TemporalCLIPath:           "/usr/local/bin/temporal",
		DevTemporalPort:           17233,
		DevTemporalUIPort:         18233,
		DevSeedCredits:            0,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("parsed:\n got %+v\nwant %+v", c, want)
	}
	if !bytes.Equal(c.SecretKeyBytes(), raw) {
		t.Errorf("SecretKeyBytes() = %x, want %x", c.SecretKeyBytes(), raw)
	}
	if got := c.DatabaseDialect(); got != "postgres" {
		t.Errorf("DatabaseDialect() = %q, want postgres", got)
	}
}

func TestBoundaryValuesAccepted(t *testing.T) {
	for _, kv := range [][2]string{
		{"DOWNLOAD_URL_TTL", "168h"},
		{"DOWNLOAD_URL_TTL", "10080m"},
		{"UPLOAD_URL_TTL", "1m"},
		{"UPLOAD_URL_TTL", "24h"},
		{"RATE_LIMIT_PER_MINUTE", "1"},
		{"RATE_LIMIT_PER_MINUTE", "100000"},
		{"HTTP_ADDR", ":8080"},
		{"HTTP_ADDR", "0.0.0.0:8080"},
		{"HTTP_ADDR", "localhost:80"},
		{"WORKER_METRICS_ADDR", "127.0.0.1:0"},
		{"WORKER_METRICS_ADDR", ":0"},
		{"WORKER_METRICS_ADDR", "[::1]:9090"},
		{"DATABASE_URL", "sqlite:///abs/path/shotflow.db"},
		{"DATABASE_URL", "postgresql://u@h/db"},
		{"BLOB_URL", "file:///var/lib/shotflow/blobs"},
		{"BLOB_URL", "mem://"},
		{"BLOB_URL", "gs://bucket"},
		{"BLOB_URL", "azblob://container"},
		{"DEV_SEED_CREDITS", "0"},
		{"OUTPUT_RETENTION", "1h"},
		{"WEBHOOK_LOG_RETENTION", "1h"},
		{"RETENTION_SWEEP_INTERVAL", "1s"},
	} {
		if _, err := config.LoadFrom(map[string]string{kv[0]: kv[1]}); err != nil {
			t.Errorf("LoadFrom(%s=%q) = %v, want it accepted", kv[0], kv[1], err)
		}
	}
}

func TestSecretKeyEncodings(t *testing.T) {
	raw := make([]byte, 48)
	for i := range raw {
		raw[i] = byte(250 - i) // high bytes so the std and URL alphabets differ
	}
	for name, enc := range map[string]*base64.Encoding{
		"std": base64.StdEncoding, "raw std": base64.RawStdEncoding, "url": base64.URLEncoding, "raw url": base64.RawURLEncoding,
	} {
		s := enc.EncodeToString(raw)
		c, err := config.LoadFrom(map[string]string{"SECRET_KEY": s})
		if err != nil {
			t.Errorf("%s SECRET_KEY %q rejected: %v", name, s, err)
			continue
		}
		if !bytes.Equal(c.SecretKeyBytes(), raw) {
			t.Errorf("%s SECRET_KEY decoded to %x, want %x", name, c.SecretKeyBytes(), raw)
		}
	}
}

func TestEffectiveDocsURL(t *testing.T) {
	cases := []struct{ public, docs, want string }{
		{"http://localhost:8080", "", "http://localhost:8080/docs"},
		{"https://api.example.com/", "", "https://api.example.com/docs"},
		{"https://api.example.com//", "", "https://api.example.com/docs"},
		{"https://api.example.com", "https://docs.example.com/errors/", "https://docs.example.com/errors"},
		{"https://api.example.com", "https://docs.example.com", "https://docs.example.com"},
	}
	for _, tc := range cases {
		env := map[string]string{"PUBLIC_BASE_URL": tc.public}
		if tc.docs != "" {
			env["DOCS_URL"] = tc.docs
		}
		c, err := config.LoadFrom(env)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.EffectiveDocsURL(); got != tc.want {
			t.Errorf("PUBLIC_BASE_URL=%q DOCS_URL=%q: EffectiveDocsURL() = %q, want %q", tc.public, tc.docs, got, tc.want)
		}
	}
}

func TestDatabaseDialect(t *testing.T) {
	for url, want := range map[string]string{
		"sqlite://.data/shotflow.db":       "sqlite",
		"sqlite:///tmp/x.db":               "sqlite",
		"postgres://u:p@localhost:5432/db": "postgres",
		"postgresql://u@localhost/db":      "postgres",
	} {
		if got := (config.Config{DatabaseURL: url}).DatabaseDialect(); got != want {
			t.Errorf("DatabaseDialect(%q) = %q, want %q", url, got, want)
		}
	}
}

func TestValidateZeroConfig(t *testing.T) {
	err := config.Config{}.Validate()
	if err == nil {
		t.Fatal("zero Config validated")
	}
	for _, name := range []string{"HTTP_ADDR", "DATABASE_URL", "BLOB_URL", "DATA_DIR", "DOWNLOAD_URL_TTL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Validate(zero) does not name %s: %v", name, err)
		}
	}
}

func TestLoadReadsProcessEnvironment(t *testing.T) {
	t.Setenv("LOG_LEVEL", "warn")
	t.Setenv("RATE_LIMIT_PER_MINUTE", "7")
	c, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "warn" || c.RateLimitPerMinute != 7 {
		t.Errorf("Load() = LogLevel %q, RateLimitPerMinute %d", c.LogLevel, c.RateLimitPerMinute)
	}
	t.Setenv("LOG_LEVEL", "loud")
	if _, err := config.Load(); err == nil || !strings.Contains(err.Error(), "LOG_LEVEL") {
		t.Errorf("Load() with LOG_LEVEL=loud = %v", err)
	}
	// LoadFrom with an explicit map ignores the process environment.
	c, err = config.LoadFrom(map[string]string{})
	if err != nil || c.LogLevel != "info" {
		t.Errorf("LoadFrom(empty) with LOG_LEVEL=loud in the process = %q, %v", c.LogLevel, err)
	}
}

func TestEnvironRoundTrips(t *testing.T) {
	c, err := config.LoadFrom(map[string]string{"SECRET_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "JOB_START_DEADLINE": "90s", "SIM_PROVIDER": "true",
		"TEMPORAL_PROFILE": "cloud", "TEMPORAL_TLS_CLIENT_CERT_PATH": "/run/client.pem"})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range c.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	back, err := config.LoadFrom(env)
	if err != nil {
		t.Fatalf("LoadFrom(Environ()) = %v", err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, c)
	}
}

// TestTemporalAddressAndNamespaceHaveNoDefault pins that an unset TEMPORAL_ADDRESS or
// TEMPORAL_NAMESPACE stays empty, so a Temporal profile's values are not hidden by a default
// (internal/platform/temporalconn falls back to the local dev server when nothing names one).
func TestTemporalAddressAndNamespaceHaveNoDefault(t *testing.T) {
	c, err := config.LoadFrom(map[string]string{"TEMPORAL_PROFILE": "cloud"})
	if err != nil {
		t.Fatal(err)
	}
	if c.TemporalAddress != "" || c.TemporalNamespace != "" || c.TemporalConnection.Profile != "cloud" {
		t.Errorf("TemporalAddress %q, TemporalNamespace %q, Profile %q", c.TemporalAddress, c.TemporalNamespace, c.TemporalConnection.Profile)
	}
}

func TestTemporalFileAndDataAreExclusive(t *testing.T) {
	for _, pair := range [][2]string{
		{"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_CERT_DATA"},
		{"TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_CLIENT_KEY_DATA"},
		{"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_DATA"},
	} {
		_, err := config.LoadFrom(map[string]string{pair[0]: "/run/x.pem", pair[1]: "-----BEGIN CERTIFICATE-----"})
		if err == nil || !strings.Contains(err.Error(), pair[0]) || !strings.Contains(err.Error(), "not together with "+pair[1]) {
			t.Errorf("%s and %s both set: %v", pair[0], pair[1], err)
		}
	}
}

func TestTemporalConnectionVariables(t *testing.T) {
	got := config.TemporalConnectionVariables()
	for _, name := range []string{"TEMPORAL_CONFIG_FILE", "TEMPORAL_PROFILE", "TEMPORAL_API_KEY", "TEMPORAL_TLS",
		"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"} {
		if !slices.Contains(got, name) {
			t.Errorf("TemporalConnectionVariables() = %v, missing %s", got, name)
		}
	}
	for _, name := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TASK_QUEUE"} {
		if slices.Contains(got, name) {
			t.Errorf("TemporalConnectionVariables() = %v, includes %s", got, name)
		}
	}
}

// TestFileURLs: unset, FILE_URLS picks the store for an S3 bucket whose presigned URLs last the
// download TTL, the API otherwise; an explicit store needs a bucket that signs, for long enough.
func TestFileURLs(t *testing.T) {
	const s3 = "s3://b?endpoint=http://127.0.0.1:9000&region=us-east-1"
	cases := []struct {
		env  map[string]string
		want string // "" for a refused configuration
	}{
		{map[string]string{}, "api"},
		{map[string]string{"BLOB_URL": s3}, "store"},
		{map[string]string{"BLOB_URL": s3, "DOWNLOAD_URL_TTL": "336h"}, "api"},
		{map[string]string{"BLOB_URL": s3, "DOWNLOAD_URL_TTL": "336h", "BLOB_PUBLIC_BASE_URL": "https://cdn.example.com"}, "store"},
		{map[string]string{"BLOB_URL": s3, "FILE_URLS": "api"}, "api"},
		{map[string]string{"FILE_URLS": "store"}, ""},
		{map[string]string{"BLOB_URL": s3, "FILE_URLS": "store", "DOWNLOAD_URL_TTL": "336h"}, ""},
		{map[string]string{"BLOB_URL": s3, "FILE_URLS": "cdn"}, ""},
		{map[string]string{"BLOB_URL": s3, "BLOB_PUBLIC_BASE_URL": "not a url"}, ""},
	}
	for _, tc := range cases {
		c, err := config.LoadFrom(tc.env)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%v: accepted", tc.env)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		if got := c.EffectiveFileURLs(); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.env, got, tc.want)
		}
	}
}
