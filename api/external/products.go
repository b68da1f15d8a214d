package external

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models/status"
)

// Statuses of a product photo (api/external/openapi.yaml, ProductStatus).
const (
	ProductUploaded   = "UPLOADED"   // stored and prepared: usable for generation
	ProductInProgress = "INPROGRESS" // awaiting its bytes or being prepared
	ProductFailed     = "FAILED"     // stored but unusable (not a readable image, too small, …)
)

// Limits of the product upload form.
const (
	MaxProductNameLength = 200 // characters of name, after trimming
	MaxProductSKULength  = 100 // characters of sku, after trimming
)

// productFormFields are the parts the product upload form takes.
var productFormFields = []string{"name", "sku", "file"}

// ProductItem is one product photo of GET /products: its ID is what config.product.id of the
// register-ideas routes takes.
type ProductItem struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Thumbnail string    `json:"thumbnail"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
	Livemode  bool      `json:"livemode"` // false for a test key's photo
}

// ProductsPage is the answer of GET /products: a page of the account's photos.
type ProductsPage struct {
	Products []ProductItem `json:"products"`
	Count    int           `json:"count"`    // items in Products
	HasMore  bool          `json:"has_more"` // older photos follow the last one
}

// ProductCreated is the answer of POST /products.
type ProductCreated struct {
	Success bool        `json:"success"`
	Product ProductItem `json:"product"`
}

// registerProducts mounts GET and POST /products.
func (h *Handler) registerProducts(add route) {
	add(http.MethodGet, "/products", inputcheck.NoBody, ScopeRead, h.listProducts)
	add(http.MethodPost, "/products", inputcheck.MultipartBody(maxProductFormBody), ScopeRegister, h.uploadProduct)
}

// listProducts answers a page of the account's product photos, from its installations' catalogs
// and its own uploads, newest first.
func (h *Handler) listProducts(c *gin.Context) {
	query, ok := h.recordPage(c)
	if !ok {
		return
	}
	rows, more, err := h.Engine.Records.ListAccountPhotos(c.Request.Context(), key(c).AccountID, query)
	if err != nil {
		h.answer(c, err)
		return
	}
	expires := h.now().Add(h.DownloadTTL)
	page := ProductsPage{Products: make([]ProductItem, 0, len(rows)), Count: len(rows), HasMore: more}
	for _, r := range rows {
		page.Products = append(page.Products, h.productItem(r, expires, livemode(c)))
	}
	c.PureJSON(http.StatusOK, page)
}

// productStatus is the client-facing state of a photo: FAILED also for a plugin upload whose
// bytes never came before its upload URL expired (nothing will make it usable).
func productStatus(r engine.AccountPhoto, now time.Time) string {
	switch r.AssetStatus {
	case status.AssetReady:
		return ProductUploaded
	case status.AssetInvalid:
		return ProductFailed
	case status.AssetAwaitingUpload:
		if r.UploadsBy != nil && !now.Before(*r.UploadsBy) {
			return ProductFailed
		}
	}
	return ProductInProgress // awaiting_upload, uploading, processing
}

// productItem renders a photo; its thumbnail is signed only once the photo is usable.
func (h *Handler) productItem(r engine.AccountPhoto, expires time.Time, live bool) ProductItem {
	item := ProductItem{ID: r.ID, Name: r.ProductName, Status: productStatus(r, h.now()), CreatedAt: r.CreatedAt, Livemode: live}
	if item.Name == "" {
		item.Name = r.ProductRef
	}
	if item.Status == ProductUploaded {
		if r.Thumbnail {
			item.Thumbnail, _ = h.fileURLs().Thumbnail(r.AssetID, r.ThumbnailKey, expires)
		} else {
			item.Thumbnail, _ = h.fileURLs().File(r.File, expires)
		}
	}
	return item
}

// uploadProduct creates a product of the account's own from a multipart form (name, optional
// sku, one image file) with the file as its one photo, and starts preparing the photo
// (engine.UploadAccountPhoto).
func (h *Handler) uploadProduct(c *gin.Context) {
	form, err := parseForm(c)
	if err != nil {
		h.failUpload(c, err)
		return
	}
	defer func() { _ = form.RemoveAll() }()
	for field := range form.Value {
		if !slices.Contains(productFormFields, field) {
			h.fail(c, http.StatusBadRequest, "Unknown field "+field+"; the form takes name, sku and file.")
			return
		}
	}
	for field := range form.File {
		if field != "file" {
			h.fail(c, http.StatusBadRequest, "Unknown file field "+field+"; send the image as file.")
			return
		}
	}
	name, ok := h.productText(c, form.Value["name"], "name", MaxProductNameLength, true)
	if !ok {
		return
	}
	sku, ok := h.productText(c, form.Value["sku"], "sku", MaxProductSKULength, false)
	if !ok {
		return
	}
	if _, isText := form.Value["file"]; isText {
		h.fail(c, http.StatusBadRequest, "file must be an image file part, not a text field.")
		return
	}
	files := form.File["file"]
	switch {
	case len(files) == 0:
		h.fail(c, http.StatusBadRequest, "file is required: one PNG, JPEG or WebP image.")
		return
	case len(files) > 1:
		h.fail(c, http.StatusBadRequest, "file must be one image; this form has several.")
		return
	}
	photo, err := h.Engine.Records.UploadAccountPhoto(c.Request.Context(), key(c).AccountID,
		engine.NewPhoto{Name: name, SKU: sku, File: imageFile("file", files[0])})
	if err != nil {
		h.failUpload(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ProductCreated{Success: true, Product: h.productItem(photo, h.now().Add(h.DownloadTTL), livemode(c))})
}

// productText reads the text field sent at most once, trimmed, of 1 to maxLen characters; an
// absent or blank optional field is "". It answers 400 naming the field and reports false when
// the value is not acceptable.
func (h *Handler) productText(c *gin.Context, values []string, field string, maxLen int, required bool) (string, bool) {
	if len(values) > 1 {
		h.fail(c, http.StatusBadRequest, field+" must be sent once.")
		return "", false
	}
	var v string
	if len(values) == 1 {
		v = strings.TrimSpace(values[0])
	}
	switch { // Input has refused text that is not UTF-8 or holds a NUL character
	case v == "" && required:
		h.fail(c, http.StatusBadRequest, field+" is required (1 to "+strconv.Itoa(maxLen)+" characters).")
		return "", false
	case utf8.RuneCountInString(v) > maxLen:
		h.fail(c, http.StatusBadRequest, field+" is longer than "+strconv.Itoa(maxLen)+" characters.")
		return "", false
	}
	return v, true
}
