package plugin

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models/ids"
	"github.com/shotflow/shotflow/models/instant"
)

// Catalog listing bounds.
const (
	DefaultCatalogPageLimit = 50
	MaxCatalogPageLimit     = 200
	// MaxEmbeddedCatalogItems is how many images and packshots GET /products/{id_or_ref} embeds.
	MaxEmbeddedCatalogItems = 100
)

// ProductItem is a catalog product as GET /products lists it.
type ProductItem struct {
	ID            string     `json:"id"`
	ExternalRef   string     `json:"external_ref"`
	DisplayName   string     `json:"display_name"`
	SKU           string     `json:"sku"`
	ImageCount    int64      `json:"image_count"`
	PackshotCount int64      `json:"packshot_count"`
	CreatedAt     time.Time  `json:"created_at"`
	DeletedAt     *time.Time `json:"deleted_at"` // set only on deleted products (include_deleted=true)
	Livemode      bool       `json:"livemode"`   // false for a test key's product
}

// ProductsPage is the answer of GET /products.
type ProductsPage struct {
	Products   []ProductItem `json:"products"`
	NextCursor *string       `json:"next_cursor"`
}

// ProductDetail is the answer of GET /products/{id_or_ref}: the product with its newest images
// and packshots embedded.
type ProductDetail struct {
	ProductItem
	Images             []ImageItem    `json:"images"`
	ImagesTruncated    bool           `json:"images_truncated"`
	Packshots          []PackshotItem `json:"packshots"`
	PackshotsTruncated bool           `json:"packshots_truncated"`
}

// PackshotsPage is the answer of GET /packshots.
type PackshotsPage struct {
	Packshots  []PackshotItem `json:"packshots"`
	NextCursor *string        `json:"next_cursor"`
}

// catalogCursorToken is the content of an opaque catalog cursor.
type catalogCursorToken struct {
	Kind      string    `json:"k"`
	CreatedAt time.Time `json:"t"`
	ID        string    `json:"id"`
}

func encodeCatalogCursor(kind string, createdAt time.Time, id string) *string {
	data, _ := json.Marshal(catalogCursorToken{Kind: kind, CreatedAt: createdAt.UTC(), ID: id})
	s := base64.RawURLEncoding.EncodeToString(data)
	return &s
}

// catalogPageParams reads limit and cursor of a catalog listing; on failure it answers 400.
func (h *Handler) catalogPageParams(c *gin.Context, kind string) (engine.CatalogPage, bool) {
	page := engine.CatalogPage{Limit: DefaultCatalogPageLimit}
	if raw, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > MaxCatalogPageLimit {
			h.Fail(c, http.StatusBadRequest, CodeInvalidInput, "limit must be an integer from 1 to "+strconv.Itoa(MaxCatalogPageLimit)+".")
			return page, false
		}
		page.Limit = n
	}
	raw := c.Query("cursor")
	if raw == "" {
		return page, true
	}
	var tok catalogCursorToken
	err := errors.New("the cursor is longer than any next_cursor")
	if len(raw) <= maxCursorLength {
		var data []byte
		if data, err = base64.RawURLEncoding.DecodeString(raw); err == nil {
			err = json.Unmarshal(data, &tok)
		}
	}
	// Only what a next_cursor holds reaches the database: the ID of a product or packshot is a
	// UUID (a crafted one could hold bytes PostgreSQL refuses, such as NUL).
	if err != nil || tok.Kind != kind || !ids.IsUUID(tok.ID) || tok.CreatedAt.IsZero() || !instant.InRange(tok.CreatedAt) {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, "cursor is not a next_cursor of GET /"+kind+"; pass it back unchanged or omit it to start again.")
		return page, false
	}
	page.After = &engine.CatalogCursor{CreatedAt: tok.CreatedAt, ID: tok.ID}
	return page, true
}

