package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The store methods of an installation's catalog (products, their source images and packshots)
// and of an account's own product photos. The queries live beside their types in catalog_store.go
// and external_products.go.

// ErrImageRefTaken is in the chain of CreateProductImage's error when the installation already has
// a live image with the reference: the unique index product_images_live_ref refused the insert,
// which happens when a concurrent registration of the same reference won. On PostgreSQL it aborts
// the transaction the insert ran in.
var ErrImageRefTaken = errors.New("the image reference is taken")

// ErrPackshotRefTaken is in the chain of CreatePackshot's error when the installation already has a
// live packshot with the reference (the unique index packshots_live_ref): a concurrent
// registration of the same reference won.
var ErrPackshotRefTaken = errors.New("the packshot reference is taken")

// ListProducts returns up to limit products of the installation behind the cursor (nil: from the
// start) in ascending (created_at, id) order; deleted products only when includeDeleted is set.
func (s *Store) ListProducts(ctx context.Context, installationID string, cur *CatalogCursor, limit int, includeDeleted bool) ([]ProductSummary, error) {
	return ListProducts(s.conn(ctx), installationID, cur, limit, includeDeleted)
}

// FindLiveProduct returns the installation's live product whose ID (in either case), or else
// whose external_ref (exactly), is idOrRef, with its counts; ErrNotFound when there is none.
func (s *Store) FindLiveProduct(ctx context.Context, installationID, idOrRef string) (*ProductSummary, error) {
	return FindLiveProduct(s.conn(ctx), installationID, idOrRef)
}

// LiveProductByRef returns the installation's live product with the external_ref; ErrNotFound
// when there is none.
func (s *Store) LiveProductByRef(ctx context.Context, installationID, externalRef string) (*Product, error) {
	return LiveProductByRef(s.conn(ctx), installationID, externalRef)
}

// FindOrCreateProduct returns the live product of fresh's installation with fresh's external_ref,
// inserting fresh when there is none, and reports whether it did; concurrent calls for the same
// new reference all get the one product (FindOrCreateProduct).
func (s *Store) FindOrCreateProduct(ctx context.Context, fresh *Product) (*Product, bool, error) {
	return FindOrCreateProduct(s.conn(ctx), fresh)
}

// ProductImages returns up to limit live images of the product, newest first.
func (s *Store) ProductImages(ctx context.Context, installationID, productID string, limit int) ([]ProductImageRow, error) {
	return ProductImages(s.conn(ctx), installationID, productID, limit)
}

// ProductPackshots returns up to limit live packshots of the product, newest first.
func (s *Store) ProductPackshots(ctx context.Context, installationID, productID string, limit int) ([]PackshotRow, error) {
	return ProductPackshots(s.conn(ctx), installationID, productID, limit)
}

// DeleteProduct soft-deletes the installation's live product whose ID, or else external_ref, is
// idOrRef, in one transaction; ErrNotFound when there is none. Its images and packshots stay; its
// external_ref is free for a new product at once.
func (s *Store) DeleteProduct(ctx context.Context, installationID, idOrRef string, now time.Time) (*Product, error) {
	return DeleteProduct(s.conn(ctx), installationID, idOrRef, now)
}

// ListPackshots returns up to limit live packshots of the installation's live products behind the
// cursor, in ascending (created_at, id) order; productRef, when set, narrows to that product.
func (s *Store) ListPackshots(ctx context.Context, installationID, productRef string, cur *CatalogCursor, limit int) ([]PackshotRow, error) {
	return ListPackshots(s.conn(ctx), installationID, productRef, cur, limit)
}

// DeletePackshot removes the installation's live packshot whose ID, or else external_ref, is
// idOrRef from the catalog (soft: deleted_at), in one transaction; ErrNotFound when there is none.
func (s *Store) DeletePackshot(ctx context.Context, installationID, idOrRef string, now time.Time) (*Packshot, error) {
	return DeletePackshot(s.conn(ctx), installationID, idOrRef, now)
}

// LiveImageByRef returns the installation's live image with the external_ref; ErrNotFound when none.
func (s *Store) LiveImageByRef(ctx context.Context, installationID, externalRef string) (*ProductImageRow, error) {
	return LiveImageByRef(s.conn(ctx), installationID, externalRef)
}

