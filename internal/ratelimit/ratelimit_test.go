package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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

func TestMemoryBurstRefusalAndRetry(t *testing.T) {
	clk := newFakeClock()
	m := NewMemory(clk.Now)
	const key = "key-1"

	for i := 1; i <= 60; i++ {
		wantResult(t, "request", allow(t, m, key, 60, time.Minute), Result{
			Allowed:    true,
			Limit:      60,
			Remaining:  60 - i,
			ResetAfter: time.Duration(i) * time.Second,
		})
	}
	// The 61st request is refused: one request "costs" 1s at 60/min.
	refused := Result{Allowed: false, Limit: 60, Remaining: 0, RetryAfter: time.Second, ResetAfter: time.Minute}
	wantResult(t, "61st request", allow(t, m, key, 60, time.Minute), refused)
	// Refusals do not consume budget.
	wantResult(t, "62nd request", allow(t, m, key, 60, time.Minute), refused)

	clk.Advance(999 * time.Millisecond)
	wantResult(t, "after 999ms", allow(t, m, key, 60, time.Minute), Result{
		Limit: 60, RetryAfter: time.Millisecond, ResetAfter: time.Minute - 999*time.Millisecond,
	})

	clk.Advance(time.Millisecond)
	wantResult(t, "after 1s", allow(t, m, key, 60, time.Minute), Result{
		Allowed: true, Limit: 60, Remaining: 0, ResetAfter: time.Minute,
	})
	wantResult(t, "right after that", allow(t, m, key, 60, time.Minute), Result{
		Limit: 60, RetryAfter: time.Second, ResetAfter: time.Minute,
	})
}

func TestMemoryReplenishment(t *testing.T) {
	clk := newFakeClock()
	m := NewMemory(clk.Now)
	const key = "k"
	for range 60 {
		allow(t, m, key, 60, time.Minute)
	}

	// 30 s later, 30 requests are available again (29 after this one).
	clk.Advance(30 * time.Second)
	wantResult(t, "after 30s", allow(t, m, key, 60, time.Minute), Result{
		Allowed: true, Limit: 60, Remaining: 29, ResetAfter: 31 * time.Second,
	})
	for range 29 {
		if !allow(t, m, key, 60, time.Minute).Allowed {
			t.Fatal("request within the replenished budget refused")
		}
	}
	if allow(t, m, key, 60, time.Minute).Allowed {
		t.Fatal("request beyond the replenished budget allowed")
	}

	// A full period later the whole burst is available again.
	clk.Advance(time.Minute)
	for i := 1; i <= 60; i++ {
		res := allow(t, m, key, 60, time.Minute)
		if !res.Allowed || res.Remaining != 60-i {
			t.Fatalf("request %d after full replenishment: %+v", i, res)
		}
	}
	if allow(t, m, key, 60, time.Minute).Allowed {
		t.Fatal("61st request after full replenishment allowed")
	}

	// Steady rate: one request per second is always allowed.
	for i := range 120 {
		clk.Advance(time.Second)
		if res := allow(t, m, key, 60, time.Minute); !res.Allowed {
			t.Fatalf("steady request %d refused: %+v", i, res)
		}
	}
}

func TestMemoryIndependentKeys(t *testing.T) {
	m := NewMemory(newFakeClock().Now)
	for range 5 {
		allow(t, m, "a", 5, time.Minute)
	}
	if allow(t, m, "a", 5, time.Minute).Allowed {
		t.Fatal("6th request for a allowed")
	}
	for i := 1; i <= 5; i++ {
		if res := allow(t, m, "b", 5, time.Minute); !res.Allowed || res.Remaining != 5-i {
			t.Fatalf("request %d for b: %+v", i, res)
		}
	}
}

