package models

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/shotflow/shotflow/models/jobtype"
)

//go:embed seed/catalog.json
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

// LoadCatalog parses the embedded seed file and checks it is consistent.
func LoadCatalog() (*Catalog, error) { return ParseCatalog(catalogJSON) }

// ParseCatalog parses a catalog document (the format of seed/catalog.json) and checks it is consistent.
func ParseCatalog(data []byte) (*Catalog, error) {
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