// GetProductImage returns an image of the installation by ID, live or not; ErrNotFound when none.
func (s *Store) GetProductImage(ctx context.Context, installationID, id string) (*ProductImageRow, error) {
	return GetProductImage(s.conn(ctx), installationID, id)
}

// RetireProductImage marks a live image as deleted, freeing its external_ref; ErrNotFound when it
// is not live.
func (s *Store) RetireProductImage(ctx context.Context, id string, now time.Time) error {
	return RetireProductImage(s.conn(ctx), id, now)
}

// CreateProductImage inserts a source image of a product; ErrImageRefTaken (with the database's
// error) when the installation already has a live image with its external_ref.
func (s *Store) CreateProductImage(ctx context.Context, img *ProductImage) error {
	err := s.conn(ctx).Create(img).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return fmt.Errorf("%w: %w", ErrImageRefTaken, err)
	}
	return err
}

// CreatePackshot inserts a packshot; ErrPackshotRefTaken when the installation already has a live
// packshot with its external_ref. The insert does nothing when it meets the live-reference unique
// index (packshots_live_ref): it waits for a concurrent registration of the reference to commit
// and aborts nothing, even on PostgreSQL, so the caller can roll back and read the winner.
func (s *Store) CreatePackshot(ctx context.Context, p *Packshot) error {
	res := s.conn(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(p)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: %q", ErrPackshotRefTaken, p.ExternalRef)
	}
	return nil
}

// LivePackshotByRef returns the installation's live packshot with the external_ref, with its
// product's reference; ErrNotFound when there is none.
func (s *Store) LivePackshotByRef(ctx context.Context, installationID, externalRef string) (*PackshotRow, error) {
	db := s.conn(ctx)
	var p Packshot
	err := db.Where("installation_id = ? AND external_ref = ? AND deleted_at IS NULL", installationID, externalRef).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var product Product
	if err := db.Take(&product, "id = ?", p.ProductID).Error; err != nil {
		return nil, err
	}
	return &PackshotRow{Packshot: p, ProductRef: product.ExternalRef, ProductDeletedAt: product.DeletedAt}, nil
}

// RetirePackshot marks a live packshot as deleted, freeing its external_ref (the package function).
func (s *Store) RetirePackshot(ctx context.Context, id string, now time.Time) error {
	return RetirePackshot(s.conn(ctx), id, now)
}

// ListAccountPhotos returns a page of the account's live product photos whose product is not
// deleted, from every installation's catalog and from the account's own uploads, newest first.
// The page may start after any of the account's photos, deleted ones included. A page walks the
// index product_images_account_page (migration 0029) from the cursor on: it reads its rows, and
// the deleted photos and the photos of deleted products among them.
func (s *Store) ListAccountPhotos(ctx context.Context, accountID string, page RecordPage) ([]AccountPhotoRow, error) {
	db := s.conn(ctx)
	key, err := recordKeyOf(db.Table("product_images").Select("created_at, id").
		Where("id = ? AND account_id = ?", page.StartingAfter, accountID), page.StartingAfter)
	if err != nil {
		return nil, err
	}
	var out []AccountPhotoRow
	q := db.Table("product_images AS i").
		Select(`i.id AS id, i.asset_id AS asset_id, i.created_at AS created_at,
			p.external_ref AS product_ref, p.display_name AS product_name,
			a.status AS asset_status, a.upload_expires_at AS upload_expires_at, a.thumbnail_blob_key AS thumbnail_blob_key,
			a.blob_key AS blob_key, a.content_type AS content_type, a.purged_at AS purged_at`).
		Joins("JOIN products p ON p.id = i.product_id").
		Joins("JOIN assets a ON a.id = i.asset_id").
		Where("i.account_id = ? AND p.account_id = ? AND i.deleted_at IS NULL AND p.deleted_at IS NULL", accountID, accountID)
	err = olderThan(q, "i.created_at", "i.id", key).Order("i.created_at DESC, i.id DESC").Limit(page.Limit).Scan(&out).Error
	return out, err
}

// CreateAccountPhoto stores, in one transaction, a product of the account's own (no installation,
// its external_ref its own ID) with the uploaded asset as its one photo, whose external_ref is
// likewise its own ID. The rows are dated asset.CreatedAt to the microsecond (what every database
// keeps). It returns the photo.
func (s *Store) CreateAccountPhoto(ctx context.Context, asset *Asset, name, sku string) (*ProductImage, error) {
	db := s.conn(ctx)
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
