package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
)

// servesAll is a provider that claims every model and job type of a test catalog and never
// generates.
type servesAll struct{}

func (servesAll) Generate(context.Context, providers.Request) ([]providers.Output, error) {
	return nil, nil
}

func (servesAll) Serves(string, string) bool { return true }

// newRegistry is the registry of the catalog over a provider for each provider its models name.
func newRegistry(c *catalog.Catalog) *providers.Registry {
	configured := map[string]providers.Provider{}
	for _, m := range c.AIModels {
		configured[m.Provider] = servesAll{}
	}
	return providers.MustNewRegistry(c, configured)
}

// catalogEngine is an engine whose registry runs provider "p" but not "off", over a catalog of a
// photo-shoot model, a model of photo shoots and videos, and a packshot model of "off".
func catalogEngine() *engine.Engine {
	c := &catalog.Catalog{
		AspectRatios: []catalog.AspectRatio{{ID: "1:1"}, {ID: "4:5", Default: true}},
		AIModels: []catalog.AIModel{
			{ID: "p/shoot", Provider: "p", JobTypes: []string{jobtype.PhotoShoot}, BaseCreditCost: 3},
			{ID: "p/both", Provider: "p", JobTypes: []string{jobtype.PhotoShoot, jobtype.Video}, BaseCreditCost: 5},
			{ID: "off/packshot", Provider: "off", JobTypes: []string{jobtype.Packshot}, BaseCreditCost: 2},
		},
	}
	reg := providers.MustNewRegistry(c, map[string]providers.Provider{"p": servesAll{}})
	return engine.New(engine.Config{Models: reg})
}

func TestCatalogReadsShowTheConfiguredModelsOfTheJobTypes(t *testing.T) {
	e := catalogEngine()
	offered := func(ms []engine.AIModel) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, m.ID+":"+strings.Join(m.JobTypes, ","))
		}
		return out
	}
	// p/both shows only the photo_shoot job type; off/packshot's provider is not configured.
	assert.Equal(t, []string{"p/shoot:photo_shoot", "p/both:photo_shoot"},
		offered(e.Catalog.AIModels(jobtype.PhotoShoot, jobtype.Packshot)))
	assert.Equal(t, []engine.AIModel{}, e.Catalog.AIModels(jobtype.Packshot), "no model: an empty list, not nil")

	assert.Equal(t, []engine.Price{
		{JobType: jobtype.PhotoShoot, Provider: "p", Model: "both", CreditCost: 5},
		{JobType: jobtype.PhotoShoot, Provider: "p", Model: "shoot", CreditCost: 3},
	}, e.Catalog.Prices(jobtype.PhotoShoot, jobtype.Packshot), "the offered models' job types at their base cost")

	assert.Equal(t, []string{"1:1", "4:5"}, []string{e.Catalog.AspectRatios()[0].ID, e.Catalog.AspectRatios()[1].ID})
	assert.Equal(t, "4:5", e.Catalog.DefaultAspectRatio())
	assert.Equal(t, []string{"p"}, e.Catalog.VideoProviders())
}
