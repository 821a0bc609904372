package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.RateLimiter = (*Local)(nil)

// sweepEvery bounds how long counters of ended windows linger in memory when
// few new keys arrive.
const sweepEvery = time.Minute

// minSweepSize keeps small maps from being swept on every new key.
const minSweepSize = 1024

type localKey struct {
	key  string
	size time.Duration
}

type localCounter struct {
	index int64
	end   time.Time
	count int64
}

// Local counts in process memory. Its budget is per process: use Redis when
// several instances must share one.
type Local struct {
	clock ports.Clock

	mu       sync.Mutex
	counters map[localKey]*localCounter
	// nextSweep and sweepAt decide when to drop counters of ended windows:
	// after sweepEvery, or sooner once the map has doubled, so memory follows
	// the keys of live windows even under a flood of distinct keys.
	nextSweep time.Time
	sweepAt   int
}

// NewLocal returns an in-process limiter whose windows follow c.
func NewLocal(c ports.Clock) *Local {
	return &Local{clock: c, counters: make(map[localKey]*localCounter), sweepAt: minSweepSize}
}

// Hit counts one event for key.
func (l *Local) Hit(_ context.Context, key string, limit int, size time.Duration) (ports.Decision, error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	now := l.clock.Now()
	index, end := window(now, size)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepIfDue(now)
	k := localKey{key, size}
	c := l.counters[k]
	if c == nil || c.index != index {
		c = &localCounter{index: index, end: end}
		l.counters[k] = c
	}
	c.count++
	return afterHit(c.count, limit, now, end), nil
}

// Check reports whether one more hit for key would be allowed.
func (l *Local) Check(_ context.Context, key string, limit int, size time.Duration) (ports.Decision, error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	now := l.clock.Now()
	index, end := window(now, size)
	l.mu.Lock()
	defer l.mu.Unlock()
	var count int64
	if c := l.counters[localKey{key, size}]; c != nil && c.index == index {
		count = c.count
	}
	return beforeHit(count, limit, now, end), nil
}

// Reset forgets key's count.
func (l *Local) Reset(_ context.Context, key string, size time.Duration) error {
	if err := checkWindow(size); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.counters, localKey{key, size})
	return nil
}

// Len returns how many counters are held, ended windows not yet swept
// included.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.counters)
}

func (l *Local) sweepIfDue(now time.Time) {
	if now.Before(l.nextSweep) && len(l.counters) < l.sweepAt {
		return
	}
	for k, c := range l.counters {
		if !now.Before(c.end) {
			delete(l.counters, k)
		}
	}
	l.nextSweep = now.Add(sweepEvery)
	l.sweepAt = max(2*len(l.counters), minSweepSize)
}
