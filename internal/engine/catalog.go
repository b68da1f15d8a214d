package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Catalog: an installation's products, their source images and their packshots. Every call is
// scoped to the installation: another installation's record is KindNotFound.

// CatalogCursor is a position in a catalog listing: the (created_at, id) of the last row of a
// page. Listings run in ascending (created_at, id) order, so a row inserted while a client pages
// through lands after every row it has already seen and is never skipped nor repeated.
type CatalogCursor struct {
	CreatedAt time.Time
	ID        string
}

// CatalogPage asks for up to Limit rows behind After (nil: from the start).
type CatalogPage struct {
	After *CatalogCursor
	Limit int
}

// after is the store's cursor of the page.
func (p CatalogPage) after() *models.CatalogCursor {
	if p.After == nil {
		return nil
	}
	return &models.CatalogCursor{CreatedAt: p.After.CreatedAt, ID: p.After.ID}
}

// Installation is an installation as the façades see it: who calls the plugin API, and the
// installation catalog use cases register records for.
type Installation struct {
	ID        string
	AccountID string
	Name      string
	// RateLimitPerMin is the installation's request budget per key and minute; 0: the API's default.
	RateLimitPerMin int
}

// Product is a catalog product with the number of its live images and live packshots.
type Product struct {
	ID            string
	ExternalRef   string
	DisplayName   string
	SKU           string
	ImageCount    int64
	PackshotCount int64
	CreatedAt     time.Time
	DeletedAt     *time.Time // set only on a deleted product
}

func productOf(p *models.ProductSummary) Product {
	return Product{ID: p.ID, ExternalRef: p.ExternalRef, DisplayName: p.DisplayName, SKU: p.SKU,
		ImageCount: p.ImageCount, PackshotCount: p.PackshotCount, CreatedAt: p.CreatedAt, DeletedAt: p.DeletedAt}
}

// Image is a source image of a product with the state of its upload.
type Image struct {
	ID          string
	ExternalRef string
	ProductID   string
	ProductRef  string
	AssetID     string
	AssetStatus string // models/status.Asset*
	Width       int
	Height      int
	// Thumbnail reports whether the upload has a prepared thumbnail (the files route serves it).
	Thumbnail bool
	// ThumbnailKey is the thumbnail's key in the blob store ("" without one).
	ThumbnailKey string
	CreatedAt    time.Time
}

func imageOf(r *models.ProductImageRow) Image {
	return Image{ID: r.ID, ExternalRef: r.ExternalRef, ProductID: r.ProductID, ProductRef: r.ProductRef,
		AssetID: r.AssetID, AssetStatus: r.AssetStatus, Width: r.Width, Height: r.Height,
		Thumbnail: r.ThumbnailBlobKey != "", ThumbnailKey: r.ThumbnailBlobKey, CreatedAt: r.CreatedAt}
}

// Packshot is a catalog packshot with its product's reference.
type Packshot struct {
	ID             string
	AssetID        string
	ProductID      string
	ProductRef     string
	ExternalRef    string
	SourceImageRef string
	Voting         string // models/voting.*
	VotingAt       *time.Time
	CreatedAt      time.Time
}

func packshotOf(p *models.PackshotRow) Packshot {
	return Packshot{ID: p.ID, AssetID: p.AssetID, ProductID: p.ProductID, ProductRef: p.ProductRef,
		ExternalRef: p.ExternalRef, SourceImageRef: p.SourceImageRef, Voting: p.Voting, VotingAt: p.VotingAt,
		CreatedAt: p.CreatedAt}
}

// viewsOf maps rows to their views.
func viewsOf[R, V any](rows []R, view func(*R) V) []V {
	out := make([]V, len(rows))
	for i := range rows {
		out[i] = view(&rows[i])
	}
	return out
}

// ListProducts returns a page of the installation's products in ascending (created_at, id) order,
// deleted ones only when includeDeleted is set, and whether more follow.
func (e *Catalog) ListProducts(ctx context.Context, installationID string, page CatalogPage, includeDeleted bool) ([]Product, bool, error) {
	rows, err := e.store.ListProducts(ctx, installationID, page.after(), page.Limit+1, includeDeleted)
	if err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, page.Limit)
	return viewsOf(rows, productOf), more, nil
}

// ListPackshots returns a page of the installation's live packshots of live products in ascending
// (created_at, id) order, of the product productRef only when it is not "", and whether more
// follow.
func (e *Catalog) ListPackshots(ctx context.Context, installationID, productRef string, page CatalogPage) ([]Packshot, bool, error) {
	rows, err := e.store.ListPackshots(ctx, installationID, productRef, page.after(), page.Limit+1)
	if err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, page.Limit)
	return viewsOf(rows, packshotOf), more, nil
}

