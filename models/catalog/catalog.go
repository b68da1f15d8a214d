// Package catalog is the versioned reference data every API reads: the generation models, the
// aspect ratios and the prices (catalog.json, embedded). It is a leaf: the providers and the
// engine read it without linking the store.
package catalog

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/shotflow/shotflow/models/jobtype"
)

//go:embed catalog.json
var catalogJSON []byte

// AIModel is a generation model of the catalog, addressed as provider/model.
type AIModel struct {
	ID                    string   `json:"id"`
	Provider              string   `json:"provider"`
	Name                  string   `json:"name"`
	OutputType            string   `json:"output_type"`
	JobTypes              []string `json:"job_types"`
	SupportedAspectRatios []string `json:"supported_aspect_ratios"`
	BaseCreditCost        int64    `json:"base_credit_cost"`
}

// Serves reports whether the model generates jobs of the given type.
func (m AIModel) Serves(jobType string) bool { return slices.Contains(m.JobTypes, jobType) }

// SupportsAspectRatio reports whether the model renders at the given aspect ratio.
func (m AIModel) SupportsAspectRatio(ar string) bool {
	return slices.Contains(m.SupportedAspectRatios, ar)
}

// Output types of catalog models.
const (
	OutputImage = "image"
	OutputVideo = "video"
)

// AspectRatio is an output shape offered to clients.
type AspectRatio struct {
	ID      string `json:"id"`
	Label   string `json:"label"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Default bool   `json:"default"`
}

// Catalog is the versioned reference data every API reads: AI models and aspect ratios.
type Catalog struct {
	Version      int           `json:"version"`
	AspectRatios []AspectRatio `json:"aspect_ratios"`
	AIModels     []AIModel     `json:"ai_models"`
	// ProviderPrices are the default credit costs of each provider per job type (GET /pricing,
	// model "*"); a model without its own base_credit_cost in the seed costs its provider's default.
	ProviderPrices []ProviderPrice `json:"provider_prices"`
}

// Load parses the embedded seed file and checks it is consistent.
func Load() (*Catalog, error) { return Parse(catalogJSON) }

// Parse parses a catalog document (the format of catalog.json) and checks it is consistent.
func Parse(data []byte) (*Catalog, error) {
	var c Catalog
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if err := c.applyProviderPrices(data); err != nil {
		return nil, err
	}
	defaults := 0
	ratios := map[string]bool{}
	for _, ar := range c.AspectRatios {
		ratios[ar.ID] = true
		if ar.Default {
			defaults++
		}
	}
	if defaults != 1 {
		return nil, fmt.Errorf("catalog: %d default aspect ratios, want exactly 1", defaults)
	}
	for _, m := range c.AIModels {
		if m.Provider == "" || !strings.HasPrefix(m.ID, m.Provider+"/") {
			return nil, fmt.Errorf("catalog: model %q must be provider/model", m.ID)
		}
		if len(m.JobTypes) == 0 {
			return nil, fmt.Errorf("catalog: model %q serves no job type", m.ID)
		}
		for _, jt := range m.JobTypes {
			if !slices.Contains(jobtype.All, jt) {
				return nil, fmt.Errorf("catalog: model %q lists unknown job type %q", m.ID, jt)
			}
		}
		if m.OutputType != OutputImage && m.OutputType != OutputVideo {
			return nil, fmt.Errorf("catalog: model %q has output_type %q, want image or video", m.ID, m.OutputType)
		}
		for _, ar := range m.SupportedAspectRatios {
			if !ratios[ar] {
				return nil, fmt.Errorf("catalog: model %q lists unknown aspect ratio %q", m.ID, ar)
			}
		}
	}
	return &c, nil
}

// Model returns the catalog model with the given provider/model ID.
func (c *Catalog) Model(id string) (AIModel, bool) {
	for _, m := range c.AIModels {
		if m.ID == id {
			return m, true
		}
	}
	return AIModel{}, false
}

// DefaultAspectRatio returns the ID of the default aspect ratio.
func (c *Catalog) DefaultAspectRatio() string {
	for _, ar := range c.AspectRatios {
		if ar.Default {
			return ar.ID
		}
	}
	return "1:1"
}

// ---- Pricing -------------------------------------------------------------------------------

// PriceAnyModel is the model of a provider's default price in GET /pricing.
const PriceAnyModel = "*"

// ProviderPrice is a provider's default credit cost for one job type (catalog.json).
type ProviderPrice struct {
	Provider   string `json:"provider"`
	JobType    string `json:"job_type"`
	CreditCost int64  `json:"credit_cost"`
}

// Price is one entry of GET /pricing: the credit cost of one generated image of job_type by
// provider/model, or by any model of the provider when Model is PriceAnyModel.
type Price struct {
	JobType    string `json:"job_type"`
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	CreditCost int64  `json:"credit_cost"`
}

// ProviderPrice returns the provider's default credit cost for the job type.
func (c *Catalog) ProviderPrice(provider, jobType string) (int64, bool) {
	for _, p := range c.ProviderPrices {
		if p.Provider == provider && p.JobType == jobType {
			return p.CreditCost, true
		}
	}
	return 0, false
}

// applyProviderPrices checks the provider prices and gives every model whose seed entry has no
// base_credit_cost its provider's default, which must then exist and agree for all its job types.
// A model's base_credit_cost is its price for every job type it serves.
func (c *Catalog) applyProviderPrices(data []byte) error {
	seen := map[[2]string]bool{}
	for _, p := range c.ProviderPrices {
		k := [2]string{p.Provider, p.JobType}
		if p.Provider == "" || p.JobType == "" || p.CreditCost < 0 || seen[k] {
			return fmt.Errorf("catalog: provider price %+v is incomplete, negative or repeated", p)
		}
		seen[k] = true
	}
	var raw struct {
		AIModels []struct {
			BaseCreditCost *int64 `json:"base_credit_cost"`
		} `json:"ai_models"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	for i := range c.AIModels {
		m := &c.AIModels[i]
		if raw.AIModels[i].BaseCreditCost != nil {
			if m.BaseCreditCost < 0 {
				return fmt.Errorf("catalog: model %q has a negative base_credit_cost", m.ID)
			}
			continue
		}
		cost := int64(-1)
		for _, jt := range m.JobTypes {
			p, ok := c.ProviderPrice(m.Provider, jt)
			if !ok || (cost >= 0 && p != cost) {
				return fmt.Errorf("catalog: model %q has no base_credit_cost and provider %q has no single default price for its job types", m.ID, m.Provider)
			}
			cost = p
		}
		if cost < 0 {
			return fmt.Errorf("catalog: model %q has no base_credit_cost and no job types", m.ID)
		}
		m.BaseCreditCost = cost
	}
	return nil
}

