package plugin

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/models"
)

// Image statuses shown to clients: the state of the image's upload.
const (
	ImageReady          = "ready"
	ImageAwaitingUpload = "awaiting_upload"
	ImageProcessing     = "processing" // uploaded; being checked and prepared
	ImageInvalid        = "invalid"    // uploaded but unusable (not an image of its type, too small, damaged)
)

// ImageRegistration is one item of POST /images.
type ImageRegistration struct {
	ExternalRef     string           `json:"external_ref" binding:"required,max=200"`
	ProductRef      string           `json:"product_ref" binding:"required,max=200"`
	AssetID         string           `json:"asset_id" binding:"required,max=64"`
	ProductMetadata *ProductMetadata `json:"product_metadata"`
}

// ImagesRequest is the body of POST /images.
type ImagesRequest struct {
	Images []ImageRegistration `json:"images" binding:"required,min=1,max=100,dive"`
}

// ImageItem is a source image of a product.
type ImageItem struct {
	ID          string `json:"id"`
	ExternalRef string `json:"external_ref"`
	ProductID   string `json:"product_id"`
	ProductRef  string `json:"product_ref"`
	AssetID     string `json:"asset_id"`
	Status      string `json:"status"` // awaiting_upload, processing, ready or invalid
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	// ThumbnailURL is a signed download URL of a small JPEG preview; "" until the image is ready.
	ThumbnailURL string    `json:"thumbnail_url"`
	CreatedAt    time.Time `json:"created_at"`
}

// ImageBulkResult is the outcome of one item of POST /images.
type ImageBulkResult struct {
	Index  int          `json:"index"`
	Status string       `json:"status"` // created, existing or error
	Image  *ImageItem   `json:"image,omitempty"`
	Error  *ErrorDetail `json:"error,omitempty"`
}

// registerImages registers uploads as source images of products, each item on its own: a
// repeated external_ref answers the existing image, a new product_ref with a display_name
// creates the product.
func (h *Handler) registerImages(c *gin.Context) {
	var req ImagesRequest
	if !h.bindJSON(c, &req) {
		return
	}
	who := caller(c)
	db := h.DB.WithContext(c.Request.Context())
	results := make([]ImageBulkResult, 0, len(req.Images))
	for i, item := range req.Images {
		var (
			img      *models.ProductImageRow
			existing bool
			err      error
		)
		// A concurrent request may win the race for the same external_ref (the unique index
		// product_images_live_ref refuses the loser); the second attempt then finds its row. The
		// product of a new product_ref is created race-free (models.FindOrCreateProduct).
		for attempt := 0; attempt < 2; attempt++ {
			err = db.Transaction(func(tx *gorm.DB) error {
				img, existing, err = registerImage(tx, who.Installation, item)
				return err
			})
			if !errors.Is(err, gorm.ErrDuplicatedKey) {
				break
			}
		}
		res := ImageBulkResult{Index: i}
		var ie *itemError
		switch {
		case errors.As(err, &ie):
			env := h.Envelope(ie.status, ie.code, ie.message, nil)
			res.Status, res.Error = "error", &env.Error
		case err != nil:
			h.internal(c, err)
			return
		default:
			res.Status, res.Image = "created", h.imageItem(img)
			if existing {
				res.Status = "existing"
			}
		}
		results = append(results, res)
	}
	c.PureJSON(http.StatusOK, gin.H{"results": results})
}

// registerImage registers one image in tx. It reports existing when the external_ref is already
// a live image of a live product. An image whose product was deleted is retired, so its
// external_ref can be registered again for the product that now carries the reference.
func registerImage(tx *gorm.DB, inst *models.Installation, item ImageRegistration) (*models.ProductImageRow, bool, error) {
	now := time.Now().UTC()
	prev, err := models.LiveImageByRef(tx, inst.ID, item.ExternalRef)
	switch {
	case err == nil && prev.ProductDeletedAt == nil:
		return prev, true, nil
	case err == nil:
		if err := models.RetireProductImage(tx, prev.ID, now); err != nil && !errors.Is(err, models.ErrNotFound) {
			return nil, false, err
		}
	case !errors.Is(err, models.ErrNotFound):
		return nil, false, err
	}
	var asset models.Asset
	err = tx.Where("id = ? AND installation_id = ?", item.AssetID, inst.ID).Take(&asset).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, &itemError{http.StatusNotFound, CodeNotFound, "asset_id " + item.AssetID + " does not exist."}
	}
	if err != nil {
		return nil, false, err
	}
	if problem := sourceImageProblem(&asset, now); problem != "" {
		return nil, false, &itemError{http.StatusBadRequest, CodeInvalidInput, "asset_id " + item.AssetID + " " + problem}
	}
	product, err := findOrCreateProduct(tx, inst, item.ProductRef, item.ProductMetadata)
	if err != nil {
		return nil, false, err
	}
	img := models.ProductImage{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID,
		ProductID: product.ID, AssetID: asset.ID, ExternalRef: item.ExternalRef, CreatedAt: now}
	if err := tx.Create(&img).Error; err != nil {
		return nil, false, err
	}
	row, err := models.GetProductImage(tx, inst.ID, img.ID)
	return row, false, err
}

// sourceImageProblem says why an asset cannot be a source image, or "" when it can: it must be an
// upload, and one that is stored or may still arrive (its upload URL has not expired unused).
func sourceImageProblem(a *models.Asset, now time.Time) string {
	switch {
	case a.Kind != models.AssetKindUpload:
		return "is not an upload; register the bytes with POST /assets/upload first."
	case a.PurgedAt != nil:
		return "was removed by the retention policy; upload the image again."
	case a.Status == models.AssetAwaitingUpload && (a.UploadExpiresAt == nil || !a.UploadExpiresAt.After(now)):
		return "was never uploaded and its upload URL has expired; request a new one with POST /assets/upload."
	case a.Status == models.AssetInvalid:
		return "cannot be used: " + a.Problem + "."
	}
	return ""
}

// imageStatus is the client-facing state of an image's upload.
func imageStatus(assetStatus string) string {
	switch assetStatus {
	case models.AssetReady:
		return ImageReady
	case models.AssetProcessing:
		return ImageProcessing
	case models.AssetInvalid:
		return ImageInvalid
	}
	return ImageAwaitingUpload
}

func (h *Handler) imageItem(r *models.ProductImageRow) *ImageItem {
	item := &ImageItem{ID: r.ID, ExternalRef: r.ExternalRef, ProductID: r.ProductID, ProductRef: r.ProductRef,
		AssetID: r.AssetID, Status: imageStatus(r.AssetStatus), Width: r.Width, Height: r.Height, CreatedAt: r.CreatedAt}
	if r.AssetStatus == models.AssetReady && r.ThumbnailBlobKey != "" {
		item.ThumbnailURL = h.Signer.URL(http.MethodGet, jobview.ThumbnailPath(r.AssetID), time.Now().Add(h.DownloadTTL))
	}
	return item
}
