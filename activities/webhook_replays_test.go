package activities_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models/testdb"
)

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
