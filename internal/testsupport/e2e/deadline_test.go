package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/providers/sim"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// startSessionWithin is POST /jobs of a session of images sim/slow jobs of productRef, each taking
// delay, with the header Cancel-After: cancelAfter.
func startSessionWithin(t *testing.T, api *client, productRef string, images int, delay time.Duration, cancelAfter string) plugin.SessionResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1", "suggestions": sim.DelayOption + "=" + delay.String()},
		"subjects":       []map[string]any{{"product_ref": productRef, "images_count": images, "ai_model": "sim/slow"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, api.base+"/jobs", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", api.key)
	req.Header.Set(engine.HeaderCancelAfter, cancelAfter)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	contract.Plugin.Check(t, req, body, resp.StatusCode, resp.Header, data)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /jobs with Cancel-After %s: %d %s", cancelAfter, resp.StatusCode, data)
	}
	var s plugin.SessionResponse
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Cancel-After (issue 25, point 3), end to end: a session of three slow jobs whose order runs one
// at a time, with a deadline shorter than one job's run. The first job starts at once and runs to
// its end past the deadline, completed and charged; the two queued behind it have not started by
// the deadline and end cancelled with cancel_reason "deadline", never run and never charged (the
// balance and the ledger exact), each announced with job.cancelled. The worker's deadline sweep
// cancels them while they wait in the order (TestCancelAfterSweepsQueuedJobs); without a sweep in
// time, their first attempt does when the order launches them (TestCancelAfterAtTheFirstAttempt).
func TestCancelAfterSweepsQueuedJobs(t *testing.T) {
	t.Parallel()
	long(t)
	cancelAfterScenario(t, 500*time.Millisecond, metrics.DeadlineBySweep)
}

func TestCancelAfterAtTheFirstAttempt(t *testing.T) {
	t.Parallel()
	long(t)
	cancelAfterScenario(t, time.Hour, metrics.DeadlineByAttempt)
}

// cancelAfterScenario runs the scenario with the deadline sweep every sweepInterval and expects
// the two late jobs to be cancelled by the path by.
func cancelAfterScenario(t *testing.T, sweepInterval time.Duration, by string) {
	const (
		cancelAfter = 12 * time.Second
		delay       = 18 * time.Second // longer than cancelAfter, and than the sweep that follows it
		balance     = 10
	)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.SimProvider = true
		c.OrderMaxConcurrentJobs = 1
		c.ProviderConcurrency = map[string]int{"sim": 1, "local": 1}
		c.OutboxSweepInterval = sweepInterval
		c.WebhookAllowPrivateNetworks = true
	}})
	tenant := env.NewTenant(t, balance)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver, secret := useReceiver(t, env, tenant)
	registerPackshot(t, env, api, "vase", packshotPNG(t))
	workerURL := env.WorkerMetricsURL + "/metrics"
	before := metricstest.Get(t, workerURL)

	accepted := time.Now()
	session := startSessionWithin(t, api, "vase", 3, delay, "12s")
	ids := session.Subjects[0].JobIDs
	first, late := ids[0], ids[1:]
	// The first job must have begun before the deadline for the scenario to say anything.
	testenv.Eventually(t, cancelAfter, "the first job to start", func() bool {
		return countRows(t, env, &models.Job{}, "id = ? AND started_at IS NOT NULL", first) == 1
	})

	jobs := waitTerminal(t, api, ids)
	done := jobs[first]
	if done.Status != status.JobCompleted || done.CancelReason != nil || done.CancelAfterAt == nil {
		t.Fatalf("the job that started = %+v", done)
	}
	if done.CompletedAt.Sub(accepted) < cancelAfter {
		t.Fatalf("the first job completed %s after acceptance, before the %s deadline: the scenario tests nothing",
			done.CompletedAt.Sub(accepted), cancelAfter)
	}
	for _, id := range late {
		j := jobs[id]
		if j.Status != status.JobCancelled || j.CancelReason == nil || *j.CancelReason != status.CancelDeadline ||
			j.StartedAt != nil || j.AttemptCount != 0 || j.CancelAfterAt == nil {
			t.Fatalf("a job queued past its deadline = %+v", j)
		}
		if d := j.CancelAfterAt.Sub(accepted); d < cancelAfter-time.Second || d > cancelAfter+2*time.Second {
			t.Fatalf("cancel_after_at %s is %s after acceptance, want about %s", j.CancelAfterAt, d, cancelAfter)
		}
		if j.CompletedAt == nil || j.CompletedAt.Before(*j.CancelAfterAt) {
			t.Fatalf("job %s was cancelled at %v, before its deadline %v", id, j.CompletedAt, j.CancelAfterAt)
		}
	}

	// Uncharged: only the first job's credits are consumed, the others' released.
	cost := done.CreditCost
	order := waitOrderStatus(t, env, session.OrderID, status.OrderCompleted, 30*time.Second)
	if order.JobsCompleted != 1 || order.JobsCancelled != 2 || order.CreditsReserved != 3*cost ||
		order.CreditsConsumed != cost || order.CreditsReleased != 2*cost {
		t.Fatalf("order = %+v", order)
	}
	me := credits(t, api)
	if me.Credits.Available != balance-cost || me.Credits.Reserved != 0 {
		t.Fatalf("credits = %+v, want %d available and none reserved", me.Credits, balance-cost)
	}
	for _, id := range late {
		if n := countRows(t, env, &models.LedgerEntry{}, "job_id = ? AND kind = ?", id, models.LedgerConsume); n != 0 {
			t.Fatalf("job %s was charged", id)
		}
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)

	// Announced: job.cancelled with the reason for each late job, job.completed for the first.
	expectNotified(t, env, receiver, secret, first, webhooks.EventJobCompleted, status.JobCompleted)
	for _, id := range late {
		expectNotified(t, env, receiver, secret, id, webhooks.EventJobCancelled, status.JobCancelled)
		for _, h := range receiver.waitHooks(t, models.WebhookDeliveryID(id, 1, webhooks.EventJobCancelled), 1, 30*time.Second) {
			if p := verify(t, secret, h); p.CancelReason == nil || *p.CancelReason != status.CancelDeadline {
				t.Fatalf("job.cancelled of %s: %s", id, h.body)
			}
		}
	}
	expectDeltas(t, workerURL, before, []delta{
		{metrics.JobsDeadlineCancelled, map[string]string{"by": by}, 2},
		{metrics.JobsFinished, map[string]string{"status": status.JobCancelled, "error_category": metrics.NoCategory}, 2},
	})
}
