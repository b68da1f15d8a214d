package models

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// CatalogCursor is a position in a catalog listing: the (created_at, id) of the last row of a
// page. Listings run in ascending (created_at, id) order, so a row inserted while a client pages
// through lands after every row it has already seen and is never skipped nor repeated.
type CatalogCursor struct {
	CreatedAt time.Time
	ID        string
}

// ProductSummary is a product with the number of its live images and live packshots.
type ProductSummary struct {
	Product
	ImageCount    int64
	PackshotCount int64
}

// ProductImageRow is a product image with its product's reference and the asset fields the API shows.
type ProductImageRow struct {
	ProductImage
	ProductRef       string
	ProductDeletedAt *time.Time
	AssetStatus      string
	Width            int
	Height           int
	UploadExpiresAt  *time.Time
	ThumbnailBlobKey string
}

// PackshotRow is a packshot with its product's reference.
type PackshotRow struct {
	Packshot
	ProductRef string
	// ProductDeletedAt is when its product was deleted (LivePackshotByRef), nil while it is live.
	ProductDeletedAt *time.Time `gorm:"-"`
}

func catalogProductSummaries(db *gorm.DB) *gorm.DB {
	return db.Table("products").Select(`products.*,
		(SELECT COUNT(*) FROM product_images i WHERE i.product_id = products.id AND i.deleted_at IS NULL) AS image_count,
		(SELECT COUNT(*) FROM packshots s WHERE s.product_id = products.id AND s.deleted_at IS NULL) AS packshot_count`)
}

func catalogImageRows(db *gorm.DB) *gorm.DB {
	return db.Table("product_images AS i").
		Select(`i.*, p.external_ref AS product_ref, p.deleted_at AS product_deleted_at,
			a.status AS asset_status, a.width AS width, a.height AS height, a.upload_expires_at AS upload_expires_at,
			a.thumbnail_blob_key AS thumbnail_blob_key`).
		Joins("JOIN products p ON p.id = i.product_id").
		Joins("JOIN assets a ON a.id = i.asset_id")
}

func catalogPackshotRows(db *gorm.DB) *gorm.DB {
	return db.Table("packshots AS s").Select("s.*, p.external_ref AS product_ref").
		Joins("JOIN products p ON p.id = s.product_id")
}

// catalogAfter narrows a listing ordered by (created_at, id) to the rows behind the cursor.
func catalogAfter(q *gorm.DB, table string, cur *CatalogCursor) *gorm.DB {
	if cur == nil {
		return q
	}
	return q.Where("("+table+".created_at > ? OR ("+table+".created_at = ? AND "+table+".id > ?))",
		cur.CreatedAt.UTC(), cur.CreatedAt.UTC(), cur.ID)
}

// ListProducts returns up to limit products of the installation behind the cursor (nil: from the
// start) in ascending (created_at, id) order; deleted products only when includeDeleted is set.
func ListProducts(db *gorm.DB, installationID string, cur *CatalogCursor, limit int, includeDeleted bool) ([]ProductSummary, error) {
	q := catalogProductSummaries(db).Where("products.installation_id = ?", installationID)
	if !includeDeleted {
		q = q.Where("products.deleted_at IS NULL")
	}
	var out []ProductSummary
	err := catalogAfter(q, "products", cur).Order("products.created_at, products.id").Limit(limit).Find(&out).Error
	return out, err
}

// FindLiveProduct returns the installation's live product whose ID (in either case), or else
// whose external_ref (exactly), is idOrRef, with its counts; ErrNotFound when there is none.
func FindLiveProduct(db *gorm.DB, installationID, idOrRef string) (*ProductSummary, error) {
	if idOrRef == "" {
		return nil, ErrNotFound
	}
	for _, by := range idOrRefLookups("products", idOrRef) {
		var out []ProductSummary
		err := catalogProductSummaries(db).
			Where("products.installation_id = ? AND products.deleted_at IS NULL AND "+by.column+" = ?", installationID, by.value).
			Limit(1).Find(&out).Error
		if err != nil {
			return nil, err
		}
		if len(out) == 1 {
			return &out[0], nil
		}
	}
	return nil, ErrNotFound
}

