// Package activities holds the side effects of shotflow's workflows: read-model projections, the
// credit ledger, generation calls and file storage.
package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/media/imageprep"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/internal/providers/testmode"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Activities holds the dependencies of every activity.
type Activities struct {
	Store     *models.Store
	Blobs     *blobstore.Store
	Generator *providers.Registry
	// TestStudio renders test-mode jobs (jobs.test_mode), whatever their model: never Generator.
	// Its zero value renders on a local studio without caches; the worker passes its own.
	TestStudio testmode.Studio
	Log        *zap.Logger
	LongEdge   int               // pixels of the long edge of rendered images
	Prepare    imageprep.Options // limits and sizes of upload preparation (PrepareAsset)

	// Webhook delivery (activities/webhooks.go).
	Secrets     models.Sealer    // opens installations' webhook secrets
	Signer      *urlsign.Signer  // signs the download URLs in webhook payloads
	Files       *fileurl.Maker   // makes those URLs (nil: the API's, signed by Signer)
	Webhooks    *webhooks.Client // sends webhooks; refuses private networks unless configured
	DownloadTTL time.Duration    // minimum validity of download URLs in webhook payloads
	// Deliveries starts the deliveries of the events an activity recorded, after its commit; nil
	// leaves them to the outbox sweep.
	Deliveries DeliveryStarter
	// DisableAfter disables an endpoint whose attempts have all failed that long
	// (WEBHOOK_DISABLE_AFTER); 0 never does.
	DisableAfter time.Duration

	// Metrics counts finished jobs, generate attempts and webhook deliveries; nil counts nothing.
	Metrics *metrics.Metrics
}

// BeginAttempt moves the job to in_progress and records the attempt number (a local activity), in
// one statement that returns the job. The first attempt of a plugin job's run then records
// job.started and starts its deliveries. A failure to record it fails the activity, whose retry
// begins the attempt again (harmless: the job is in progress) and records the event once (its ID
// is derived from the job run).
//
// A job that has ended is not runnable (contract.ErrTypeJobNotRunnable), and neither is one whose
// first attempt has not begun when its start deadline (Cancel-After) has passed: the store never
// begins it, and BeginAttempt cancels it (cancelPastDeadline) before answering not runnable, so
// that the job's workflow ends as it does for a job a client cancelled.
func (a *Activities) BeginAttempt(ctx context.Context, in contract.AttemptInput) error {
	job, err := a.Store.BeginAttemptOf(ctx, in.JobID, in.Run, in.Attempt)
	if errors.Is(err, models.ErrJobNotRunnable) {
		if err := a.cancelPastDeadline(ctx, in); err != nil {
			return err // retried: the job is still not begun, and the cancel is tried again
		}
		return temporal.NewNonRetryableApplicationError("job is already terminal", contract.ErrTypeJobNotRunnable, err)
	}
	if err != nil || in.Attempt != 1 {
		return err
	}
	owed, err := a.recorder().RecordJobStarted(ctx, a.Store, job)
	if err != nil {
		return err
	}
	a.startDeliveries(ctx, owed)
	return nil
}

// cancelPastDeadline cancels the job run of in with cancel reason status.CancelDeadline when it has
// not begun and its start deadline has passed (models.Store.CancelJobNotBegun decides; a job that
// ended otherwise is left as it is), records its end's events in the same transaction and starts
// their deliveries after the commit. Its order needs no word: it launched the job, and reads the
// job's end from its workflow's result.
func (a *Activities) cancelPastDeadline(ctx context.Context, in contract.AttemptInput) error {
	var owed []models.WebhookDelivery
	var job *models.Job
	err := a.Store.Tx(ctx, func(tx *models.Store) error {
		cancelled, ok, err := tx.CancelJobNotBegun(ctx, in.JobID, in.Run, status.CancelDeadline)
		if err != nil || !ok {
			return err
		}
		job = cancelled
		owed, err = a.recorder().RecordJobEnd(ctx, tx, cancelled, in.Run)
		return err
	})
	if err != nil || job == nil {
		return err
	}
	a.Metrics.JobFinished(status.JobCancelled, "", job.TestMode)
	a.Metrics.DeadlineCancelled(metrics.DeadlineByAttempt, job.TestMode, 1)
	a.Log.Info("job cancelled: not started by its Cancel-After deadline", zap.String("job_id", job.ID),
		zap.String("order_id", job.OrderID), zap.Timep("start_deadline", job.StartDeadline))
	a.startDeliveries(ctx, owed)
	return nil
}

