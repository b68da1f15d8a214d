package plugin

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

// MaxBulkItems is the most items a bulk catalog call accepts.
const MaxBulkItems = 100

// PackshotRegistration is one item of POST /packshots.
type PackshotRegistration struct {
	AssetID         string           `json:"asset_id" binding:"required,max=64"`
	ProductRef      string           `json:"product_ref" binding:"required,max=200"`
	ExternalRef     string           `json:"external_ref" binding:"max=200"`
	SourceImageRef  string           `json:"source_image_ref" binding:"max=200"`
	ProductMetadata *ProductMetadata `json:"product_metadata"`
}

// ProductMetadata creates a product that does not exist yet.
type ProductMetadata struct {
	DisplayName string `json:"display_name" binding:"max=500"`
	SKU         string `json:"sku" binding:"max=200"`
}

// PackshotsRequest is the body of POST /packshots.
type PackshotsRequest struct {
	Packshots []PackshotRegistration `json:"packshots" binding:"required,min=1,max=100,dive"`
}

// PackshotItem is a packshot record.
type PackshotItem struct {
	ID             string     `json:"id"`
	AssetID        string     `json:"asset_id"`
	ProductID      string     `json:"product_id"`
	ProductRef     string     `json:"product_ref"`
	ExternalRef    string     `json:"external_ref"`
	SourceImageRef string     `json:"source_image_ref"`
	Voting         string     `json:"voting"`
	VotingAt       *time.Time `json:"voting_at"`
	CreatedAt      time.Time  `json:"created_at"`
}

// BulkResult is the outcome of one item of a bulk call.
type BulkResult struct {
	Index    int           `json:"index"`
	Status   string        `json:"status"` // created, existing or error
	Packshot *PackshotItem `json:"packshot,omitempty"`
	Error    *ErrorDetail  `json:"error,omitempty"`
}

// itemError is a per-item failure of a bulk call.
type itemError struct {
	status  int
	code    string
	message string
}

func (e *itemError) Error() string { return e.message }

// registerPackshots registers ready packshots; each is approved (voting accepted) at once.
func (h *Handler) registerPackshots(c *gin.Context) {
	var req PackshotsRequest
	if !h.bindJSON(c, &req) {
		return
	}
	who := caller(c)
	results := make([]BulkResult, 0, len(req.Packshots))
	for i, item := range req.Packshots {
		var res BulkResult
		err := h.DB.WithContext(c.Request.Context()).Transaction(func(tx *gorm.DB) error {
			p, existing, product, err := registerPackshot(tx, who.Installation, item)
			if err != nil {
				return err
			}
			res = BulkResult{Index: i, Status: "created", Packshot: packshotItem(p, product.ExternalRef)}
			if existing {
				res.Status = "existing"
			}
			return nil
		})
		var ie *itemError
		switch {
		case errors.As(err, &ie):
			env := h.Envelope(ie.status, ie.code, ie.message, nil)
			res = BulkResult{Index: i, Status: "error", Error: &env.Error}
		case err != nil:
			h.internal(c, err)
			return
		}
		results = append(results, res)
	}
	c.PureJSON(http.StatusOK, gin.H{"results": results})
}

