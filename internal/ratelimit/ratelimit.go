// Package ratelimit limits requests per API key with the generic cell rate
// algorithm (GCRA): a key may make limit requests per period, with bursts of
// up to limit requests, and its budget refills continuously (one request
// every period/limit).
//
// Two implementations share the same semantics: Memory keeps state in the
// process, Redis keeps it in Redis so that several API processes share one
// budget per key. Open picks one from a Redis URL.
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

// ErrInvalidLimit is returned by Allow when limit or period is not positive.
var ErrInvalidLimit = errors.New("ratelimit: limit and period must be positive")

// Result is the outcome of one rate-limit check.
type Result struct {
	Allowed    bool          // whether this request may proceed (it has been counted)
	Limit      int           // requests per period
	Remaining  int           // requests still allowed right now (>= 0)
	RetryAfter time.Duration // > 0 only when !Allowed: wait this long before the next request is allowed
	ResetAfter time.Duration // time until the bucket is fully replenished (Remaining == Limit)
}

// WriteHeaders sets the answer's X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset
// (seconds until the budget is whole again) and, when the request is refused, Retry-After (whole
// seconds, at least 1).
func (r Result) WriteHeaders(h http.Header) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(r.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(r.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(r.ResetAfter)))
	if !r.Allowed {
		h.Set("Retry-After", strconv.Itoa(max(1, ceilSeconds(r.RetryAfter))))
	}
}

func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// Limiter decides whether one more request for key is allowed under limit requests per period.
type Limiter interface {
	Allow(ctx context.Context, key string, limit int, period time.Duration) (Result, error)
}

// openPingTimeout bounds the PING that Open sends to check that Redis answers.
const openPingTimeout = 3 * time.Second

// Open returns a Memory limiter when redisURL is empty, and otherwise a Redis
// limiter connected to redisURL (checked with a PING), with a function that
// releases its resources.
func Open(redisURL string) (Limiter, func() error, error) {
	if redisURL == "" {
		return NewMemory(nil), func() error { return nil }, nil
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("ratelimit: parse redis URL: %w", err)
	}
	client := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), openPingTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("ratelimit: ping redis at %s: %w", opts.Addr, err)
	}
	return NewRedis(client), client.Close, nil
}

// emissionInterval returns the time one request "costs" under limit requests
// per period (period/limit rounded up to the nanosecond), or ErrInvalidLimit.
func emissionInterval(limit int, period time.Duration) (time.Duration, error) {
	if limit <= 0 || period <= 0 {
		return 0, ErrInvalidLimit
	}
	l := time.Duration(limit)
	t := period / l
	if period%l != 0 {
		t++
	}
	return t, nil
}
