package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// memoryShards is the number of independently locked parts of a Memory.
const memoryShards = 32

// defaultSweepInterval is how often a Memory drops the keys whose budget is full.
const defaultSweepInterval = time.Minute

// Memory is an in-process GCRA Limiter, safe for concurrent use.
//
// For each key it keeps only the theoretical arrival time (TAT) of the next
// request. A key whose TAT has passed has its full budget again, which is the
// same as not being tracked, so such keys are dropped by a sweep that runs at
// most once per minute on the way through Allow: memory stays proportional to
// the keys used within their period.
type Memory struct {
	clock         func() time.Time
	epoch         time.Time     // times are kept as nanoseconds since epoch
	sweepInterval time.Duration // how often expired keys are dropped
	nextSweep     atomic.Int64  // nanoseconds since epoch of the next sweep
	seed          maphash.Seed
	shards        [memoryShards]memoryShard
}

// memoryShard is one locked part of a Memory's keys.
type memoryShard struct {
	mu  sync.Mutex
	tat map[string]int64 // key → TAT in nanoseconds since Memory.epoch
	_   [48]byte         // keep shards on separate cache lines
}

var _ Limiter = (*Memory)(nil)

// NewMemory returns an empty in-process limiter that reads the time from clock
// (time.Now when clock is nil).
func NewMemory(clock func() time.Time) *Memory {
	if clock == nil {
		clock = time.Now
	}
	m := &Memory{
		clock:         clock,
		epoch:         clock(),
		sweepInterval: defaultSweepInterval,
		seed:          maphash.MakeSeed(),
	}
	m.nextSweep.Store(int64(m.sweepInterval))
	for i := range m.shards {
		m.shards[i].tat = make(map[string]int64)
	}
	return m
}

// Allow reports whether one more request for key is allowed under limit
// requests per period and, if so, counts it.
func (m *Memory) Allow(_ context.Context, key string, limit int, period time.Duration) (Result, error) {
	t, err := emissionInterval(limit, period)
	if err != nil {
		return Result{}, err
	}
	emission := int64(t)
	tolerance := emission * int64(limit) // burst: limit requests at once
	now := int64(m.clock().Sub(m.epoch))
	m.maybeSweep(now)

	s := &m.shards[maphash.String(m.seed, key)%memoryShards]
	s.mu.Lock()
	tat, ok := s.tat[key]
	if !ok || tat < now {
		tat = now
	}
	newTAT := tat + emission
	diff := now - (newTAT - tolerance) // < 0: too early by -diff
	if diff < 0 {
		s.mu.Unlock()
		return Result{
			Allowed:    false,
			Limit:      limit,
			Remaining:  0,
			RetryAfter: time.Duration(-diff),
			ResetAfter: time.Duration(tat - now),
		}, nil
	}
	s.tat[key] = newTAT
	s.mu.Unlock()
	return Result{
		Allowed:    true,
		Limit:      limit,
		Remaining:  min(int(diff/emission), limit-1),
		ResetAfter: time.Duration(newTAT - now),
	}, nil
}

// Len returns the number of keys the limiter currently tracks.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.tat)
		s.mu.Unlock()
	}
	return n
}

// maybeSweep drops the keys whose TAT is not after now, if a sweep is due;
// only one caller at a time does it.
func (m *Memory) maybeSweep(now int64) {
	next := m.nextSweep.Load()
	if now < next || !m.nextSweep.CompareAndSwap(next, now+int64(m.sweepInterval)) {
		return
	}
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for k, tat := range s.tat {
			if tat <= now {
				delete(s.tat, k)
			}
		}
		s.mu.Unlock()
	}
}
