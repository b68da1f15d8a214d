package plugin

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/models/presetspec"
	"github.com/shotflow/shotflow/models/refblob"
)

// Reference data: GET /models, /sceneries, /presets and /pricing (GET /ai-models and
// /aspect-ratios are in me.go), and the signed download of seeded reference images.

// Sources of a model, scenery or preset entry.
const (
	SourceAccount     = "account"     // the installation's account's own
	SourceMarketplace = "marketplace" // a model or scenery shared by every account
	SourceSystem      = "system"      // a preset of the service
)

// Cache headers. The spec gives them for /ai-models, /aspect-ratios and /pricing; the lists of
// models, sceneries and presets depend on the key's account and carry signed URLs, so they are
// private to the key and short-lived.
const (
	cacheAccountLists = "private, max-age=60"
	cachePricing      = "public, max-age=300"
)

// ReferenceEntry is an entry of GET /models and GET /sceneries.
type ReferenceEntry struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Thumbnail string `json:"thumbnail"` // signed download URL of the image
	Source    string `json:"source"`    // account or marketplace
	// Livemode is the key's mode: an account's own entry is of its mode, and a marketplace one,
	// shared by both, is listed in the mode of the key that lists it.
	Livemode bool `json:"livemode"`
}

// PresetEntry is an entry of GET /presets.
type PresetEntry struct {
	ID             string   `json:"id"`
	Slug           string   `json:"slug"`
	Name           string   `json:"name"`
	Description    string   `json:"description"`
	BestFor        string   `json:"best_for"`
	Thumbnail      string   `json:"thumbnail"`       // the cover (else the first gallery image); "" when none
	ExampleGallery []string `json:"example_gallery"` // up to 6 signed image URLs
	CreditCost     int64    `json:"credit_cost"`     // surcharge per generated image, on top of the AI model's price
	IsFree         bool     `json:"is_free"`         // true exactly when credit_cost is 0
	// InputGuidance says which input photos give good results.
	InputGuidance InputGuidance `json:"input_guidance"`
	Categories    []string      `json:"categories"`
	Tags          []string      `json:"tags"`
	// Scenery is required, recommended or null (not yet reviewed: unknown, never "not needed").
	Scenery *string `json:"scenery"`
	Source  string  `json:"source"` // system or account
	// Livemode is the key's mode: an account's own preset is of its mode, and a system one,
	// shared by both, is listed in the mode of the key that lists it.
	Livemode bool `json:"livemode"`
}

// InputGuidance is the advice of a preset about its input photos; "" when unset.
type InputGuidance struct {
	Requirements string `json:"requirements"`
	Quantity     string `json:"quantity"`
	Quality      string `json:"quality"`
	Do           string `json:"do"`
	Dont         string `json:"dont"`
}

// PricingResponse is GET /pricing.
type PricingResponse struct {
	Prices []PriceItem `json:"prices"`
}

// PriceItem is one entry of GET /pricing: the credit cost of one generated image of job_type by
// provider/model, or by any model of the provider when model is "*".
type PriceItem struct {
	JobType    string `json:"job_type"`
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	CreditCost int64  `json:"credit_cost"`
}

// imageURL signs the download URL of a reference image: an asset (the store's URL with
// FILE_URLS=store, fileurl), else a seeded file of the blob store (a key under refblob.Prefix,
// the API's); "" when there is neither (an item still being generated).
func (h *Handler) imageURL(f engine.StoredFile, expires time.Time) string {
	switch {
	case f.AssetID != "":
		u, _ := h.fileURLs().File(fileurl.File{AssetID: f.AssetID, Key: f.StoreKey, ContentType: f.ContentType}, expires)
		return u
	case strings.HasPrefix(f.BlobKey, refblob.Prefix):
		return h.Signer.URL(http.MethodGet, files.RefPath(f.BlobKey), expires)
	}
	return ""
}

