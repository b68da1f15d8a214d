package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlotKeyPrefix is the namespace of the Redis keys that RedisSlots writes. Each key is a sorted
// set of the key's held slots scored by their lease expiry.
const SlotKeyPrefix = "shotflow:rl:slots:"

// Scripts of RedisSlots, atomic in Redis. As in slidingWindowScript, times are integer
// microseconds, ARGV "now" is "" to use Redis's own clock, and numbers go back to Redis through
// %.0f. A slot whose expiry is at or before now has ended. After a change, the key expires (in
// Redis's time) when the longest lease in it ends.
const slotsScriptHead = `
if redis.replicate_commands then redis.replicate_commands() end
local now
if ARGV[1] == "" then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
local function expire_with_longest_lease()
  local last = tonumber(redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")[2])
  redis.call("PEXPIRE", KEYS[1], string.format("%.0f", math.max(1, math.ceil((last - now) / 1000))))
end
`

// acquireSlotScript takes a slot. KEYS[1]: the key's sorted set. ARGV[1]: now (µs) or "".
// ARGV[2]: limit. ARGV[3]: lease (µs). ARGV[4]: the slot's member, unique across processes.
// Returns 1 when the slot is taken, 0 when limit unexpired slots are held.
var acquireSlotScript = redis.NewScript(slotsScriptHead + `
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", string.format("%.0f", now))
if redis.call("ZCARD", KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call("ZADD", KEYS[1], string.format("%.0f", now + tonumber(ARGV[3])), ARGV[4])
expire_with_longest_lease()
return 1
`)

// extendSlotScript renews a slot's lease. KEYS[1]: the key's sorted set. ARGV[1]: now (µs) or
// "". ARGV[2]: lease (µs). ARGV[3]: the slot's member. Returns 1 when the slot was held and is
// renewed, 0 when it is not held (released, or its lease ended: then it is removed).
var extendSlotScript = redis.NewScript(slotsScriptHead + `
local expiry = redis.call("ZSCORE", KEYS[1], ARGV[3])
if not expiry then
  return 0
end
if tonumber(expiry) <= now then
  redis.call("ZREM", KEYS[1], ARGV[3])
  return 0
end
redis.call("ZADD", KEYS[1], "XX", string.format("%.0f", now + tonumber(ARGV[2])), ARGV[3])
expire_with_longest_lease()
return 1
`)

// RedisSlots is a Slots whose held slots live in Redis, so that a key's cap holds across every
// API process. Each key is one sorted set (under SlotKeyPrefix) whose members are the held slots
// and whose scores are their lease expiries; the set expires when its longest lease ends, and
// Redis drops it when its last slot is released.
type RedisSlots struct{ redisSets }

var _ Slots = (*RedisSlots)(nil)

// NewRedisSlots returns slots kept in client's Redis under SlotKeyPrefix that read the time from
// clock, or, when clock is nil, from Redis itself, so that every API process sees the same time.
func NewRedisSlots(client *redis.Client, clock func() time.Time) *RedisSlots {
	return &RedisSlots{newRedisSets(client, SlotKeyPrefix, clock)}
}

// Acquire takes one of limit slots of key for lease (Slots.Acquire); when Redis fails, or does not
// answer within CallTimeout, it admits with a Slot that holds nothing and returns the error.
func (r *RedisSlots) Acquire(ctx context.Context, key string, limit int, lease time.Duration) (*Slot, bool, error) {
	micros, err := leaseMicros(limit, lease)
	if err != nil {
		return &Slot{}, true, err
	}
	id := r.member()
	callCtx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	taken, err := acquireSlotScript.Run(callCtx, r.client, []string{r.prefix + key}, r.now(), limit, micros, id).Int64()
	if err != nil {
		// Redis may have taken the slot before its reply was lost (the deadline ended, the
		// connection broke, the request was cancelled): the Slot returned holds nothing, so its
		// request never releases it, and it is given back here, on a context of its own. If Redis
		// does not take that either, the slot is freed when its lease ends.
		cleanupCtx, cancelCleanup := context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
		defer cancelCleanup()
		_ = r.release(cleanupCtx, key, id)
		return &Slot{}, true, fmt.Errorf("ratelimit: redis slots: %w", err)
	}
	if taken != 1 {
		return nil, false, nil
	}
	return &Slot{store: r, key: key, id: id, lease: micros}, true, nil
}

func (r *RedisSlots) release(ctx context.Context, key, id string) error {
	if err := r.client.ZRem(ctx, r.prefix+key, id).Err(); err != nil {
		return fmt.Errorf("ratelimit: redis slots: release: %w", err)
	}
	return nil
}

func (r *RedisSlots) extend(ctx context.Context, key, id string, lease int64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	held, err := extendSlotScript.Run(ctx, r.client, []string{r.prefix + key}, r.now(), lease, id).Int64()
	if err != nil {
		return false, fmt.Errorf("ratelimit: redis slots: extend: %w", err)
	}
	return held == 1, nil
}
