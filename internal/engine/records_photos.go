package engine

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/models"
)

// AccountPhoto is a live product photo of an account (from an installation's catalog or its own
// uploads) with its product's name and reference and the state of its upload.
type AccountPhoto struct {
	ID          string // what the register-ideas routes take as config.product.id
	AssetID     string
	ProductRef  string
	ProductName string
	AssetStatus string     // models/status.Asset*
	UploadsBy   *time.Time // when an upload still awaited stops being accepted; nil for none
	Thumbnail   bool       // the prepared upload has a thumbnail
	// ThumbnailKey is the thumbnail's key in the blob store ("" without one).
	ThumbnailKey string
	// File is the photo's own file, which a photo without a thumbnail shows: its key and type in
	// the store for a URL of the store, no key for the API's URL (a purged file's, which answers
	// 410).
	File      fileurl.File
	CreatedAt time.Time
}

func accountPhotoOf(r *models.AccountPhotoRow) AccountPhoto {
	p := AccountPhoto{ID: r.ID, AssetID: r.AssetID, ProductRef: r.ProductRef, ProductName: r.ProductName,
		AssetStatus: r.AssetStatus, UploadsBy: r.UploadExpiresAt, CreatedAt: r.CreatedAt,
		Thumbnail: r.ThumbnailBlobKey != "", ThumbnailKey: r.ThumbnailBlobKey, File: fileurl.File{AssetID: r.AssetID}}
	if r.PurgedAt == nil {
		p.File.Key, p.File.ContentType = r.BlobKey, r.ContentType
	}
	return p
}

// ListAccountPhotos returns a page of the account's live product photos, from its installations'
// catalogs and its own uploads, newest first, and whether more follow.
func (e *Records) ListAccountPhotos(ctx context.Context, accountID string, page RecordPage) ([]AccountPhoto, bool, error) {
	limit, p, err := page.storePage()
	if err != nil {
		return nil, false, err
	}
	rows, err := e.store.ListAccountPhotos(ctx, accountID, p)
	rows, more, err := cutRecordPage(rows, limit, err)
	if err != nil {
		return nil, false, err
	}
	return viewsOf(rows, accountPhotoOf), more, nil
}

// NewPhoto is a product of an account's own with its one photo: its name, its optional SKU and
// the image file.
type NewPhoto struct {
	Name string
	SKU  string
	File ImageFile
}

// UploadAccountPhoto creates a product of the account's own (no installation) with the image
// file as its one photo and starts preparing the photo. It checks and stores the file
// (storeImage's refusals; ErrFileStore), then stores the product and its photo in one
// transaction, removing the file again when that fails. A preparation that does not start is
// logged: the worker's sweep starts it, so it only delays the photo.
func (e *Records) UploadAccountPhoto(ctx context.Context, accountID string, in NewPhoto) (AccountPhoto, error) {
	asset, err := e.storeImage(ctx, accountID, in.File, true)
	if err != nil {
		return AccountPhoto{}, err
	}
	img, err := e.store.CreateAccountPhoto(ctx, asset, in.Name, in.SKU)
	if err != nil {
		// Nothing was stored but the bytes: remove them too, also when the request ran out of time.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), fileCleanupTimeout)
		defer cancel()
		if derr := e.cfg.Blobs.Delete(cleanup, asset.BlobKey); derr != nil {
			e.logger().Warn("remove the file of a product upload that was not stored", zap.String("blob_key", asset.BlobKey), zap.Error(derr))
		}
		return AccountPhoto{}, err
	}
	if err := e.app.Uploads.StartPrepare(ctx, asset); err != nil {
		e.logger().Warn("start preparing an uploaded product photo", zap.String("asset_id", asset.ID), zap.Error(err))
	}
	return AccountPhoto{ID: img.ID, AssetID: asset.ID, ProductRef: img.ProductID, ProductName: in.Name,
		AssetStatus: asset.Status, CreatedAt: img.CreatedAt}, nil
}
