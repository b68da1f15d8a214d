package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	mathrand "math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// fakeClock is a manually advanced clock, safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// store is one Limiter implementation under test.
type store struct {
	name string
	// open returns a new limiter of the store that reads the time from clock.
	// For Redis, every limiter opened in one test shares the test's keys, as
	// several API processes do; for Memory, each has its own state.
	open func(t *testing.T, clock func() time.Time) Limiter
}

// stores returns both implementations. The Redis one fails the test when
// Redis does not answer.
func stores() []store {
	return []store{
		{"memory", func(_ *testing.T, clock func() time.Time) Limiter { return NewMemory(clock) }},
		{"redis", openTestRedis},
	}
}

// forEachStore runs test against each store, with a fresh fake clock and limiter.
func forEachStore(t *testing.T, test func(t *testing.T, clk *fakeClock, l Limiter)) {
	for _, s := range stores() {
		t.Run(s.name, func(t *testing.T) {
			clk := newFakeClock()
			test(t, clk, s.open(t, clk.Now))
		})
	}
}

func allow(t *testing.T, l Limiter, key string, limit int, period time.Duration) Result {
	t.Helper()
	res, err := l.Allow(context.Background(), key, limit, period)
	if err != nil {
		t.Fatalf("Allow(%q, %d, %v): %v", key, limit, period, err)
	}
	return res
}

func wantResult(t *testing.T, step string, got, want Result) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %+v, want %+v", step, got, want)
	}
}

func admitted(remaining int, reset time.Duration) Result {
	return Result{Allowed: true, Limit: 60, Remaining: remaining, ResetAfter: reset}
}

func refused(retry time.Duration) Result {
	return Result{Limit: 60, RetryAfter: retry, ResetAfter: retry}
}

func TestBurstIsTheWholeMinutesBudget(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		for i := 1; i <= 60; i++ {
			wantResult(t, fmt.Sprintf("request %d", i), allow(t, l, "k", 60, time.Minute), admitted(60-i, time.Minute))
		}
		wantResult(t, "61st request", allow(t, l, "k", 60, time.Minute), refused(time.Minute))
		// Refusals do not consume budget, and the window does not refill one by one:
		// nothing is admitted until the burst leaves the window, a minute later.
		for s := 1; s < 60; s++ {
			clk.Advance(time.Second)
			wantResult(t, fmt.Sprintf("after %ds", s), allow(t, l, "k", 60, time.Minute), refused(time.Minute-time.Duration(s)*time.Second))
		}
		clk.Advance(time.Second - time.Microsecond)
		wantResult(t, "1µs before a minute", allow(t, l, "k", 60, time.Minute), refused(time.Microsecond))
		clk.Advance(time.Microsecond)
		wantResult(t, "a minute later", allow(t, l, "k", 60, time.Minute), admitted(59, time.Minute))
	})
}

func TestHeadersFollowTheOldestAdmission(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		// 5 per minute, one request every 10 s from t=0.
		steps := []struct {
			at                      time.Duration // since the start
			status                  int
			remaining, reset, retry string
		}{
			{0, 200, "4", "60", ""},
			{10 * time.Second, 200, "3", "50", ""},
			{20 * time.Second, 200, "2", "40", ""},
			{30 * time.Second, 200, "1", "30", ""},
			{40 * time.Second, 200, "0", "20", ""},
			{45 * time.Second, 429, "0", "15", "15"},
			{59*time.Second + 500*time.Millisecond, 429, "0", "1", "1"}, // 0.5 s rounds up
			{60 * time.Second, 200, "0", "10", ""},                      // t=0 left; t=10 is the oldest
			{60 * time.Second, 429, "0", "10", "10"},
			{70 * time.Second, 200, "0", "10", ""},
			{125 * time.Second, 200, "3", "5", ""}, // only t=70 is left in (65, 125]
		}
		start := clk.Now()
		for _, s := range steps {
			clk.Advance(start.Add(s.at).Sub(clk.Now()))
			res := allow(t, l, "k", 5, time.Minute)
			h := http.Header{}
			res.WriteHeaders(h)
			status := http.StatusOK
			if !res.Allowed {
				status = http.StatusTooManyRequests
			}
			got := [5]string{strconv.Itoa(status), h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset"), h.Get("Retry-After")}
			want := [5]string{strconv.Itoa(s.status), "5", s.remaining, s.reset, s.retry}
			if got != want {
				t.Fatalf("at %v: status, limit, remaining, reset, retry-after = %q, want %q", s.at, got, want)
			}
		}
	})
}

