package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // reads dimensions of JPEG uploads
	_ "image/png"  // reads dimensions of PNG uploads
	"io"
	"net/http"
	"path"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	_ "golang.org/x/image/webp" // reads dimensions of WebP uploads

	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// Uploads: a client declares a file (POST /assets/upload), then sends its bytes once to a signed
// URL before the URL expires. The engine keeps the upload's record, and checks and stores the
// bytes (ReceiveUpload) between ClaimUpload and CompleteUpload.

// ReasonUploadNotAccepted refines KindConflict: the upload URL was already used or has expired.
const ReasonUploadNotAccepted = "upload_not_accepted"

// ReasonTooLarge refines KindInvalid: the bytes are more than the upload declared.
const ReasonTooLarge = "too_large"

// sniffBytes is how much of an upload's head its type is sniffed and its dimensions read from.
const sniffBytes = 64 << 10

// releaseUploadTimeout bounds the release of a claimed upload, which runs also after the request
// ended.
const releaseUploadTimeout = 5 * time.Second

// DefaultUploadTimeout is Config.UploadTimeout when it is zero: the longest UPLOAD_TIMEOUT allows.
const DefaultUploadTimeout = 2 * time.Hour

// claimMargin is how long past the longest request a claim of an upload is still held: the
// request's release of it after its deadline (releaseUploadTimeout), and clocks a little apart.
const claimMargin = time.Minute

// abandonedBefore is when a claim of an upload must have been taken, seen at now, for the process
// that took it to be dead: no request lasts longer than UploadTimeout, and one that ends releases
// or completes its claim within the margin.
func (e *Uploads) abandonedBefore(now time.Time) time.Time {
	timeout := e.cfg.UploadTimeout
	if timeout <= 0 {
		timeout = DefaultUploadTimeout
	}
	return now.Add(-timeout - claimMargin)
}

// UploadDeclaration is a file a client is about to upload to an installation.
type UploadDeclaration struct {
	AccountID      string
	InstallationID string
	Filename       string // the client's name; only its last element is kept
	ContentType    string
	SizeBytes      int64
	// ExpiresAt is when the upload URL expires unused.
	ExpiresAt time.Time
}

// DeclareUpload records an upload awaiting its bytes and returns its ID, which names the upload URL.
func (e *Uploads) DeclareUpload(ctx context.Context, d UploadDeclaration) (string, error) {
	now := time.Now().UTC()
	expires := d.ExpiresAt.UTC()
	id := models.NewID()
	asset := models.Asset{
		ID: id, AccountID: d.AccountID, InstallationID: &d.InstallationID,
		Kind: models.AssetKindUpload, Status: status.AssetAwaitingUpload, Filename: path.Base(d.Filename),
		ContentType: d.ContentType, SizeBytes: d.SizeBytes,
		BlobKey:         fmt.Sprintf("uploads/%s/%s", d.AccountID, id),
		UploadExpiresAt: &expires, CreatedAt: now, UpdatedAt: now,
	}
	if err := e.store.CreateAsset(ctx, &asset); err != nil {
		return "", err
	}
	return asset.ID, nil
}

// UploadBytes are the bytes a client sends to the signed URL of a declared upload.
type UploadBytes struct {
	ID            string // the upload the URL names
	ContentType   string // the request's Content-Type
	ContentLength int64  // the request's Content-Length; -1 when unknown
	Body          io.Reader
}

// ReceivedUpload is an upload whose bytes are stored and being prepared.
type ReceivedUpload struct {
	AssetID       string
	Status        string // models/status.AssetProcessing
	ContentType   string
	SizeBytes     int64
	Width, Height int // 0 when the header did not tell
	SHA256        string
	TestMode      bool // declared by a test key: its account is a test twin
}

