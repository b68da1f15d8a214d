package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// countingRedisCalls is a go-redis hook that counts the scripts the client sends (the checks and
// acquisitions; not a connection's own set-up commands).
type countingRedisCalls struct {
	mu sync.Mutex
	n  int
}

func (c *countingRedisCalls) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *countingRedisCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *countingRedisCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (c *countingRedisCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// fallbackOn builds, as Open does, the limiter and slots of client behind their fallback, on clock.
func fallbackOn(client *redis.Client, clock func() time.Time) (*FallbackLimiter, *FallbackSlots) {
	down := newOutage(clock)
	return &FallbackLimiter{shared: NewRedis(client, nil), local: NewMemory(clock), outage: down},
		&FallbackSlots{shared: NewRedisSlots(client, nil), local: NewMemorySlots(clock), outage: down}
}

// While Redis hangs, a process's requests are limited by its own limiter and slots (as without
// REDIS_URL) instead of admitted without any limit, and only the first call of each OutageHold
// waits on Redis (CallTimeout): the requests after it do not ask Redis at all. Once the hold has
// passed, the next request asks Redis again.
func TestAFailingRedisLeavesEachProcessItsOwnLimits(t *testing.T) {
	opts := &redis.Options{Addr: hangingRedis(t), DialTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		MaxRetries: -1, ContextTimeoutEnabled: true}
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	calls := &countingRedisCalls{}
	client.AddHook(calls)
	clock := newFakeClock()
	limiter, slots := fallbackOn(client, clock.Now)
	ctx := context.Background()

	var admitted []bool
	var errs []error
	returnsSoon(t, "three requests", func() {
		for range 3 {
			ok, err := Admit(ctx, limiter, http.Header{}, "k", 2)
			admitted, errs = append(admitted, ok), append(errs, err)
		}
	})
	if admitted[0] != true || admitted[1] != true || admitted[2] != false {
		t.Errorf("three requests at a limit of 2 with Redis hanging: admitted %v; want the third refused by the process's own limit", admitted)
	}
	if errs[0] == nil || errs[1] != nil || errs[2] != nil {
		t.Errorf("errors %v; want the first call's alone (Redis is not asked again within the hold)", errs)
	}
	if n := calls.calls(); n != 1 {
		t.Errorf("Redis was asked %d times; want once", n)
	}
	returnsSoon(t, "slots", func() {
		first, ok, err := slots.Acquire(ctx, "k", 1, time.Minute)
		if !ok || err != nil || first == nil {
			t.Errorf("a slot while Redis is left aside: %v, %v, %v; want one of the process's own", first, ok, err)
		}
		if _, ok, _ := slots.Acquire(ctx, "k", 1, time.Minute); ok {
			t.Error("a second slot at a limit of 1 was taken while Redis is left aside")
		}
		if err := first.Release(); err != nil {
			t.Error(err)
		}
		if _, ok, err := slots.Acquire(ctx, "k", 1, time.Minute); !ok || err != nil {
			t.Errorf("a slot after the first was released: %v, %v", ok, err)
		}
	})
	if n := calls.calls(); n != 1 {
		t.Errorf("Redis was asked %d times (the slots share the limiter's outage); want once", n)
	}

	clock.Advance(OutageHold)
	returnsSoon(t, "after the hold", func() {
		if _, err := limiter.Allow(ctx, "k", 2, time.Minute); err == nil {
			t.Error("the first request after the hold did not ask Redis")
		}
	})
	if n := calls.calls(); n != 2 {
		t.Errorf("Redis was asked %d times after the hold; want a second time", n)
	}
}

// A Redis that answers again is used again once the hold has passed: the keys' shared counts
// decide, not the process's own.
func TestRedisIsUsedAgainAfterTheHold(t *testing.T) {
	rdb := newTestRedis(t)
	key := testKeyPrefix(t, rdb)[len(KeyPrefix):] + "back"
	clock := newFakeClock()
	limiter, slots := fallbackOn(rdb, clock.Now)
	limiter.outage.failed() // Redis failed a moment ago
	if _, err := limiter.Allow(context.Background(), key, 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.ZCard(context.Background(), KeyPrefix+key).Result(); err != nil || n != 0 {
		t.Fatalf("within the hold the admission went to Redis: %d, %v", n, err)
	}
	clock.Advance(OutageHold)
	if _, err := limiter.Allow(context.Background(), key, 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.ZCard(context.Background(), KeyPrefix+key).Result(); err != nil || n != 1 {
		t.Fatalf("after the hold the admission is not in Redis: %d, %v", n, err)
	}
	slotKey := testSlotKeyPrefix(t, rdb)[len(SlotKeyPrefix):] + "back"
	slot, ok, err := slots.Acquire(context.Background(), slotKey, 1, time.Minute)
	if !ok || err != nil {
		t.Fatalf("a slot after the hold: %v, %v", ok, err)
	}
	if n, err := rdb.ZCard(context.Background(), SlotKeyPrefix+slotKey).Result(); err != nil || n != 1 {
		t.Fatalf("after the hold the slot is not in Redis: %d, %v", n, err)
	}
	if err := slot.Release(); err != nil {
		t.Fatal(err)
	}
}

// A request that ends (its client gone) while Redis answers says nothing of Redis: it does not
// leave Redis aside for the other requests. Invalid arguments do not either.
func TestARequestsOwnEndIsNoOutage(t *testing.T) {
	rdb := newTestRedis(t)
	limiter, slots := fallbackOn(rdb, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := limiter.Allow(ctx, "k", 1, time.Minute); err == nil {
		t.Fatal("a cancelled request's check succeeded")
	}
	if _, _, err := slots.Acquire(ctx, "k", 1, time.Minute); err == nil {
		t.Fatal("a cancelled request's acquisition succeeded")
	}
	if _, err := limiter.Allow(context.Background(), "k", 0, time.Minute); !errors.Is(err, ErrInvalidLimit) {
		t.Fatalf("a limit of 0: %v", err)
	}
	if limiter.outage.on() {
		t.Error("a cancelled request or an invalid limit left Redis aside")
	}
}
