package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/providers/sim"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// waitTerminal polls every job of a session until it is terminal and returns them by ID.
func waitTerminal(t *testing.T, api *client, ids []string) map[string]plugin.JobResponse {
	t.Helper()
	out := map[string]plugin.JobResponse{}
	for _, id := range ids {
		var job plugin.JobResponse
		testenv.Eventually(t, 90*time.Second, "job "+id+" to end", func() bool {
			expect(t, api.do(http.MethodGet, "/jobs/"+id, nil, &job), http.StatusOK)
			return status.IsTerminalJob(job.Status)
		})
		out[id] = job
	}
	return out
}

// waitOrderStatus waits until the order's row has the status and returns the row.
func waitOrderStatus(t *testing.T, env *testenv.Env, orderID, status string, timeout time.Duration) models.Order {
	t.Helper()
	var o models.Order
	testenv.Eventually(t, timeout, "order "+orderID+" to be "+status, func() bool {
		return env.DB.Take(&o, "id = ?", orderID).Error == nil && o.Status == status
	})
	return o
}

func startSession(t *testing.T, api *client, productRef, model string, images int) plugin.SessionResponse {
	t.Helper()
	var session plugin.SessionResponse
	expect(t, api.do(http.MethodPost, "/jobs", map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects":       []map[string]any{{"product_ref": productRef, "images_count": images, "ai_model": model}},
	}, &session), http.StatusCreated)
	return session
}

// startSlowSession starts a session of images sim/slow jobs for productRef, each taking delay.
func startSlowSession(t *testing.T, api *client, productRef string, images int, delay time.Duration) plugin.SessionResponse {
	t.Helper()
	var session plugin.SessionResponse
	expect(t, api.do(http.MethodPost, "/jobs", map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1", "suggestions": sim.DelayOption + "=" + delay.String()},
		"subjects":       []map[string]any{{"product_ref": productRef, "images_count": images, "ai_model": "sim/slow"}},
	}, &session), http.StatusCreated)
	return session
}

// generating counts the jobs among ids that are in progress.
func generating(t *testing.T, env *testenv.Env, ids []string) int64 {
	t.Helper()
	return countRows(t, env, &models.Job{}, "id IN ? AND status = ?", ids, status.JobInProgress)
}

func TestCancelOnlyJobsThatHaveNotStarted(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.OrderMaxConcurrentJobs = 1
		c.WebhookAllowPrivateNetworks = true
	}})
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver, secret := useReceiver(t, env, tenant)
	registerPackshot(t, env, api, "vase", packshotPNG(t))
	session := startSession(t, api, "vase", "local/studio-v1", 6)
	ids := session.Subjects[0].JobIDs
	last := ids[len(ids)-1]

	// Another installation cannot even see the job.
	other := env.NewTenant(t, 1)
	stranger := &client{t: t, base: env.BaseURL + plugin.Base, key: other.PluginKey}
	expect(t, stranger.do(http.MethodDelete, "/jobs/"+last, nil, nil), http.StatusNotFound)

	// With one job running at a time, the last one is still waiting: it can be cancelled.
	first, err := api.send(http.MethodDelete, "/jobs/"+last, "cancel-last", nil)
	if err != nil || first.status != http.StatusOK || !strings.Contains(string(first.body), `"status":"cancelled"`) {
		t.Fatalf("cancel of the waiting job: %d %s (%v)", first.status, first.body, err)
	}
	// A retry that carries the same Idempotency-Key replays that answer.
	replay, err := api.send(http.MethodDelete, "/jobs/"+last, "cancel-last", nil)
	if err != nil || replay.status != http.StatusOK || string(replay.body) != string(first.body) {
		t.Fatalf("replayed cancel: %d %s (%v), want the first answer", replay.status, replay.body, err)
	}
	// A new request finds the job finished: cancelled is final, and the contract answers 409.
	expect(t, api.do(http.MethodDelete, "/jobs/"+last, nil, nil), http.StatusConflict)

	jobs := waitTerminal(t, api, ids)
	// The first job had started (or finished) by the time anyone asked: refused.
	resp := api.do(http.MethodDelete, "/jobs/"+ids[0], nil, nil)
	expect(t, resp, http.StatusConflict)
	if jobs[last].Status != status.JobCancelled || jobs[last].AttemptCount != 0 || jobs[last].StartedAt != nil {
		t.Fatalf("a cancelled job ran: %+v", jobs[last])
	}
	completed := 0
	for _, j := range jobs {
		if j.Status == status.JobCompleted {
			completed++
		}
	}
	if completed != 5 {
		t.Fatalf("%d jobs completed, want 5", completed)
	}
	var order plugin.OrderResponse
	testenv.Eventually(t, 10*time.Second, "order to settle", func() bool {
		expect(t, api.do(http.MethodGet, "/orders/"+session.OrderID, nil, &order), http.StatusOK)
		return order.Status != status.OrderInProgress
	})
	if order.Status != status.OrderCompleted || order.JobsCancelled != 1 || order.Summary.CreditsReleased != 1 || order.Summary.CreditsConsumed != 5 {
		t.Fatalf("order = %+v", order)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	// Every terminal job is notified: job.cancelled for the cancelled one.
	for id, j := range jobs {
		if j.Status == status.JobCancelled {
			expectNotified(t, env, receiver, secret, id, webhooks.EventJobCancelled, status.JobCancelled)
		} else {
			expectNotified(t, env, receiver, secret, id, webhooks.EventJobCompleted, status.JobCompleted)
		}
	}
	recordHistory(t, env.App.Temporal, "order/"+session.OrderID, "order_workflow_cancel.json")
}

