package e2e_test

import (
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// TestASlowProviderDoesNotStarveTheOthers: each provider's generate activities run on their own
// task queue with their own concurrency. With one slot per provider (and one on the main queue), a
// photo of the local provider completes while the sim provider's slow jobs still queue behind each
// other, and those run one at a time, never together.
func TestASlowProviderDoesNotStarveTheOthers(t *testing.T) {
	t.Parallel()
	long(t)
	const delay = 3 * time.Second
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.SimProvider = true
		c.WorkerActivityConcurrency = 1
		c.ProviderConcurrency = map[string]int{"sim": 1, "local": 1}
	}})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "slow", packshotPNG(t))
	registerPackshot(t, env, api, "fast", packshotPNG(t))

	slow := startSlowSession(t, api, "slow", 3, delay)
	slowIDs := slow.Subjects[0].JobIDs
	// Wait until the first slow attempt is running, so the sim slot is taken.
	testenv.Eventually(t, 30*time.Second, "a slow job to start", func() bool {
		return countRows(t, env, &models.Job{}, "id IN ? AND attempt_count = 1", slowIDs) > 0
	})
	start := time.Now()
	fast := startSession(t, api, "fast", "local/studio-v1", 1).Subjects[0].JobIDs[0]
	done := waitTerminal(t, api, []string{fast})[fast]
	if done.Status != status.JobCompleted {
		t.Fatalf("local job = %+v", done)
	}
	if n := countRows(t, env, &models.Job{}, "id IN ? AND status = ?", slowIDs, status.JobCompleted); n > 1 {
		t.Fatalf("%d slow jobs finished before the local one (%s after it was submitted); it waited behind them", n, time.Since(start))
	}

	// The slow jobs ran one after another: their completions are at least a delay apart.
	waitTerminal(t, api, slowIDs)
	var jobs []models.Job
	if err := env.DB.Where("id IN ?", slowIDs).Order("completed_at").Find(&jobs).Error; err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(jobs); i++ {
		if gap := jobs[i].CompletedAt.Sub(*jobs[i-1].CompletedAt); gap < delay*9/10 {
			t.Fatalf("slow jobs completed %s apart, want at least %s: they ran together", gap, delay)
		}
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}