// Prices lists GET /pricing for the available models (those whose provider is configured): one
// entry per job type and model at its base_credit_cost, and one PriceAnyModel entry per provider
// and job type those models serve, at the provider's default price. Sorted by job type, provider,
// then model with "*" first.
func (c *Catalog) Prices(available []AIModel) []Price {
	out := []Price{}
	defaults := map[[2]string]bool{}
	for _, m := range available {
		_, model, _ := strings.Cut(m.ID, "/")
		for _, jt := range m.JobTypes {
			out = append(out, Price{JobType: jt, Provider: m.Provider, Model: model, CreditCost: m.BaseCreditCost})
			k := [2]string{m.Provider, jt}
			if cost, ok := c.ProviderPrice(m.Provider, jt); ok && !defaults[k] {
				defaults[k] = true
				out = append(out, Price{JobType: jt, Provider: m.Provider, Model: PriceAnyModel, CreditCost: cost})
			}
		}
	}
	slices.SortFunc(out, func(a, b Price) int {
		return cmp.Or(cmp.Compare(a.JobType, b.JobType), cmp.Compare(a.Provider, b.Provider),
			cmp.Compare(modelRank(a.Model), modelRank(b.Model)), cmp.Compare(a.Model, b.Model))
	})
	return out
}

func modelRank(model string) int {
	if model == PriceAnyModel {
		return 0
	}
	return 1
}
