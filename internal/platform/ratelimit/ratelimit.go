// Package ratelimit limits requests per API key with an exact sliding window:
// a key with a limit of N requests per period has a request admitted if and
// only if fewer than N of its requests were admitted in the period that ends
// now, (now-period, now]. So at most N requests succeed in any window of one
// period, wherever that window starts, and a refused request does not count.
//
// Each key keeps a log of its admission times in the current window, never
// more than N of them (more only after its limit went down, until the
// admissions made under the higher limit leave the window). Two implementations share these semantics exactly:
// Memory keeps the logs in the process, Redis keeps them in Redis so that
// several API processes share one budget per key. Both work in whole
// microseconds.
//
// Slots caps how many requests of a key are open at once rather than how many start per period:
// MemorySlots and RedisSlots hold leased slots (see Slots). Open returns a Backend with both the
// limiter and the slots, in the process or in one Redis.
//
// Keys end up in memory or in Redis key names, so pass a stable, non-secret
// identifier for the API key (its ID or a hash of it), not the secret itself.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLimit is the default number of requests an API key may make per DefaultPeriod.
const DefaultLimit = 60

// DefaultPeriod is the default period over which DefaultLimit applies.
const DefaultPeriod = time.Minute

// ErrInvalidLimit is returned by Allow when limit is not positive or period is shorter than a microsecond.
var ErrInvalidLimit = errors.New("ratelimit: limit must be positive and period at least 1µs")

// Result is the outcome of one rate-limit check.
type Result struct {
	// Allowed reports whether this request may proceed; if so it has been counted.
	Allowed bool
	// Limit is the number of requests allowed per period.
	Limit int
	// Remaining is how many more requests would be admitted right now: Limit minus the
	// admissions in the window, this one included (0 on a refusal).
	Remaining int
	// RetryAfter is, on a refusal, how long until a request would be admitted (> 0); 0 when Allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the oldest admission in the window leaves it, which is when
	// Remaining next grows. On a refusal it equals RetryAfter.
	ResetAfter time.Duration
}

// WriteHeaders sets the answer's X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset
// (whole seconds, rounded up, until Remaining next grows) and, when the request is refused,
// Retry-After (whole seconds, rounded up, until a request would be admitted; at least 1).
func (r Result) WriteHeaders(h http.Header) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(r.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(r.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(r.ResetAfter)))
	if !r.Allowed {
		h.Set("Retry-After", strconv.Itoa(max(1, ceilSeconds(r.RetryAfter))))
	}
}

// ceilSeconds returns d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// Limiter decides whether one more request for key is allowed under limit requests per period.
type Limiter interface {
	Allow(ctx context.Context, key string, limit int, period time.Duration) (Result, error)
}

// Admit counts one request of key against limit requests per DefaultPeriod and writes the
// answer's rate-limit headers (Result.WriteHeaders) to h. It reports false only when the limit is
// exceeded. A limiter that fails (its store down) returns its error for the caller to log: with an
// answer all the same (a FallbackLimiter's, from the process's own limiter), that answer decides;
// without one, the request is admitted, so the store cannot take the API down with it.
func Admit(ctx context.Context, l Limiter, h http.Header, key string, limit int) (bool, error) {
	res, err := l.Allow(ctx, key, limit, DefaultPeriod)
	if err != nil && res.Limit == 0 {
		return true, err
	}
	res.WriteHeaders(h)
	return res.Allowed, err
}

// openPingTimeout bounds the PING that Open sends to check that Redis answers.
const openPingTimeout = 3 * time.Second

// CallTimeout bounds each call of a request to Redis (a rate-limit check, a slot's acquisition or
// extension): a Redis that hangs, rather than refuses connections, then costs a request this long
// and the request is admitted with the error, instead of waiting out the client's dial and read
// timeouts and their retries (seconds) on every request. A healthy Redis answers in about a
// millisecond. The bound holds for the reads and writes of a client that lets a call's deadline
// bound them (redis.Options.ContextTimeoutEnabled, which Open sets); otherwise only for waits on
// its pool and dials.
const CallTimeout = 500 * time.Millisecond

// Backend is one process's rate limiter and concurrency slots, both in the process or both in
// one Redis, on one connection pool.
type Backend struct {
	Limiter Limiter
	Slots   Slots
	client  *redis.Client // nil in memory
}

// Close releases the backend's resources (the Redis connection pool).
func (b *Backend) Close() error {
	if b.client == nil {
		return nil
	}
	return b.client.Close()
}

// Open returns a Memory limiter and MemorySlots when redisURL is empty, and otherwise a Redis
// limiter and RedisSlots sharing one client of redisURL (checked with a PING) that read the time
// from Redis, each behind a fallback to the process's own (FallbackLimiter, FallbackSlots) for
// while Redis fails. The client lets each call's deadline bound its reads and writes, so that
// CallTimeout holds.
func Open(redisURL string) (*Backend, error) {
	if redisURL == "" {
		return &Backend{Limiter: NewMemory(nil), Slots: NewMemorySlots(nil)}, nil
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: parse redis URL: %w", err)
	}
	opts.ContextTimeoutEnabled = true
	client := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), openPingTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("ratelimit: ping redis at %s: %w", opts.Addr, err)
	}
	down := newOutage(nil)
	return &Backend{
		Limiter: &FallbackLimiter{shared: NewRedis(client, nil), local: NewMemory(nil), outage: down},
		Slots:   &FallbackSlots{shared: NewRedisSlots(client, nil), local: NewMemorySlots(nil), outage: down},
		client:  client,
	}, nil
}

// periodMicros returns period in whole microseconds, rounded up so that the
// window is never shorter than asked, or ErrInvalidLimit.
func periodMicros(limit int, period time.Duration) (int64, error) {
	if limit <= 0 || period < time.Microsecond {
		return 0, ErrInvalidLimit
	}
	return int64((period + time.Microsecond - 1) / time.Microsecond), nil
}

// outcome builds the Result of a check that left count admissions in the
// window (this one included when allowed), whose count next drops below limit
// (when allowed: whose oldest admission leaves the window) after untilGrows
// microseconds.
func outcome(allowed bool, limit, count int, untilGrows int64) Result {
	d := time.Duration(untilGrows) * time.Microsecond
	res := Result{Allowed: allowed, Limit: limit, Remaining: max(0, limit-count), ResetAfter: d}
	if !allowed {
		res.RetryAfter = d
	}
	return res
}
