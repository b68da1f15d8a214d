package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/reference"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
)

// loadScenery returns the image of the scenery a photo shoot's session names, for the provider to
// place the product in: the account's own generated scenery or one of the marketplace. A scenery
// that is no longer usable (archived, rejected, its file removed) leaves the shoot without a scene
// image rather than failing it; a store that cannot be read is ErrTypeDependencyUnavailable.
func (a *Activities) loadScenery(ctx context.Context, job *models.Job, sceneryID string) (*providers.Input, error) {
	if job.JobType != jobtype.PhotoShoot || sceneryID == "" {
		return nil, nil
	}
	dctx, cancel := bounded(ctx)
	defer cancel()
	item, err := a.Store.FindUsableReferenceItem(dctx, models.KindScenery, job.AccountID, sceneryID)
	if errors.Is(err, models.ErrNotFound) {
		a.Log.Warn("photo shoot without its scenery: not usable any more", zap.String("job_id", job.ID), zap.String("scenery_id", sceneryID))
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(contract.DependencyDatabase, fmt.Errorf("load scenery: %w", err))
	}
	var data []byte
	var key string
	switch {
	case item.ThumbnailAssetID != nil:
		var asset *models.Asset
		if asset, err = a.Store.GetAsset(dctx, *item.ThumbnailAssetID); err != nil {
			return nil, unavailable(contract.DependencyDatabase, fmt.Errorf("load scenery image: %w", err))
		}
		if asset.PurgedAt != nil {
			return nil, nil
		}
		key = asset.InputBlobKey()
		data, err = a.getBlob(ctx, key)
	case item.ThumbnailKey != "":
		key = item.ThumbnailKey
		data, err = reference.Image(dctx, a.Blobs, key)
	default:
		return nil, nil
	}
	if errors.Is(err, blobstore.ErrNotFound) {
		a.Log.Warn("photo shoot without its scenery: image missing", zap.String("job_id", job.ID), zap.String("scenery_id", sceneryID))
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(contract.DependencyBlobStore, fmt.Errorf("read scenery image: %w", err))
	}
	return &providers.Input{Data: data, ContentType: http.DetectContentType(data), Key: key}, nil
}