// LiveProductByRef returns the installation's live product with the external_ref; ErrNotFound
// when there is none.
func LiveProductByRef(db *gorm.DB, installationID, externalRef string) (*Product, error) {
	var out []Product
	err := db.Where("installation_id = ? AND external_ref = ? AND deleted_at IS NULL", installationID, externalRef).
		Limit(1).Find(&out).Error
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return &out[0], nil
}

// ApprovedProduct is what a session's plan needs of a live product (LiveProductsWithApprovedPackshots):
// its ID and name, and its approved packshots, latest first.
type ApprovedProduct struct {
	ID          string
	DisplayName string
	Packshots   []ApprovedPackshot
}

// ApprovedPackshot is an approved packshot as a job starts from it: its ID and its image's asset.
type ApprovedPackshot struct {
	ID      string
	AssetID string
	// The state of its file: an approved packshot's upload may still be prepared, and found
	// unusable (AssetStatus invalid, with AssetProblem), after its approval.
	AssetStatus  string
	AssetProblem string
	AssetPurged  bool
}

// Approved returns the approved packshot that photo-shoot jobs of the product start from: the
// latest one of assetID, or the latest of all when assetID is ""; nil when there is none.
func (a *ApprovedProduct) Approved(assetID string) *ApprovedPackshot {
	for i := range a.Packshots {
		if assetID == "" || a.Packshots[i].AssetID == assetID {
			return &a.Packshots[i]
		}
	}
	return nil
}

// latestFirst orders a product's approved packshots latest first, as LiveProductsWithApprovedPackshots
// returns them: by approval time, undated last on both databases, then creation time and ID.
const latestFirst = "voting_at IS NULL, voting_at DESC, created_at DESC, id DESC"

// approvedProductsQuery is LiveProductsWithApprovedPackshots' one query, written by hand and
// scanned column by column: every session of the plugin API runs it, and gorm's join of two whole
// models cost about 0.4 ms of the API's CPU a session to build and scan (docs/benchmarks.md,
// "Fourth measurement"). The live products of the refs (named once, in live), LEFT JOINed with
// their approved packshots picked by ranking them per product (ROW_NUMBER, both dialects): the
// latest, and the latest of each asset named. A product with many approved packshots costs one
// row, not one per packshot (issue 23, item 21b); each with the state of its file. Its parameters: installation, refs,
// installation, voting, named.
const approvedProductsQuery = `WITH live AS (
	SELECT id, external_ref, display_name FROM products
	WHERE installation_id = ? AND external_ref IN ? AND deleted_at IS NULL
)
SELECT p.id, p.external_ref, p.display_name, s.id, s.asset_id, a.status, a.problem, a.purged_at IS NOT NULL
FROM live p LEFT JOIN (
	SELECT id, product_id, asset_id, voting_at, created_at FROM (
		SELECT id, product_id, asset_id, voting_at, created_at,
			ROW_NUMBER() OVER (PARTITION BY product_id ORDER BY ` + latestFirst + `) AS latest,
			ROW_NUMBER() OVER (PARTITION BY product_id, asset_id ORDER BY ` + latestFirst + `) AS latest_of_asset
		FROM packshots WHERE product_id IN (SELECT id FROM live)
		AND installation_id = ? AND voting = ? AND deleted_at IS NULL AND archived_at IS NULL
	) ranked WHERE latest = 1 OR (latest_of_asset = 1 AND asset_id IN ?)
) s ON s.product_id = p.id
LEFT JOIN assets a ON a.id = s.asset_id
ORDER BY s.voting_at IS NULL, s.voting_at DESC, s.created_at DESC, s.id DESC`

