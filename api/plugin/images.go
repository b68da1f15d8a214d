package plugin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models/status"
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
	ExternalRef     string           `json:"external_ref" binding:"required,max=200,ref"`
	ProductRef      string           `json:"product_ref" binding:"required,max=200,ref"`
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
	Livemode     bool      `json:"livemode"` // false for a test key's image
}

// ImageBulkResult is the outcome of one item of POST /images.
type ImageBulkResult struct {
	Index  int          `json:"index"`
	Status string       `json:"status"` // created, existing or error
	Image  *ImageItem   `json:"image,omitempty"`
	Error  *ErrorDetail `json:"error,omitempty"`
}

// registerImages registers uploads as source images of products (engine.RegisterImage), each item
// on its own: a repeated external_ref answers the existing image, a new product_ref with a
// display_name creates the product.
func (h *Handler) registerImages(c *gin.Context) {
	var req ImagesRequest
	if !h.bindJSON(c, &req) {
		return
	}
	who := caller(c)
	results := make([]ImageBulkResult, 0, len(req.Images))
	for i, item := range req.Images {
		img, existing, err := h.Engine.Catalog.RegisterImage(c.Request.Context(), who.Installation, engine.ImageRegistration{
			ExternalRef: item.ExternalRef, ProductRef: item.ProductRef, AssetID: item.AssetID,
			Product: productMetadata(item.ProductMetadata)})
		res := ImageBulkResult{Index: i}
		if err != nil {
			if res.Error = h.itemError(c, err); res.Error == nil {
				return
			}
			res.Status = "error"
		} else {
			res.Status, res.Image = bulkStatus(existing), h.imageItem(img, livemode(c))
		}
		results = append(results, res)
	}
	c.PureJSON(http.StatusOK, gin.H{"results": results})
}

// imageStatus is the client-facing state of an image's upload.
func imageStatus(assetStatus string) string {
	switch assetStatus {
	case status.AssetReady:
		return ImageReady
	case status.AssetProcessing:
		return ImageProcessing
	case status.AssetInvalid:
		return ImageInvalid
	}
	return ImageAwaitingUpload
}

func (h *Handler) imageItem(r engine.Image, live bool) *ImageItem {
	item := &ImageItem{Livemode: live, ID: r.ID, ExternalRef: r.ExternalRef, ProductID: r.ProductID, ProductRef: r.ProductRef,
		AssetID: r.AssetID, Status: imageStatus(r.AssetStatus), Width: r.Width, Height: r.Height, CreatedAt: r.CreatedAt}
	if r.AssetStatus == status.AssetReady && r.Thumbnail {
		item.ThumbnailURL, _ = h.fileURLs().Thumbnail(r.AssetID, r.ThumbnailKey, time.Now().Add(h.DownloadTTL))
	}
	return item
}