func registerPackshot(tx *gorm.DB, inst *models.Installation, item PackshotRegistration) (*models.Packshot, bool, *models.Product, error) {
	if item.ExternalRef != "" {
		var existing models.Packshot
		err := tx.Where("installation_id = ? AND external_ref = ? AND deleted_at IS NULL", inst.ID, item.ExternalRef).Take(&existing).Error
		if err == nil {
			var product models.Product
			if err := tx.Take(&product, "id = ?", existing.ProductID).Error; err != nil {
				return nil, false, nil, err
			}
			return &existing, true, &product, nil
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, false, nil, err
		}
	}
	var asset models.Asset
	err := tx.Where("id = ? AND installation_id = ?", item.AssetID, inst.ID).Take(&asset).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, nil, &itemError{http.StatusNotFound, CodeNotFound, "asset_id " + item.AssetID + " does not exist."}
	}
	if err != nil {
		return nil, false, nil, err
	}
	if asset.Kind != models.AssetKindUpload && asset.Kind != models.AssetKindOutput {
		return nil, false, nil, &itemError{http.StatusBadRequest, CodeInvalidInput, "asset_id is not an image."}
	}
	switch asset.Status {
	case models.AssetReady, models.AssetProcessing: // a job waits for a packshot still being prepared
	case models.AssetInvalid:
		return nil, false, nil, &itemError{http.StatusBadRequest, CodeInvalidInput, "asset_id " + item.AssetID + " cannot be used: " + asset.Problem + "."}
	default:
		return nil, false, nil, &itemError{http.StatusBadRequest, CodeInvalidInput, "asset_id " + item.AssetID + " has not been uploaded yet; PUT the bytes to its upload_url first."}
	}
	product, err := findOrCreateProduct(tx, inst, item.ProductRef, item.ProductMetadata)
	if err != nil {
		return nil, false, nil, err
	}
	now := time.Now().UTC()
	p := models.Packshot{
		ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, ProductID: product.ID,
		AssetID: asset.ID, ExternalRef: item.ExternalRef, SourceImageRef: item.SourceImageRef,
		Voting: models.VotingAccepted, VotingAt: &now, CreatedAt: now,
	}
	if item.SourceImageRef != "" {
		img, err := models.LiveImageByRef(tx, inst.ID, item.SourceImageRef)
		if err != nil && !errors.Is(err, models.ErrNotFound) {
			return nil, false, nil, err
		}
		if img != nil {
			p.SourceImageID = &img.ID
		}
	}
	if err := tx.Create(&p).Error; err != nil {
		return nil, false, nil, err
	}
	return &p, false, product, nil
}

// findOrCreateProduct returns the live product with the reference, creating it when metadata names
// it. Concurrent requests for the same new reference get the one product (see
// models.FindOrCreateProduct).
func findOrCreateProduct(tx *gorm.DB, inst *models.Installation, ref string, meta *ProductMetadata) (*models.Product, error) {
	if meta == nil || strings.TrimSpace(meta.DisplayName) == "" {
		product, err := models.LiveProductByRef(tx, inst.ID, ref)
		if errors.Is(err, models.ErrNotFound) {
			return nil, &itemError{http.StatusNotFound, CodeNotFound, "product_ref " + ref + " does not exist; give product_metadata.display_name to create it."}
		}
		return product, err
	}
	now := time.Now().UTC()
	product, _, err := models.FindOrCreateProduct(tx, &models.Product{ID: models.NewID(), AccountID: inst.AccountID,
		InstallationID: &inst.ID, ExternalRef: ref, DisplayName: strings.TrimSpace(meta.DisplayName), SKU: meta.SKU,
		CreatedAt: now, UpdatedAt: now})
	return product, err
}

func packshotItem(p *models.Packshot, productRef string) *PackshotItem {
	return &PackshotItem{ID: p.ID, AssetID: p.AssetID, ProductID: p.ProductID, ProductRef: productRef,
		ExternalRef: p.ExternalRef, SourceImageRef: p.SourceImageRef, Voting: p.Voting, VotingAt: p.VotingAt, CreatedAt: p.CreatedAt}
}

// resolvePackshot finds the subject's product and the approved packshot its jobs start from
// (engine.ResolvePackshot): the given packshot_asset_id when it is an approved packshot of that
// product, else the latest approved one. A nil packshot means there is none.
func resolvePackshot(db *gorm.DB, inst *models.Installation, s Subject) (*models.Product, *models.Packshot, error) {
	return engine.ResolvePackshot(db, inst.ID, s.ProductRef, s.PackshotAssetID)
}
