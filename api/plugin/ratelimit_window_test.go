package plugin_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
)

// rateLimitAnswer is the status and rate-limit headers of one answer.
type rateLimitAnswer struct {
	status                         int
	limit, remaining, reset, retry string
}

// getMe sends GET /me with the env's key and returns its rate-limit answer.
func (e *env) getMe() rateLimitAnswer {
	e.t.Helper()
	rec := e.do(http.MethodGet, p("/me"), e.key, nil)
	if rec.Code == http.StatusTooManyRequests {
		e.requireError(rec, http.StatusTooManyRequests, plugin.CodeRateLimited)
	}
	h := rec.Header()
	return rateLimitAnswer{rec.Code, h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset"), h.Get("Retry-After")}
}

func TestRateLimitIsPerRollingMinute(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // the default of 60 requests per minute
	for i := 1; i <= 60; i++ {
		require.Equal(t, rateLimitAnswer{200, "60", strconv.Itoa(60 - i), "60", ""}, e.getMe(), "request %d", i)
	}
	require.Equal(t, rateLimitAnswer{429, "60", "0", "60", "60"}, e.getMe(), "61st request")
	// The budget does not trickle back: for the rest of the minute every request is refused,
	// and Retry-After counts down to the moment the burst leaves the window.
	for s := 1; s < 60; s++ {
		e.clock.Advance(time.Second)
		wait := strconv.Itoa(60 - s)
		require.Equal(t, rateLimitAnswer{429, "60", "0", wait, wait}, e.getMe(), "%d s after the burst", s)
	}
	e.clock.Advance(time.Second)
	require.Equal(t, rateLimitAnswer{200, "60", "59", "60", ""}, e.getMe(), "a minute after the burst")
}

func TestRateLimitHeadersFollowTheOldestRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRateLimit(5))
	start := e.clock.Now()
	at := func(d time.Duration) { e.clock.Advance(start.Add(d).Sub(e.clock.Now())) }
	for i, remaining := range []string{"4", "3", "2", "1", "0"} {
		at(time.Duration(i) * 10 * time.Second)
		// X-RateLimit-Reset: when the first request, at 0 s, leaves the window.
		require.Equal(t, rateLimitAnswer{200, "5", remaining, strconv.Itoa(60 - 10*i), ""}, e.getMe(), "request %d", i+1)
	}
	at(45 * time.Second)
	require.Equal(t, rateLimitAnswer{429, "5", "0", "15", "15"}, e.getMe(), "at 45 s")
	at(60*time.Second - time.Millisecond)
	require.Equal(t, rateLimitAnswer{429, "5", "0", "1", "1"}, e.getMe(), "1 ms before a minute")
	at(60 * time.Second)
	require.Equal(t, rateLimitAnswer{200, "5", "0", "10", ""}, e.getMe(), "at 60 s, the request at 10 s is the oldest")
}