// ReceiveUpload checks and stores the bytes of a declared upload and starts their preparation
// (CompleteUpload). The bytes must match the declared type and size and arrive before the URL
// expires; otherwise nothing is stored and the upload can be sent again. In this order it answers:
// KindNotFound for an unknown upload; KindInvalid for a Content-Type or Content-Length other than
// declared (ReasonTooLarge when longer); KindConflict (ReasonUploadNotAccepted) for an upload
// already used or expired; KindInvalid when the sniffed type is not the declared one, or fewer
// bytes arrive than declared; KindInvalid (ReasonTooLarge) when more do. A failure of the file
// store or the database is returned as it is.
func (e *Uploads) ReceiveUpload(ctx context.Context, in UploadBytes) (ReceivedUpload, error) {
	asset, err := e.FindUpload(ctx, in.ID)
	if err != nil {
		return ReceivedUpload{}, err
	}
	if in.ContentType != asset.ContentType {
		return ReceivedUpload{}, refuse(KindInvalid, "", "", "Content-Type is %q but the upload was declared as %q.", in.ContentType, asset.ContentType)
	}
	if cl := in.ContentLength; cl >= 0 && cl != asset.SizeBytes {
		reason := ""
		if cl > asset.SizeBytes {
			reason = ReasonTooLarge
		}
		return ReceivedUpload{}, refuse(KindInvalid, reason, "", "Content-Length is %d but the upload was declared as %d bytes.", cl, asset.SizeBytes)
	}
	// The signed URL carries no key: the upload's mode is its account's (read before the claim, so
	// that nothing fails once the bytes are stored).
	test, err := e.store.AccountTestMode(ctx, asset.AccountID)
	if err != nil {
		return ReceivedUpload{}, err
	}
	// Claim the upload so two concurrent PUTs cannot both write it.
	if err := e.ClaimUpload(ctx, in.ID); err != nil {
		return ReceivedUpload{}, err
	}
	// Cleanup runs also when the request ran out of time or its client left: an upload left
	// claimed could never be sent again.
	cleanup, cancelCleanup := context.WithTimeout(context.WithoutCancel(ctx), releaseUploadTimeout)
	defer cancelCleanup()
	refused := func(err error) (ReceivedUpload, error) {
		e.ReleaseUpload(ctx, in.ID)
		return ReceivedUpload{}, err
	}

	body := bufio.NewReaderSize(in.Body, sniffBytes)
	head, _ := body.Peek(sniffBytes)
	if sniffed := http.DetectContentType(head); sniffed != asset.ContentType {
		return refused(refuse(KindInvalid, "", "", "The bytes are %s, not the declared %s.", sniffed, asset.ContentType))
	}
	var width, height int
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(head)); err == nil {
		width, height = cfg.Width, cfg.Height
	}
	n, sum, err := e.cfg.Blobs.PutReader(ctx, asset.BlobKey, body, asset.ContentType, asset.SizeBytes)
	if err == nil && n != asset.SizeBytes {
		_ = e.cfg.Blobs.Delete(cleanup, asset.BlobKey)
		return refused(refuse(KindInvalid, "", "", "The upload is incomplete: received %d bytes but the upload was declared as %d.", n, asset.SizeBytes))
	}
	// The route's own body limit (a declaration at the largest size) may trip first, one byte
	// before the store's: the same refusal.
	var overLimit *http.MaxBytesError
	if errors.Is(err, blobstore.ErrTooLarge) || errors.As(err, &overLimit) {
		return refused(refuse(KindInvalid, ReasonTooLarge, "", "The upload is larger than declared (%d bytes).", asset.SizeBytes))
	}
	if err != nil {
		return refused(err)
	}
	// The bytes are stored: PrepareInputWorkflow checks and prepares them, then wakes the jobs
	// waiting for them.
	if err := e.CompleteUpload(ctx, asset, StoredUpload{SHA256: sum, Width: width, Height: height}); err != nil {
		return refused(err)
	}
	return ReceivedUpload{AssetID: asset.ID, Status: status.AssetProcessing, ContentType: asset.ContentType,
		SizeBytes: n, Width: width, Height: height, SHA256: sum, TestMode: test}, nil
}

