package engine

import (
	"slices"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
)

// Models: the generation models the engine plans with and the catalog both APIs show (their
// models, aspect ratios and prices) come from one registry, Engine.Models.

// ModelRegistry is the engine's view of the configured generation models (providers.Registry): the
// reference catalog filtered to the providers this deployment runs.
type ModelRegistry interface {
	// Models lists the available models.
	Models() []models.AIModel
	// ModelsFor lists the available models that serve any of jobTypes, each showing only those of
	// its job types that are in jobTypes.
	ModelsFor(jobTypes ...string) []models.AIModel
	// Model returns an available model by its provider/model ID.
	Model(id string) (models.AIModel, bool)
	// DefaultModel is the model of the job type (of the provider when not empty); ok is false when
	// none serves it.
	DefaultModel(jobType, provider string) (models.AIModel, bool)
	// Catalog is the full reference catalog: aspect ratios, models and prices.
	Catalog() *models.Catalog
}

// AIModels lists the available models that generate any of jobTypes (the job types an API
// creates), each listing only those of its job types; an empty list, never nil, when none does.
func (e *Catalog) AIModels(jobTypes ...string) []models.AIModel {
	out := e.cfg.Models.ModelsFor(jobTypes...)
	if out == nil {
		return []models.AIModel{}
	}
	return out
}

// AspectRatios lists the aspect ratios of the catalog.
func (e *Catalog) AspectRatios() []models.AspectRatio {
	return e.cfg.Models.Catalog().AspectRatios
}

// DefaultAspectRatio is the aspect ratio of a request that names none.
func (e *Catalog) DefaultAspectRatio() string {
	return e.cfg.Models.Catalog().DefaultAspectRatio()
}

// Prices lists the prices of the available models that generate any of jobTypes, from the same
// catalog as AIModels, so a model's price is its base_credit_cost.
func (e *Catalog) Prices(jobTypes ...string) []models.Price {
	return e.cfg.Models.Catalog().Prices(e.cfg.Models.ModelsFor(jobTypes...))
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
