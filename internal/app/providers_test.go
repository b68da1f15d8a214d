package app

import (
	"slices"
	"strings"
	"testing"

	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/worker"
)

func TestProvidersFollowTheConfiguration(t *testing.T) {
	catalog, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	names := func(cfg config.Config) []string {
		reg, err := providers.NewRegistry(catalog, Providers(cfg))
		if err != nil {
			t.Fatalf("the seed catalog does not fit the providers' code: %v", err)
		}
		out := reg.Providers()
		slices.Sort(out)
		return out
	}
	base, err := config.LoadFrom(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(base); !slices.Equal(got, []string{"local"}) {
		t.Fatalf("defaults enable %v, want only local", got)
	}
	all := base
	all.SimProvider, all.OpenAIAPIKey, all.FalKey = true, "sk-test", "fal-test"
	if got := names(all); !slices.Equal(got, []string{"fal", "local", "openai", "sim"}) {
		t.Fatalf("with every key %v", got)
	}

	all.ProviderRateLimits = map[string]float64{"openai": 0.5}
	all.ProviderConcurrency = map[string]int{"local": 2}
	all.WorkerActivityConcurrency = 7
	a := &App{Config: all, Generator: providers.MustNewRegistry(catalog, Providers(all))}
	want := []worker.ProviderLimits{
		{Provider: "fal", RatePerSecond: 0, Concurrency: 7},
		{Provider: "local", RatePerSecond: 0, Concurrency: 2},
		{Provider: "openai", RatePerSecond: 0.5, Concurrency: 7},
		{Provider: "sim", RatePerSecond: 0, Concurrency: 7},
	}
	if got := a.ProviderLimits(); !slices.Equal(got, want) {
		t.Fatalf("ProviderLimits = %+v, want %+v", got, want)
	}
	opts := worker.ProviderWorkerOptions(want[2], 0)
	if !opts.DisableWorkflowWorker || opts.TaskQueueActivitiesPerSecond != 0.5 || opts.MaxConcurrentActivityExecutionSize != 7 {
		t.Fatalf("provider worker options = %+v", opts)
	}
}

func TestDefaultProviderMustBeConfiguredAndComesFirst(t *testing.T) {
	cfg, err := config.LoadFrom(map[string]string{"DEFAULT_PROVIDER": "sim"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewGenerator(cfg); err == nil || !strings.Contains(err.Error(), "DEFAULT_PROVIDER") {
		t.Fatalf("sim as default without SIM_PROVIDER: %v, want an error naming DEFAULT_PROVIDER", err)
	}
	cfg.SimProvider = true
	reg, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The default provider's model wins for the job types it serves; others fall back to catalog
	// order, and a named provider is honoured.
	for _, tc := range []struct{ jobType, provider, want string }{
		{jobtype.Packshot, "", "sim/ok"},
		{jobtype.Video, "", "sim/video-ok"},
		{jobtype.Video, "local", "local/motion-v1"},
	} {
		if m, ok := reg.DefaultModel(tc.jobType, tc.provider); !ok || m.ID != tc.want {
			t.Errorf("DefaultModel(%s, %q) = %s, want %s", tc.jobType, tc.provider, m.ID, tc.want)
		}
	}
	cfg.DefaultProvider = "local"
	if reg, err = NewGenerator(cfg); err != nil {
		t.Fatal(err)
	}
	if m, _ := reg.DefaultModel(jobtype.Packshot, ""); m.ID != "local/studio-v1" {
		t.Errorf("local default: %s", m.ID)
	}
}
