package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/media/imageprep"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// PrepareAsset checks and prepares an upload in status processing (internal/media/imageprep): an image
// of its declared type, upright, upscaled when small, with a thumbnail. The asset becomes ready,
// or invalid with the reason when the file cannot be used. An asset no longer in processing is
// left as it is, so a repeated execution changes nothing. A database or blob store that cannot be
// reached is ErrTypeDependencyUnavailable: the workflow waits for it rather than give up on the file.
func (a *Activities) PrepareAsset(ctx context.Context, assetID string) (contract.PrepareResult, error) {
	dctx, cancel := bounded(ctx)
	asset, err := a.Store.GetAsset(dctx, assetID)
	cancel()
	if errors.Is(err, models.ErrNotFound) {
		return contract.PrepareResult{}, temporal.NewNonRetryableApplicationError("asset "+assetID+" does not exist", contract.ErrTypeAssetGone, err)
	}
	if err != nil {
		return contract.PrepareResult{}, unavailable(contract.DependencyDatabase, fmt.Errorf("load asset: %w", err))
	}
	if asset.Status != status.AssetProcessing {
		return contract.PrepareResult{Status: asset.Status, Problem: asset.Problem, Width: asset.Width, Height: asset.Height}, nil
	}
	data, err := a.getBlob(ctx, asset.BlobKey)
	if err != nil && !errors.Is(err, blobstore.ErrNotFound) {
		return contract.PrepareResult{}, unavailable(contract.DependencyBlobStore, fmt.Errorf("read upload: %w", err))
	}
	if err != nil {
		return contract.PrepareResult{}, fmt.Errorf("read upload: %w", err)
	}
	prepared, err := imageprep.Prepare(data, asset.ContentType, a.Prepare)
	if errors.Is(err, imageprep.ErrUnusable) {
		return a.invalidate(ctx, assetID, err.Error())
	}
	if err != nil {
		return contract.PrepareResult{}, err
	}
	ready := models.PreparedAsset{Width: prepared.Width, Height: prepared.Height, ThumbnailBlobKey: asset.BlobKey + ".thumb.jpg"}
	if asset.SHA256 == "" { // sent straight to the store: nobody has read it whole before
		sum := sha256.Sum256(data)
		ready.SHA256 = hex.EncodeToString(sum[:])
	}
	if prepared.Prepared != nil {
		key := asset.BlobKey + ".prepared.png"
		if err := a.putBlob(ctx, key, prepared.Prepared, "image/png"); err != nil {
			return contract.PrepareResult{}, unavailable(contract.DependencyBlobStore, fmt.Errorf("store prepared image: %w", err))
		}
		ready.PreparedBlobKey = key
	}
	if err := a.putBlob(ctx, ready.ThumbnailBlobKey, prepared.Thumbnail, "image/jpeg"); err != nil {
		return contract.PrepareResult{}, unavailable(contract.DependencyBlobStore, fmt.Errorf("store thumbnail: %w", err))
	}
	dctx, cancel = bounded(ctx)
	defer cancel()
	if err := a.Store.MarkAssetReady(dctx, assetID, ready); err != nil {
		return contract.PrepareResult{}, unavailable(contract.DependencyDatabase, fmt.Errorf("mark asset ready: %w", err))
	}
	return contract.PrepareResult{Status: status.AssetReady, Width: prepared.Width, Height: prepared.Height}, nil
}

// InvalidateAsset marks an upload in processing invalid with the problem (a local activity):
// PrepareInputWorkflow's last word when preparation kept failing for reasons of its own.
func (a *Activities) InvalidateAsset(ctx context.Context, assetID, problem string) (contract.PrepareResult, error) {
	return a.invalidate(ctx, assetID, problem)
}

func (a *Activities) invalidate(ctx context.Context, assetID, problem string) (contract.PrepareResult, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if err := a.Store.MarkAssetInvalid(ctx, assetID, problem); err != nil {
		return contract.PrepareResult{}, fmt.Errorf("mark asset invalid: %w", err)
	}
	return contract.PrepareResult{Status: status.AssetInvalid, Problem: problem}, nil
}

// JobsWaitingFor lists the unfinished jobs that read the asset (a local activity): those
// PrepareInputWorkflow wakes when the asset is ready or invalid.
func (a *Activities) JobsWaitingFor(ctx context.Context, assetID string) ([]contract.JobRunRef, error) {
	jobs, err := a.Store.OpenJobsReading(ctx, assetID)
	if err != nil {
		return nil, err
	}
	var out []contract.JobRunRef
	for _, j := range jobs {
		out = append(out, contract.JobRunRef{JobID: j.ID, Run: j.Run})
	}
	return out, nil
}
