package engine

import (
	"slices"

	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
)

// Models: the generation models the engine plans with and the catalog both APIs show (their
// models, aspect ratios and prices) come from one registry, Engine.Models.

// ModelRegistry is the engine's view of the configured generation models (providers.Registry): the
// reference catalog filtered to the providers this deployment runs.
type ModelRegistry interface {
	// Models lists the available models.
	Models() []catalog.AIModel
	// ModelsFor lists the available models that serve any of jobTypes, each showing only those of
	// its job types that are in jobTypes.
	ModelsFor(jobTypes ...string) []catalog.AIModel
	// Model returns an available model by its provider/model ID.
	Model(id string) (catalog.AIModel, bool)
	// DefaultModel is the model of the job type (of the provider when not empty); ok is false when
	// none serves it.
	DefaultModel(jobType, provider string) (catalog.AIModel, bool)
	// Catalog is the full reference catalog: aspect ratios, models and prices.
	Catalog() *catalog.Catalog
}

// AIModel is a generation model as the APIs list it, addressed as provider/model.
type AIModel struct {
	ID                    string
	Provider              string
	Name                  string
	OutputType            string   // image or video
	JobTypes              []string // the job types it generates (of those asked for)
	SupportedAspectRatios []string
	BaseCreditCost        int64
}

// AspectRatio is an output shape offered to clients.
type AspectRatio struct {
	ID      string
	Label   string
	Width   int
	Height  int
	Default bool
}

// Price is the credit cost of one generated image of JobType by Provider's Model, or by any model
// of the provider when Model is "*".
type Price struct {
	JobType    string
	Provider   string
	Model      string
	CreditCost int64
}

// AIModels lists the available models that generate any of jobTypes (the job types an API
// creates), each listing only those of its job types; an empty list, never nil, when none does.
func (e *Catalog) AIModels(jobTypes ...string) []AIModel {
	ms := e.cfg.Models.ModelsFor(jobTypes...)
	out := make([]AIModel, len(ms))
	for i, m := range ms {
		out[i] = AIModel{ID: m.ID, Provider: m.Provider, Name: m.Name, OutputType: m.OutputType, JobTypes: m.JobTypes,
			SupportedAspectRatios: m.SupportedAspectRatios, BaseCreditCost: m.BaseCreditCost}
	}
	return out
}

// AspectRatios lists the aspect ratios of the catalog.
func (e *Catalog) AspectRatios() []AspectRatio {
	ars := e.cfg.Models.Catalog().AspectRatios
	if ars == nil {
		return nil
	}
	out := make([]AspectRatio, len(ars))
	for i, a := range ars {
		out[i] = AspectRatio{ID: a.ID, Label: a.Label, Width: a.Width, Height: a.Height, Default: a.Default}
	}
	return out
}

// DefaultAspectRatio is the aspect ratio of a request that names none.
func (e *Catalog) DefaultAspectRatio() string {
	return e.cfg.Models.Catalog().DefaultAspectRatio()
}

// Prices lists the prices of the available models that generate any of jobTypes, from the same
// catalog as AIModels, so a model's price is its base_credit_cost.
func (e *Catalog) Prices(jobTypes ...string) []Price {
	ps := e.cfg.Models.Catalog().Prices(e.cfg.Models.ModelsFor(jobTypes...))
	if ps == nil {
		return nil
	}
	out := make([]Price, len(ps))
	for i, p := range ps {
		out[i] = Price{JobType: p.JobType, Provider: p.Provider, Model: p.Model, CreditCost: p.CreditCost}
	}
	return out
}

// VideoProviders lists the providers of the available models that generate videos.
func (e *Catalog) VideoProviders() []string {
	var out []string
	for _, m := range e.cfg.Models.Models() {
		if m.Serves(jobtype.Video) && !slices.Contains(out, m.Provider) {
			out = append(out, m.Provider)
		}
	}
	return out
}
