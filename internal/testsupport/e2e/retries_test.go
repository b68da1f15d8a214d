package e2e_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

func TestRetriesFollowTheErrorCategory(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.SimProvider = true },
		Engine: func(c *engine.Config) {
			c.JobOptions.Retry = workflows.RetrySchedule{Delays: []time.Duration{300 * time.Millisecond}, MaxAttempts: 4, MaxTotal: time.Minute}
		}})
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	const rateLimitedModel = "sim/rate-limit-twice"
	cases := map[string]struct {
		status   string
		attempts int
		category errorcat.Category
	}{
		rateLimitedModel:       {status.JobCompleted, 3, ""},
		"sim/capacity-then-ok": {status.JobCompleted, 2, ""},
		"sim/always-transient": {status.JobFailed, 4, errorcat.TransientInfra},
		"sim/content-policy":   {status.JobFailed, 1, errorcat.ContentPolicy},
		"sim/input-missing":    {status.JobFailed, 1, errorcat.InputMissing},
		"sim/provider-account": {status.JobFailed, 1, errorcat.ProviderAccount},
		"sim/internal-bug":     {status.JobFailed, 1, errorcat.InternalBug},
		"sim/transient-once":   {status.JobCompleted, 2, ""},
	}
	// Every packshot is registered before any session starts, and the rate-limited job starts
	// last: its retry_pending windows last seconds, which registering the other packshots on a
	// busy machine could outlast before the test looks.
	order := slices.DeleteFunc(slices.Sorted(maps.Keys(cases)), func(m string) bool { return m == rateLimitedModel })
	order = append(order, rateLimitedModel)
	for _, model := range order {
		registerPackshot(t, env, api, strings.TrimPrefix(model, "sim/"), packshotPNG(t))
	}
	jobModel := map[string]string{}
	for _, model := range order {
		s := startSession(t, api, strings.TrimPrefix(model, "sim/"), model, 1)
		jobModel[s.Subjects[0].JobIDs[0]] = model
	}

	// The rate-limited job is visibly waiting (retry_pending, RATE_LIMIT) between its attempts.
	var rateLimited string
	for id, m := range jobModel {
		if m == rateLimitedModel {
			rateLimited = id
		}
	}
	var waiting plugin.JobResponse
	testenv.Eventually(t, 30*time.Second, "the rate-limited job to wait for its retry", func() bool {
		expect(t, api.do(http.MethodGet, "/jobs/"+rateLimited, nil, &waiting), http.StatusOK)
		return waiting.Status == status.JobRetryPending
	})
	if waiting.ErrorCategory == nil || *waiting.ErrorCategory != string(errorcat.RateLimit) || waiting.ErrorHint == nil {
		t.Fatalf("waiting job = %+v", waiting)
	}

	ids := make([]string, 0, len(jobModel))
	for id := range jobModel {
		ids = append(ids, id)
	}
	for id, job := range waitTerminal(t, api, ids) {
		want := cases[jobModel[id]]
		if job.Status != want.status || job.AttemptCount != want.attempts {
			t.Errorf("%s: %s after %d attempts, want %s after %d", jobModel[id], job.Status, job.AttemptCount, want.status, want.attempts)
		}
		if want.category == "" {
			if job.ErrorCategory != nil || len(job.Outputs) != 1 {
				t.Errorf("%s: completed job = %+v", jobModel[id], job)
			}
			continue
		}
		if job.ErrorCategory == nil || *job.ErrorCategory != string(want.category) || job.ErrorHint == nil || *job.ErrorHint != want.category.Hint() {
			t.Errorf("%s: failed job = %+v", jobModel[id], job)
		}
		resp := api.do(http.MethodGet, "/jobs/"+id, nil, nil)
		body := readBody(resp)
		if strings.Contains(body, "attempt "+fmt.Sprint(job.AttemptCount)) || strings.Contains(body, "error_detail") {
			t.Errorf("%s: a raw provider message reached the client: %s", jobModel[id], body)
		}
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	me := credits(t, api)
	if me.Credits.Available != 20-3 || me.Credits.Reserved != 0 {
		t.Fatalf("credits = %+v: 3 jobs completed, the rest released", me.Credits)
	}
}