// TestCancelAnswersWhileNoWorkerRuns (issue 23, items 8, 11 and 11a): a cancel is decided by the
// database, not by a workflow, so it is answered at once while no worker polls the task queue and
// the order workflow cannot take a single task. Once a worker is back, the order drops the job (or
// launches it and the job ends not runnable): the job never runs and is never charged, every other
// job completes, and the job.cancelled webhook is delivered exactly once.
func TestCancelAnswersWhileNoWorkerRuns(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.SimProvider = true
		c.WebhookAllowPrivateNetworks = true
	}})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver, secret := useReceiver(t, env, tenant)
	registerPackshot(t, env, api, "vase", packshotPNG(t))

	env.StopWorker()
	session := startSlowSession(t, api, "vase", 3, 100*time.Millisecond)
	ids := session.Subjects[0].JobIDs
	cancelled := ids[1]
	var answer plugin.JobResponse
	expect(t, api.do(http.MethodDelete, "/jobs/"+cancelled, nil, &answer), http.StatusOK)
	if answer.ID != cancelled || answer.Status != status.JobCancelled || answer.StartedAt != nil {
		t.Fatalf("cancel answered %+v", answer)
	}
	expect(t, api.do(http.MethodDelete, "/jobs/"+cancelled, nil, nil), http.StatusConflict)
	env.StartWorker()

	jobs := waitTerminal(t, api, ids)
	for id, j := range jobs {
		if id == cancelled {
			if j.Status != status.JobCancelled || j.AttemptCount != 0 || j.StartedAt != nil {
				t.Fatalf("the cancelled job ran: %+v", j)
			}
			continue
		}
		if j.Status != status.JobCompleted {
			t.Fatalf("job %s ended %s", id, j.Status)
		}
	}
	order := waitOrderStatus(t, env, session.OrderID, status.OrderCompleted, 30*time.Second)
	if order.JobsCancelled != 1 || order.JobsCompleted != 2 || order.CreditsReleased != 1 || order.CreditsConsumed != 2 {
		t.Fatalf("order = %+v", order)
	}
	for _, id := range ids {
		if id != cancelled {
			expectNotified(t, env, receiver, secret, id, webhooks.EventJobCompleted, status.JobCompleted)
		}
	}
	expectNotified(t, env, receiver, secret, cancelled, webhooks.EventJobCancelled, status.JobCancelled)
	// Every other webhook has arrived: the cancelled job's was sent once, by one workflow run.
	delivery := models.WebhookDeliveryID(cancelled, 1, webhooks.EventJobCancelled)
	if d, err := deliveryOfEvent(t, env, delivery); err != nil || d.Status != models.WebhookDelivered || d.Attempts != 1 || d.StartDueAt != nil {
		t.Fatalf("delivery of the cancel: %+v (%v)", d, err)
	}
	if got := len(receiver.got(delivery)); got != 1 {
		t.Fatalf("the job.cancelled webhook arrived %d times", got)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}

func TestJobsThatNeverStartExpire(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.OrderMaxConcurrentJobs = 1
		c.JobStartDeadline = 1500 * time.Millisecond
	}})
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "chair", packshotPNG(t))
	session := startSession(t, api, "chair", "local/studio-v1", 12)
	jobs := waitTerminal(t, api, session.Subjects[0].JobIDs)
	expired := 0
	for _, j := range jobs {
		switch j.Status {
		case status.JobExpired:
			expired++
			if j.StartedAt != nil || j.AttemptCount != 0 {
				t.Fatalf("an expired job had started: %+v", j)
			}
		case status.JobCompleted:
		default:
			t.Fatalf("job ended %s", j.Status)
		}
	}
	if expired == 0 || expired == len(jobs) {
		t.Fatalf("%d of %d jobs expired; want some but not all", expired, len(jobs))
	}
	me := credits(t, api)
	if me.Credits.Reserved != 0 || me.Credits.Available != int64(20-(len(jobs)-expired)) {
		t.Fatalf("credits = %+v with %d expired", me.Credits, expired)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}