// Generate runs one generation attempt: it loads the job's inputs, calls the provider of the job's
// model and stores the outputs. Failures are ApplicationErrors whose type is the errorCategory and
// are never retried here: JobWorkflow decides, so every attempt is visible in attempt_count. Their
// details are the provider's Retry-After in seconds and when the attempt began running
// (contract.Generate), from which JobWorkflow's retry window runs. When the database or the blob
// store cannot be reached the failure is ErrTypeDependencyUnavailable instead: that is no attempt,
// and JobWorkflow runs it again once the outage is over.
func (a *Activities) Generate(ctx context.Context, in contract.AttemptInput) (contract.GenerateResult, error) {
	res, err := a.attempt(ctx, in)
	return res, withAttemptStart(err, attemptStart(ctx))
}

// attempt is Generate's attempt, its categorized failures without their start.
func (a *Activities) attempt(ctx context.Context, in contract.AttemptInput) (contract.GenerateResult, error) {
	defer keepAlive(ctx, 5*time.Second)()
	job, order, session, err := a.loadAttempt(ctx, in.JobID)
	if err != nil {
		return contract.GenerateResult{}, err
	}
	req := providers.Request{
		JobID: job.ID, JobType: job.JobType, AspectRatio: job.AspectRatio, LongEdge: a.LongEdge,
		Seed: seedFor(job.ID, job.Run), Session: session, Prompt: job.Prompt,
		Attempt: in.Attempt, Position: job.Position,
	}
	for _, id := range job.Inputs() {
		input, err := a.loadInput(ctx, id)
		if err != nil {
			return contract.GenerateResult{}, err
		}
		req.Inputs = append(req.Inputs, *input)
	}
	if req.Scenery, err = a.loadScenery(ctx, job, session.SceneryID); err != nil {
		return contract.GenerateResult{}, err
	}
	began := time.Now()
	outputs, provider, err := a.generate(ctx, job, req)
	took := time.Since(began)
	if err != nil {
		ge := providers.Classify(err)
		a.Metrics.GenerateAttempt(provider, string(ge.Category), job.TestMode, took)
		a.Log.Warn("generation attempt failed", zap.String("job_id", job.ID), zap.String("order_id", order.ID),
			zap.String("correlation_id", order.CorrelationID), zap.Int("attempt", in.Attempt),
			zap.String("error_category", string(ge.Category)), zap.String("detail", ge.Message))
		// A test key's job failing (rehearsed or not) is no operator's matter either.
		return contract.GenerateResult{}, categorizedAs(ge.Category, errors.New(ge.Message), ge.RetryAfter, job.TestMode || clientCaused(ge.Category))
	}
	if len(outputs) == 0 {
		a.Metrics.GenerateAttempt(provider, string(errorcat.InternalBug), job.TestMode, took)
		return contract.GenerateResult{}, categorized(errorcat.InternalBug, errors.New("provider returned no output"), 0)
	}
	a.Metrics.GenerateAttempt(provider, metrics.OutcomeOK, job.TestMode, took)
	var res contract.GenerateResult
	for pos, out := range outputs {
		key := models.OutputBlobKey(job, pos, out.Ext)
		if err := a.putBlob(ctx, key, out.Data, out.ContentType); err != nil {
			return contract.GenerateResult{}, unavailable(contract.DependencyBlobStore, fmt.Errorf("store output: %w", err))
		}
		res.Outputs = append(res.Outputs, contract.OutputFile{
			AssetID: models.OutputAssetID(job.ID, job.Run, pos), BlobKey: key, ContentType: out.ContentType,
			SizeBytes: int64(len(out.Data)), Width: out.Width, Height: out.Height, SHA256: sha256Hex(out.Data),
		})
		activity.RecordHeartbeat(ctx, time.Now().UTC(), pos) // when (contract.Generate), and the outputs stored
	}
	return res, nil
}

