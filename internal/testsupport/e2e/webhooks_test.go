package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	temporalclient "go.temporal.io/sdk/client"
	temporalworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/worker"
	"github.com/shotflow/shotflow/workflows"
)

// hook is one webhook the receiver got.
type hook struct {
	at     time.Time
	header http.Header
	body   []byte
}

// hookReceiver is a merchant's endpoint. It answers 204, or, once busy is set, answers the first
// request of every new webhook-id with it.
type hookReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	hooks map[string][]hook
	busy  *scripted
}

// scripted is an answer other than 204.
type scripted struct {
	status     int
	retryAfter string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	rc := &hookReceiver{hooks: map[string][]hook{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		rc.mu.Lock()
		rc.hooks[id] = append(rc.hooks[id], hook{at: time.Now(), header: r.Header.Clone(), body: body})
		answer := scripted{status: http.StatusNoContent}
		if rc.busy != nil && len(rc.hooks[id]) == 1 {
			answer = *rc.busy
		}
		rc.mu.Unlock()
		if answer.retryAfter != "" {
			w.Header().Set("Retry-After", answer.retryAfter)
		}
		w.WriteHeader(answer.status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *hookReceiver) failFirst(answer scripted) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.busy = &answer
}

func (rc *hookReceiver) got(id string) []hook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hook(nil), rc.hooks[id]...)
}

// waitHooks waits until the receiver has n webhooks with the ID.
func (rc *hookReceiver) waitHooks(t *testing.T, id string, n int, timeout time.Duration) []hook {
	t.Helper()
	testenv.Eventually(t, timeout, strconv.Itoa(n)+" webhooks "+id, func() bool { return len(rc.got(id)) >= n })
	return rc.got(id)
}

// verify checks a webhook the way a merchant would, with the official Standard Webhooks library,
// and checks it against the OpenAPI document's webhooks.
func verify(t *testing.T, secret string, h hook) webhooks.Payload {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(h.body, h.header); err != nil {
		t.Fatalf("the official library does not verify the webhook: %v (headers %v)", err, h.header)
	}
	if h.header.Get("X-Service-Signature") != h.header.Get("webhook-signature") || h.header.Get("Content-Type") != "application/json" ||
		h.header.Get("User-Agent") != "shotflow-webhooks/1" {
		t.Fatalf("headers = %v", h.header)
	}
	if err := contract.ValidateWebhook(h.header, h.body); err != nil {
		t.Fatal(err)
	}
	var p webhooks.Payload
	if err := json.Unmarshal(h.body, &p); err != nil {
		t.Fatalf("payload %s: %v", h.body, err)
	}
	return p
}

// notifyJob ends like a JobWorkflow: it notifies the job's end and returns.
func notifyJob(ctx workflow.Context, jobID string, run int) error {
	return workflows.NotifyJobEnded(ctx, jobID, run)
}