// trimPage cuts rows, fetched one beyond limit, to limit and reports whether there were more.
func trimPage[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

// ProductDetail is a live product with its newest images and packshots, at most the number asked
// for of each; a Truncated flag says that it has more.
type ProductDetail struct {
	Product            Product
	Images             []Image
	ImagesTruncated    bool
	Packshots          []Packshot
	PackshotsTruncated bool
}

// FindProduct returns the installation's live product whose ID, or else external_ref, is idOrRef,
// with up to embed of its newest images and packshots; KindNotFound when there is none.
func (e *Catalog) FindProduct(ctx context.Context, installationID, idOrRef string, embed int) (ProductDetail, error) {
	p, err := e.store.FindLiveProduct(ctx, installationID, idOrRef)
	if errors.Is(err, models.ErrNotFound) {
		return ProductDetail{}, noProduct(idOrRef)
	}
	if err != nil {
		return ProductDetail{}, err
	}
	images, err := e.store.ProductImages(ctx, installationID, p.ID, embed+1)
	if err != nil {
		return ProductDetail{}, err
	}
	packshots, err := e.store.ProductPackshots(ctx, installationID, p.ID, embed+1)
	if err != nil {
		return ProductDetail{}, err
	}
	out := ProductDetail{Product: productOf(p)}
	images, out.ImagesTruncated = trimPage(images, embed)
	packshots, out.PackshotsTruncated = trimPage(packshots, embed)
	out.Images, out.Packshots = viewsOf(images, imageOf), viewsOf(packshots, packshotOf)
	return out, nil
}

// DeleteProduct soft-deletes the installation's live product whose ID, or else external_ref, is
// idOrRef; KindNotFound when there is none. Its images and packshots stay, and its external_ref
// can be registered again as a new product.
func (e *Catalog) DeleteProduct(ctx context.Context, installationID, idOrRef string) error {
	_, err := e.store.DeleteProduct(ctx, installationID, idOrRef, time.Now())
	if errors.Is(err, models.ErrNotFound) {
		return noProduct(idOrRef)
	}
	return err
}

// DeletePackshot removes the installation's live packshot whose ID, or else external_ref, is
// idOrRef from the catalog (its file stays, and photo sessions never use it again); KindNotFound
// when there is none.
func (e *Catalog) DeletePackshot(ctx context.Context, installationID, idOrRef string) error {
	_, err := e.store.DeletePackshot(ctx, installationID, idOrRef, time.Now())
	if errors.Is(err, models.ErrNotFound) {
		return refuse(KindNotFound, "", "", "No packshot %s in this installation's catalog.", strconv.Quote(idOrRef))
	}
	return err
}

func noProduct(idOrRef string) *Error {
	return refuse(KindNotFound, "", "", "No product %s in this installation's catalog.", strconv.Quote(idOrRef))
}

// ProductMetadata names a product to create when its reference does not exist yet.
type ProductMetadata struct {
	DisplayName string
	SKU         string
}

// ImageRegistration registers an upload (AssetID) as the source image ExternalRef of the product
// ProductRef, creating the product when Product names it.
type ImageRegistration struct {
	ExternalRef string
	ProductRef  string
	AssetID     string
	Product     *ProductMetadata
}

// RegisterImage registers one source image of the installation's catalog in its own transaction.
// It reports existing, and changes nothing, when ExternalRef is already a live image of a live
// product; an image whose product was deleted is retired, so its reference can be registered again.
// Refusals: KindNotFound for an unknown asset or product, KindInvalid for an asset that cannot be a
// source image. A concurrent registration of the same reference (the unique index
// product_images_live_ref refuses the loser) is answered with the winner's image.
func (e *Catalog) RegisterImage(ctx context.Context, inst Installation, item ImageRegistration) (Image, bool, error) {
	var (
		img      *models.ProductImageRow
		existing bool
		err      error
	)
	// An upload sent straight to the store is first used here.
	if err := e.app.Uploads.CollectUpload(ctx, inst.ID, item.AssetID, ""); err != nil {
		return Image{}, false, err
	}
	for range 2 {
		err = e.store.Tx(ctx, func(tx *models.Store) error {
			img, existing, err = registerImage(ctx, tx, inst, item)
			return err
		})
		if !errors.Is(err, models.ErrImageRefTaken) {
			break
		}
	}
	if err != nil {
		return Image{}, false, err
	}
	return imageOf(img), existing, nil
}

func registerImage(ctx context.Context, tx *models.Store, inst Installation, item ImageRegistration) (*models.ProductImageRow, bool, error) {
	now := time.Now().UTC()
	prev, err := tx.LiveImageByRef(ctx, inst.ID, item.ExternalRef)
	switch {
	case err == nil && prev.ProductDeletedAt == nil:
		return prev, true, nil
	case err == nil:
		if err := tx.RetireProductImage(ctx, prev.ID, now); err != nil && !errors.Is(err, models.ErrNotFound) {
			return nil, false, err
		}
	case !errors.Is(err, models.ErrNotFound):
		return nil, false, err
	}
	asset, err := installationAsset(ctx, tx, inst.ID, item.AssetID)
	if err != nil {
		return nil, false, err
	}
	if problem := sourceImageProblem(asset, now); problem != "" {
		return nil, false, refuse(KindInvalid, "", "", "asset_id %s %s", item.AssetID, problem)
	}
	product, err := findOrCreateProduct(ctx, tx, inst, item.ProductRef, item.Product)
	if err != nil {
		return nil, false, err
	}
	img := models.ProductImage{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID,
		ProductID: product.ID, AssetID: asset.ID, ExternalRef: item.ExternalRef, CreatedAt: now}
	if err := tx.CreateProductImage(ctx, &img); err != nil {
		return nil, false, err
	}
	row, err := tx.GetProductImage(ctx, inst.ID, img.ID)
	return row, false, err
}

// installationAsset returns an asset of the installation (its ID in either case); KindNotFound
// for another's.
func installationAsset(ctx context.Context, tx *models.Store, installationID, assetID string) (*models.Asset, error) {
	asset, err := tx.InstallationAsset(ctx, installationID, assetID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, refuse(KindNotFound, "", "", "asset_id %s does not exist.", assetID)
	}
	return asset, err
}

// sourceImageProblem says why an asset cannot be a source image, or "" when it can: it must be an
// upload, and one that is stored or may still arrive (its upload URL has not expired unused).
func sourceImageProblem(a *models.Asset, now time.Time) string {
	switch {
	case a.Kind != models.AssetKindUpload:
		return "is not an upload; register the bytes with POST /assets/upload first."
	case a.PurgedAt != nil:
		return "was removed by the retention policy; upload the image again."
	case a.Status == status.AssetAwaitingUpload && (a.UploadExpiresAt == nil || !a.UploadExpiresAt.After(now)):
		return "was never uploaded and its upload URL has expired; request a new one with POST /assets/upload."
	case a.Status == status.AssetInvalid:
		return "cannot be used: " + a.Problem + "."
	}
	return ""
}

// PackshotRegistration registers an image (AssetID: an upload or an output) as an approved packshot
// of the product ProductRef, creating the product when Product names it. ExternalRef, when set,
// makes the registration idempotent; SourceImageRef names the source image it was cut from.
type PackshotRegistration struct {
	AssetID        string
	ProductRef     string
	ExternalRef    string
	SourceImageRef string
	Product        *ProductMetadata
}

// RegisterPackshot registers one packshot of the installation's catalog in its own transaction;
// it is approved (voting accepted) at once. It reports existing, and changes nothing, when
// ExternalRef is already a live packshot. Refusals: KindNotFound for an unknown asset or product,
// KindInvalid for an asset that is not a usable image. A concurrent registration of the same
// ExternalRef (the unique index packshots_live_ref refuses the loser's insert) rolls the loser's
// transaction back, product included, and answers it as a repeat: the winner's packshot, existing.
func (e *Catalog) RegisterPackshot(ctx context.Context, inst Installation, item PackshotRegistration) (Packshot, bool, error) {
	var (
		row      *models.PackshotRow
		existing bool
		err      error
	)
	// An upload sent straight to the store is first used here.
	if err := e.app.Uploads.CollectUpload(ctx, inst.ID, item.AssetID, ""); err != nil {
		return Packshot{}, false, err
	}
	// A third round is needed only when the winner was deleted before the second could read it.
	for range 3 {
		err = e.store.Tx(ctx, func(tx *models.Store) error {
			row, existing, err = registerPackshot(ctx, tx, inst, item)
			return err
		})
		if !errors.Is(err, models.ErrPackshotRefTaken) {
			break
		}
	}
	if err != nil {
		return Packshot{}, false, err
	}
	return packshotOf(row), existing, nil
}

func registerPackshot(ctx context.Context, tx *models.Store, inst Installation, item PackshotRegistration) (*models.PackshotRow, bool, error) {
	if item.ExternalRef != "" {
		// The reference names the packshot it was registered with, unless that packshot's product
		// was deleted: then the reference is free for the product registered again, as an image's
		// is (registerImage).
		row, err := tx.LivePackshotByRef(ctx, inst.ID, item.ExternalRef)
		switch {
		case err == nil && row.ProductDeletedAt == nil:
			return row, true, nil
		case err == nil:
			if err := tx.RetirePackshot(ctx, row.ID, time.Now()); err != nil && !errors.Is(err, models.ErrNotFound) {
				return nil, false, err
			}
		case !errors.Is(err, models.ErrNotFound):
			return nil, false, err
		}
	}
	asset, err := installationAsset(ctx, tx, inst.ID, item.AssetID)
	if err != nil {
		return nil, false, err
	}
	if err := packshotAssetProblem(asset, item.AssetID); err != nil {
		return nil, false, err
	}
	product, err := findOrCreateProduct(ctx, tx, inst, item.ProductRef, item.Product)
	if err != nil {
		return nil, false, err
	}
	now := time.Now().UTC()
	p := models.Packshot{
		ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, ProductID: product.ID,
		AssetID: asset.ID, ExternalRef: item.ExternalRef, SourceImageRef: item.SourceImageRef,
		Voting: models.VotingAccepted, VotingAt: &now, CreatedAt: now,
	}
	if item.SourceImageRef != "" {
		img, err := tx.LiveImageByRef(ctx, inst.ID, item.SourceImageRef)
		if err != nil && !errors.Is(err, models.ErrNotFound) {
			return nil, false, err
		}
		if img != nil && img.ProductID != product.ID {
			// The source of a packshot is a photo of its own product: linked to another's, that
			// photo's shoots would start from this product's packshot.
			return nil, false, refuse(KindInvalid, "", "", "source_image_ref %s is an image of another product, not of %s.", item.SourceImageRef, item.ProductRef)
		}
		if img != nil {
			p.SourceImageID = &img.ID
		}
	}
	if err := tx.CreatePackshot(ctx, &p); err != nil {
		return nil, false, err
	}
	return &models.PackshotRow{Packshot: p, ProductRef: product.ExternalRef}, false, nil
}

// packshotAssetProblem refuses (KindInvalid) an asset that cannot be a packshot: one that is no
// image, was removed by retention, is invalid, or has not been uploaded. An asset still being
// prepared is accepted: a job waits for it.
func packshotAssetProblem(a *models.Asset, assetID string) error {
	if a.Kind != models.AssetKindUpload && a.Kind != models.AssetKindOutput {
		return refuse(KindInvalid, "", "", "asset_id is not an image.")
	}
	if a.PurgedAt != nil { // as accepting a job whose output is gone answers 410 outputs_purged
		return refuse(KindInvalid, "", "", "asset_id %s was removed by the retention policy; upload the image again.", assetID)
	}
	switch a.Status {
	case status.AssetReady, status.AssetProcessing:
		return nil
	case status.AssetInvalid:
		return refuse(KindInvalid, "", "", "asset_id %s cannot be used: %s.", assetID, a.Problem)
	}
	return refuse(KindInvalid, "", "", "asset_id %s has not been uploaded yet; PUT the bytes to its upload_url first.", assetID)
}

// findOrCreateProduct returns the live product with the reference, creating it when metadata names
// it (KindNotFound when it does not exist and is not named). Concurrent requests for the same new
// reference get the one product (see models.FindOrCreateProduct).
func findOrCreateProduct(ctx context.Context, tx *models.Store, inst Installation, ref string, meta *ProductMetadata) (*models.Product, error) {
	if meta == nil || strings.TrimSpace(meta.DisplayName) == "" {
		product, err := tx.LiveProductByRef(ctx, inst.ID, ref)
		if errors.Is(err, models.ErrNotFound) {
			return nil, refuse(KindNotFound, "", "", "product_ref %s does not exist; give product_metadata.display_name to create it.", ref)
		}
		return product, err
	}
	now := time.Now().UTC()
	product, _, err := tx.FindOrCreateProduct(ctx, &models.Product{ID: models.NewID(), AccountID: inst.AccountID,
		InstallationID: &inst.ID, ExternalRef: ref, DisplayName: strings.TrimSpace(meta.DisplayName), SKU: meta.SKU,
		CreatedAt: now, UpdatedAt: now})
	return product, err
}
