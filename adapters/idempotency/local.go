// Package idempotency owns the implementations of ports.IdempotencyStore: a
// bounded map in process memory for a single instance, and Redis for
// instances that must agree on which of them runs a request first.
package idempotency

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.IdempotencyStore = (*Local)(nil)

// DefaultCapacity bounds the in-process store so a flood of distinct keys
// cannot exhaust memory.
const DefaultCapacity = 100_000

// sweepEvery bounds how long expired records linger when nothing fills the
// store up.
const sweepEvery = time.Minute

// ErrFull is returned by Local when it holds its capacity of live records
// and cannot take a new one.
var ErrFull = errors.New("idempotency: store is full")

type localEntry struct {
	rec     ports.IdempotencyRecord
	expires time.Time
}

// Local is an in-process idempotency store whose expiries follow a
// ports.Clock. It holds at most its capacity of records. When full it drops
// expired records and then refuses new keys with ErrFull rather than evict a
// live one: evicting an in-progress record would let a retry run alongside
// the first request, and evicting a done one would let a retry run the
// request a second time, while a refusal only makes the client try later.
type Local struct {
	clock    ports.Clock
	capacity int

	mu        sync.Mutex
	entries   map[string]localEntry
	nextSweep time.Time
}

// NewLocal returns an in-process store of DefaultCapacity records.
func NewLocal(c ports.Clock) *Local { return NewLocalWithCapacity(c, DefaultCapacity) }

// NewLocalWithCapacity returns an in-process store holding at most capacity
// records (at least one).
func NewLocalWithCapacity(c ports.Clock, capacity int) *Local {
	return &Local{clock: c, capacity: max(capacity, 1), entries: make(map[string]localEntry)}
}

// Reserve stores an in-progress record for ttl, which must be positive, when
// key is free and reports true; otherwise it returns a copy of the record
// there and false.
func (l *Local) Reserve(_ context.Context, key string, fingerprint []byte, ttl time.Duration) (ports.IdempotencyRecord, bool, error) {
	if err := checkTTL(ttl); err != nil {
		return ports.IdempotencyRecord{}, false, err
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepIfDue(now)
	if e, ok := l.entries[key]; ok && now.Before(e.expires) {
		return cloneRecord(e.rec), false, nil
	}
	if err := l.roomFor(key, now); err != nil {
		return ports.IdempotencyRecord{}, false, err
	}
	rec := ports.IdempotencyRecord{Fingerprint: cloneBytes(fingerprint)}
	l.entries[key] = localEntry{rec: rec, expires: now.Add(ttl)}
	return cloneRecord(rec), true, nil
}

// Complete replaces key's record with a copy of rec, marked done, for ttl,
// which must be positive. A record whose reservation has expired is stored
// all the same: the response is still worth replaying.
func (l *Local) Complete(_ context.Context, key string, rec ports.IdempotencyRecord, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepIfDue(now)
	if err := l.roomFor(key, now); err != nil {
		return err
	}
	stored := cloneRecord(rec)
	stored.Done = true
	l.entries[key] = localEntry{rec: stored, expires: now.Add(ttl)}
	return nil
}

// Release removes key's record; releasing a free key is not an error.
func (l *Local) Release(_ context.Context, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, key)
	return nil
}

// Len returns how many records are held, expired ones not yet dropped
// included.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *Local) sweepIfDue(now time.Time) {
	if !now.Before(l.nextSweep) {
		l.dropExpired(now)
	}
}

func (l *Local) dropExpired(now time.Time) {
	for k, e := range l.entries {
		if !now.Before(e.expires) {
			delete(l.entries, k)
		}
	}
	l.nextSweep = now.Add(sweepEvery)
}

// roomFor makes sure key can be stored: a key already held reuses its slot,
// a new one needs the store below capacity once expired records are gone.
// The caller holds l.mu.
func (l *Local) roomFor(key string, now time.Time) error {
	if _, exists := l.entries[key]; exists || len(l.entries) < l.capacity {
		return nil
	}
	l.dropExpired(now)
	if len(l.entries) < l.capacity {
		return nil
	}
	return fmt.Errorf("%w (%d live records)", ErrFull, len(l.entries))
}

func checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("idempotency: ttl must be positive, got %s", ttl)
	}
	return nil
}

// cloneRecord copies every slice and map of rec, so neither the caller nor
// the store sees the other's later changes. Nil stays nil.
func cloneRecord(rec ports.IdempotencyRecord) ports.IdempotencyRecord {
	rec.Fingerprint = cloneBytes(rec.Fingerprint)
	rec.Headers = maps.Clone(rec.Headers)
	rec.Body = cloneBytes(rec.Body)
	return rec
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}
