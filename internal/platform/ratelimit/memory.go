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

// defaultSweepInterval is how often a Memory drops the keys whose window is empty.
const defaultSweepInterval = time.Minute

// Memory is an in-process sliding-window Limiter, safe for concurrent use.
//
// For each key it keeps the admission times of the current window in a ring
// of at most limit timestamps (after the limit of a key went down, the
// admissions made under the higher limit are kept until they leave the
// window, so that they still count). A key whose newest admission has left its
// window has its full budget again, which is the same as not being tracked,
// so such keys are dropped by a sweep that runs at most once per sweep
// interval on the way through Allow: memory stays proportional to the
// admissions made within their period.
type Memory struct {
	clock         func() time.Time
	epoch         time.Time     // times are kept as microseconds since epoch
	sweepInterval time.Duration // how often idle keys are dropped
	nextSweep     atomic.Int64  // microseconds since epoch of the next sweep
	seed          maphash.Seed
	shards        [memoryShards]memoryShard
}

// memoryShard is one locked part of a Memory's keys.
type memoryShard struct {
	mu   sync.Mutex
	logs map[string]*admissionLog
	_    [48]byte // keep shards on separate cache lines
}

var _ Limiter = (*Memory)(nil)

// NewMemory returns an empty in-process limiter that reads the time from clock
// (time.Now when nil).
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
	m.nextSweep.Store(m.sweepInterval.Microseconds())
	for i := range m.shards {
		m.shards[i].logs = make(map[string]*admissionLog)
	}
	return m
}

// Allow reports whether one more request for key is allowed under limit
// requests per period and, if so, counts it.
func (m *Memory) Allow(_ context.Context, key string, limit int, period time.Duration) (Result, error) {
	window, err := periodMicros(limit, period)
	if err != nil {
		return Result{}, err
	}
	s := &m.shards[maphash.String(m.seed, key)%memoryShards]
	s.mu.Lock()
	// The clock is read under the lock so that a key's admissions are logged in time order.
	now := m.now()
	log := s.logs[key]
	if log == nil {
		log = &admissionLog{}
		s.logs[key] = log
	}
	res := log.admit(now, limit, window)
	s.mu.Unlock()
	m.maybeSweep(now)
	return res, nil
}

// now returns the clock's time in microseconds since m.epoch.
func (m *Memory) now() int64 {
	return m.clock().Sub(m.epoch).Microseconds()
}

// Len returns the number of keys the limiter currently tracks.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.logs)
		s.mu.Unlock()
	}
	return n
}

// maybeSweep drops the keys whose window is empty at now, if a sweep is due;
// only one caller at a time does it.
func (m *Memory) maybeSweep(now int64) {
	next := m.nextSweep.Load()
	if now < next || !m.nextSweep.CompareAndSwap(next, now+m.sweepInterval.Microseconds()) {
		return
	}
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for k, log := range s.logs {
			if log.idle(now) {
				delete(s.logs, k)
			}
		}
		s.mu.Unlock()
	}
}

// admissionLog is one key's admission times (microseconds), oldest first, in
// a ring that grows on demand up to the key's limit, and shrinks to it on the
// first admission after the limit went down.
type admissionLog struct {
	ring   []int64
	head   int   // index in ring of the oldest admission
	n      int   // admissions logged
	window int64 // the period of the key's last check, for idle
}

// admit applies one check at now for limit admissions per window (both in
// microseconds): it forgets the admissions that left the window, logs one more
// if fewer than limit remain, and returns the outcome.
//
// An admission is logged at now, or at the newest logged admission if the
// clock stepped back behind it, so that the log stays in time order.
func (l *admissionLog) admit(now int64, limit int, window int64) Result {
	l.window = window
	for l.n > 0 && l.at(0) <= now-window {
		l.dropOldest(1)
	}
	allowed := l.n < limit
	if allowed {
		logged := now
		if l.n > 0 {
			logged = max(now, l.at(l.n-1))
		}
		l.push(logged, limit)
	}
	// With more than limit admissions in the window (the limit went down), Remaining grows
	// once all but limit-1 of them have left.
	return outcome(allowed, limit, l.n, l.at(max(0, l.n-limit))+window-now)
}

// idle reports whether every logged admission has left the window at now.
func (l *admissionLog) idle(now int64) bool {
	return l.n == 0 || l.at(l.n-1) <= now-l.window
}

// at returns the i-th oldest logged admission.
func (l *admissionLog) at(i int) int64 {
	return l.ring[(l.head+i)%len(l.ring)]
}

// dropOldest forgets the k oldest admissions (none when k <= 0).
func (l *admissionLog) dropOldest(k int) {
	k = min(k, l.n)
	if k <= 0 {
		return
	}
	l.head = (l.head + k) % len(l.ring)
	l.n -= k
}

// push logs an admission at t, the newest, growing the ring up to limit
// entries (or shrinking it to limit when the limit went down).
func (l *admissionLog) push(t int64, limit int) {
	if l.n == len(l.ring) || len(l.ring) > limit {
		l.resize(min(limit, max(4, 2*len(l.ring))))
	}
	l.ring[(l.head+l.n)%len(l.ring)] = t
	l.n++
}

// resize moves the logged admissions into a ring of size entries (size >= l.n).
func (l *admissionLog) resize(size int) {
	ring := make([]int64, size)
	for i := range l.n {
		ring[i] = l.at(i)
	}
	l.ring, l.head = ring, 0
}
