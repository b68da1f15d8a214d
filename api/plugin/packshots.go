package plugin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
)

// MaxBulkItems is the most items a bulk catalog call accepts.
const MaxBulkItems = 100

// PackshotRegistration is one item of POST /packshots.
type PackshotRegistration struct {
	AssetID         string           `json:"asset_id" binding:"required,max=64"`
	ProductRef      string           `json:"product_ref" binding:"required,max=200,ref"`
	ExternalRef     string           `json:"external_ref" binding:"omitempty,max=200,ref"`
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
	Livemode       bool       `json:"livemode"` // false for a test key's packshot
}

// BulkResult is the outcome of one item of a bulk call.
type BulkResult struct {
	Index    int           `json:"index"`
	Status   string        `json:"status"` // created, existing or error
	Packshot *PackshotItem `json:"packshot,omitempty"`
	Error    *ErrorDetail  `json:"error,omitempty"`
}

// registerPackshots registers ready packshots (engine.RegisterPackshot), each on its own; each is
// approved (voting accepted) at once.
func (h *Handler) registerPackshots(c *gin.Context) {
	var req PackshotsRequest
	if !h.bindJSON(c, &req) {
		return
	}
	who := caller(c)
	results := make([]BulkResult, 0, len(req.Packshots))
	for i, item := range req.Packshots {
		p, existing, err := h.Engine.Catalog.RegisterPackshot(c.Request.Context(), who.Installation, engine.PackshotRegistration{
			AssetID: item.AssetID, ProductRef: item.ProductRef, ExternalRef: item.ExternalRef,
			SourceImageRef: item.SourceImageRef, Product: productMetadata(item.ProductMetadata)})
		res := BulkResult{Index: i}
		if err != nil {
			if res.Error = h.itemError(c, err); res.Error == nil {
				return
			}
			res.Status = "error"
		} else {
			res.Status, res.Packshot = bulkStatus(existing), packshotItem(p, livemode(c))
		}
		results = append(results, res)
	}
	c.PureJSON(http.StatusOK, gin.H{"results": results})
}

// itemError is the envelope of a bulk item's refusal (not found, invalid). Any other error aborts
// the whole call: it answers as internal does and returns nil.
func (h *Handler) itemError(c *gin.Context, err error) *ErrorDetail {
	if e, ok := engine.As(err); !ok || (e.Kind != engine.KindNotFound && e.Kind != engine.KindInvalid) {
		h.internal(c, err)
		return nil
	}
	f := engineFailure(c, err)
	env := h.Envelope(f.status, f.code, f.message, f.details)
	return &env.Error
}

// bulkStatus is the status of a bulk item that was registered: created, or existing when it was
// already.
func bulkStatus(existing bool) string {
	if existing {
		return "existing"
	}
	return "created"
}

// productMetadata is the engine's product metadata of a request's, nil when it has none.
func productMetadata(m *ProductMetadata) *engine.ProductMetadata {
	if m == nil {
		return nil
	}
	return &engine.ProductMetadata{DisplayName: m.DisplayName, SKU: m.SKU}
}

func packshotItem(p engine.Packshot, live bool) *PackshotItem {
	return &PackshotItem{ID: p.ID, AssetID: p.AssetID, ProductID: p.ProductID, ProductRef: p.ProductRef,
		ExternalRef: p.ExternalRef, SourceImageRef: p.SourceImageRef, Voting: p.Voting, VotingAt: p.VotingAt, CreatedAt: p.CreatedAt,
		Livemode: live}
}
