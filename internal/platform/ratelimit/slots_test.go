package ratelimit

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slotsImpl is one Slots implementation under test.
type slotsImpl struct {
	name string
	// open returns new slots of the implementation that read the time from
	// clock. For Redis, all slots opened in one test share the test's keys, as
	// several API processes do; for memory, each has its own.
	open func(t *testing.T, clock func() time.Time) Slots
}

func slotsImpls() []slotsImpl {
	return []slotsImpl{
		{"memory", func(_ *testing.T, clock func() time.Time) Slots { return NewMemorySlots(clock) }},
		{"redis", func(t *testing.T, clock func() time.Time) Slots { return openTestRedisSlots(t, clock) }},
	}
}

// forEachSlots runs test against each implementation, with a fresh fake clock and slots.
func forEachSlots(t *testing.T, test func(t *testing.T, clk *fakeClock, s Slots)) {
	for _, impl := range slotsImpls() {
		t.Run(impl.name, func(t *testing.T) {
			clk := newFakeClock()
			test(t, clk, impl.open(t, clk.Now))
		})
	}
}

// openTestRedisSlots returns Redis slots with their own client, in the test's key namespace.
func openTestRedisSlots(t *testing.T, clock func() time.Time) *RedisSlots {
	client := newTestRedis(t)
	r := NewRedisSlots(client, clock)
	r.prefix = testSlotKeyPrefix(t, client)
	return r
}

// tryAcquire takes a slot, failing the test on an error.
func tryAcquire(t *testing.T, s Slots, key string, limit int, lease time.Duration) (*Slot, bool) {
	t.Helper()
	slot, ok, err := s.Acquire(context.Background(), key, limit, lease)
	if err != nil {
		t.Fatalf("Acquire(%q, %d, %v): %v", key, limit, lease, err)
	}
	if ok != (slot != nil) {
		t.Fatalf("Acquire(%q, %d, %v): ok %v with slot %v", key, limit, lease, ok, slot)
	}
	return slot, ok
}

// acquire takes a slot, failing the test when none is free.
func acquire(t *testing.T, s Slots, key string, limit int, lease time.Duration) *Slot {
	t.Helper()
	slot, ok := tryAcquire(t, s, key, limit, lease)
	if !ok {
		t.Fatalf("Acquire(%q, %d, %v) refused", key, limit, lease)
	}
	return slot
}

// refuse fails the test when a slot of key is free.
func refuse(t *testing.T, s Slots, step, key string, limit int, lease time.Duration) {
	t.Helper()
	if _, ok := tryAcquire(t, s, key, limit, lease); ok {
		t.Fatalf("%s: a slot of %q at a limit of %d was taken, want a refusal", step, key, limit)
	}
}

