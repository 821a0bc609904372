// Package cache owns the implementations of ports.Cache: a bounded map in
// process memory for a single instance, and Redis for instances that must see
// each other's entries (and invalidations).
package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Cache = (*Local)(nil)

// DefaultCapacity bounds the in-process cache so a flood of distinct keys
// cannot exhaust memory.
const DefaultCapacity = 100_000

// sweepEvery bounds how long expired entries linger when nothing fills the
// cache up.
const sweepEvery = time.Minute

type localEntry struct {
	value   []byte
	expires time.Time
}

// Local is an in-process cache whose expiries follow a ports.Clock. It holds
// at most its capacity of entries; when full it drops expired entries first
// and then arbitrary ones, which for a cache only costs a later miss.
type Local struct {
	clock    ports.Clock
	capacity int

	mu        sync.Mutex
	entries   map[string]localEntry
	nextSweep time.Time
}

// NewLocal returns an in-process cache of DefaultCapacity entries.
func NewLocal(c ports.Clock) *Local { return NewLocalWithCapacity(c, DefaultCapacity) }

// NewLocalWithCapacity returns an in-process cache holding at most capacity
// entries (at least one).
func NewLocalWithCapacity(c ports.Clock, capacity int) *Local {
	return &Local{clock: c, capacity: max(capacity, 1), entries: make(map[string]localEntry)}
}

// Get returns a copy of key's value, or a miss once the value has expired.
func (l *Local) Get(_ context.Context, key string) ([]byte, bool, error) {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[key]
	if !ok {
		return nil, false, nil
	}
	if !now.Before(e.expires) {
		delete(l.entries, key)
		return nil, false, nil
	}
	return clone(e.value), true, nil
}

// Set stores a copy of value for ttl, which must be positive.
func (l *Local) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("cache: ttl must be positive, got %s", ttl)
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !now.Before(l.nextSweep) {
		l.dropExpired(now)
	}
	if _, exists := l.entries[key]; !exists && len(l.entries) >= l.capacity {
		l.makeRoom(now)
	}
	l.entries[key] = localEntry{value: clone(value), expires: now.Add(ttl)}
	return nil
}

// Delete removes key; removing a missing key is not an error.
func (l *Local) Delete(_ context.Context, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, key)
	return nil
}

// Ping always succeeds: process memory is always there.
func (l *Local) Ping(context.Context) error { return nil }

// Len returns how many entries are held, expired ones not yet dropped
// included.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *Local) dropExpired(now time.Time) {
	for k, e := range l.entries {
		if !now.Before(e.expires) {
			delete(l.entries, k)
		}
	}
	l.nextSweep = now.Add(sweepEvery)
}

// makeRoom frees space for one entry. Dropping a slice of live entries at
// once, rather than one, keeps a full cache from scanning the whole map on
// every Set.
func (l *Local) makeRoom(now time.Time) {
	l.dropExpired(now)
	if len(l.entries) < l.capacity {
		return
	}
	excess := len(l.entries) - l.capacity + 1 + l.capacity/100
	for k := range l.entries { // map order is unspecified: arbitrary victims
		if excess == 0 {
			break
		}
		delete(l.entries, k)
		excess--
	}
}

func clone(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}