// listProducts answers GET /products: the installation's products in ascending (created_at, id)
// order, deleted ones only with include_deleted=true.
func (h *Handler) listProducts(c *gin.Context) {
	params, ok := h.catalogPageParams(c, "products")
	if !ok {
		return
	}
	includeDeleted := false
	if raw, set := c.GetQuery("include_deleted"); set {
		b, err := strconv.ParseBool(raw)
		if err != nil {
			h.Fail(c, http.StatusBadRequest, CodeInvalidInput, "include_deleted must be true or false.")
			return
		}
		includeDeleted = b
	}
	rows, more, err := h.Engine.Catalog.ListProducts(c.Request.Context(), caller(c).Installation.ID, params, includeDeleted)
	if err != nil {
		h.fail(c, err)
		return
	}
	page := ProductsPage{Products: make([]ProductItem, 0, len(rows))}
	if more {
		last := rows[len(rows)-1]
		page.NextCursor = encodeCatalogCursor("products", last.CreatedAt, last.ID)
	}
	for _, p := range rows {
		page.Products = append(page.Products, productItem(p, livemode(c)))
	}
	c.PureJSON(http.StatusOK, page)
}

// getProduct answers GET /products/{id_or_ref} for a live product.
func (h *Handler) getProduct(c *gin.Context) {
	p, err := h.Engine.Catalog.FindProduct(c.Request.Context(), caller(c).Installation.ID, c.Param("id_or_ref"), MaxEmbeddedCatalogItems)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := ProductDetail{ProductItem: productItem(p.Product, livemode(c)),
		Images: make([]ImageItem, 0, len(p.Images)), ImagesTruncated: p.ImagesTruncated,
		Packshots: make([]PackshotItem, 0, len(p.Packshots)), PackshotsTruncated: p.PackshotsTruncated}
	for _, img := range p.Images {
		out.Images = append(out.Images, *h.imageItem(img, livemode(c)))
	}
	for _, ps := range p.Packshots {
		out.Packshots = append(out.Packshots, *packshotItem(ps, livemode(c)))
	}
	c.PureJSON(http.StatusOK, out)
}

// deleteProduct answers DELETE /products/{id_or_ref}: a soft delete (204). The product's images
// and packshots stay; its external_ref can be registered again as a new product.
func (h *Handler) deleteProduct(c *gin.Context) {
	if err := h.Engine.Catalog.DeleteProduct(c.Request.Context(), caller(c).Installation.ID, c.Param("id_or_ref")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// listPackshots answers GET /packshots: live packshots of live products in ascending
// (created_at, id) order, narrowed to one product by product_ref.
func (h *Handler) listPackshots(c *gin.Context) {
	params, ok := h.catalogPageParams(c, "packshots")
	if !ok {
		return
	}
	rows, more, err := h.Engine.Catalog.ListPackshots(c.Request.Context(), caller(c).Installation.ID, c.Query("product_ref"), params)
	if err != nil {
		h.fail(c, err)
		return
	}
	page := PackshotsPage{Packshots: make([]PackshotItem, 0, len(rows))}
	if more {
		last := rows[len(rows)-1]
		page.NextCursor = encodeCatalogCursor("packshots", last.CreatedAt, last.ID)
	}
	for _, ps := range rows {
		page.Packshots = append(page.Packshots, *packshotItem(ps, livemode(c)))
	}
	c.PureJSON(http.StatusOK, page)
}

// deletePackshot answers DELETE /packshots/{id_or_ref}: the catalog entry is removed (204), the
// file stays, and photo sessions never use the packshot again.
func (h *Handler) deletePackshot(c *gin.Context) {
	if err := h.Engine.Catalog.DeletePackshot(c.Request.Context(), caller(c).Installation.ID, c.Param("id_or_ref")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// livemode is what every record the caller's key sees says as livemode: false for a test key.
// Catalog rows, uploads and webhook objects have no mode of their own: they are their
// installation's, and a test key's installation is its live installation's test twin.
func livemode(c *gin.Context) bool { return !caller(c).Key.Test }

func productItem(p engine.Product, live bool) ProductItem {
	return ProductItem{ID: p.ID, ExternalRef: p.ExternalRef, DisplayName: p.DisplayName, SKU: p.SKU,
		ImageCount: p.ImageCount, PackshotCount: p.PackshotCount, CreatedAt: p.CreatedAt, DeletedAt: p.DeletedAt, Livemode: live}
}
