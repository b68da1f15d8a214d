package e2e_test

import (
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// TestWorkerKilledMidGenerationLosesNothing kills the worker process with SIGKILL while every job
// of an order is generating, starts a new one, and checks each job reaches exactly one terminal
// state with its credits settled exactly once.
func TestWorkerKilledMidGenerationLosesNothing(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{NoWorker: true, Configure: func(c *config.Config) {
		c.SimProvider = true
		c.OrderMaxConcurrentJobs = 4
		c.WebhookAllowPrivateNetworks = true
	}})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver, secret := useReceiver(t, env, tenant)
	first := env.StartWorkerProcess(t) // a worker prepares the packshot
	registerPackshot(t, env, api, "lamp", packshotPNG(t))
	session := startSlowSession(t, api, "lamp", 4, 4*time.Second)
	ids := session.Subjects[0].JobIDs

	testenv.Eventually(t, 60*time.Second, "every job to be generating", func() bool {
		return generating(t, env, ids) == int64(len(ids))
	})
	time.Sleep(500 * time.Millisecond)
	first.Kill()

	env.StartWorkerProcess(t)
	jobs := waitTerminal(t, api, ids)
	for id, j := range jobs {
		if j.Status != status.JobCompleted || j.AttemptCount < 2 || len(j.Outputs) != 1 {
			t.Errorf("job %s after the crash: %s, %d attempts, %d outputs", id, j.Status, j.AttemptCount, len(j.Outputs))
		}
	}
	consumed := countRows(t, env, &models.LedgerEntry{}, "order_id = ? AND kind = ?", session.OrderID, models.LedgerConsume)
	released := countRows(t, env, &models.LedgerEntry{}, "order_id = ? AND kind = ?", session.OrderID, models.LedgerRelease)
	if consumed != int64(len(ids)) || released != 0 {
		t.Fatalf("ledger: %d consume and %d release rows for %d jobs", consumed, released, len(ids))
	}
	if outputs := countRows(t, env, &models.Asset{}, "job_id IN ? AND kind = ?", ids, models.AssetKindOutput); outputs != int64(len(ids)) {
		t.Fatalf("%d output files for %d jobs", outputs, len(ids))
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	// Each terminal state is notified at least once, always under one webhook-id.
	for _, id := range ids {
		expectNotified(t, env, receiver, secret, id, webhooks.EventJobCompleted, status.JobCompleted)
	}
}