// FindUpload returns a declared upload by ID (the signed URL names it, so it needs no tenant);
// KindNotFound when there is none.
func (e *Uploads) FindUpload(ctx context.Context, id string) (*models.Asset, error) {
	asset, err := e.store.FindUpload(ctx, id)
	if errors.Is(err, models.ErrNotFound) {
		return nil, refuse(KindNotFound, "", "", "No such upload.")
	}
	return asset, err
}

// ClaimUpload marks an upload awaiting its bytes, whose URL has not expired, as being uploaded, so
// two concurrent uploads cannot both write it: KindConflict (ReasonUploadNotAccepted) when it was
// already used, is being sent, or has expired. The caller completes the upload (CompleteUpload) or
// releases it (ReleaseUpload); a claim that a process which died left is taken again once no
// request could still hold it (Config.UploadTimeout).
func (e *Uploads) ClaimUpload(ctx context.Context, id string) error {
	now := time.Now()
	claimed, err := e.store.ClaimUpload(ctx, id, now, e.abandonedBefore(now))
	if err != nil {
		return err
	}
	if !claimed {
		return refuse(KindConflict, ReasonUploadNotAccepted, "", "This upload URL was already used or has expired.")
	}
	return nil
}

// ReleaseUpload returns a claimed upload whose bytes were refused or not stored to awaiting its
// bytes, so it can be sent again. It runs also when ctx has ended (the request ran out of time or
// its client left): an upload left claimed could never be sent again. A failure is logged.
func (e *Uploads) ReleaseUpload(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseUploadTimeout)
	defer cancel()
	if err := e.store.ReleaseUpload(ctx, id); err != nil {
		e.logger().Warn("release upload claim", zap.String("asset_id", id), zap.Error(err))
	}
}

// StoredUpload is what the bytes of a claimed upload turned out to be once stored.
type StoredUpload struct {
	SHA256        string
	Width, Height int // 0 when the header did not tell
}

// CompleteUpload records the stored bytes of a claimed upload (status processing) and starts its
// preparation (StartPrepare), which checks and prepares them and wakes the jobs waiting for them.
// A failed start is logged, not returned: the worker's sweep starts it. On an error the upload
// stays claimed; release it.
func (e *Uploads) CompleteUpload(ctx context.Context, asset *models.Asset, stored StoredUpload) error {
	if err := e.store.MarkUploadStored(ctx, asset, stored.SHA256, stored.Width, stored.Height, time.Now().UTC()); err != nil {
		return err
	}
	asset.Status = status.AssetProcessing
	startCtx, cancel := e.startContext(ctx)
	defer cancel()
	_ = e.gatedStart(startCtx, "input preparation not started; the sweep will start it", zap.String("asset_id", asset.ID),
		func(ctx context.Context) error { return e.StartPrepare(ctx, asset) })
	return nil
}

// StartPrepare starts the PrepareInputWorkflow of an upload whose bytes are stored (status
// processing), joining one that is already running. A finished preparation may run again: it
// changes nothing unless the asset is back in processing.
func (e *Uploads) StartPrepare(ctx context.Context, asset *models.Asset) error {
	_, err := e.cfg.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.PrepareInputWorkflowID(asset.ID),
		TaskQueue:                e.cfg.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.SAAccountID.ValueSet(asset.AccountID)),
	}, workflows.PrepareInputWorkflow, workflows.PrepareInput{AssetID: asset.ID, AccountID: asset.AccountID})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("start input preparation: %w", err)
	}
	return nil
}

// StartPendingPreparations starts the preparation of uploads left in processing for more than
// olderThan (the API died between storing the bytes and starting the workflow, or Temporal was
// unreachable), and returns how many it started.
func (e *Uploads) StartPendingPreparations(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	assets, err := e.store.StaleProcessingAssets(ctx, time.Now().UTC().Add(-olderThan), limit)
	if err != nil {
		return 0, err
	}
	for i := range assets {
		if err := e.StartPrepare(ctx, &assets[i]); err != nil {
			return i, err
		}
	}
	return len(assets), nil
}
