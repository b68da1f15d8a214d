// Package apitest builds what the HTTP tests of the plugin and external APIs, the router and the
// contract checks all need under their handlers: a database's engine over a blob store on a
// temporary directory, the secrets box, the catalog and its providers, the URL signer, a rate
// limiter on a fake clock and a recording Temporal client. It also holds the hostile texts every
// API must refuse. Each API's tests keep only their own handler fields and key issuance.
package apitest

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/testdb"
)

// SignerKey is the URL signer's key in tests.
var SignerKey = []byte("0123456789abcdef0123456789abcdef")

// BaseURL is the signer's public base URL unless Options.BaseURL says otherwise.
const BaseURL = "http://example.test"

// ClockStart is the time the fake Clock of NewDeps starts at.
var ClockStart = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// Options tune NewDeps; the zero value is the common case.
type Options struct {
	// BlobURL is the blob store's bucket; "": a directory of the test's.
	BlobURL string
	// StoreFiles makes download URLs of the store (FILE_URLS=store, Deps.Files): presigned GETs
	// of BlobURL's bucket, or URLs under PublicBase when it is set.
	StoreFiles bool
	PublicBase string
	// Now drives the rate limiter; nil: the Deps' Clock.
	Now func() time.Time
	// Catalog replaces the built-in catalog (catalog.Load).
	Catalog *catalog.Catalog
	// Providers serve the catalog's models; nil: the local provider alone.
	Providers map[string]providers.Provider
	// BaseURL is the signer's public base URL; "": BaseURL.
	BaseURL string
	// Log is the engine's logger; nil: a no-op logger.
	Log *zap.Logger
	// TaskQueue is the engine's task queue.
	TaskQueue string
	// Temporal tunes the recording Temporal client.
	Temporal TemporalOptions
}

// Deps are the shared parts under an API handler. Engine uses DB, Blobs, Models, Temporal and Log.
type Deps struct {
	DB      *testdb.DB
	Blobs   *blobstore.Store
	Box     *secrets.Box
	Catalog *catalog.Catalog
	Models  *providers.Registry
	Signer  *urlsign.Signer
	// Files makes the download URLs: the store's with Options.StoreFiles, else nil (the API's).
	Files    *fileurl.Maker
	Clock    *Clock
	Limiter  *ratelimit.Memory
	Slots    *ratelimit.MemorySlots
	Temporal *Temporal
	Engine   *engine.Engine
	// EngineConfig is what Engine was built from: a test that needs a variant (other models, another
	// Temporal client) builds one with engine.New.
	EngineConfig engine.Config
	Log          *zap.Logger
}

// NewDeps builds the Deps over db, a migrated test database. The blob store lives in t.TempDir()
// and is closed when the test ends.
func NewDeps(t testing.TB, db *testdb.DB, opts Options) *Deps {
	t.Helper()
	d := &Deps{DB: db, Log: opts.Log, Clock: NewClock(ClockStart)}
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	var err error
	if d.Box, err = secrets.NewBox(make([]byte, 32)); err != nil {
		t.Fatalf("apitest: secrets box: %v", err)
	}
	blobURL := opts.BlobURL
	if blobURL == "" {
		blobURL = "file://" + t.TempDir()
	}
	if d.Blobs, err = blobstore.Open(context.Background(), blobURL); err != nil {
		t.Fatalf("apitest: blob store: %v", err)
	}
	t.Cleanup(func() { _ = d.Blobs.Close() })
	d.Catalog = opts.Catalog
	if d.Catalog == nil {
		if d.Catalog, err = catalog.Load(); err != nil {
			t.Fatalf("apitest: catalog: %v", err)
		}
	}
	provs := opts.Providers
	if provs == nil {
		provs = map[string]providers.Provider{"local": local.Provider{}}
	}
	d.Models = providers.MustNewRegistry(d.Catalog, provs)
	base := opts.BaseURL
	if base == "" {
		base = BaseURL
	}
	d.Signer = urlsign.New(SignerKey, base)
	if opts.StoreFiles {
		var store fileurl.Presigner
		if opts.PublicBase == "" {
			store = d.Blobs
		}
		if d.Files, err = fileurl.Store(d.Signer, store, opts.PublicBase); err != nil {
			t.Fatalf("apitest: file URLs: %v", err)
		}
	}
	now := opts.Now
	if now == nil {
		now = d.Clock.Now
	}
	d.Limiter = ratelimit.NewMemory(now)
	d.Slots = ratelimit.NewMemorySlots(now)
	d.Temporal = NewTemporal(t, opts.Temporal)
	d.EngineConfig = engine.Config{Store: models.NewStore(db), Blobs: d.Blobs, Log: d.Log, Temporal: d.Temporal.Client, TaskQueue: opts.TaskQueue, Models: d.Models,
		Secrets: d.Box, Files: d.Files}
	d.Engine = engine.New(d.EngineConfig)
	return d
}

// Clock is a fake clock that moves only when told to; it is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock showing start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
