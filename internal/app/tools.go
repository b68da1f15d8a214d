package app

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// Tools is what the operator commands run the engine's use cases on (`shotflow admin`, and the
// demo tenant `shotflow dev` seeds): the database of a configuration, at the schema version this
// binary knows, without the blob store, providers, HTTP server or worker that Open builds.
type Tools struct {
	cfg   config.Config
	store *models.Store
}

// OpenTools opens cfg's database and checks that its schema is the version this binary knows
// (`shotflow migrate` gets it there). cfg's Temporal namespace should be the effective one
// (temporalconn.Resolve): the engine's Temporal UI links name it.
func OpenTools(cfg config.Config) (*Tools, error) {
	// A tool works on the service's database, never on one it would create here.
	store, err := models.OpenStore(cfg.DatabaseURL, models.OpenOptions{MustExist: true})
	if err != nil {
		return nil, err
	}
	if err := store.CheckSchema(); err != nil {
		_ = store.Close()
		return nil, err
	}
	return &Tools{cfg: cfg, store: store}, nil
}

// Engine builds an engine over the database and tc, which may be nil when no use case called
// reaches Temporal. master, when not nil, is the master key: the engine then signs the download
// URLs of the webhooks it records (Support.RedriveJob). The engine logs nothing.
func (t *Tools) Engine(tc client.Client, master []byte) *engine.Engine {
	var signer *urlsign.Signer
	if master != nil {
		signer = NewSigner(t.cfg, master)
	}
	c := engineConfig(t.cfg, t.store, tc, zap.NewNop(), signer)
	c.Files = toolFileURLs(t.cfg, signer)
	return engine.New(c)
}

// toolFileURLs makes the download URLs of the files the tools' engine links to (the outputs in
// the webhooks it records, Support.RedriveJob) as the workers make them (NewFileURLs): under
// BLOB_PUBLIC_BASE_URL when FILE_URLS is store and sets one, else the API's (nil: fileurl.Of).
// The tools open no bucket, so they presign no GET; a webhook's URLs outlast the seven days S3
// signs anyway, and are the API's in the workers' payloads too.
func toolFileURLs(cfg config.Config, signer *urlsign.Signer) *fileurl.Maker {
	if signer == nil || cfg.EffectiveFileURLs() != fileurl.ModeStore || cfg.BlobPublicBaseURL == "" {
		return nil
	}
	files, _ := fileurl.Store(signer, nil, cfg.BlobPublicBaseURL) // it refuses only the want of a base
	return files
}

// Close closes the database.
func (t *Tools) Close() { _ = t.store.Close() }

// Migrate applies the pending migrations to cfg's database (`shotflow migrate`, `shotflow dev`)
// and returns the versions it applied.
func Migrate(ctx context.Context, cfg config.Config) ([]int, error) {
	store, err := models.OpenStore(cfg.DatabaseURL, models.OpenOptions{})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return store.Migrate(ctx)
}

// engineConfig is the engine's configuration of cfg over store, the Temporal client tc and signer,
// which signs the output URLs of the webhooks the engine records: what every process shares.
func engineConfig(cfg config.Config, store *models.Store, tc client.Client, log *zap.Logger, signer *urlsign.Signer) engine.Config {
	return engine.Config{
		Store: store, Temporal: tc, TaskQueue: cfg.TemporalTaskQueue, Log: log,
		JobStartDeadline: cfg.JobStartDeadline, MaxConcurrentJobs: cfg.OrderMaxConcurrentJobs,
		JobOptions: workflows.JobOptions{InputWait: cfg.InputWaitTimeout},
		TemporalUI: engine.TemporalUI{BaseURL: cfg.TemporalUIURL, Namespace: cfg.TemporalNamespace},
		Signer:     signer, DownloadTTL: cfg.DownloadURLTTL,
		WebhookAllowPrivateNetworks: cfg.WebhookAllowPrivateNetworks,
		FeedPollInterval:            cfg.OrderFeedPollInterval,
		UploadTimeout:               cfg.UploadTimeout,
	}
}