// oracle is a brute-force model of the sliding window: every admission ever
// made for one key, checked against the limit by counting.
type oracle struct {
	admissions []time.Time
}

// check returns the Result the limiter must give at now, and records the admission.
func (o *oracle) check(now time.Time, limit int, period time.Duration) Result {
	var window []time.Time
	for _, a := range o.admissions {
		if a.After(now.Add(-period)) {
			window = append(window, a)
		}
	}
	if len(window) >= limit {
		d := window[len(window)-limit].Add(period).Sub(now)
		return Result{Limit: limit, RetryAfter: d, ResetAfter: d}
	}
	o.admissions = append(o.admissions, now)
	window = append(window, now)
	return Result{Allowed: true, Limit: limit, Remaining: limit - len(window), ResetAfter: window[0].Add(period).Sub(now)}
}

// maxInAnyWindow returns the largest number of admissions in any window of one period.
func (o *oracle) maxInAnyWindow(period time.Duration) int {
	most := 0
	for i, end := range o.admissions { // the busiest window ends at an admission
		n := 0
		for _, a := range o.admissions[:i+1] {
			if a.After(end.Add(-period)) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// stream sends one request at each offset (from the start, ascending) and
// checks every Result against the oracle; it returns the oracle.
func stream(t *testing.T, clk *fakeClock, limiters []Limiter, limit int, offsets []time.Duration) *oracle {
	t.Helper()
	o := &oracle{}
	start := clk.Now()
	for i, at := range offsets {
		clk.Advance(start.Add(at).Sub(clk.Now()))
		got := allow(t, limiters[i%len(limiters)], "k", limit, time.Minute)
		wantResult(t, fmt.Sprintf("request %d at %v", i+1, at), got, o.check(clk.Now(), limit, time.Minute))
	}
	return o
}

// every returns the offsets of requests every step from from (included) to to (excluded).
func every(step, from, to time.Duration) []time.Duration {
	var out []time.Duration
	for at := from; at < to; at += step {
		out = append(out, at)
	}
	return out
}

func TestSteadyStreamNeverExceedsTheLimit(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		// Two requests a second for three minutes at 60 per minute: each minute the
		// first 30 seconds' requests are admitted and the rest refused.
		o := stream(t, clk, []Limiter{l}, 60, every(500*time.Millisecond, 0, 3*time.Minute))
		if n := o.maxInAnyWindow(time.Minute); n != 60 {
			t.Fatalf("at most %d admissions in a minute, want 60", n)
		}
		if n := len(o.admissions); n != 180 {
			t.Fatalf("%d admissions in 3 minutes, want 180", n)
		}
	})
}

func TestBurstThenSteadyNeverExceedsTheLimit(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		// A burst of 60, then one request a second for three minutes.
		offsets := make([]time.Duration, 60)
		offsets = append(offsets, every(time.Second, time.Second, 3*time.Minute)...)
		o := stream(t, clk, []Limiter{l}, 60, offsets)
		if n := o.maxInAnyWindow(time.Minute); n != 60 {
			t.Fatalf("at most %d admissions in a minute, want 60", n)
		}
		// Nothing more is admitted until the burst has left the window at 60 s;
		// from then on, one a second always is.
		if n := len(o.admissions); n != 60+120 {
			t.Fatalf("%d admissions, want 180", n)
		}
		if first := o.admissions[60].Sub(o.admissions[0]); first != time.Minute {
			t.Fatalf("first admission after the burst %v after it, want 1m", first)
		}
	})
}

func TestIrregularTrafficMatchesTheModel(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		rng := mathrand.New(mathrand.NewPCG(14, 5))
		var offsets []time.Duration
		var at time.Duration
		for len(offsets) < 600 {
			switch rng.IntN(4) {
			case 0: // a burst at one instant
				for range rng.IntN(8) {
					offsets = append(offsets, at)
				}
			case 1: // a pause
				at += time.Duration(rng.IntN(40_000_000)) * time.Microsecond
			default:
				at += time.Duration(rng.IntN(700_000)) * time.Microsecond
				offsets = append(offsets, at)
			}
		}
		o := stream(t, clk, []Limiter{l}, 10, offsets)
		if n := o.maxInAnyWindow(time.Minute); n != 10 {
			t.Fatalf("at most %d admissions in a minute, want 10", n)
		}
	})
}