// TestWebhooksAreSignedRetriedAndReplayed: a terminal job's webhook reaches the merchant signed so
// that the official library verifies it; a failing receiver is retried honouring Retry-After; a
// replay re-sends with the same webhook-id and a new timestamp.
func TestWebhooksAreSignedRetriedAndReplayed(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivateNetworks = true }})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver := newHookReceiver(t)
	secret := webhooks.NewSecret()
	ep := pointAt(t, env, tenant.InstallationID, receiver.URL+"/shotflow", secret)
	registerPackshot(t, env, api, "vase", packshotPNG(t))

	// The end of a job is notified from a workflow, as JobWorkflow does, on a worker of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queue := "e2e-notify-" + secrets.Token(6)
	w := temporalworker.New(env.App.Temporal, queue, temporalworker.Options{})
	worker.Register(w, env.App.Activities())
	w.RegisterWorkflow(notifyJob)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// completeAndNotify runs a one-job session to its end, notifies it and returns the job ID.
	completeAndNotify := func() string {
		t.Helper()
		id := startSession(t, api, "vase", "local/studio-v1", 1).Subjects[0].JobIDs[0]
		if j := waitTerminal(t, api, []string{id})[id]; j.Status != status.JobCompleted {
			t.Fatalf("job %s = %s", id, j.Status)
		}
		run, err := env.App.Temporal.ExecuteWorkflow(ctx, temporalclient.StartWorkflowOptions{ID: "notify/" + id, TaskQueue: queue}, notifyJob, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		// The notifying workflow returns once the delivery has started, without waiting for it.
		if err := run.Get(ctx, nil); err != nil {
			t.Fatalf("notify %s: %v", id, err)
		}
		return id
	}

	first := completeAndNotify()
	// The receiver sees the event's ID as webhook-id; the log keeps its delivery to the endpoint.
	firstEvent := models.WebhookDeliveryID(first, 1, webhooks.EventJobCompleted)
	firstDelivery := models.EventDeliveryID(firstEvent, ep.ID)
	// 1. Delivered at once, verifiable, carrying the job as the API shows it.
	h := receiver.waitHooks(t, firstEvent, 1, 30*time.Second)[0]
	p := verify(t, secret, h)
	if h.header.Get("webhook-id") != firstEvent || p.DeliveryID != firstEvent || p.Event != "job.completed" ||
		p.ID != first || p.Status != status.JobCompleted || p.ProductRef != "vase" || len(p.Outputs) != 1 {
		t.Fatalf("webhook = %s", h.body)
	}
	resp, err := http.Get(p.Outputs[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("download from the webhook: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	testenv.Eventually(t, 10*time.Second, "delivery recorded", func() bool {
		d, err := models.GetWebhookDelivery(env.DB, firstDelivery)
		return err == nil && d.Status == models.WebhookDelivered
	})

	// 2. A busy receiver is retried, no sooner than its Retry-After (7 s where the schedule says
	// 4–6 s), with the same webhook-id.
	receiver.failFirst(scripted{status: http.StatusServiceUnavailable, retryAfter: "7"})
	second := completeAndNotify()
	secondEvent := models.WebhookDeliveryID(second, 1, webhooks.EventJobCompleted)
	secondDelivery := models.EventDeliveryID(secondEvent, ep.ID)
	hooks := receiver.waitHooks(t, secondEvent, 2, 30*time.Second)
	if gap := hooks[1].at.Sub(hooks[0].at); gap < 7*time.Second {
		t.Errorf("retried after %v, before the receiver's Retry-After of 7 s", gap)
	}
	for _, h := range hooks {
		if verify(t, secret, h).DeliveryID != secondEvent {
			t.Fatalf("retry carries another delivery: %s", h.body)
		}
	}
	testenv.Eventually(t, 10*time.Second, "retried delivery recorded", func() bool {
		d, err := models.GetWebhookDelivery(env.DB, secondDelivery)
		return err == nil && d.Status == models.WebhookDelivered && d.Attempts == 2
	})
	attempts, err := models.WebhookAttempts(env.DB, secondDelivery)
	if err != nil || len(attempts) != 2 || *attempts[0].StatusCode != 503 || *attempts[1].StatusCode != 204 || attempts[0].Error == "" {
		t.Fatalf("attempts = %+v, %v", attempts, err)
	}
	// The delivery's history has a failed attempt and its retry timer; the job's, an installation
	// with a callback URL (its own delivery start).
	if err := env.App.Temporal.GetWorkflow(ctx, workflows.WebhookWorkflowID(secondDelivery), "").Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	recordHistory(t, env.App.Temporal, workflows.WebhookWorkflowID(secondDelivery), "webhook_delivery_retried.json")
	recordHistory(t, env.App.Temporal, workflows.JobWorkflowID(second, 1), "job_workflow_callback.json")

	// 3. A replay re-sends now: same webhook-id and body, a new timestamp, recorded as a replay.
	time.Sleep(1100 * time.Millisecond) // a new unix second
	var replay plugin.ReplayResponse
	expect(t, api.do(http.MethodPost, "/webhooks/"+firstDelivery+"/replay", nil, &replay), http.StatusAccepted)
	if replay.DeliveryID != firstDelivery || replay.Status != "queued" {
		t.Fatalf("replay = %+v", replay)
	}
	hooks = receiver.waitHooks(t, firstEvent, 2, 30*time.Second)
	again := hooks[1]
	verify(t, secret, again)
	if again.header.Get("webhook-id") != firstEvent || string(again.body) != string(hooks[0].body) ||
		again.header.Get("webhook-timestamp") == hooks[0].header.Get("webhook-timestamp") {
		t.Fatalf("replay headers %v, first %v", again.header, hooks[0].header)
	}
	testenv.Eventually(t, 10*time.Second, "replay recorded", func() bool {
		attempts, err := models.WebhookAttempts(env.DB, firstDelivery)
		return err == nil && len(attempts) == 2 && attempts[1].Replay && *attempts[1].StatusCode == 204
	})

	// 4. After a rotation both secrets sign, so a merchant still holding the old one verifies.
	var rotated plugin.RotateResponse
	expect(t, api.do(http.MethodPost, "/installations/"+tenant.InstallationID+"/rotate-hmac", nil, &rotated), http.StatusOK)
	expect(t, api.do(http.MethodPost, "/webhooks/"+secondDelivery+"/replay", nil, &replay), http.StatusAccepted)
	h = receiver.waitHooks(t, secondEvent, 3, 30*time.Second)[2]
	verify(t, secret, h)
	verify(t, rotated.WebhookSecret, h)

	// No further automatic attempts: each delivery ran to success once.
	time.Sleep(2 * time.Second)
	if n1, n2 := len(receiver.got(firstEvent)), len(receiver.got(secondEvent)); n1 != 2 || n2 != 3 {
		t.Fatalf("receiver got %d and %d webhooks, want 2 and 3", n1, n2)
	}
}

// useReceiver points the tenant's installation at a new receiver with a fresh secret.
func useReceiver(t *testing.T, env *testenv.Env, tenant testenv.Tenant) (*hookReceiver, string) {
	t.Helper()
	receiver := newHookReceiver(t)
	secret := webhooks.NewSecret()
	pointAt(t, env, tenant.InstallationID, receiver.URL+"/hooks", secret)
	return receiver, secret
}

// pointAt gives the installation a new signing secret and an endpoint at url subscribed to events
// (the job ends when none are given), as a callback URL was; it returns the endpoint.
func pointAt(t *testing.T, env *testenv.Env, installationID, url, secret string, events ...string) models.WebhookEndpoint {
	t.Helper()
	if len(events) == 0 {
		events = webhooks.DefaultPluginEvents
	}
	if err := env.DB.Model(&models.Installation{}).Where("id = ?", installationID).
		Update("webhook_secret_enc", env.App.Box.Seal(secret)).Error; err != nil {
		t.Fatal(err)
	}
	var inst models.Installation
	if err := env.DB.Where("id = ?", installationID).Take(&inst).Error; err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	ep := models.WebhookEndpoint{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, URL: url,
		Events: append(models.StringList{}, events...), Status: models.EndpointEnabled, CreatedAt: now, UpdatedAt: now}
	if err := env.DB.Create(&ep).Error; err != nil {
		t.Fatal(err)
	}
	return ep
}

// deliveryOfEvent is the one delivery of an event (its webhook-id) to the tenant's one endpoint.
func deliveryOfEvent(t *testing.T, env *testenv.Env, eventID string) (models.WebhookDelivery, error) {
	t.Helper()
	var d models.WebhookDelivery
	err := env.DB.Take(&d, "event_id = ?", eventID).Error
	return d, err
}

// expectNotified waits until the job's terminal state has been delivered as event, verifies it,
// and checks no other delivery exists for the job run.
func expectNotified(t *testing.T, env *testenv.Env, rc *hookReceiver, secret, jobID, event, status string) {
	t.Helper()
	id := models.WebhookDeliveryID(jobID, 1, event)
	hooks := rc.waitHooks(t, id, 1, 60*time.Second)
	for _, h := range hooks {
		if p := verify(t, secret, h); p.Event != event || p.ID != jobID || p.Status != status {
			t.Fatalf("webhook for %s: %s", jobID, h.body)
		}
	}
	if deliveries := countRows(t, env, &models.WebhookDelivery{}, "job_id = ?", jobID); deliveries != 1 {
		t.Fatalf("job %s has %d deliveries, want exactly 1", jobID, deliveries)
	}
}
