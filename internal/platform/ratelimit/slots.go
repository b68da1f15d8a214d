package ratelimit

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrInvalidSlots is returned by Acquire when limit is not positive or lease is shorter than a
// microsecond.
var ErrInvalidSlots = errors.New("ratelimit: slot limit must be positive and lease at least 1µs")

// ErrSlotLost is returned by Slot.Extend when the slot is no longer held: it was released, or its
// lease ended before the extension (another request may hold it since).
var ErrSlotLost = errors.New("ratelimit: slot no longer held")

// releaseTimeout bounds the release of a slot, which runs on its own context so that a slot is
// freed when the request that held it was cancelled or timed out. It is CallTimeout, as every
// other call of a request to the store: a release runs before the request's answer is flushed, so
// a store that hangs would hold the answer back for as long as this allows; a release that fails
// leaves the slot to the end of its lease.
const releaseTimeout = CallTimeout

// Slots caps how many requests of one key may be open at once (the long-held requests: waits and
// event streams), whereas a Limiter caps how many may start per period.
//
// A slot is held under a lease: a holder that neither releases nor extends it (its process died)
// frees it when the lease ends, so a crashed process leaks its slots only for a lease. Two
// implementations share these semantics: MemorySlots counts the slots of one process, RedisSlots
// counts them in Redis, so that a key's cap holds across every API process.
type Slots interface {
	// Acquire takes one of limit slots of key for lease, and reports false only when limit
	// unexpired slots of key are held (then the Slot is nil). A store that fails (Redis down, or
	// not answering within CallTimeout) admits the request, so the store cannot take the API down with it, and returns the error
	// for the caller to log, with a Slot that holds nothing; invalid arguments do the same with
	// ErrInvalidSlots. When ok, the caller must Release the slot once the request ends.
	Acquire(ctx context.Context, key string, limit int, lease time.Duration) (slot *Slot, ok bool, err error)
}

// slotStore is where an implementation keeps the slots of its keys.
type slotStore interface {
	// release frees the slot id of key (nothing when it is not held).
	release(ctx context.Context, key, id string) error
	// extend renews the unexpired slot id of key for lease µs from now, reporting false when
	// the slot is not held.
	extend(ctx context.Context, key, id string, lease int64) (bool, error)
}

// Slot is one held slot of a key, released once (Release) and kept past its lease by Extend. Its
// methods are safe for concurrent use and on a nil Slot.
type Slot struct {
	store    slotStore // nil: the slot holds nothing (admitted while the store failed)
	key, id  string
	lease    int64 // µs
	released atomic.Bool
}

// Release frees the slot; a second call does nothing. It runs on its own short-lived context, so
// it works after the request's context is done. It fails only when the store does, in which case
// the slot is freed when its lease ends.
func (s *Slot) Release() error {
	if s == nil || s.store == nil || !s.released.CompareAndSwap(false, true) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	return s.store.release(ctx, s.key, s.id)
}

// Extend renews the slot's lease: it ends one lease (as given to Acquire) from now. It returns
// ErrSlotLost when the slot was released or its lease already ended, and the store's error when
// it fails; a slot that holds nothing (admitted while the store failed) has nothing to extend.
// A long-held request calls it well within each lease, e.g. every third of it.
func (s *Slot) Extend(ctx context.Context) error {
	if s == nil || s.store == nil {
		return nil
	}
	if s.released.Load() {
		return ErrSlotLost
	}
	held, err := s.store.extend(ctx, s.key, s.id, s.lease)
	if err != nil {
		return err
	}
	if !held {
		return ErrSlotLost
	}
	return nil
}

// leaseMicros returns lease in whole microseconds, rounded up so that a lease is never shorter
// than asked, or ErrInvalidSlots.
func leaseMicros(limit int, lease time.Duration) (int64, error) {
	if limit <= 0 || lease < time.Microsecond {
		return 0, ErrInvalidSlots
	}
	return int64((lease + time.Microsecond - 1) / time.Microsecond), nil
}