func TestRetryAfterIsWhenTheNextRequestIsAdmitted(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		rng := mathrand.New(mathrand.NewPCG(5, 14))
		refusals := 0
		for refusals < 40 {
			clk.Advance(time.Duration(rng.IntN(3_000_000)) * time.Microsecond)
			res := allow(t, l, "k", 7, time.Minute)
			if res.Allowed {
				continue
			}
			refusals++
			// Exactly: refused 1µs before RetryAfter, admitted at it.
			clk.Advance(res.RetryAfter - time.Microsecond)
			if early := allow(t, l, "k", 7, time.Minute); early.Allowed || early.RetryAfter != time.Microsecond {
				t.Fatalf("1µs before RetryAfter %v: %+v, want a refusal for 1µs more", res.RetryAfter, early)
			}
			clk.Advance(time.Microsecond)
			if at := allow(t, l, "k", 7, time.Minute); !at.Allowed {
				t.Fatalf("at RetryAfter %v: %+v, want admitted", res.RetryAfter, at)
			}
		}
	})
}

func TestRetryAfterHeaderIsWhenTheNextRequestIsAdmitted(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		for _, gap := range []time.Duration{0, 1500 * time.Millisecond, 7*time.Second + 300*time.Millisecond} {
			allow(t, l, "k", 3, time.Minute)
			clk.Advance(gap)
			allow(t, l, "k", 3, time.Minute)
			allow(t, l, "k", 3, time.Minute)
			res := allow(t, l, "k", 3, time.Minute)
			h := http.Header{}
			res.WriteHeaders(h)
			retry, err := strconv.Atoi(h.Get("Retry-After"))
			if err != nil || res.Allowed {
				t.Fatalf("gap %v: %+v, Retry-After %q", gap, res, h.Get("Retry-After"))
			}
			clk.Advance(time.Duration(retry-1) * time.Second)
			if allow(t, l, "k", 3, time.Minute).Allowed {
				t.Fatalf("gap %v: admitted a second before Retry-After %d", gap, retry)
			}
			clk.Advance(time.Second)
			if !allow(t, l, "k", 3, time.Minute).Allowed {
				t.Fatalf("gap %v: refused at Retry-After %d", gap, retry)
			}
			clk.Advance(time.Hour)
		}
	})
}

func TestIndependentKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ *fakeClock, l Limiter) {
		for range 5 {
			allow(t, l, "a", 5, time.Minute)
		}
		if allow(t, l, "a", 5, time.Minute).Allowed {
			t.Fatal("6th request for a allowed")
		}
		for i := 1; i <= 5; i++ {
			if res := allow(t, l, "b", 5, time.Minute); !res.Allowed || res.Remaining != 5-i {
				t.Fatalf("request %d for b: %+v", i, res)
			}
		}
	})
}

func TestDifferentLimitsAndPeriods(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		cases := []struct {
			key    string
			limit  int
			period time.Duration
		}{
			{"small", 2, time.Minute},
			{"default", DefaultLimit, DefaultPeriod},
			{"big", 1000, time.Minute},
			{"odd", 7, 61*time.Second + 7*time.Microsecond},
			{"per-second", 10, time.Second},
			{"sub-µs period", 3, time.Second + time.Nanosecond}, // rounded up to whole µs
		}
		for _, c := range cases {
			period := c.period.Round(time.Microsecond)
			if period < c.period {
				period += time.Microsecond
			}
			for i := 1; i <= c.limit; i++ {
				res := allow(t, l, c.key, c.limit, c.period)
				if !res.Allowed || res.Remaining != c.limit-i || res.Limit != c.limit || res.ResetAfter != period {
					t.Fatalf("%s: request %d: %+v", c.key, i, res)
				}
			}
			res := allow(t, l, c.key, c.limit, c.period)
			want := Result{Limit: c.limit, RetryAfter: period, ResetAfter: period}
			wantResult(t, c.key+": one too many", res, want)
		}
		clk.Advance(time.Minute)
		if !allow(t, l, "small", 2, time.Minute).Allowed {
			t.Fatal("small: request a minute later refused")
		}
		if allow(t, l, "odd", 7, 61*time.Second+7*time.Microsecond).Allowed {
			t.Fatal("odd: request before its 61s period admitted")
		}
	})
}

