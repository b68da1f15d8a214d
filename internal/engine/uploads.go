package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// Uploads: a client declares a file (POST /assets/upload), then sends its bytes once to a signed
// URL before the URL expires. The engine keeps the upload's record; the façade checks and stores
// the bytes between ClaimUpload and CompleteUpload.

// ReasonUploadNotAccepted refines KindConflict: the upload URL was already used or has expired.
const ReasonUploadNotAccepted = "upload_not_accepted"

// releaseUploadTimeout bounds the release of a claimed upload, which runs also after the request
// ended.
const releaseUploadTimeout = 5 * time.Second

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

// DeclareUpload records an upload awaiting its bytes and returns it; its ID names the upload URL.
func (e *Uploads) DeclareUpload(ctx context.Context, d UploadDeclaration) (*models.Asset, error) {
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
	if err := e.cfg.DB.WithContext(ctx).Create(&asset).Error; err != nil {
		return nil, err
	}
	return &asset, nil
}

// FindUpload returns a declared upload by ID (the signed URL names it, so it needs no tenant);
// KindNotFound when there is none.
func (e *Uploads) FindUpload(ctx context.Context, id string) (*models.Asset, error) {
	var asset models.Asset
	err := e.cfg.DB.WithContext(ctx).Take(&asset, "id = ? AND kind = ?", id, models.AssetKindUpload).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, refuse(KindNotFound, "", "", "No such upload.")
	}
	if err != nil {
		return nil, err
	}
	return &asset, nil
}

// ClaimUpload marks an upload awaiting its bytes, whose URL has not expired, as being uploaded, so
// two concurrent uploads cannot both write it: KindConflict (ReasonUploadNotAccepted) when it was
// already used or has expired. The caller completes the upload (CompleteUpload) or releases it
// (ReleaseUpload).
func (e *Uploads) ClaimUpload(ctx context.Context, id string) error {
	claim := e.cfg.DB.WithContext(ctx).Model(&models.Asset{}).
		Where("id = ? AND status = ? AND upload_expires_at > ?", id, status.AssetAwaitingUpload, time.Now().UTC()).
		Update("status", status.AssetUploading)
	if claim.Error != nil {
		return claim.Error
	}
	if claim.RowsAffected == 0 {
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
	if err := e.cfg.DB.WithContext(ctx).Model(&models.Asset{}).Where("id = ? AND status = ?", id, status.AssetUploading).
		Update("status", status.AssetAwaitingUpload).Error; err != nil {
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
	now := time.Now().UTC()
	if err := e.cfg.DB.WithContext(ctx).Model(asset).Updates(map[string]any{
		"status": status.AssetProcessing, "sha256": stored.SHA256, "width": stored.Width, "height": stored.Height, "updated_at": now,
	}).Error; err != nil {
		return err
	}
	asset.Status = status.AssetProcessing
	if err := e.StartPrepare(ctx, asset); err != nil {
		e.logger().Warn("input preparation not started; the sweep will start it", zap.String("asset_id", asset.ID), zap.Error(err))
	}
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
	var assets []models.Asset
	cutoff := time.Now().UTC().Add(-olderThan)
	if err := e.cfg.DB.WithContext(ctx).Select("id", "account_id").
		Where("status = ? AND updated_at <= ?", status.AssetProcessing, cutoff).
		Order("updated_at").Limit(limit).Find(&assets).Error; err != nil {
		return 0, err
	}
	for i := range assets {
		if err := e.StartPrepare(ctx, &assets[i]); err != nil {
			return i, err
		}
	}
	return len(assets), nil
}
