package engine

import (
	"context"

	"github.com/shotflow/shotflow/models"
)

// ListAccountPhotos returns the account's live product photos, from its installations' catalogs
// and its own uploads, newest first.
func (e *Records) ListAccountPhotos(ctx context.Context, accountID string) ([]models.AccountPhotoRow, error) {
	return models.ListAccountPhotos(e.cfg.DB.WithContext(ctx), accountID)
}

// CreateAccountPhoto stores, in one transaction, a product of the asset's account of its own (no
// installation) named name, with the uploaded asset (stored, not yet inserted) as its one photo,
// and returns the photo. Start preparing the asset next (StartPrepare).
func (e *Records) CreateAccountPhoto(ctx context.Context, asset *models.Asset, name, sku string) (*models.ProductImage, error) {
	return models.CreateAccountPhoto(e.cfg.DB.WithContext(ctx), asset, name, sku)
}