// generate runs the attempt of req on the provider that renders job, which it returns: the
// provider of the job's model, or for a test-mode job the local studio with the watermark and
// the outcome its request asked for (TestStudio). A test-mode job never reaches Generator, so
// never a paid provider; a live job never reaches TestStudio.
func (a *Activities) generate(ctx context.Context, job *models.Job, req providers.Request) ([]providers.Output, string, error) {
	if !job.TestMode {
		outputs, err := a.Generator.Generate(ctx, job.AIModel, req)
		return outputs, job.Provider(), err
	}
	outcome, err := testmode.Decode(job.TestOutcome)
	if err != nil {
		return nil, local.Name, providers.Errorf(errorcat.InternalBug, "%v", err)
	}
	studio := a.TestStudio
	if studio.Local == nil {
		studio.Local = local.Provider{}
	}
	_, req.Model, _ = strings.Cut(job.AIModel, "/")
	outputs, err := studio.Generate(ctx, req, outcome)
	return outputs, local.Name, err
}

// loadAttempt reads the job, its order and the order's session settings for a generate attempt.
func (a *Activities) loadAttempt(ctx context.Context, jobID string) (*models.Job, *models.Order, providers.SessionConfig, error) {
	var session providers.SessionConfig
	dctx, cancel := bounded(ctx)
	defer cancel()
	job, err := a.Store.GetJob(dctx, jobID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, nil, session, categorized(errorcat.InternalBug, fmt.Errorf("job %s does not exist", jobID), 0)
	}
	if err != nil {
		return nil, nil, session, unavailable(contract.DependencyDatabase, fmt.Errorf("load job: %w", err))
	}
	order, err := a.Store.GetOrder(dctx, job.OrderID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, nil, session, categorized(errorcat.InternalBug, fmt.Errorf("order %s of job %s does not exist", job.OrderID, jobID), 0)
	}
	if err != nil {
		return nil, nil, session, unavailable(contract.DependencyDatabase, fmt.Errorf("load order: %w", err))
	}
	if len(order.SessionConfig) > 0 {
		if err := json.Unmarshal(order.SessionConfig, &session); err != nil {
			return nil, nil, session, categorized(errorcat.InternalBug, fmt.Errorf("session_config: %w", err), 0)
		}
	}
	return job, order, session, nil
}

// getBlob reads a stored file within dependencyCallTimeout.
func (a *Activities) getBlob(ctx context.Context, key string) ([]byte, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return a.Blobs.Get(ctx, key)
}

// putBlob stores a file within dependencyCallTimeout.
func (a *Activities) putBlob(ctx context.Context, key string, data []byte, contentType string) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return a.Blobs.Put(ctx, key, data, contentType)
}

