package external_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities"
	actcontract "github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// receiver is a local webhook receiver: it answers 200 and keeps what it was sent.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	headers  []http.Header
	bodies   [][]byte
	received int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.headers, rc.bodies = append(rc.headers, r.Header.Clone()), append(rc.bodies, body)
		rc.received++
		rc.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// failedDelivery stores an event of the account and its delivery to endpoint, failed after one
// attempt answered 500, as the delivery machinery leaves it; endpoint nil is a delivery without one.
func (e *env) failedDelivery(accountID string, endpoint *string) models.WebhookDelivery {
	e.t.Helper()
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	ev := models.WebhookEvent{ID: models.NewID(), AccountID: accountID, Type: webhooks.EventRecordDone, CreatedAt: at,
		Payload: models.JSON(`{"event":"record.done","delivery_id":"` + models.NewID() + `","n":1}`)}
	d := models.WebhookDelivery{ID: models.NewID(), EventID: ev.ID, EndpointID: endpoint, AccountID: accountID, Event: ev.Type,
		CallbackURL: hookURL, Status: models.WebhookFailed, LastError: "HTTP 500", Run: 1, Attempts: 1, CreatedAt: at, UpdatedAt: at}
	code := 500
	e.must(e.db.Create(&ev).Error)
	_, err := models.CreateWebhookDelivery(e.db, &d) // in its account's mode, as RecordEvents stores it
	e.must(err)
	e.must(e.db.Create(&models.WebhookAttempt{ID: models.NewID(), DeliveryID: d.ID, Attempt: 1, StartedAt: at,
		StatusCode: &code, LatencyMS: 42, Error: "HTTP 500", CreatedAt: at}).Error)
	return d
}

// replayStarts are the inputs of the delivery workflows started for the delivery so far.
func (e *env) replayStarts(deliveryID string) []workflows.WebhookDeliveryInput {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []workflows.WebhookDeliveryInput
	for i, o := range e.starts {
		if o.ID == workflows.WebhookWorkflowID(deliveryID) {
			out = append(out, e.startArgs[i].(workflows.WebhookDeliveryInput))
		}
	}
	return out
}

