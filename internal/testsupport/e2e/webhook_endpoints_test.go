package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/historycost"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// eventReceiver is an integrator's endpoint: it answers every request with its current status
// (204 until told otherwise) and keeps them by event type.
type eventReceiver struct {
	*httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	byType map[string][]hook
	all    int
}

func newEventReceiver(t *testing.T) *eventReceiver {
	rc := &eventReceiver{byType: map[string][]hook{}}
	rc.status.Store(http.StatusNoContent)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var head struct {
			Event string `json:"event"`
		}
		_ = json.Unmarshal(body, &head)
		rc.mu.Lock()
		rc.byType[head.Event] = append(rc.byType[head.Event], hook{at: time.Now(), header: r.Header.Clone(), body: body})
		rc.all++
		rc.mu.Unlock()
		w.WriteHeader(int(rc.status.Load()))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *eventReceiver) of(event string) []hook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hook(nil), rc.byType[event]...)
}

func (rc *eventReceiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.all
}

// wait waits until the receiver has n webhooks of the event type.
func (rc *eventReceiver) wait(t *testing.T, event string, n int) []hook {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, event+" webhooks", func() bool { return len(rc.of(event)) >= n })
	return rc.of(event)
}

// An integrator runs its webhooks itself through the plugin API: endpoints with event filters
// receive exactly what they subscribed to, signed so that the official Standard Webhooks library
// verifies it; an endpoint that keeps failing is disabled after WEBHOOK_DISABLE_AFTER and the others
// hear of it; its new deliveries are held, and after it is enabled again a recover sends them; the
// log, the events API and a test send show the same events; another installation sees none of it.
func TestWebhookEndpointsFilterDisableHoldAndRecover(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{
		Configure: func(c *config.Config) {
			c.WebhookAllowPrivateNetworks, c.SimProvider = true, true
			c.WebhookDisableAfter = 2 * time.Second
		},
		Engine: func(c *engine.Config) {
			c.JobOptions.Retry = workflows.RetrySchedule{Delays: []time.Duration{300 * time.Millisecond}, MaxAttempts: 3, MaxTotal: time.Minute}
		}})
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	began := time.Now().UTC().Add(-time.Minute)

	all, plain, broken := newEventReceiver(t), newEventReceiver(t), newEventReceiver(t)
	broken.status.Store(http.StatusInternalServerError)
	var allEP, plainEP, brokenEP webhooks.Endpoint
	expect(t, api.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": all.URL + "/all", "description": "everything",
		"events": []string{"job.started", "job.retrying", "job.completed", "order.completed", "endpoint.disabled"}}, &allEP), http.StatusCreated)
	expect(t, api.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": plain.URL + "/plain"}, &plainEP), http.StatusCreated)
	expect(t, api.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": broken.URL + "/broken"}, &brokenEP), http.StatusCreated)
	if plainEP.Status != "enabled" || len(plainEP.Events) != 3 || plainEP.Events[0] != "job.completed" {
		t.Fatalf("endpoint with default events = %+v", plainEP)
	}

	// 1. A job that fails once (PROVIDER_CAPACITY) and then completes: each endpoint gets what it
	// subscribed to, verified by the official library and by the document.
	registerPackshot(t, env, api, "vase", packshotPNG(t))
	first := startSession(t, api, "vase", "sim/capacity-then-ok", 1).Subjects[0].JobIDs[0]
	if j := waitTerminal(t, api, []string{first})[first]; j.Status != status.JobCompleted {
		t.Fatalf("job = %+v", j)
	}
	started := verify(t, tenant.WebhookSecret, all.wait(t, "job.started", 1)[0])
	retrying := all.wait(t, "job.retrying", 1)[0]
	retry := verify(t, tenant.WebhookSecret, retrying)
	completed := verify(t, tenant.WebhookSecret, all.wait(t, "job.completed", 1)[0])
	ended := all.wait(t, "order.completed", 1)[0]
	verify(t, tenant.WebhookSecret, ended)
	if started.ID != first || started.Status != status.JobInProgress || retry.Retry == nil || retry.Retry.Attempt != 1 ||
		retry.Retry.ErrorCategory != "PROVIDER_CAPACITY" || completed.ID != first || completed.Status != status.JobCompleted {
		t.Fatalf("job events: started %+v, retrying %s, completed %+v", started, retrying.body, completed)
	}
	var order struct {
		Order webhooks.OrderSummary `json:"order"`
	}
	if err := json.Unmarshal(ended.body, &order); err != nil || order.Order.Status != "completed" || order.Order.Jobs.Completed != 1 ||
		order.Order.Credits.Consumed != order.Order.Credits.Reserved || order.Order.Credits.Released != 0 {
		var o models.Order
		env.DB.Take(&o, "id = ?", order.Order.ID)
		var jobs []models.Job
		env.DB.Where("order_id = ?", o.ID).Find(&jobs)
		t.Fatalf("order.completed = %s (%v); order %+v; jobs %+v", ended.body, err, o, jobs)
	}
	plainDone := verify(t, tenant.WebhookSecret, plain.wait(t, "job.completed", 1)[0])
	if plainDone.DeliveryID != completed.DeliveryID {
		t.Fatalf("one event, two ids: %s and %s", plainDone.DeliveryID, completed.DeliveryID)
	}

	// 2. The endpoint whose every attempt fails is disabled after the window (its second attempt,
	// 4–6 s after the first, is past 2 s) and the endpoint subscribed to endpoint.disabled hears of it.
	var got webhooks.Endpoint
	testenv.Eventually(t, 60*time.Second, "the failing endpoint to be disabled", func() bool {
		expect(t, api.do(http.MethodGet, "/webhook-endpoints/"+brokenEP.ID, nil, &got), http.StatusOK)
		return got.Status == "disabled"
	})
	if got.DisabledReason == nil || *got.DisabledReason != "failing" || got.FailingSince == nil || got.DisabledAt == nil {
		t.Fatalf("disabled endpoint = %+v", got)
	}
	disabled := all.wait(t, "endpoint.disabled", 1)[0]
	verify(t, tenant.WebhookSecret, disabled)
	var about struct {
		Endpoint webhooks.Endpoint `json:"endpoint"`
	}
	if err := json.Unmarshal(disabled.body, &about); err != nil || about.Endpoint.ID != brokenEP.ID || about.Endpoint.Status != "disabled" {
		t.Fatalf("endpoint.disabled = %s", disabled.body)
	}
	if len(plain.of("endpoint.disabled")) != 0 || len(broken.of("endpoint.disabled")) != 0 {
		t.Fatal("endpoint.disabled reached an endpoint that did not subscribe, or the disabled one")
	}

	// 3. While it is disabled its new deliveries are held, not attempted.
	attemptsBefore := broken.count()
	second := startSession(t, api, "vase", "local/studio-v1", 1).Subjects[0].JobIDs[0]
	waitTerminal(t, api, []string{second})
	plain.wait(t, "job.completed", 2)
	var held plugin.DeliveriesPage
	testenv.Eventually(t, 30*time.Second, "the held delivery", func() bool {
		expect(t, api.do(http.MethodGet, "/webhook-deliveries?status=held&endpoint_id="+brokenEP.ID, nil, &held), http.StatusOK)
		return len(held.WebhookDeliveries) == 1
	})
	if d := held.WebhookDeliveries[0]; d.Event != "job.completed" || len(d.Attempts) != 0 || d.NextAttemptAt != nil {
		t.Fatalf("held delivery = %+v", d)
	}
	if broken.count() != attemptsBefore {
		t.Fatal("a disabled endpoint got a request")
	}

	// 4. Fixed, enabled again and recovered: the held delivery is sent.
	broken.status.Store(http.StatusOK)
	var enabled webhooks.Endpoint
	expect(t, api.do(http.MethodPatch, "/webhook-endpoints/"+brokenEP.ID, map[string]any{"status": "enabled"}, &enabled), http.StatusOK)
	if enabled.Status != "enabled" || enabled.DisabledReason != nil || enabled.FailingSince != nil {
		t.Fatalf("re-enabled endpoint = %+v", enabled)
	}
	var queued struct {
		DeliveriesQueued int `json:"deliveries_queued"`
	}
	expect(t, api.do(http.MethodPost, "/webhook-endpoints/"+brokenEP.ID+"/recover", map[string]any{"since": began.Format(time.RFC3339)}, &queued), http.StatusAccepted)
	if queued.DeliveriesQueued != 1 {
		t.Fatalf("recover queued %d deliveries, want the held one", queued.DeliveriesQueued)
	}
	heldID := held.WebhookDeliveries[0].EventID
	testenv.Eventually(t, 30*time.Second, "the recovered delivery", func() bool {
		for _, h := range broken.of("job.completed") {
			if h.header.Get("webhook-id") == heldID {
				return true
			}
		}
		return false
	})
	var log webhooks.Delivery
	testenv.Eventually(t, 10*time.Second, "the recovered delivery in the log", func() bool {
		expect(t, api.do(http.MethodGet, "/webhook-deliveries/"+held.WebhookDeliveries[0].ID, nil, &log), http.StatusOK)
		return log.Status == "delivered"
	})
	if len(log.Attempts) != 1 || log.Attempts[0].StatusCode == nil || *log.Attempts[0].StatusCode != 200 || log.EndpointID == nil || *log.EndpointID != brokenEP.ID {
		t.Fatalf("delivery log = %+v", log)
	}

	// 5. The events API has every event, with the body its webhooks carried.
	var events plugin.EventsPage
	expect(t, api.do(http.MethodGet, "/events?type=job.started", nil, &events), http.StatusOK)
	if len(events.Events) != 2 {
		t.Fatalf("%d job.started events, want 2 (one per job)", len(events.Events))
	}
	var event webhooks.Event
	expect(t, api.do(http.MethodGet, "/events/"+started.DeliveryID, nil, &event), http.StatusOK)
	var sent, stored map[string]any
	_ = json.Unmarshal(all.of("job.started")[0].body, &sent)
	_ = json.Unmarshal(event.Data, &stored)
	if event.ID != started.DeliveryID || event.Type != "job.started" || len(stored) == 0 || len(stored) != len(sent) || stored["id"] != sent["id"] {
		t.Fatalf("event = %+v, sent %s", event, all.of("job.started")[0].body)
	}

	// 6. A test send goes to one endpoint, marked as a test, through the log.
	var test plugin.WebhookTestSent
	expect(t, api.do(http.MethodPost, "/webhook-endpoints/"+plainEP.ID+"/test", map[string]any{}, &test), http.StatusAccepted)
	ping := plain.wait(t, "webhook.test", 1)[0]
	verify(t, tenant.WebhookSecret, ping)
	var body map[string]any
	if err := json.Unmarshal(ping.body, &body); err != nil || body["test"] != true || body["endpoint_id"] != plainEP.ID ||
		ping.header.Get("webhook-id") != test.EventID {
		t.Fatalf("test send = %s %v", ping.body, ping.header)
	}
	if len(all.of("webhook.test")) != 0 {
		t.Fatal("a test send reached another endpoint")
	}

	// 7. Another installation sees none of it.
	other := env.NewTenant(t, 5)
	them := &client{t: t, base: env.BaseURL + plugin.Base, key: other.PluginKey}
	for _, path := range []string{"/webhook-endpoints/" + plainEP.ID, "/webhook-deliveries/" + log.ID, "/events/" + started.DeliveryID} {
		expect(t, them.do(http.MethodGet, path, nil, nil), http.StatusNotFound)
	}
	expect(t, them.do(http.MethodPost, "/webhook-endpoints/"+plainEP.ID+"/test", map[string]any{}, nil), http.StatusNotFound)
	var theirs plugin.EventsPage
	expect(t, them.do(http.MethodGet, "/events", nil, &theirs), http.StatusOK)
	if len(theirs.Events) != 0 {
		t.Fatalf("another installation lists %d events", len(theirs.Events))
	}
}

// With every event subscribed, a five-job session costs its jobs' histories nothing more (each
// stays within JobWorkflowEventBudget: the deliveries are started by the activities after their
// commits, not by the job workflows) and costs one delivery workflow per event and endpoint: two per
// job (job.started, job.completed) and one per order (order.completed), each a complete first
// attempt. The figures are in docs/benchmarks.md ("Webhook events").
func TestEveryEventSubscribedCostsOneDeliveryWorkflowPerEvent(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivateNetworks = true }})
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	rc := newEventReceiver(t)
	expect(t, api.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": rc.URL, "events": webhooks.PluginEvents}, nil), http.StatusCreated)
	registerPackshot(t, env, api, "vase", packshotPNG(t))
	const jobs = 5
	ids := startSession(t, api, "vase", "local/studio-v1", jobs).Subjects[0].JobIDs
	waitTerminal(t, api, ids)
	rc.wait(t, "job.started", jobs)
	rc.wait(t, "job.completed", jobs)
	rc.wait(t, "order.completed", 1)

	for _, id := range ids {
		assertJobEventBudget(t, env.App.Temporal, workflows.JobWorkflowID(id, 1))
	}
	var page plugin.DeliveriesPage
	expect(t, api.do(http.MethodGet, "/webhook-deliveries?limit=200", nil, &page), http.StatusOK)
	if want := 2*jobs + 1; len(page.WebhookDeliveries) != want {
		t.Fatalf("%d deliveries, want %d (two per job, one per order)", len(page.WebhookDeliveries), want)
	}
	var total historycost.Cost
	for _, d := range page.WebhookDeliveries {
		id := workflows.WebhookWorkflowID(d.ID)
		if err := env.App.Temporal.GetWorkflow(t.Context(), id, "").Get(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		events, err := historycost.Read(t.Context(), env.App.Temporal, id, "")
		if err != nil {
			t.Fatal(err)
		}
		cost := historycost.Of(events)
		if cost.Events > webhookDeliveryEvents {
			t.Errorf("%s (%s) wrote %d events, want at most %d for a first attempt delivered", id, d.Event, cost.Events, webhookDeliveryEvents)
		}
		total = total.Plus(cost)
	}
	t.Logf("every event subscribed: %d delivery workflows, %d events and %d actions in all, %.1f events and %.1f actions per job",
		len(page.WebhookDeliveries), total.Events, total.Actions, float64(total.Events)/jobs, float64(total.Actions)/jobs)
}

// webhookDeliveryEvents is the history of a delivery workflow whose first attempt is delivered: its
// start, a workflow task (3 events), the attempt's activity (3), a workflow task (3), its completion.
const webhookDeliveryEvents = 11