func TestMemoryDifferentLimitsPerKey(t *testing.T) {
	clk := newFakeClock()
	m := NewMemory(clk.Now)
	cases := []struct {
		key    string
		limit  int
		period time.Duration
		retry  time.Duration
	}{
		{"small", 2, time.Minute, 30 * time.Second},
		{"default", DefaultLimit, DefaultPeriod, time.Second},
		{"big", 1000, time.Minute, 60 * time.Millisecond},
		{"odd", 7, time.Minute, 8571428572 * time.Nanosecond}, // 60s/7 rounded up
		{"per-second", 10, time.Second, 100 * time.Millisecond},
	}
	for _, c := range cases {
		for i := 1; i <= c.limit; i++ {
			res := allow(t, m, c.key, c.limit, c.period)
			if !res.Allowed || res.Remaining != c.limit-i || res.Limit != c.limit {
				t.Fatalf("%s: request %d: %+v", c.key, i, res)
			}
		}
		res := allow(t, m, c.key, c.limit, c.period)
		if res.Allowed || res.Remaining != 0 || res.RetryAfter != c.retry {
			t.Fatalf("%s: request %d: got %+v, want refusal with RetryAfter %v", c.key, c.limit+1, res, c.retry)
		}
		if d := res.ResetAfter - c.period; d < 0 || d > time.Duration(c.limit) {
			t.Fatalf("%s: ResetAfter %v, want ≈ %v", c.key, res.ResetAfter, c.period)
		}
	}
	clk.Advance(30 * time.Second)
	if !allow(t, m, "small", 2, time.Minute).Allowed {
		t.Fatal("small: request 30s after refusal refused")
	}
}

func TestMemoryInvalidLimit(t *testing.T) {
	m := NewMemory(nil)
	for _, c := range []struct {
		limit  int
		period time.Duration
	}{{0, time.Minute}, {-1, time.Minute}, {10, 0}, {10, -time.Second}} {
		if _, err := m.Allow(context.Background(), "k", c.limit, c.period); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("Allow(limit %d, period %v): err %v, want ErrInvalidLimit", c.limit, c.period, err)
		}
	}
}

