package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeyPrefix is the namespace of the Redis keys that a Redis limiter writes.
const KeyPrefix = "shotflow:rl:"

// gcraScript is one GCRA step, atomic in Redis. All times are integer
// microseconds (exact in Lua's doubles), and "now" is Redis's own clock, so
// every API process sees the same time.
//
// KEYS[1]: the key holding the TAT. ARGV[1]: emission interval (µs).
// ARGV[2]: burst tolerance, emission interval × limit (µs).
// Returns {allowed (0|1), diff (µs; < 0: too early by -diff), reset after (µs)}.
var gcraScript = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local emission = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call("GET", KEYS[1]) or "")
if tat == nil or tat < now then
  tat = now
end
local new_tat = tat + emission
local diff = now - (new_tat - tolerance)
if diff < 0 then
  return {0, diff, tat - now}
end
local ttl_ms = math.ceil((new_tat - now) / 1000)
redis.call("SET", KEYS[1], string.format("%.0f", new_tat), "PX", string.format("%.0f", ttl_ms))
return {1, diff, new_tat - now}
`)

// Redis is a GCRA Limiter whose state lives in Redis, so that several API
// processes share one budget per key. Each key expires once its budget is full.
type Redis struct {
	client *redis.Client
	prefix string
}

var _ Limiter = (*Redis)(nil)

// NewRedis returns a limiter that keeps its state in client's Redis under KeyPrefix.
func NewRedis(client *redis.Client) *Redis {
	return &Redis{client: client, prefix: KeyPrefix}
}

// Allow reports whether one more request for key is allowed under limit
// requests per period and, if so, counts it. It fails only when Redis does.
func (r *Redis) Allow(ctx context.Context, key string, limit int, period time.Duration) (Result, error) {
	t, err := emissionInterval(limit, period)
	if err != nil {
		return Result{}, err
	}
	emission := int64((t + time.Microsecond - 1) / time.Microsecond) // µs, rounded up
	tolerance := emission * int64(limit)
	v, err := gcraScript.Run(ctx, r.client, []string{r.prefix + key}, emission, tolerance).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if len(v) != 3 {
		return Result{}, fmt.Errorf("ratelimit: redis: unexpected script reply %v", v)
	}
	allowed, diff, reset := v[0] == 1, v[1], v[2]
	res := Result{
		Allowed:    allowed,
		Limit:      limit,
		ResetAfter: time.Duration(reset) * time.Microsecond,
	}
	if allowed {
		res.Remaining = int(min(diff/emission, int64(limit-1)))
	} else {
		res.RetryAfter = time.Duration(-diff) * time.Microsecond
	}
	return res, nil
}