// LiveProductsWithApprovedPackshots returns, by external_ref, the installation's live products
// that refs name, each with the approved packshots of the installation (neither deleted nor
// archived) that photo-shoot jobs can start from, latest first (voting_at DESC, undated last, then
// created_at DESC, id DESC): its latest one, and the latest one of each asset of named (the
// subjects' packshot_asset_id) that is an approved packshot of it, in one query
// (approvedProductsQuery). A ref without a live product is absent from the map.
func LiveProductsWithApprovedPackshots(db *gorm.DB, installationID string, refs, named []string) (map[string]*ApprovedProduct, error) {
	out := map[string]*ApprovedProduct{}
	if len(refs) == 0 {
		return out, nil
	}
	rows, err := db.Raw(approvedProductsQuery, installationID, refs, installationID, VotingAccepted, named).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, ref, name string
		var packshotID, assetID, assetStatus, assetProblem sql.NullString
		var assetPurged sql.NullBool
		if err := rows.Scan(&id, &ref, &name, &packshotID, &assetID, &assetStatus, &assetProblem, &assetPurged); err != nil {
			return nil, err
		}
		a := out[ref]
		if a == nil {
			a = &ApprovedProduct{ID: id, DisplayName: name}
			out[ref] = a
		}
		if packshotID.Valid {
			a.Packshots = append(a.Packshots, ApprovedPackshot{ID: packshotID.String, AssetID: assetID.String,
				AssetStatus: assetStatus.String, AssetProblem: assetProblem.String, AssetPurged: assetPurged.Bool})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}

// FindOrCreateProduct returns the live product of fresh's installation with fresh's external_ref,
// inserting fresh when there is none, and reports whether it did. Concurrent calls for the same
// new reference create one product and all return it, as if they had run one after the other:
// the insert does nothing when it meets the live-reference unique index (products_live_ref), and
// the caller then reads the row that won. It may run inside a transaction: the conflict aborts
// nothing, even on PostgreSQL.
func FindOrCreateProduct(db *gorm.DB, fresh *Product) (*Product, bool, error) {
	if fresh.InstallationID == nil {
		return nil, false, errors.New("FindOrCreateProduct: the product has no installation")
	}
	// A second round is needed only when the row that won was deleted before it could be read.
	for range 3 {
		p, err := LiveProductByRef(db, *fresh.InstallationID, fresh.ExternalRef)
		if !errors.Is(err, ErrNotFound) {
			return p, false, err
		}
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(fresh)
		if res.Error != nil {
			return nil, false, res.Error
		}
		if res.RowsAffected == 1 {
			return fresh, true, nil
		}
	}
	return nil, false, fmt.Errorf("FindOrCreateProduct %q: the product kept being created and deleted concurrently", fresh.ExternalRef)
}

// ProductImages returns up to limit live images of the product, newest first.
func ProductImages(db *gorm.DB, installationID, productID string, limit int) ([]ProductImageRow, error) {
	var out []ProductImageRow
	err := catalogImageRows(db).
		Where("i.installation_id = ? AND i.product_id = ? AND i.deleted_at IS NULL", installationID, productID).
		Order("i.created_at DESC, i.id DESC").Limit(limit).Find(&out).Error
	return out, err
}

// ProductPackshots returns up to limit live packshots of the product, newest first.
func ProductPackshots(db *gorm.DB, installationID, productID string, limit int) ([]PackshotRow, error) {
	var out []PackshotRow
	err := catalogPackshotRows(db).
		Where("s.installation_id = ? AND s.product_id = ? AND s.deleted_at IS NULL", installationID, productID).
		Order("s.created_at DESC, s.id DESC").Limit(limit).Find(&out).Error
	return out, err
}

// DeleteProduct soft-deletes the installation's live product whose ID, or else external_ref, is
// idOrRef. Its images and packshots stay; its external_ref is free for a new product at once.
func DeleteProduct(db *gorm.DB, installationID, idOrRef string, now time.Time) (*Product, error) {
	var deleted *Product
	err := db.Transaction(func(tx *gorm.DB) error {
		p, err := FindLiveProduct(tx, installationID, idOrRef)
		if err != nil {
			return err
		}
		res := tx.Model(&Product{}).Where("id = ? AND deleted_at IS NULL", p.ID).
			Updates(map[string]any{"deleted_at": now.UTC(), "updated_at": now.UTC()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 { // deleted concurrently
			return ErrNotFound
		}
		p.DeletedAt = &now
		deleted = &p.Product
		return nil
	})
	return deleted, err
}

// ListPackshots returns up to limit live packshots of the installation's live products behind the
// cursor, in ascending (created_at, id) order; productRef, when set, narrows to that product.
func ListPackshots(db *gorm.DB, installationID, productRef string, cur *CatalogCursor, limit int) ([]PackshotRow, error) {
	q := catalogPackshotRows(db).Where("s.installation_id = ? AND s.deleted_at IS NULL AND p.deleted_at IS NULL", installationID)
	if productRef != "" {
		q = q.Where("p.external_ref = ?", productRef)
	}
	var out []PackshotRow
	err := catalogAfter(q, "s", cur).Order("s.created_at, s.id").Limit(limit).Find(&out).Error
	return out, err
}

// lookup is a column of table and the value to find in it.
type lookup struct{ column, value string }

// idOrRefLookups are the lookups of an {id_or_ref}, in order: the table's id, as IDs are stored
// (CanonicalID), then its external_ref as sent (a reference is case-sensitive).
func idOrRefLookups(table, idOrRef string) []lookup {
	return []lookup{{table + ".id", CanonicalID(idOrRef)}, {table + ".external_ref", idOrRef}}
}

// FindLivePackshot returns the installation's live packshot whose ID (in either case), or else
// external_ref (exactly), is idOrRef; ErrNotFound when there is none.
func FindLivePackshot(db *gorm.DB, installationID, idOrRef string) (*PackshotRow, error) {
	if idOrRef == "" {
		return nil, ErrNotFound
	}
	for _, by := range idOrRefLookups("s", idOrRef) {
		var out []PackshotRow
		err := catalogPackshotRows(db).Where("s.installation_id = ? AND s.deleted_at IS NULL AND "+by.column+" = ?", installationID, by.value).
			Order("s.created_at DESC").Limit(1).Find(&out).Error
		if err != nil {
			return nil, err
		}
		if len(out) == 1 {
			return &out[0], nil
		}
	}
	return nil, ErrNotFound
}

// DeletePackshot removes the installation's live packshot whose ID, or else external_ref, is
// idOrRef from the catalog (soft: deleted_at). Its file stays; photo sessions never use it again.
func DeletePackshot(db *gorm.DB, installationID, idOrRef string, now time.Time) (*Packshot, error) {
	var deleted *Packshot
	err := db.Transaction(func(tx *gorm.DB) error {
		p, err := FindLivePackshot(tx, installationID, idOrRef)
		if err != nil {
			return err
		}
		res := tx.Model(&Packshot{}).Where("id = ? AND deleted_at IS NULL", p.ID).Update("deleted_at", now.UTC())
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		p.DeletedAt = &now
		deleted = &p.Packshot
		return nil
	})
	return deleted, err
}

// LiveImageByRef returns the installation's live image with the external_ref; ErrNotFound when none.
func LiveImageByRef(db *gorm.DB, installationID, externalRef string) (*ProductImageRow, error) {
	var out []ProductImageRow
	err := catalogImageRows(db).Where("i.installation_id = ? AND i.external_ref = ? AND i.deleted_at IS NULL", installationID, externalRef).
		Limit(1).Find(&out).Error
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return &out[0], nil
}

// GetProductImage returns an image of the installation by ID, live or not; ErrNotFound when none.
func GetProductImage(db *gorm.DB, installationID, id string) (*ProductImageRow, error) {
	var out []ProductImageRow
	err := catalogImageRows(db).Where("i.installation_id = ? AND i.id = ?", installationID, id).Limit(1).Find(&out).Error
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return &out[0], nil
}

// RetirePackshot marks a live packshot as deleted, freeing its external_ref; ErrNotFound when it
// is not live.
func RetirePackshot(db *gorm.DB, id string, now time.Time) error {
	return retire(db, &Packshot{}, id, now)
}

// RetireProductImage marks a live image as deleted, freeing its external_ref.
func RetireProductImage(db *gorm.DB, id string, now time.Time) error {
	return retire(db, &ProductImage{}, id, now)
}

// retire marks the live row of model with the ID as deleted at now; ErrNotFound when there is none.
func retire(db *gorm.DB, model any, id string, now time.Time) error {
	res := db.Model(model).Where("id = ? AND deleted_at IS NULL", id).Update("deleted_at", now.UTC())
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}