func TestMemoryConcurrency(t *testing.T) {
	m := NewMemory(newFakeClock().Now)
	var allowed, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 200 {
		wg.Go(func() {
			<-start
			res, err := m.Allow(context.Background(), "shared", 100, time.Minute)
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
}

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
	// 26 keys × 10 requests of burst; the 100 ms the clock moved replenish
	// nothing (one request per 6 s per key).
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
	allow(t, m, "long", 10, time.Hour) // TAT 6 min ahead: must survive
	if n := m.Len(); n != 1001 {
		t.Fatalf("Len = %d, want 1001", n)
	}

	// Keys whose budget is full are dropped by the next sweep, which runs on
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
	// 10 min of keys, one new key every 100 ms, each expiring 100 ms after it
	// was used: at most one sweep interval's worth (600) plus the long key.
	if n := m.Len(); n > 700 {
		t.Fatalf("Len = %d after a stream of distinct keys, want bounded", n)
	}
}

func TestMemoryNilClockUsesTimeNow(t *testing.T) {
	m := NewMemory(nil)
	res := allow(t, m, "k", 2, time.Hour)
	if !res.Allowed || res.Remaining != 1 || res.ResetAfter <= 0 || res.ResetAfter > 30*time.Minute {
		t.Fatalf("first request: %+v", res)
	}
}

func TestOpenEmptyURLIsMemory(t *testing.T) {
	l, closeFn, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.(*Memory); !ok {
		t.Fatalf("Open(\"\") = %T, want *Memory", l)
	}
	if err := closeFn(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, _, err := Open("not-a-url://x"); err == nil {
		t.Error("Open with a malformed URL succeeded")
	}
	start := time.Now()
	if _, _, err := Open("redis://127.0.0.1:1/0?max_retries=-1"); err == nil {
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

// testKeyPrefix returns a random key namespace for this test and deletes its
// Redis keys when the test ends.
func testKeyPrefix(t *testing.T, client *redis.Client) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	prefix := "test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, err := client.Keys(ctx, KeyPrefix+prefix+"*").Result()
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

func TestRedisBurstRefusalAndRetry(t *testing.T) {
	client := newTestRedis(t)
	key := testKeyPrefix(t, client) + "burst"
	r := NewRedis(client)
	const limit, period = 5, time.Second
	const emission = period / limit

	for i := 1; i <= limit; i++ {
		res := allow(t, r, key, limit, period)
		if !res.Allowed || res.Limit != limit || res.Remaining != limit-i || res.RetryAfter != 0 {
			t.Fatalf("request %d: %+v", i, res)
		}
		if res.ResetAfter <= time.Duration(i-1)*emission || res.ResetAfter > time.Duration(i)*emission {
			t.Fatalf("request %d: ResetAfter %v, want ≈ %v", i, res.ResetAfter, time.Duration(i)*emission)
		}
	}
	res := allow(t, r, key, limit, period)
	if res.Allowed || res.Remaining != 0 {
		t.Fatalf("request %d: %+v, want refusal", limit+1, res)
	}
	if res.RetryAfter <= 0 || res.RetryAfter > emission {
		t.Fatalf("RetryAfter %v, want in (0, %v]", res.RetryAfter, emission)
	}
	if res.ResetAfter <= period-emission || res.ResetAfter > period {
		t.Fatalf("ResetAfter %v, want ≈ %v", res.ResetAfter, period)
	}

	// The key lives under KeyPrefix and expires once the budget is full.
	ttl, err := client.PTTL(context.Background(), KeyPrefix+key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > period+time.Millisecond {
		t.Fatalf("PTTL of %s = %v, want in (0, %v]", KeyPrefix+key, ttl, period)
	}

	time.Sleep(res.RetryAfter + 5*time.Millisecond)
	if res := allow(t, r, key, limit, period); !res.Allowed || res.Remaining != 0 {
		t.Fatalf("request after RetryAfter: %+v, want allowed with Remaining 0", res)
	}
	if res := allow(t, r, key, limit, period); res.Allowed {
		t.Fatalf("request right after that: %+v, want refusal", res)
	}
}

func TestRedisSharedAcrossInstances(t *testing.T) {
	c1, c2 := newTestRedis(t), newTestRedis(t)
	key := testKeyPrefix(t, c1) + "shared"
	limiters := []Limiter{NewRedis(c1), NewRedis(c2)}
	allowed := 0
	for i := range 20 {
		if allow(t, limiters[i%2], key, 10, time.Minute).Allowed {
			allowed++
		}
	}
	if allowed != 10 {
		t.Fatalf("allowed %d of 20 requests across two limiters, want 10", allowed)
	}
	for i, l := range limiters {
		if res := allow(t, l, key, 10, time.Minute); res.Allowed || res.RetryAfter <= 0 || res.RetryAfter > 6*time.Second {
			t.Fatalf("limiter %d after shared budget spent: %+v", i, res)
		}
	}
}

func TestRedisIndependentKeysAndLimits(t *testing.T) {
	client := newTestRedis(t)
	prefix := testKeyPrefix(t, client)
	r := NewRedis(client)
	for _, c := range []struct {
		key   string
		limit int
	}{{"a", 3}, {"b", 7}, {"c", DefaultLimit}} {
		for i := 1; i <= c.limit; i++ {
			if res := allow(t, r, prefix+c.key, c.limit, time.Minute); !res.Allowed || res.Remaining != c.limit-i {
				t.Fatalf("%s: request %d: %+v", c.key, i, res)
			}
		}
		if res := allow(t, r, prefix+c.key, c.limit, time.Minute); res.Allowed {
			t.Fatalf("%s: request %d allowed", c.key, c.limit+1)
		}
	}
}

func TestRedisConcurrency(t *testing.T) {
	client := newTestRedis(t)
	key := testKeyPrefix(t, client) + "concurrent"
	r := NewRedis(client)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			res, err := r.Allow(context.Background(), key, 100, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if res.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 100 {
		t.Fatalf("allowed %d of 200 concurrent requests, want 100", allowed.Load())
	}
}

func TestRedisInvalidLimit(t *testing.T) {
	r := NewRedis(newTestRedis(t))
	if _, err := r.Allow(context.Background(), "k", 0, time.Minute); !errors.Is(err, ErrInvalidLimit) {
		t.Fatalf("err %v, want ErrInvalidLimit", err)
	}
}

func TestOpenRedis(t *testing.T) {
	l, closeFn, err := Open(testRedisURL())
	if err != nil {
		t.Fatalf("Open(%s): %v", testRedisURL(), err)
	}
	if _, ok := l.(*Redis); !ok {
		t.Fatalf("Open(redis URL) = %T, want *Redis", l)
	}
	key := testKeyPrefix(t, newTestRedis(t)) + "open"
	if res := allow(t, l, key, 1, time.Minute); !res.Allowed {
		t.Fatalf("first request: %+v", res)
	}
	if res := allow(t, l, key, 1, time.Minute); res.Allowed {
		t.Fatalf("second request: %+v", res)
	}
	if err := closeFn(); err != nil {
		t.Fatalf("close: %v", err)
	}
}
