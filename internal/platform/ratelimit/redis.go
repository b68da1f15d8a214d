package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeyPrefix is the namespace of the Redis keys that a Redis limiter writes.
// Each key is a sorted set of admissions scored by their time.
const KeyPrefix = "shotflow:rl:window:"

// slidingWindowScript is one sliding-window check, atomic in Redis. Times are
// integer microseconds (exact in Lua's doubles; numbers go back to Redis
// through %.0f, since Lua's own formatting keeps only 14 digits).
//
// KEYS[1]: the sorted set of the key's admissions (member: unique per
// admission, score: its time, or the newest admission's time if the clock
// stepped back behind it, as in Memory). ARGV[1]: limit. ARGV[2]: period (µs).
// ARGV[3]: now (µs since the Unix epoch), or "" to use Redis's own clock.
// ARGV[4]: the member to add if the request is admitted.
// Returns {allowed (0|1), admissions in the window after the check, µs until
// the admission count next drops below limit (allowed: until the oldest
// admission leaves the window)}.
var slidingWindowScript = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local now
if ARGV[3] == "" then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[3])
end
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", string.format("%.0f", now - period))
local count = redis.call("ZCARD", KEYS[1])
local allowed = 0
if count < limit then
  local logged = now
  local newest = redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")[2]
  if newest ~= nil and tonumber(newest) > now then
    logged = tonumber(newest)
  end
  redis.call("ZADD", KEYS[1], string.format("%.0f", logged), ARGV[4])
  redis.call("PEXPIRE", KEYS[1], string.format("%.0f", math.ceil((logged + period - now) / 1000)))
  count = count + 1
  allowed = 1
end
-- With more than limit admissions in the window (the limit went down), the
-- count drops below limit once all but limit-1 of them have left.
local next = math.max(0, count - limit)
local leaves = tonumber(redis.call("ZRANGE", KEYS[1], next, next, "WITHSCORES")[2])
return {allowed, count, leaves + period - now}
`)

// Redis is a sliding-window Limiter whose admission logs live in Redis, so
// that several API processes share one budget per key. Each key expires once
// its newest admission has left the window.
type Redis struct{ redisSets }

// redisSets is what the Redis limiter and the Redis slots share: the client,
// their keys' prefix, the clock their scripts read, and members unique across
// processes for their sorted sets.
type redisSets struct {
	client *redis.Client
	prefix string
	clock  func() time.Time // nil: Redis's own clock
	// memberPrefix and seq make each sorted-set member unique across processes.
	memberPrefix string
	seq          atomic.Uint64
}

// newRedisSets returns sets under prefix in client's Redis, read at clock.
func newRedisSets(client *redis.Client, prefix string, clock func() time.Time) redisSets {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return redisSets{client: client, prefix: prefix, clock: clock, memberPrefix: hex.EncodeToString(b) + ":"}
}

// member returns a new member, unique across processes.
func (r *redisSets) member() string { return r.memberPrefix + strconv.FormatUint(r.seq.Add(1), 36) }

// now returns the time to pass to the scripts: "" to use Redis's clock, or the clock's, in µs.
func (r *redisSets) now() string {
	if r.clock == nil {
		return ""
	}
	return strconv.FormatInt(r.clock().UnixMicro(), 10)
}

var _ Limiter = (*Redis)(nil)

// NewRedis returns a limiter that keeps its state in client's Redis under
// KeyPrefix and reads the time from clock, or, when clock is nil, from Redis
// itself, so that every API process sees the same time.
func NewRedis(client *redis.Client, clock func() time.Time) *Redis {
	return &Redis{newRedisSets(client, KeyPrefix, clock)}
}

// Allow reports whether one more request for key is allowed under limit
// requests per period and, if so, counts it. It fails only when Redis does, or
// does not answer within CallTimeout.
func (r *Redis) Allow(ctx context.Context, key string, limit int, period time.Duration) (Result, error) {
	window, err := periodMicros(limit, period)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	v, err := slidingWindowScript.Run(ctx, r.client, []string{r.prefix + key}, limit, window, r.now(), r.member()).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if len(v) != 3 {
		return Result{}, fmt.Errorf("ratelimit: redis: unexpected script reply %v", v)
	}
	return outcome(v[0] == 1, limit, int(v[1]), v[2]), nil
}
