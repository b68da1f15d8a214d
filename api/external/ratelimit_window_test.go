package external_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/shotflow/shotflow/models/testdb"
)

// rateLimitAnswer is the status and rate-limit headers of one answer.
type rateLimitAnswer struct {
	status                         int
	limit, remaining, reset, retry string
}

// listOrders sends GET /orders with the env's key and returns its rate-limit answer.
func (e *env) listOrders() rateLimitAnswer {
	e.t.Helper()
	code, body, h := e.get("/orders", "X-Api-Key", e.key)
	if code == http.StatusTooManyRequests {
		errorOf(e.t, body)
	}
	return rateLimitAnswer{code, h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset"), h.Get("Retry-After")}
}

func TestRateLimitIsSixtyPerRollingMinute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.Open(t, testdb.SQLiteURL(t)), 0) // the API's 60 requests per minute
	want := func(step string, got, want rateLimitAnswer) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: got %+v, want %+v", step, got, want)
		}
	}
	for i := 1; i <= 60; i++ {
		want("request "+strconv.Itoa(i), e.listOrders(), rateLimitAnswer{200, "60", strconv.Itoa(60 - i), "60", ""})
	}
	want("61st request", e.listOrders(), rateLimitAnswer{429, "60", "0", "60", "60"})
	// The budget does not trickle back: for the rest of the minute every request is refused,
	// and Retry-After counts down to the moment the burst leaves the window.
	for s := 1; s < 60; s++ {
		e.now = e.now.Add(time.Second)
		wait := strconv.Itoa(60 - s)
		want(strconv.Itoa(s)+" s after the burst", e.listOrders(), rateLimitAnswer{429, "60", "0", wait, wait})
	}
	e.now = e.now.Add(time.Second)
	want("a minute after the burst", e.listOrders(), rateLimitAnswer{200, "60", "59", "60", ""})
	// A request every 30 s from here on: the window holds this one and the one 30 s before.
	e.now = e.now.Add(30 * time.Second)
	want("30 s later", e.listOrders(), rateLimitAnswer{200, "60", "58", "30", ""})
}
