package ratelimit

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// OutageHold is how long a process leaves its shared store (Redis) aside after a call to it
// failed: its requests are limited by the process's own limiter and slots meanwhile, as without
// REDIS_URL, and then the next request tries the store again. One failed call, at most
// CallTimeout long, is thus paid per hold, not per request, and the limits keep holding (each
// process's own) while the store is down.
const OutageHold = 5 * time.Second

// outage is the shared store's state as one process sees it: failed within the last OutageHold,
// or not. The limiter and the slots of one Redis share it.
type outage struct {
	clock func() time.Time
	until atomic.Int64 // UnixNano until which the store is left aside; 0 when it is not
}

func newOutage(clock func() time.Time) *outage {
	if clock == nil {
		clock = time.Now
	}
	return &outage{clock: clock}
}

// on reports whether the store failed within the last OutageHold.
func (o *outage) on() bool {
	u := o.until.Load()
	return u != 0 && o.clock().UnixNano() < u
}

// failed records a failed call of the store: it is left aside for OutageHold from now.
func (o *outage) failed() { o.until.Store(o.clock().Add(OutageHold).UnixNano()) }

// storeFailed reports whether err, returned by a call made on ctx, is the store's failure: not
// invalid arguments, and not the request's own end (its client gone, its deadline passed), which
// says nothing of the store.
func storeFailed(ctx context.Context, err error) bool {
	return err != nil && !errors.Is(err, ErrInvalidLimit) && !errors.Is(err, ErrInvalidSlots) && ctx.Err() == nil
}

// FallbackLimiter is a Limiter that counts in a shared store (Redis) and, while that store fails,
// in the process's own limiter: the call that finds the store failing returns the local result with
// the store's error (Admit uses the result; the caller logs the error), and for OutageHold after
// it the store is not asked.
type FallbackLimiter struct {
	shared, local Limiter
	outage        *outage
}

var _ Limiter = (*FallbackLimiter)(nil)

// Allow checks key in the shared limiter, or in the local one while the shared one fails.
func (f *FallbackLimiter) Allow(ctx context.Context, key string, limit int, period time.Duration) (Result, error) {
	if f.outage.on() {
		return f.local.Allow(ctx, key, limit, period)
	}
	res, err := f.shared.Allow(ctx, key, limit, period)
	if !storeFailed(ctx, err) {
		return res, err
	}
	f.outage.failed()
	if local, lerr := f.local.Allow(ctx, key, limit, period); lerr == nil {
		return local, err
	}
	return Result{}, err
}

// FallbackSlots are Slots counted in a shared store (Redis) and, while that store fails, in the
// process's own slots, as FallbackLimiter. A slot is released and extended in the store that
// holds it.
type FallbackSlots struct {
	shared, local Slots
	outage        *outage
}

var _ Slots = (*FallbackSlots)(nil)

// Acquire takes a slot of key in the shared slots, or in the local ones while the shared ones
// fail; the call that finds the store failing returns the local answer with the store's error.
func (f *FallbackSlots) Acquire(ctx context.Context, key string, limit int, lease time.Duration) (*Slot, bool, error) {
	if f.outage.on() {
		return f.local.Acquire(ctx, key, limit, lease)
	}
	slot, ok, err := f.shared.Acquire(ctx, key, limit, lease)
	if !storeFailed(ctx, err) {
		return slot, ok, err
	}
	f.outage.failed()
	if local, lok, lerr := f.local.Acquire(ctx, key, limit, lease); lerr == nil {
		return local, lok, err
	}
	return slot, ok, err
}