// POST /webhook-deliveries/{id}/replay sends a failed delivery again to a real receiver: it
// answers 202 with the delivery as GET /webhook-deliveries/{id} shows it, pending with its earlier
// attempt, and starts a replay run of its workflow; that run's first attempt (made here as
// WebhookDeliveryWorkflow makes it) reaches the receiver signed with the endpoint's secret and the
// event's ID, and the delivery ends delivered with a second attempt. A repeat with the same
// Idempotency-Key answers the first 202 and starts nothing.
func TestWebhookDeliveryReplaySendsItAgain(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		rc := newReceiver(t)
		created := e.createEndpoint(e.key, map[string]any{"url": hookURL, "events": webhooks.ExternalEvents})
		endpoint, secret := created["id"].(string), created["secret"].(string)
		// The API refuses a loopback URL (WEBHOOK_ALLOW_PRIVATE_NETWORKS is off): point the endpoint
		// at the local receiver in the database.
		e.must(e.db.Model(&models.WebhookEndpoint{}).Where("id = ?", endpoint).Update("url", rc.URL).Error)
		d := e.failedDelivery(e.account, &endpoint)
		path := "/webhook-deliveries/" + d.ID

		code, replayed, _ := e.send(e.key, http.MethodPost, path+"/replay", nil)
		if code != http.StatusAccepted {
			t.Fatalf("POST %s/replay: %d %v, want 202", path, code, replayed)
		}
		attempts, _ := replayed["attempts"].([]any)
		if replayed["id"] != d.ID || replayed["event_id"] != d.EventID || replayed["status"] != models.WebhookPending ||
			replayed["url"] != rc.URL || replayed["attempt_count"] != float64(1) || len(attempts) != 1 ||
			replayed["next_attempt_at"] != nil || replayed["livemode"] != true {
			t.Errorf("the replay's answer: %v, want the delivery pending at the endpoint's URL with its one attempt", replayed)
		}
		if _, shown, _ := e.send(e.key, http.MethodGet, path, nil); !reflect.DeepEqual(shown, replayed) {
			t.Errorf("GET %s = %v, the replay answered %v", path, shown, replayed)
		}
		starts := e.replayStarts(d.ID)
		if len(starts) != 1 || !starts[0].Replay {
			t.Fatalf("workflow starts of the delivery: %+v, want one replay run", starts)
		}
		if got, err := models.GetWebhookDelivery(db, d.ID); err != nil || got.StartDueAt != nil {
			t.Fatalf("the replay's start is not recorded: %+v, %v", got, err)
		}

		// The new run's first attempt, as WebhookDeliveryWorkflow makes it.
		acts := &activities.Activities{Store: models.NewStore(db), Secrets: e.handler.Secrets, Log: zap.NewNop(),
			Webhooks: webhooks.NewClient(webhooks.ClientOptions{Timeout: 5 * time.Second, AllowPrivate: true})}
		res, err := acts.DeliverWebhook(context.Background(), actcontract.DeliverInput{DeliveryID: d.ID, Attempt: 1,
			Replay: starts[0].Replay, NextDelay: workflows.WebhookDelay(d.ID, 2)})
		if err != nil || !res.Delivered || res.StatusCode != http.StatusOK {
			t.Fatalf("the replay's attempt = %+v, %v; want delivered with 200", res, err)
		}
		rc.mu.Lock()
		if rc.received != 1 {
			t.Errorf("the receiver got %d requests, want 1", rc.received)
		} else {
			if err := webhooks.Verify(secret, rc.headers[0], rc.bodies[0], time.Now(), time.Minute); err != nil {
				t.Errorf("the replayed webhook does not verify with the endpoint's secret: %v", err)
			}
			if id := rc.headers[0].Get(webhooks.HeaderID); id != d.EventID {
				t.Errorf("webhook-id %q, want the event's %s", id, d.EventID)
			}
		}
		rc.mu.Unlock()
		code, after, _ := e.send(e.key, http.MethodGet, path, nil)
		attempts, _ = after["attempts"].([]any)
		if code != http.StatusOK || after["status"] != models.WebhookDelivered || after["attempt_count"] != float64(2) || len(attempts) != 2 ||
			after["delivered_at"] == nil || attempts[1].(map[string]any)["status_code"] != float64(http.StatusOK) {
			t.Errorf("GET %s after the replay's attempt: %d %v, want delivered with a second attempt answered 200", path, code, after)
		}

		// Under an Idempotency-Key a repeat answers the first 202 and sends nothing more.
		keyed := func() *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, external.Base+path+"/replay", nil)
			req.Header.Set("X-Api-Key", e.key)
			req.Header.Set(idemHeader, "replay-"+d.ID)
			return contract.External.ServeAndCheck(t, e.router, req)
		}
		first := keyed()
		again := keyed()
		if first.Code != http.StatusAccepted || again.Code != http.StatusAccepted || again.Body.String() != first.Body.String() ||
			again.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("keyed replay and its repeat: %d %s / %d %s (Idempotent-Replayed %q)", first.Code, first.Body, again.Code, again.Body,
				again.Header().Get("Idempotent-Replayed"))
		}
		if n := len(e.replayStarts(d.ID)); n != 2 {
			t.Errorf("%d replay runs started, want 2: the repeat under the same key starts none", n)
		}
	})
}