func (a *Activities) loadInput(ctx context.Context, assetID string) (*providers.Input, error) {
	dctx, cancel := bounded(ctx)
	asset, err := a.Store.GetAsset(dctx, assetID)
	cancel()
	switch {
	case errors.Is(err, models.ErrNotFound):
		return nil, categorized(errorcat.InputMissing, fmt.Errorf("input asset %s does not exist", assetID), 0)
	case err != nil:
		return nil, unavailable(contract.DependencyDatabase, fmt.Errorf("load input asset: %w", err))
	case asset.Status == status.AssetAwaitingUpload || asset.Status == status.AssetUploading:
		return nil, categorized(errorcat.InputNotReady, fmt.Errorf("input asset %s is still being uploaded", assetID), 0)
	case asset.Status == status.AssetProcessing:
		return nil, categorized(errorcat.InputNotReady, fmt.Errorf("input asset %s is still being prepared", assetID), 0)
	case asset.Status == status.AssetInvalid:
		return nil, categorized(errorcat.InputMissing, fmt.Errorf("input asset %s is unusable: %s", assetID, asset.Problem), 0)
	case asset.Status != status.AssetReady || asset.PurgedAt != nil:
		return nil, categorized(errorcat.InputMissing, fmt.Errorf("input asset %s is %s", assetID, asset.Status), 0)
	}
	data, err := a.getBlob(ctx, asset.InputBlobKey())
	if errors.Is(err, blobstore.ErrNotFound) {
		return nil, categorized(errorcat.InputMissing, fmt.Errorf("input file of asset %s is gone", assetID), 0)
	}
	if err != nil {
		return nil, unavailable(contract.DependencyBlobStore, fmt.Errorf("read input: %w", err))
	}
	contentType := asset.ContentType
	if asset.PreparedBlobKey != "" {
		contentType = "image/png"
	}
	return &providers.Input{Data: data, ContentType: contentType}, nil
}

// CompleteJob marks the job completed with its outputs and consumes its credits (a local activity).
// Only the call that completed the job counts it as finished, so retries count nothing twice.
// Kept for runs started in an older shape: only JobShapeOriginal runs call it; newer shapes end
// with FinishJob.
func (a *Activities) CompleteJob(ctx context.Context, in contract.CompleteInput) error {
	job, completed, err := completeJob(ctx, a.Store, in)
	if completed {
		a.Metrics.JobFinished(status.JobCompleted, "", job.TestMode)
		a.Metrics.CreditsConsumed(job.JobType, job.TestMode, job.CreditCost)
	}
	return err
}

// completeJob stores a successful job run through st (its own transaction, or a savepoint of the
// caller's) and returns the job as it left it; completed is false when the run was already
// terminal. The outputs' account, installation and job are the job's, filled in by the store from
// the row its UPDATE returns: the job is not read first.
func completeJob(ctx context.Context, st *models.Store, in contract.CompleteInput) (job *models.Job, completed bool, err error) {
	now := time.Now().UTC()
	assets := make([]models.Asset, 0, len(in.Outputs))
	for pos, o := range in.Outputs {
		assets = append(assets, models.Asset{
			ID: o.AssetID, Kind: models.AssetKindOutput,
			Status: status.AssetReady, ContentType: o.ContentType, SizeBytes: o.SizeBytes, BlobKey: o.BlobKey,
			Width: o.Width, Height: o.Height, SHA256: o.SHA256, Position: pos, CreatedAt: now, UpdatedAt: now,
		})
	}
	return st.CompleteJob(ctx, in.JobID, in.Run, assets)
}

// EndJob moves the job to a terminal failure status and releases its credits (a local activity).
// Only the call that ended the job counts it as finished, so retries count nothing twice.
// Kept for runs started in an older shape: only shapes before JobShapeQuiet (and their orders)
// call it, with RecordJobWebhook after it; JobShapeQuiet runs end with FinishJob.
func (a *Activities) EndJob(ctx context.Context, in contract.EndInput) error {
	job, ended, err := endJob(ctx, a.Store, in)
	if ended && err == nil {
		a.Metrics.JobFinished(in.Status, string(in.Category), job.TestMode)
	}
	return err
}

// endJob stores a job run's end without output through st (its own transaction, or a savepoint of
// the caller's) and returns the job as it left it; ended is false when the run was already
// terminal.
func endJob(ctx context.Context, st *models.Store, in contract.EndInput) (*models.Job, bool, error) {
	hint := ""
	if in.Category != "" {
		hint = in.Category.Hint()
	}
	return st.EndJob(ctx, in.JobID, in.Run, in.Status, string(in.Category), hint, in.Detail)
}

