package models

import (
	"time"

	"gorm.io/gorm"
)

// AccountPhotoRow is a live product photo of an account (a product_images row) with its product's
// name and reference and the state of its asset: one item of the external API's GET /products.
type AccountPhotoRow struct {
	ID               string
	AssetID          string
	ProductRef       string
	ProductName      string
	AssetStatus      string
	UploadExpiresAt  *time.Time // when the bytes of an upload still awaited stop being accepted
	ThumbnailBlobKey string
	CreatedAt        time.Time
}

// ListAccountPhotos returns the account's live product photos whose product is not deleted, from
// every installation's catalog and from the account's own uploads, newest first.
func ListAccountPhotos(db *gorm.DB, accountID string) ([]AccountPhotoRow, error) {
	var out []AccountPhotoRow
	err := db.Table("product_images AS i").
		Select(`i.id AS id, i.asset_id AS asset_id, i.created_at AS created_at,
			p.external_ref AS product_ref, p.display_name AS product_name,
			a.status AS asset_status, a.upload_expires_at AS upload_expires_at, a.thumbnail_blob_key AS thumbnail_blob_key`).
		Joins("JOIN products p ON p.id = i.product_id").
		Joins("JOIN assets a ON a.id = i.asset_id").
		Where("i.account_id = ? AND p.account_id = ? AND i.deleted_at IS NULL AND p.deleted_at IS NULL", accountID, accountID).
		Order("i.created_at DESC, i.id DESC").
		Scan(&out).Error
	return out, err
}

// CreateAccountPhoto stores, in one transaction, a product of the account's own (no installation,
// its external_ref its own ID) with the uploaded asset as its one photo, whose external_ref is
// likewise its own ID. The rows are dated asset.CreatedAt to the microsecond (what every database
// keeps). It returns the photo.
func CreateAccountPhoto(db *gorm.DB, asset *Asset, name, sku string) (*ProductImage, error) {
	now := asset.CreatedAt.Truncate(time.Microsecond)
	asset.CreatedAt, asset.UpdatedAt = now, now
	productID, imageID := NewID(), NewID()
	product := Product{ID: productID, AccountID: asset.AccountID, ExternalRef: productID, DisplayName: name, SKU: sku,
		CreatedAt: now, UpdatedAt: now}
	img := ProductImage{ID: imageID, AccountID: asset.AccountID, ProductID: productID, AssetID: asset.ID,
		ExternalRef: imageID, CreatedAt: now}
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&product).Error; err != nil {
			return err
		}
		if err := tx.Create(asset).Error; err != nil {
			return err
		}
		return tx.Create(&img).Error
	})
	if err != nil {
		return nil, err
	}
	return &img, nil
}