// A replay names one delivery of the key's account, in the key's mode: another account's, an
// unknown ID or one of the other mode (a test key's account is the test twin) is 404 as for a
// missing one, an ID that is no UUID 400 naming id; a delivery without an endpoint, or whose
// endpoint is disabled or deleted, is 409, as in the plugin API. A refused replay changes nothing
// and starts nothing; a test key replays its own twin's delivery.
func TestWebhookDeliveryReplayRefusals(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		other, otherKey := e.newAccount(external.ScopeWebhooks)
		twin, testKey := e.testKey(external.ScopeWebhooks)
		mineEP := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
		theirsEP := e.createEndpoint(otherKey, map[string]any{"url": hookURL})["id"].(string)
		twinEP := e.createEndpoint(testKey, map[string]any{"url": hookURL})["id"].(string)
		mine := e.failedDelivery(e.account, &mineEP)
		theirs := e.failedDelivery(other, &theirsEP)
		twins := e.failedDelivery(twin, &twinEP)
		orphan := e.failedDelivery(e.account, nil)

		unchanged := func(what string, d models.WebhookDelivery) {
			t.Helper()
			got, err := models.GetWebhookDelivery(db, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != d.Status || got.Attempts != d.Attempts || got.StartDueAt != nil || len(e.replayStarts(d.ID)) != 0 {
				t.Errorf("%s: the refused replay changed the delivery (%s, %d attempts, start due %v) or started %d runs",
					what, got.Status, got.Attempts, got.StartDueAt, len(e.replayStarts(d.ID)))
			}
		}
		replay := func(key, id string) (int, map[string]any) {
			code, out, _ := e.send(key, http.MethodPost, "/webhook-deliveries/"+id+"/replay", nil)
			return code, out
		}

		_, missing := replay(e.key, models.NewID())
		for _, c := range []struct {
			what, key string
			d         models.WebhookDelivery
		}{
			{"another account's delivery", e.key, theirs},
			{"the test twin's delivery with the live key", e.key, twins},
			{"the live delivery with the test key", testKey, mine},
			{"the account's delivery with another account's key", otherKey, mine},
		} {
			code, out := replay(c.key, c.d.ID)
			if code != http.StatusNotFound || errorOf(t, out) != errorOf(t, missing) {
				t.Errorf("%s: %d %v, want 404 as for a missing one (%v)", c.what, code, out, missing)
			}
			unchanged(c.what, c.d)
		}
		code, out := replay(e.key, "not-a-uuid")
		refusedNaming(t, "POST /webhook-deliveries/not-a-uuid/replay", code, out, "id")

		// Nothing can receive it: 409.
		if code, out := replay(e.key, orphan.ID); code != http.StatusConflict || !strings.Contains(errorOf(t, out), "no endpoint") {
			t.Errorf("a delivery without endpoint: %d %v, want 409 saying it has no endpoint", code, out)
		}
		unchanged("a delivery without endpoint", orphan)
		if code, out, _ := e.send(e.key, http.MethodPatch, "/webhook-endpoints/"+mineEP, map[string]any{"status": "disabled"}); code != http.StatusOK {
			t.Fatalf("disable: %d %v", code, out)
		}
		if code, out := replay(e.key, mine.ID); code != http.StatusConflict || !strings.Contains(errorOf(t, out), "disabled") {
			t.Errorf("a delivery of a disabled endpoint: %d %v, want 409", code, out)
		}
		unchanged("a delivery of a disabled endpoint", mine)
		if code, out, _ := e.send(e.key, http.MethodDelete, "/webhook-endpoints/"+mineEP, nil); code != http.StatusNoContent {
			t.Fatalf("delete: %d %v", code, out)
		}
		if code, out := replay(e.key, mine.ID); code != http.StatusConflict || !strings.Contains(errorOf(t, out), "deleted") {
			t.Errorf("a delivery of a deleted endpoint: %d %v, want 409", code, out)
		}
		unchanged("a delivery of a deleted endpoint", mine)

		// The test key replays its twin's delivery, which says it is not live.
		code, out = replay(testKey, twins.ID)
		if code != http.StatusAccepted || out["id"] != twins.ID || out["status"] != models.WebhookPending || out["livemode"] != false {
			t.Errorf("the test key's replay of its twin's delivery: %d %v, want 202 pending, livemode false", code, out)
		}
		if starts := e.replayStarts(twins.ID); len(starts) != 1 || !starts[0].Replay {
			t.Errorf("the twin's delivery's starts: %+v, want one replay run", starts)
		}
	})
}