func TestChangedLimitAppliesToTheSameWindow(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		o := &oracle{}
		check := func(step string, limit int) {
			t.Helper()
			wantResult(t, step, allow(t, l, "k", limit, time.Minute), o.check(clk.Now(), limit, time.Minute))
		}
		for i := range 10 { // 10 admissions, one every 2 s, under a limit of 20
			check(fmt.Sprintf("request %d under 20", i+1), 20)
			clk.Advance(2 * time.Second)
		}
		// Lowered to 4: refused until only 3 of the 10 are left in the window.
		check("first request under 4", 4)
		clk.Advance(45 * time.Second)
		check("45 s later under 4", 4)
		clk.Advance(3 * time.Second)
		check("48 s later under 4", 4)
		// Raised to 6: the admissions still in the window count.
		check("first request under 6", 6)
		check("second request under 6", 6)
		check("third request under 6", 6)
	})
}

func TestClockSteppingBackCountsFromTheNewestAdmission(t *testing.T) {
	forEachStore(t, func(t *testing.T, clk *fakeClock, l Limiter) {
		clk.Advance(10 * time.Second)
		allow(t, l, "k", 2, time.Minute)
		clk.Advance(-5 * time.Second)
		// Logged at the newest admission's time (10 s), 65 s from now.
		wantResult(t, "5 s back", allow(t, l, "k", 2, time.Minute),
			Result{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: 65 * time.Second})
		clk.Advance(65*time.Second - time.Microsecond)
		wantResult(t, "1µs before both leave", allow(t, l, "k", 2, time.Minute),
			Result{Limit: 2, RetryAfter: time.Microsecond, ResetAfter: time.Microsecond})
		clk.Advance(time.Microsecond)
		wantResult(t, "when both left", allow(t, l, "k", 2, time.Minute),
			Result{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: time.Minute})
	})
}

func TestInvalidLimit(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ *fakeClock, l Limiter) {
		for _, c := range []struct {
			limit  int
			period time.Duration
		}{{0, time.Minute}, {-1, time.Minute}, {10, 0}, {10, -time.Second}, {10, time.Microsecond - 1}} {
			if _, err := l.Allow(context.Background(), "k", c.limit, c.period); !errors.Is(err, ErrInvalidLimit) {
				t.Errorf("Allow(limit %d, period %v): err %v, want ErrInvalidLimit", c.limit, c.period, err)
			}
		}
	})
}