func release(t *testing.T, slot *Slot) {
	t.Helper()
	if err := slot.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// acquireConcurrently starts n Acquire calls of key at once, spread over the given slots, and
// returns the slots taken and the number refused.
func acquireConcurrently(t *testing.T, slots []Slots, n int, key string, limit int) ([]*Slot, int) {
	t.Helper()
	var mu sync.Mutex
	var taken []*Slot
	var refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			slot, ok, err := slots[i%len(slots)].Acquire(context.Background(), key, limit, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if !ok {
				refused.Add(1)
				return
			}
			mu.Lock()
			taken = append(taken, slot)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return taken, int(refused.Load())
}

func TestSlotsConcurrentAcquiresTakeExactlyTheLimit(t *testing.T) {
	forEachSlots(t, func(t *testing.T, _ *fakeClock, s Slots) {
		taken, refused := acquireConcurrently(t, []Slots{s}, 50, "k", 7)
		if len(taken) != 7 || refused != 43 {
			t.Fatalf("%d taken, %d refused of 50 at a limit of 7; want 7 and 43", len(taken), refused)
		}
		// Releasing them all frees the whole limit again.
		for _, slot := range taken {
			release(t, slot)
		}
		taken, refused = acquireConcurrently(t, []Slots{s}, 50, "k", 7)
		if len(taken) != 7 || refused != 43 {
			t.Fatalf("after the releases: %d taken, %d refused; want 7 and 43", len(taken), refused)
		}
	})
}

func TestSlotsReleaseFreesOneSlot(t *testing.T) {
	forEachSlots(t, func(t *testing.T, _ *fakeClock, s Slots) {
		a := acquire(t, s, "k", 2, time.Minute)
		acquire(t, s, "k", 2, time.Minute)
		refuse(t, s, "full", "k", 2, time.Minute)
		// Another key has its own slots.
		acquire(t, s, "other", 2, time.Minute)
		release(t, a)
		c := acquire(t, s, "k", 2, time.Minute)
		refuse(t, s, "full again", "k", 2, time.Minute)
		release(t, c)
		acquire(t, s, "k", 2, time.Minute)
	})
}

func TestSlotsDoubleReleaseFreesOnce(t *testing.T) {
	forEachSlots(t, func(t *testing.T, _ *fakeClock, s Slots) {
		a := acquire(t, s, "k", 2, time.Minute)
		acquire(t, s, "k", 2, time.Minute)
		release(t, a)
		release(t, a)
		acquire(t, s, "k", 2, time.Minute)
		// The second release did not free the slot of another holder.
		refuse(t, s, "after a double release", "k", 2, time.Minute)
		if err := a.Extend(context.Background()); !errors.Is(err, ErrSlotLost) {
			t.Fatalf("Extend after Release: %v, want ErrSlotLost", err)
		}
	})
}

func TestSlotsReleaseAfterTheRequestEnded(t *testing.T) {
	forEachSlots(t, func(t *testing.T, _ *fakeClock, s Slots) {
		ctx, cancel := context.WithCancel(context.Background())
		slot, ok, err := s.Acquire(ctx, "k", 1, time.Minute)
		if !ok || err != nil {
			t.Fatalf("Acquire: %v, %v", ok, err)
		}
		cancel()
		release(t, slot)
		acquire(t, s, "k", 1, time.Minute)
	})
}

func TestSlotsLeaseEndFreesALeakedSlot(t *testing.T) {
	forEachSlots(t, func(t *testing.T, clk *fakeClock, s Slots) {
		leaked := acquire(t, s, "k", 1, 10*time.Second) // never released: its process died
		clk.Advance(10*time.Second - time.Microsecond)
		refuse(t, s, "1µs before the lease ends", "k", 1, 10*time.Second)
		clk.Advance(time.Microsecond)
		b := acquire(t, s, "k", 1, 10*time.Second)
		// The leaked slot cannot be extended, and releasing it late does not free b's.
		if err := leaked.Extend(context.Background()); !errors.Is(err, ErrSlotLost) {
			t.Fatalf("Extend of an ended lease: %v, want ErrSlotLost", err)
		}
		release(t, leaked)
		refuse(t, s, "after the late release", "k", 1, 10*time.Second)
		release(t, b)
		acquire(t, s, "k", 1, 10*time.Second)
	})
}

func TestSlotsExtendKeepsASlotPastItsLease(t *testing.T) {
	forEachSlots(t, func(t *testing.T, clk *fakeClock, s Slots) {
		slot := acquire(t, s, "k", 1, 10*time.Second)
		for range 5 { // 40 s in all, four leases
			clk.Advance(8 * time.Second)
			if err := slot.Extend(context.Background()); err != nil {
				t.Fatalf("Extend at %v: %v", clk.Now(), err)
			}
			refuse(t, s, "after an extension", "k", 1, 10*time.Second)
		}
		// Not extended again: the lease ends 10 s after the last extension.
		clk.Advance(10*time.Second - time.Microsecond)
		refuse(t, s, "1µs before the extended lease ends", "k", 1, 10*time.Second)
		clk.Advance(time.Microsecond)
		acquire(t, s, "k", 1, 10*time.Second)
		if err := slot.Extend(context.Background()); !errors.Is(err, ErrSlotLost) {
			t.Fatalf("Extend after the lease ended: %v, want ErrSlotLost", err)
		}
		// An extension after the lease ended, before anyone else came, does not revive it.
		late := acquire(t, s, "j", 1, 10*time.Second)
		clk.Advance(10 * time.Second)
		if err := late.Extend(context.Background()); !errors.Is(err, ErrSlotLost) {
			t.Fatalf("late Extend: %v, want ErrSlotLost", err)
		}
		acquire(t, s, "j", 1, 10*time.Second)
	})
}

func TestSlotsLimitGoingDownCountsTheSlotsHeld(t *testing.T) {
	forEachSlots(t, func(t *testing.T, _ *fakeClock, s Slots) {
		var held []*Slot
		for range 5 {
			held = append(held, acquire(t, s, "k", 5, time.Minute))
		}
		refuse(t, s, "limit 3 with 5 held", "k", 3, time.Minute)
		release(t, held[0])
		release(t, held[1])
		refuse(t, s, "limit 3 with 3 held", "k", 3, time.Minute)
		release(t, held[2])
		acquire(t, s, "k", 3, time.Minute)
	})
}

func TestSlotsInvalidArgumentsAdmitWithAnError(t *testing.T) {
	forEachSlots(t, func(t *testing.T, _ *fakeClock, s Slots) {
		for _, c := range []struct {
			limit int
			lease time.Duration
		}{{0, time.Minute}, {-1, time.Minute}, {1, 0}, {1, time.Nanosecond}} {
			slot, ok, err := s.Acquire(context.Background(), "k", c.limit, c.lease)
			if !ok || !errors.Is(err, ErrInvalidSlots) || slot == nil {
				t.Fatalf("Acquire(limit %d, lease %v): %v, %v, %v; want admitted with ErrInvalidSlots", c.limit, c.lease, slot, ok, err)
			}
			if err := slot.Release(); err != nil {
				t.Fatal(err)
			}
			if err := slot.Extend(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		// Nothing was taken.
		acquire(t, s, "k", 1, time.Minute)
	})
}

func TestNilSlotDoesNothing(t *testing.T) {
	var s *Slot
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if err := s.Extend(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// ---- MemorySlots ----

func TestMemorySlotsEmptyAfterReleases(t *testing.T) {
	m := NewMemorySlots(newFakeClock().Now)
	var held []*Slot
	for i := range 100 {
		for range 3 {
			held = append(held, acquire(t, m, "k"+strconv.Itoa(i), 3, time.Minute))
		}
	}
	if n := m.Len(); n != 100 {
		t.Fatalf("Len = %d with 100 keys held, want 100", n)
	}
	var wg sync.WaitGroup
	for _, slot := range held {
		wg.Go(func() { release(t, slot) })
	}
	wg.Wait()
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after every slot was released, want 0", n)
	}
}

func TestMemorySlotsSweepDropsEndedLeases(t *testing.T) {
	clk := newFakeClock()
	m := NewMemorySlots(clk.Now)
	for i := range 100 {
		acquire(t, m, "leaked-"+strconv.Itoa(i), 1, time.Second) // never released
	}
	long := acquire(t, m, "long", 1, time.Hour)
	clk.Advance(defaultSweepInterval)
	trigger := acquire(t, m, "trigger", 1, time.Second)
	if n := m.Len(); n != 2 {
		t.Fatalf("Len = %d after the sweep, want 2 (long, trigger)", n)
	}
	refuse(t, m, "the long lease survived the sweep", "long", 1, time.Hour)
	release(t, long)
	release(t, trigger)
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

func TestMemorySlotsNilClockUsesTimeNow(t *testing.T) {
	m := NewMemorySlots(nil)
	lease := 500 * time.Millisecond
	slot := acquire(t, m, "k", 1, lease)
	refuse(t, m, "held", "k", 1, lease)
	time.Sleep(lease)
	acquire(t, m, "k", 1, lease)
	release(t, slot)
}

// ---- RedisSlots ----

func TestRedisSlotsInstancesShareTheCap(t *testing.T) {
	clk := newFakeClock()
	a, b := openTestRedisSlots(t, clk.Now), openTestRedisSlots(t, clk.Now)
	if a.client == b.client {
		t.Fatal("the two instances share a client; want one each, as two processes")
	}
	// Two API processes take requests of one key at once.
	taken, refused := acquireConcurrently(t, []Slots{a, b}, 50, "k", 6)
	if len(taken) != 6 || refused != 44 {
		t.Fatalf("%d taken, %d refused of 50 across two instances at a limit of 6; want 6 and 44", len(taken), refused)
	}
	// A slot released by one process is free for the other.
	release(t, taken[0])
	acquire(t, b, "k", 6, time.Minute)
	refuse(t, a, "full again", "k", 6, time.Minute)
	refuse(t, b, "full again", "k", 6, time.Minute)
}

func TestRedisSlotsKeyLivesForTheLongestLease(t *testing.T) {
	clk := newFakeClock()
	s := openTestRedisSlots(t, clk.Now)
	ctx := context.Background()
	key := s.prefix + "k"
	pttl := func() time.Duration {
		t.Helper()
		d, err := s.client.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	short := acquire(t, s, "k", 3, 10*time.Second)
	if d := pttl(); d <= 9*time.Second || d > 10*time.Second {
		t.Fatalf("PTTL = %v after a 10 s lease, want 10 s", d)
	}
	long := acquire(t, s, "k", 3, time.Minute)
	if d := pttl(); d <= 59*time.Second || d > time.Minute {
		t.Fatalf("PTTL = %v after a 1 min lease, want 1 min", d)
	}
	acquire(t, s, "k", 3, 10*time.Second) // a shorter lease does not shorten the key's life
	if d := pttl(); d <= 59*time.Second {
		t.Fatalf("PTTL = %v after a shorter lease, want 1 min", d)
	}
	clk.Advance(5 * time.Second)
	if err := short.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if d := pttl(); d <= 54*time.Second || d > 55*time.Second {
		t.Fatalf("PTTL = %v after extending a 10 s lease 5 s on, want the 1 min lease's 55 s", d)
	}
	if err := long.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	// The key's life is counted from the time the scripts were given (the fake clock's).
	if d := pttl(); d <= 59*time.Second || d > time.Minute {
		t.Fatalf("PTTL = %v after extending the 1 min lease, want 1 min", d)
	}
}

func TestRedisSlotsServerClock(t *testing.T) {
	s := openTestRedisSlots(t, nil)
	ctx := context.Background()
	lease := time.Second
	slot := acquire(t, s, "k", 1, lease)
	refuse(t, s, "held", "k", 1, lease)
	// Extended in Redis's time past its first lease.
	time.Sleep(700 * time.Millisecond)
	if err := slot.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	refuse(t, s, "extended", "k", 1, lease)
	// Leaked: once its lease ends in Redis's time, the slot is free and the key gone.
	time.Sleep(lease)
	if n, err := s.client.Exists(ctx, s.prefix+"k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS = %d, %v after the only lease ended, want 0", n, err)
	}
	b := acquire(t, s, "k", 1, time.Minute)
	release(t, b)
	// The last release leaves no key behind.
	if n, err := s.client.Exists(ctx, s.prefix+"k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS = %d, %v after the last release, want 0", n, err)
	}
}

func TestRedisSlotsDownAdmitsWithTheError(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	s := NewRedisSlots(client, nil)
	slot, ok, err := s.Acquire(context.Background(), "k", 1, time.Minute)
	if !ok || err == nil || slot == nil {
		t.Fatalf("Redis down: %v, %v, %v; want admitted with the error and a slot", slot, ok, err)
	}
	// The slot holds nothing: releasing and extending it do not reach Redis.
	if err := slot.Release(); err != nil {
		t.Fatalf("Release of a slot that holds nothing: %v", err)
	}
	if err := slot.Extend(context.Background()); err != nil {
		t.Fatalf("Extend of a slot that holds nothing: %v", err)
	}
}

func TestRedisSlotsStoreErrorsOnReleaseAndExtend(t *testing.T) {
	client := newTestRedis(t)
	s := NewRedisSlots(client, nil)
	s.prefix = testSlotKeyPrefix(t, newTestRedis(t))
	slot := acquire(t, s, "k", 1, time.Minute)
	_ = client.Close() // the store goes away while the slot is held
	if err := slot.Extend(context.Background()); err == nil || errors.Is(err, ErrSlotLost) {
		t.Fatalf("Extend with Redis gone: %v, want the store's error", err)
	}
	if err := slot.Release(); err == nil {
		t.Fatal("Release with Redis gone succeeded")
	}
}
