package activities_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// docs/webhooks.md: "Each event is recorded once, when it happens ... and delivered to every
// endpoint ... that subscribes to its type at that moment (an endpoint created later does not
// receive it ...)" and "A job that an operator runs again ... sends new events with new IDs; its
// order's order.completed is sent only the first time the order ends."
//
// An order ends, then an endpoint subscribed to order.completed is created, then support runs a
// failed job of the order again (a new run) and the order ends a second time. The second
// recording of order.completed (same event ID) records no event and gives the endpoint created
// after it no delivery of the old one.
func TestOrderCompletedIsNotSentToAnEndpointCreatedAfterIt(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newFixture(t, db, "https://shop.example/hook")
		job := f.newJob(t, &f.inst.ID, status.JobFailed)
		if err := db.Model(&models.Order{}).Where("id = ?", job.OrderID).Update("status", status.OrderFailed).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := f.acts.RecordJobWebhook(ctx, contract.RecordWebhookInput{JobID: job.ID, Run: 1}); err != nil {
			t.Fatal(err)
		}
		f.starter.take()
		orderEventID := models.EventID(job.OrderID, webhooks.EventOrderCompleted)
		var first models.WebhookEvent
		if err := db.Where("id = ?", orderEventID).Take(&first).Error; err != nil {
			t.Fatalf("order.completed of the first end: %v", err)
		}

		// Later, the integrator adds an endpoint for order.completed.
		inst := f.inst.ID
		late := &models.WebhookEndpoint{AccountID: f.inst.AccountID, InstallationID: &inst, URL: "https://late.example/hook",
			Events: models.StringList{webhooks.EventOrderCompleted}}
		if err := models.NewStore(db).CreateWebhookEndpoint(ctx, late); err != nil {
			t.Fatal(err)
		}

		// Support runs the job again; run 2 completes and the order ends again.
		if err := db.Model(&models.Job{}).Where("id = ?", job.ID).Updates(map[string]any{"run": 2, "status": status.JobCompleted}).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Model(&models.Order{}).Where("id = ?", job.OrderID).Update("status", status.OrderCompleted).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := f.acts.RecordJobWebhook(ctx, contract.RecordWebhookInput{JobID: job.ID, Run: 2}); err != nil {
			t.Fatal(err)
		}
		started := f.starter.take()

		var toLate []models.WebhookDelivery
		db.Where("endpoint_id = ?", late.ID).Find(&toLate)
		for _, d := range toLate {
			t.Errorf("endpoint created %s after order.completed (recorded %s) got a delivery of it: %s (status %s, created %s)",
				late.CreatedAt.Format(time.RFC3339Nano), first.CreatedAt.Format(time.RFC3339Nano), d.Event, d.Status, d.CreatedAt.Format(time.RFC3339Nano))
		}
		for _, d := range started {
			if d.EventID == orderEventID {
				t.Errorf("the re-run started a delivery of the order's first order.completed to endpoint %v", *d.EndpointID)
			}
		}
	})
}

// docs/webhooks.md: "Every body is one JSON object that starts with the same three fields" (event,
// delivery_id, delivery_created_at), and of GET /events/{id}: "data is the body byte for byte as a
// delivery sends it". The body is stored as the bytes it was written with on both databases
// (migration 0027: JSONB reordered the keys and reformatted the text on PostgreSQL).
func TestDeliveredBodyIsTheDocumentedBytes(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		rc := newReceiver(t, answerWith(http.StatusNoContent))
		f := newFixture(t, db, rc.URL+"/hooks")
		rec := f.record(t, f.job.ID)
		if res := f.deliver(t, contract.DeliverInput{DeliveryID: rec.DeliveryID, Attempt: 1}); !res.Delivered {
			t.Fatalf("result = %+v", res)
		}
		reqs := rc.got()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		sent := reqs[0].body
		// The receiver verifies as docs/webhooks.md tells it to.
		wh, err := standardwebhooks.NewWebhook(f.secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(sent, reqs[0].header); err != nil {
			t.Fatalf("verify: %v", err)
		}
		prefix := `{"event":"job.completed","delivery_id":"` + rec.EventID + `","delivery_created_at":"`
		if !strings.HasPrefix(string(sent), prefix) {
			t.Errorf("delivered body does not start with event, delivery_id, delivery_created_at:\n%.160s…", sent)
		}
		// GET /events/{id}'s data, as the façades write it (c.PureJSON: no HTML escaping).
		var ev models.WebhookEvent
		if err := db.Where("id = ?", rec.EventID).Take(&ev).Error; err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(webhooks.EventOf(&ev, true)); err != nil {
			t.Fatal(err)
		}
		var view struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(buf.Bytes(), &view); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(view.Data, sent) {
			t.Errorf("GET /events/{id} data is not the delivered body byte for byte:\nsent %.120s…\ndata %.120s…", sent, view.Data)
		}
	})
}

// docs/webhooks.md: "A replay while an earlier run waits between attempts replaces that run"
// (StartWebhookReplay: WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING), and a delivery is
// "delivered" once "a 2xx acknowledged it". Terminating a run does not stop an attempt its worker
// is making: a replay made while the earlier run's attempt waits on a slow receiver is delivered,
// then the earlier attempt times out and records itself: the delivery stays delivered (it would
// otherwise be "delivering" with a next_attempt_at no run honours, never purged).
func TestAReplayedDeliveryStaysDeliveredWhenTheReplacedRunsAttemptEndsLate(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, n int) {
		if n == 1 {
			<-release // the first run's attempt: the receiver is slow, the client gives up at 300 ms
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	defer close(release)
	f := newFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), rc.URL+"/hooks")
	id := f.record(t, f.job.ID).DeliveryID

	done := make(chan contract.DeliverResult, 1)
	go func() {
		res, err := f.acts.DeliverWebhook(context.Background(), contract.DeliverInput{DeliveryID: id, Attempt: 1, NextDelay: 5 * time.Minute})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for len(rc.got()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	// The client replays now: the replay's run replaces the first one and delivers at once.
	if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, Replay: true}); !res.Delivered {
		t.Fatalf("replay: %+v", res)
	}
	if d := f.delivery(t, id); d.Status != models.WebhookDelivered {
		t.Fatalf("after the replay: %s", d.Status)
	}
	// The replaced run's attempt ends (timeout) after the replay was acknowledged.
	if res := <-done; res.Delivered {
		t.Fatalf("first attempt: %+v", res)
	}
	d := f.delivery(t, id)
	if d.Status != models.WebhookDelivered || d.NextAttemptAt != nil {
		t.Errorf("a 2xx acknowledged the delivery, yet it is %q with next_attempt_at %v (delivered_at %v): no run will attempt it again",
			d.Status, d.NextAttemptAt, d.DeliveredAt)
	}
	// Nor does it start the endpoint's failure streak (docs/webhooks.md: failing_since is "the first
	// failed attempt since the last delivered one"): a streak dated before the last success would
	// let any single failure WEBHOOK_DISABLE_AFTER later disable the endpoint.
	var ep models.WebhookEndpoint
	if err := f.db.Where("id = ?", f.endpoint.ID).Take(&ep).Error; err != nil {
		t.Fatal(err)
	}
	if ep.FailingSince != nil {
		t.Errorf("endpoint failing_since = %s after a stale failed attempt", ep.FailingSince.Format(time.RFC3339Nano))
	}
}