func TestConcurrentRequestsShareOneBudget(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ *fakeClock, l Limiter) {
		var allowed, refused atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 200 {
			wg.Go(func() {
				<-start
				res, err := l.Allow(context.Background(), "shared", 100, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Allowed {
					allowed.Add(1)
				} else {
					refused.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if allowed.Load() != 100 || refused.Load() != 100 {
			t.Fatalf("allowed %d, refused %d; want 100 and 100", allowed.Load(), refused.Load())
		}
	})
}

// ---- Memory ----

func TestMemoryConcurrentManyKeys(t *testing.T) {
	clk := newFakeClock()
	m := NewMemory(clk.Now)
	var wg sync.WaitGroup
	var allowed atomic.Int64
	for g := range 20 {
		wg.Go(func() {
			for i := range 50 {
				key := string(rune('a' + (g+i)%26))
				res, err := m.Allow(context.Background(), key, 10, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Allowed {
					allowed.Add(1)
				}
				if i%10 == 0 {
					clk.Advance(time.Millisecond)
					_ = m.Len()
				}
			}
		})
	}
	wg.Wait()
	// 26 keys × 10 requests; within the 100 ms the clock moved nothing leaves a window.
	if got := allowed.Load(); got != 260 {
		t.Fatalf("allowed %d, want 260", got)
	}
}

func TestMemoryEviction(t *testing.T) {
	clk := newFakeClock()
	m := NewMemory(clk.Now)
	for i := range 1000 {
		allow(t, m, "short-"+strconv.Itoa(i), 10, time.Second)
	}
	allow(t, m, "long", 10, time.Hour) // in its window for an hour: must survive
	if n := m.Len(); n != 1001 {
		t.Fatalf("Len = %d, want 1001", n)
	}

	// Keys whose window is empty are dropped by the next sweep, which runs on
	// the way through Allow once the sweep interval has passed.
	clk.Advance(defaultSweepInterval)
	allow(t, m, "trigger", 10, time.Second)
	if n := m.Len(); n != 2 {
		t.Fatalf("after sweep Len = %d, want 2 (long, trigger)", n)
	}
	// The surviving key kept its state.
	if res := allow(t, m, "long", 10, time.Hour); res.Remaining != 8 {
		t.Fatalf("long after sweep: %+v, want Remaining 8", res)
	}

	// No further sweep before the interval has passed again.
	for i := range 100 {
		allow(t, m, "again-"+strconv.Itoa(i), 10, time.Second)
	}
	clk.Advance(defaultSweepInterval / 2)
	allow(t, m, "trigger", 10, time.Second)
	if n := m.Len(); n != 102 {
		t.Fatalf("Len = %d before the next sweep is due, want 102", n)
	}
	clk.Advance(defaultSweepInterval / 2)
	allow(t, m, "trigger", 10, time.Second)
	if n := m.Len(); n != 2 {
		t.Fatalf("after second sweep Len = %d, want 2", n)
	}

	// Memory stays bounded under a steady stream of distinct keys.
	for i := range 10000 {
		clk.Advance(100 * time.Millisecond)
		allow(t, m, "stream-"+strconv.Itoa(i), 10, time.Second)
	}
	// 10 min of keys, one new key every 100 ms, each idle 1 s after it was
	// used: at most one sweep interval's worth (600) plus the long key.
	if n := m.Len(); n > 700 {
		t.Fatalf("Len = %d after a stream of distinct keys, want bounded", n)
	}
}

func TestMemoryLogHoldsAtMostLimitTimes(t *testing.T) {
	clk := newFakeClock()
	m := NewMemory(clk.Now)
	ringOf := func() int {
		s := &m.shards[maphash.String(m.seed, "k")%memoryShards]
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.logs["k"].ring)
	}
	for range 1000 {
		clk.Advance(100 * time.Millisecond)
		allow(t, m, "k", 50, time.Minute)
	}
	if n := ringOf(); n != 50 {
		t.Fatalf("ring of %d times at a limit of 50, want 50", n)
	}
	allow(t, m, "k", 3, time.Minute) // refused: the ring keeps the newest 3
	clk.Advance(time.Minute)
	allow(t, m, "k", 3, time.Minute)
	if n := ringOf(); n != 3 {
		t.Fatalf("ring of %d times after the limit went down to 3, want 3", n)
	}
}

func TestMemoryNilClockUsesTimeNow(t *testing.T) {
	m := NewMemory(nil)
	res := allow(t, m, "k", 2, time.Hour)
	if !res.Allowed || res.Remaining != 1 || res.ResetAfter <= 59*time.Minute || res.ResetAfter > time.Hour {
		t.Fatalf("first request: %+v", res)
	}
}

func TestOpenEmptyURLIsMemory(t *testing.T) {
	b, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Limiter.(*Memory); !ok {
		t.Fatalf("Open(\"\").Limiter = %T, want *Memory", b.Limiter)
	}
	if _, ok := b.Slots.(*MemorySlots); !ok {
		t.Fatalf("Open(\"\").Slots = %T, want *MemorySlots", b.Slots)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("not-a-url://x"); err == nil {
		t.Error("Open with a malformed URL succeeded")
	}
	start := time.Now()
	if _, err := Open("redis://127.0.0.1:1/0?max_retries=-1"); err == nil {
		t.Error("Open with nothing listening succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open with nothing listening took %v", d)
	}
}

// ---- Redis (needs a real Redis: TEST_REDIS_URL, default redis://127.0.0.1:6379/15) ----

func testRedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/15"
}

// newTestRedis returns a client for the test Redis, failing the test if it
// does not answer.
func newTestRedis(t *testing.T) *redis.Client {
	t.Helper()
	url := testRedisURL()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("TEST_REDIS_URL %q: %v", url, err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s does not answer (%v): start redis-server or set TEST_REDIS_URL", url, err)
	}
	return client
}

// testPrefixes remembers each test's Redis key namespaces, so that every
// limiter or slots a test opens shares them.
var testPrefixes sync.Map // testNamespace → string

// testNamespace is one test's key namespace under one of the package's prefixes.
type testNamespace struct {
	t    *testing.T
	root string
}

// testKeyPrefix returns the random Redis key namespace of this test's limiters
// (under KeyPrefix) and deletes its keys when the test ends.
func testKeyPrefix(t *testing.T, client *redis.Client) string {
	t.Helper()
	return testPrefix(t, client, KeyPrefix)
}

// testSlotKeyPrefix returns the random Redis key namespace of this test's
// slots (under SlotKeyPrefix) and deletes its keys when the test ends.
func testSlotKeyPrefix(t *testing.T, client *redis.Client) string {
	t.Helper()
	return testPrefix(t, client, SlotKeyPrefix)
}

// testPrefix returns the random Redis key namespace of this test under root
// and deletes its keys when the test ends.
func testPrefix(t *testing.T, client *redis.Client, root string) string {
	t.Helper()
	ns := testNamespace{t, root}
	if p, ok := testPrefixes.Load(ns); ok {
		return p.(string)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	prefix := root + "test:" + hex.EncodeToString(b) + ":"
	testPrefixes.Store(ns, prefix)
	t.Cleanup(func() {
		testPrefixes.Delete(ns)
		ctx := context.Background()
		keys, err := client.Keys(ctx, prefix+"*").Result()
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		if len(keys) > 0 {
			if err := client.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return prefix
}

// openTestRedis returns a Redis limiter with its own client, in the test's key namespace.
func openTestRedis(t *testing.T, clock func() time.Time) Limiter {
	client := newTestRedis(t)
	r := NewRedis(client, clock)
	r.prefix = testKeyPrefix(t, client)
	return r
}

func TestRedisInstancesShareOneBudget(t *testing.T) {
	clk := newFakeClock()
	limiters := []Limiter{openTestRedis(t, clk.Now), openTestRedis(t, clk.Now), openTestRedis(t, clk.Now)}
	// Three API processes take turns answering the same key's steady stream.
	o := stream(t, clk, limiters, 60, every(250*time.Millisecond, 0, 3*time.Minute))
	if n := o.maxInAnyWindow(time.Minute); n != 60 {
		t.Fatalf("at most %d admissions in a minute across three limiters, want 60", n)
	}
	if n := len(o.admissions); n != 180 {
		t.Fatalf("%d admissions in 3 minutes, want 180", n)
	}
}

func TestRedisKeyHoldsTheWindowAndExpires(t *testing.T) {
	clk := newFakeClock()
	client := newTestRedis(t)
	r := NewRedis(client, clk.Now)
	r.prefix = testKeyPrefix(t, client)
	ctx := context.Background()
	card := func() int64 {
		t.Helper()
		n, err := client.ZCard(ctx, r.prefix+"k").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 5 {
		allow(t, r, "k", 5, time.Minute)
		clk.Advance(time.Second)
	}
	allow(t, r, "k", 5, time.Minute) // refused: not logged
	allow(t, r, "k", 2, time.Minute) // refused under a lower limit: the 5 still count
	if n := card(); n != 5 {
		t.Fatalf("ZCARD = %d, want 5", n)
	}
	clk.Advance(57 * time.Second) // t=62 s: the admissions at 0, 1 and 2 s left the window (2, 62]
	allow(t, r, "k", 5, time.Minute)
	if n := card(); n != 3 {
		t.Fatalf("ZCARD = %d after three left and one came, want 3", n)
	}
	// The key expires (in Redis's time) a period after its newest admission.
	ttl, err := client.PTTL(ctx, r.prefix+"k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 59*time.Second || ttl > time.Minute {
		t.Fatalf("PTTL = %v right after an admission, want the period", ttl)
	}
}

func TestRedisServerClock(t *testing.T) {
	client := newTestRedis(t)
	r := NewRedis(client, nil)
	r.prefix = testKeyPrefix(t, client)
	for i := 1; i <= 2; i++ {
		if res := allow(t, r, "k", 2, time.Hour); !res.Allowed || res.Remaining != 2-i || res.ResetAfter <= 59*time.Minute || res.ResetAfter > time.Hour {
			t.Fatalf("request %d: %+v", i, res)
		}
	}
	if res := allow(t, r, "k", 2, time.Hour); res.Allowed || res.RetryAfter <= 59*time.Minute || res.RetryAfter > time.Hour {
		t.Fatalf("third request: %+v, want a refusal for about an hour", res)
	}
}

func TestOpenRedis(t *testing.T) {
	b, err := Open(testRedisURL())
	if err != nil {
		t.Fatalf("Open(%s): %v", testRedisURL(), err)
	}
	l := b.Limiter
	fl, ok := l.(*FallbackLimiter)
	if !ok {
		t.Fatalf("Open(redis URL).Limiter = %T, want *FallbackLimiter", l)
	}
	r, ok := fl.shared.(*Redis)
	if _, local := fl.local.(*Memory); !ok || !local {
		t.Fatalf("Open(redis URL).Limiter falls back from %T to %T, want from *Redis to *Memory", fl.shared, fl.local)
	}
	if r.clock != nil || r.prefix != KeyPrefix {
		t.Fatalf("Open(redis URL): clock set %v, prefix %q; want Redis's clock under %q", r.clock != nil, r.prefix, KeyPrefix)
	}
	fs, ok := b.Slots.(*FallbackSlots)
	if !ok {
		t.Fatalf("Open(redis URL).Slots = %T, want *FallbackSlots", b.Slots)
	}
	s, ok := fs.shared.(*RedisSlots)
	if _, local := fs.local.(*MemorySlots); !ok || !local || fs.outage != fl.outage {
		t.Fatalf("Open(redis URL).Slots fall back from %T to %T (outage shared with the limiter: %v), want from *RedisSlots to *MemorySlots, shared",
			fs.shared, fs.local, fs.outage == fl.outage)
	}
	if s.clock != nil || s.prefix != SlotKeyPrefix || s.client != r.client {
		t.Fatalf("Open(redis URL) slots: clock set %v, prefix %q, own client %v; want Redis's clock under %q on the limiter's client",
			s.clock != nil, s.prefix, s.client != r.client, SlotKeyPrefix)
	}
	key := testKeyPrefix(t, newTestRedis(t))[len(KeyPrefix):] + "open"
	if res := allow(t, l, key, 1, time.Minute); !res.Allowed {
		t.Fatalf("first request: %+v", res)
	}
	if res := allow(t, l, key, 1, time.Minute); res.Allowed {
		t.Fatalf("second request: %+v", res)
	}
	slotKey := testSlotKeyPrefix(t, newTestRedis(t))[len(SlotKeyPrefix):] + "open"
	slot := acquire(t, b.Slots, slotKey, 1, time.Minute)
	if _, ok := tryAcquire(t, b.Slots, slotKey, 1, time.Minute); ok {
		t.Fatal("second slot of a limit of 1 taken")
	}
	if err := slot.Release(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := r.client.Ping(context.Background()).Err(); err == nil {
		t.Fatal("the client still answers after Close")
	}
}

// failingLimiter is a limiter whose store is down.
type failingLimiter struct{}

func (failingLimiter) Allow(context.Context, string, int, time.Duration) (Result, error) {
	return Result{}, errors.New("store down")
}

func TestAdmitWritesHeadersRefusesOverTheLimitAndFailsOpen(t *testing.T) {
	t.Parallel()
	l := NewMemory(nil)
	h := http.Header{}
	for i := range 2 {
		ok, err := Admit(context.Background(), l, h, "k", 2)
		if !ok || err != nil {
			t.Fatalf("request %d: admitted %v, %v", i+1, ok, err)
		}
	}
	if h.Get("X-RateLimit-Limit") != "2" || h.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("headers after 2 of 2: %v", h)
	}
	ok, err := Admit(context.Background(), l, h, "k", 2)
	if ok || err != nil || h.Get("Retry-After") == "" {
		t.Fatalf("third request: admitted %v, %v, headers %v", ok, err, h)
	}
	down := http.Header{}
	ok, err = Admit(context.Background(), failingLimiter{}, down, "k", 2)
	if !ok || err == nil || len(down) != 0 {
		t.Fatalf("store down: admitted %v, %v, headers %v; want admitted, the error, no headers", ok, err, down)
	}
}