// MarkRetryPending shows the job as retry_pending with the category of its last attempt (a local
// activity). After a retryable failure (NextAttemptAt set) it records job.retrying in the same
// transaction and starts its deliveries after the commit.
func (a *Activities) MarkRetryPending(ctx context.Context, in contract.RetryPendingInput) error {
	if in.NextAttemptAt == nil {
		return a.Store.MarkRetryPending(ctx, in.JobID, in.Run, string(in.Category), in.Category.Hint(), in.Detail)
	}
	var owed []models.WebhookDelivery
	err := a.Store.Tx(ctx, func(tx *models.Store) error {
		job, err := tx.MarkRetryPendingOf(ctx, in.JobID, in.Run, string(in.Category), in.Category.Hint(), in.Detail)
		if err != nil || job == nil {
			return err // a run that ended or was superseded meanwhile has nothing to retry
		}
		owed, err = a.recorder().RecordJobRetrying(ctx, tx, job, webhooks.Retry{
			Attempt: in.Attempt, ErrorCategory: string(in.Category), NextAttemptAt: in.NextAttemptAt.UTC()})
		return err
	})
	if err != nil {
		return err
	}
	a.startDeliveries(ctx, owed)
	return nil
}

// attemptStart is when the Temporal server handed the running activity of ctx to this worker: for
// Generate, when the attempt began, after its wait in the provider's task queue (on the server's
// clock, as JobWorkflow's). Zero outside an activity.
func attemptStart(ctx context.Context) time.Time {
	if !activity.IsActivity(ctx) {
		return time.Time{}
	}
	return activity.GetInfo(ctx).StartedTime
}

// withAttemptStart adds began, when set, to the details of a categorized failure of a generate
// attempt (after its Retry-After), so that JobWorkflow starts its retry window at the first
// attempt's start rather than at its request. Other errors, an outage
// (ErrTypeDependencyUnavailable) among them, are returned as they are.
func withAttemptStart(err error, began time.Time) error {
	var appErr *temporal.ApplicationError
	if began.IsZero() || !errors.As(err, &appErr) {
		return err
	}
	if _, ok := errorcat.Parse(appErr.Type()); !ok {
		return err
	}
	var retryAfter float64
	if appErr.HasDetails() {
		_ = appErr.Details(&retryAfter)
	}
	return temporal.NewApplicationErrorWithOptions(appErr.Message(), appErr.Type(), temporal.ApplicationErrorOptions{
		NonRetryable: appErr.NonRetryable(), Cause: appErr.Unwrap(), Details: []any{retryAfter, began.UTC()}, Category: appErr.Category(),
	})
}

// categorized wraps err as a non-retryable ApplicationError typed with the category, carrying the
// provider's Retry-After (in seconds) as its detail (Generate adds when the attempt began).
func categorized(c errorcat.Category, err error, retryAfter time.Duration) error {
	return categorizedAs(c, err, retryAfter, clientCaused(c))
}

// categorizedAs is categorized, benign when told: the SDK then logs the failure at debug level,
// not as an "Activity error." at ERROR, and leaves it out of its failure metrics. shotflow's own
// "generation attempt failed" warning and shotflow_generate_attempts_total count every failure.
func categorizedAs(c errorcat.Category, err error, retryAfter time.Duration, benign bool) error {
	opts := temporal.ApplicationErrorOptions{NonRetryable: true, Cause: err, Details: []any{retryAfter.Seconds()}}
	if benign {
		opts.Category = temporal.ApplicationErrorCategoryBenign
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), string(c), opts)
}

// clientCaused reports the categories that are the normal course of a job or its client's
// input, never an operator's matter: an input still being uploaded or prepared (the job waits for
// it), a request the provider's content rules refuse, an input that is missing or unusable.
func clientCaused(c errorcat.Category) bool {
	return c == errorcat.InputNotReady || c == errorcat.ContentPolicy || c == errorcat.InputMissing
}

// seedFor derives the deterministic render seed of a job run.
func seedFor(jobID string, run int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", jobID, run)
	return int64(h.Sum64() >> 1)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
