// Package engine is shotflow's application layer: the use cases both APIs and the support tools
// share. The plugin and external façades parse a request, call one use case and map its answer;
// the use cases take a context and plain inputs and return results and *Error refusals. The
// engine knows the store and Temporal's client, never HTTP.
//
// The use cases are grouped by area, one service each (in the style of an application layer of
// commands and queries): Sessions, Generation, Orders, Jobs, Catalog, Records, Uploads, Accounts,
// Webhooks, Idempotency, Outbox and Support. Every service shares one set of dependencies, built
// once by New; nothing outside the engine reaches its database handle or its Temporal client.
package engine

import (
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// Config is what the engine is built from: its store, its Temporal client and its options.
type Config struct {
	// Store is the database: every query and write of the use cases is one of its methods.
	Store    *models.Store
	Temporal client.Client
	// Blobs stores the files of uploads, product photos and preset images (*blobstore.Store). It
	// may be nil only in an engine that stores no files (the admin tools' job runs).
	Blobs     Blobs
	TaskQueue string
	Log       *zap.Logger
	// Models are the configured generation models: what sessions and generations are planned
	// with, and the catalog (models, aspect ratios, prices) the APIs show. It may be nil only in an
	// engine that plans nothing (the admin tools' job runs).
	Models ModelRegistry
	// JobStartDeadline, when set, expires jobs that have not started that long after acceptance.
	JobStartDeadline time.Duration
	// MaxConcurrentJobs caps the running jobs of one order (0: the workflow's default).
	MaxConcurrentJobs int
	// JobOptions tune the orders' JobWorkflows.
	JobOptions workflows.JobOptions
	// ContinueAsNewAfter is how many jobs an order workflow run launches before it continues as
	// new (0: the workflow's default); tests lower it.
	ContinueAsNewAfter int
	// UploadTimeout is the longest an HTTP request may last (UPLOAD_TIMEOUT): a claim of an upload
	// older than it (and a margin) was left by a process that died while receiving or collecting
	// the bytes, and is taken again (zero: DefaultUploadTimeout).
	UploadTimeout time.Duration
	// StartTimeout bounds a request's workflow start of what it committed (an order, an upload's
	// preparation); past it the start is left to the outbox sweep (zero: DefaultStartTimeout).
	StartTimeout time.Duration
	// AfterCommit, when set, runs between the order's commit and its workflow start. It exists for
	// crash tests, which kill the process there (SHOTFLOW_TEST_CRASH_AFTER_COMMIT in cmd/shotflow).
	AfterCommit func()
	// Metrics counts accepted orders and the workflows the Sweeper starts; nil counts nothing.
	Metrics *metrics.Metrics
	// TemporalUI is where the support use cases link workflows in the Temporal Web UI; its zero
	// value links none.
	TemporalUI TemporalUI
	// Signer signs the output URLs in the payloads of the webhooks the engine records itself (a
	// stranded job's, settled by support), valid DownloadTTL after their last automatic attempt;
	// an engine that records none may leave both unset.
	Signer      *urlsign.Signer
	DownloadTTL time.Duration
	// Files makes the download URLs the engine hands out (outputs in event streams, webhook
	// payloads); nil makes the API's, signed by Signer.
	Files *fileurl.Maker
	// Secrets seals the signing secrets of the external API's webhook endpoints; an engine that
	// creates or rotates none may leave it nil.
	Secrets Sealer
	// WebhookAllowPrivateNetworks lets webhook endpoints point to loopback, private and other
	// internal addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS).
	WebhookAllowPrivateNetworks bool
	// FeedPollInterval is how often a process reads the event numbers of the orders its requests
	// wait on (Feed; zero: DefaultFeedPollInterval).
	FeedPollInterval time.Duration
	// Now is the clock of test mode's UTC day: when a test twin's credits are refilled and its
	// quota resets (docs/test-mode.md); nil is time.Now. Tests set it to cross a day.
	Now func() time.Time
}

// Engine is the application: one service per area over one shared set of dependencies.
type Engine struct {
	Sessions    *Sessions    // plugin photo sessions: plan, commit and start; clone a session
	Generation  *Generation  // the external API's generation requests: plan and submit them
	Orders      *Orders      // accepting orders (the outbox's fast path) and reading an account's orders
	Jobs        *Jobs        // find, list, refresh, rate and cancel jobs
	Catalog     *Catalog     // an installation's products, packshots and images; the generation models
	Records     *Records     // an account's presets, fashion models, sceneries, photos and results
	Uploads     *Uploads     // declared uploads: claim, store, prepare; files behind signed URLs
	Accounts    *Accounts    // API keys, accounts, installations and credits
	Webhooks    *Webhooks    // webhook secrets, deliveries and replays
	Idempotency *Idempotency // Idempotency-Key runs of the plugin API
	Outbox      *Outbox      // starts of committed orders, job re-runs and preparations that were lost
	Support     *Support     // what support staff do: list, show, retry, re-drive, replay
	Feed        *Feed        // the change feed of orders: waits on orders and reads their events
	Usage       *Usage       // what an account or installation spent, from the credit ledger
	Alerts      *Alerts      // credits.low and the spend limit alerts: thresholds and their events
}

// core is the dependencies every service shares, and the engine itself for a service that uses
// another area's use case.
type core struct {
	cfg   Config
	store *models.Store // cfg.Store
	app   *Engine
	live  liveness   // providers recently seen with an active generator
	marks startMarks // workflow starts of accepted orders, recorded in batches
	gate  startGate  // defers requests' workflow starts while Temporal is unavailable
}

// New builds the engine from its configuration.
func New(cfg Config) *Engine {
	c := &core{cfg: cfg, store: cfg.Store}
	e := &Engine{
		Sessions: &Sessions{c}, Generation: &Generation{c}, Orders: &Orders{c}, Jobs: &Jobs{c},
		Catalog: &Catalog{c}, Records: &Records{c}, Uploads: &Uploads{c}, Accounts: &Accounts{c},
		Webhooks: &Webhooks{c}, Idempotency: &Idempotency{c}, Outbox: &Outbox{c}, Support: &Support{c},
		Feed: &Feed{core: c}, Usage: &Usage{c}, Alerts: &Alerts{c},
	}
	c.app = e
	return e
}

// now is the engine's clock (Config.Now).
func (c *core) now() time.Time {
	if c.cfg.Now != nil {
		return c.cfg.Now()
	}
	return time.Now()
}

// Sessions plans, commits and starts the plugin API's photo sessions.
type Sessions struct{ *core }

// Generation plans and submits the external API's generation requests.
type Generation struct{ *core }

// Orders accepts orders (the order, its jobs and their reservation, then the workflow start) and
// reads an account's orders.
type Orders struct{ *core }

// Jobs finds, lists, refreshes, rates and cancels jobs.
type Jobs struct{ *core }

// Catalog holds an installation's products, packshots and images, and the generation models,
// aspect ratios and prices.
type Catalog struct{ *core }

// Records holds an account's reusable records: presets, fashion models, sceneries, photos and the
// results of its generations.
type Records struct{ *core }

// Uploads declares, claims, stores and prepares uploaded files, and finds files for download.
type Uploads struct{ *core }

// Accounts authenticates API keys and runs the operators' account commands: accounts,
// installations, keys and credit grants.
type Accounts struct{ *core }

// Webhooks rotates webhook secrets and starts and replays deliveries.
type Webhooks struct{ *core }

// Idempotency runs a plugin request once per Idempotency-Key.
type Idempotency struct{ *core }

// Outbox starts what was committed but never started: orders, job re-runs and preparations.
type Outbox struct{ *core }

// Support holds what support staff do through `shotflow admin`.
type Support struct{ *core }

// recorder records the webhook events of the use cases that end jobs outside their workflows (a
// cancel, support's settlements) and of test sends.
func (c *core) recorder() webhooks.Recorder {
	return webhooks.Recorder{Signer: c.cfg.Signer, Files: c.cfg.Files, DownloadTTL: c.cfg.DownloadTTL}
}

// fileURLs makes the download URLs of the engine's answers: nil (none) when it has neither a
// Maker nor a Signer.
func (c *core) fileURLs() *fileurl.Maker { return fileurl.Of(c.cfg.Files, c.cfg.Signer) }
