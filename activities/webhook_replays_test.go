package activities_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// docs/webhooks.md: failing_since is "the first failed attempt since the last delivered one, null
// while the last attempt succeeded"; "every delivered attempt ends it". The replaced run's attempt
// started before the replay's delivered one, and ends (timeout) after it: the endpoint's last
// attempt (by start) succeeded, so the late failure starts no streak dated before that success
// (which would let any single failure WEBHOOK_DISABLE_AFTER later disable the endpoint).
func TestLateFailedAttemptStartsNoStreakBeforeADeliveredOne(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, n int) {
		if n == 1 {
			<-release
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
	if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, Replay: true}); !res.Delivered {
		t.Fatalf("replay: %+v", res)
	}
	<-done
	var ep models.WebhookEndpoint
	if err := f.db.Where("id = ?", f.endpoint.ID).Take(&ep).Error; err != nil {
		t.Fatal(err)
	}
	d := f.delivery(t, id)
	if ep.FailingSince != nil && d.DeliveredAt != nil && ep.FailingSince.Before(*d.DeliveredAt) {
		t.Errorf("endpoint failing_since = %s, before the delivered attempt (delivered_at %s): a streak that began before the last success",
			ep.FailingSince.Format(time.RFC3339Nano), d.DeliveredAt.Format(time.RFC3339Nano))
	}
}

// docs/webhooks.md: "A replay of a delivered delivery sends it again ... and, if that fails,
// retries on the same schedule"; next_attempt_at is "when the next automatic attempt is due, else
// null". A failed replay of a delivered delivery (an attempt begun after the 2xx) is the
// delivery's state: delivering, with its next attempt, not the old 2xx.
func TestFailedReplayOfADeliveredDeliveryShowsItsNextAttempt(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(w http.ResponseWriter, n int) {
		if n == 1 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	})
	f := newFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), rc.URL+"/hooks")
	id := f.record(t, f.job.ID).DeliveryID
	if res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, NextDelay: 5 * time.Second}); !res.Delivered {
		t.Fatalf("first: %+v", res)
	}
	res := f.deliver(t, contract.DeliverInput{DeliveryID: id, Attempt: 1, Replay: true, NextDelay: 5 * time.Second})
	if res.Delivered {
		t.Fatalf("replay: %+v", res)
	}
	d := f.delivery(t, id)
	code := 0
	if d.LastStatusCode != nil {
		code = *d.LastStatusCode
	}
	if d.NextAttemptAt == nil || code != http.StatusInternalServerError {
		t.Errorf("after a failed replay whose run retries in 5 s: status %q, next_attempt_at %v, last_status_code %d, last_error %q, attempts %d",
			d.Status, d.NextAttemptAt, code, d.LastError, d.Attempts)
	}
}
