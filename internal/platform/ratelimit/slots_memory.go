package ratelimit

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// MemorySlots is an in-process Slots, safe for concurrent use.
//
// It keeps, per key, the lease expiry of each held slot. A key is dropped as soon as its last
// slot is released, and the slots whose lease ended without a release (a holder that never
// released, which a bug would be in one process) are dropped by the next Acquire of their key or
// by a sweep that runs at most once per sweep interval on the way through Acquire: memory stays
// proportional to the slots held.
type MemorySlots struct {
	clock         func() time.Time
	epoch         time.Time     // times are kept as microseconds since epoch
	sweepInterval time.Duration // how often keys whose leases all ended are dropped

	mu        sync.Mutex
	held      map[string]map[string]int64 // key → slot id → lease expiry (µs)
	seq       uint64                      // the last slot id given out
	nextSweep int64                       // µs since epoch of the next sweep
}

var _ Slots = (*MemorySlots)(nil)

// NewMemorySlots returns in-process slots with none held that read the time from clock (time.Now
// when nil).
func NewMemorySlots(clock func() time.Time) *MemorySlots {
	if clock == nil {
		clock = time.Now
	}
	return &MemorySlots{
		clock:         clock,
		epoch:         clock(),
		sweepInterval: defaultSweepInterval,
		held:          make(map[string]map[string]int64),
		nextSweep:     defaultSweepInterval.Microseconds(),
	}
}

// Acquire takes one of limit slots of key for lease (Slots.Acquire); it fails only on invalid
// arguments, and then admits.
func (m *MemorySlots) Acquire(_ context.Context, key string, limit int, lease time.Duration) (*Slot, bool, error) {
	micros, err := leaseMicros(limit, lease)
	if err != nil {
		return &Slot{}, true, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.maybeSweep(now)
	slots := m.held[key]
	for id, expiry := range slots {
		if expiry <= now {
			delete(slots, id)
		}
	}
	if len(slots) >= limit {
		return nil, false, nil
	}
	if slots == nil {
		slots = make(map[string]int64, 1)
		m.held[key] = slots
	}
	m.seq++
	id := strconv.FormatUint(m.seq, 36)
	slots[id] = now + micros
	return &Slot{store: m, key: key, id: id, lease: micros}, true, nil
}

// Len returns the number of keys with slots held (or whose ended leases are not yet dropped).
func (m *MemorySlots) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held)
}

// now returns the clock's time in microseconds since m.epoch.
func (m *MemorySlots) now() int64 {
	return m.clock().Sub(m.epoch).Microseconds()
}

// maybeSweep drops the slots whose lease ended at now, and the keys left without slots, if a
// sweep is due. m.mu is held.
func (m *MemorySlots) maybeSweep(now int64) {
	if now < m.nextSweep {
		return
	}
	m.nextSweep = now + m.sweepInterval.Microseconds()
	for key, slots := range m.held {
		for id, expiry := range slots {
			if expiry <= now {
				delete(slots, id)
			}
		}
		if len(slots) == 0 {
			delete(m.held, key)
		}
	}
}

func (m *MemorySlots) release(_ context.Context, key, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if slots, ok := m.held[key]; ok {
		delete(slots, id)
		if len(slots) == 0 {
			delete(m.held, key)
		}
	}
	return nil
}

func (m *MemorySlots) extend(_ context.Context, key, id string, lease int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	slots := m.held[key]
	expiry, ok := slots[id]
	if !ok {
		return false, nil
	}
	if expiry <= now {
		delete(slots, id)
		if len(slots) == 0 {
			delete(m.held, key)
		}
		return false, nil
	}
	slots[id] = now + lease
	return true, nil
}