func (h *Handler) listModels(c *gin.Context) { h.listReference(c, engine.FashionModels, "models") }

func (h *Handler) listSceneries(c *gin.Context) { h.listReference(c, engine.Sceneries, "sceneries") }

// listReference answers GET /models or /sceneries: the account's own usable items, then the
// marketplace's, at most engine.MaxReferenceList of them (truncated says when there were more).
func (h *Handler) listReference(c *gin.Context, kind engine.ReferenceKind, field string) {
	items, truncated, err := h.Engine.Records.UsableReferenceItems(c.Request.Context(), caller(c).Installation.AccountID, kind)
	if err != nil {
		h.fail(c, err)
		return
	}
	expires := h.downloadExpiry()
	out := make([]ReferenceEntry, 0, len(items))
	for _, it := range items {
		source := SourceAccount
		if it.Marketplace {
			source = SourceMarketplace
		}
		out = append(out, ReferenceEntry{ID: it.ID, Name: it.Name, Thumbnail: h.imageURL(it.Thumbnail, expires), Source: source,
			Livemode: livemode(c)})
	}
	c.Header("Cache-Control", cacheAccountLists)
	c.Header("Vary", "X-Api-Key")
	c.PureJSON(http.StatusOK, gin.H{field: out, "truncated": truncated})
}

// listPresets answers GET /presets: the published system presets, then the account's own, at
// most engine.MaxReferenceList of them (truncated says when there were more).
func (h *Handler) listPresets(c *gin.Context) {
	presets, truncated, err := h.Engine.Records.VisiblePresets(c.Request.Context(), caller(c).Installation.AccountID)
	if err != nil {
		h.fail(c, err)
		return
	}
	expires := h.downloadExpiry()
	out := make([]PresetEntry, 0, len(presets))
	for _, p := range presets {
		e := PresetEntry{
			ID: p.ID, Slug: p.Slug, Name: p.Name, Description: p.HeroIntro, BestFor: p.BestFor, ExampleGallery: []string{},
			CreditCost: p.CreditCost, IsFree: p.IsFree, Categories: nonNilStrings(p.Categories), Tags: nonNilStrings(p.Tags),
			Scenery: p.SceneryRequirement, Source: SourceSystem, Livemode: livemode(c),
			InputGuidance: InputGuidance{Requirements: p.InputRequirements, Quantity: p.QuantityGuidelines,
				Quality: p.QualityGuidelines, Do: p.DoTips, Dont: p.DontTips},
		}
		if !p.System {
			e.Source = SourceAccount
		}
		if p.Cover != nil {
			e.Thumbnail = h.imageURL(p.Cover.File, expires)
		}
		for _, img := range p.Gallery {
			if len(e.ExampleGallery) < presetspec.MaxGallery {
				e.ExampleGallery = append(e.ExampleGallery, h.imageURL(img.File, expires))
			}
		}
		if e.Thumbnail == "" && len(e.ExampleGallery) > 0 {
			e.Thumbnail = e.ExampleGallery[0]
		}
		out = append(out, e)
	}
	c.Header("Cache-Control", cacheAccountLists)
	c.Header("Vary", "X-Api-Key")
	c.PureJSON(http.StatusOK, gin.H{"presets": out, "truncated": truncated})
}

// pricing answers GET /pricing from the same catalog as GET /ai-models, so a model's entry is its
// base_credit_cost.
func (h *Handler) pricing(c *gin.Context) {
	c.Header("Cache-Control", cachePricing)
	prices := h.Engine.Catalog.Prices(JobTypes...)
	resp := PricingResponse{}
	if prices != nil {
		resp.Prices = make([]PriceItem, len(prices))
	}
	for i, p := range prices {
		resp.Prices[i] = PriceItem{JobType: p.JobType, Provider: p.Provider, Model: p.Model, CreditCost: p.CreditCost}
	}
	c.PureJSON(http.StatusOK, resp)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
