package ratelimit

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.RateLimiter = (*Local)(nil)

// sweepEvery bounds how long keys whose budget has refilled linger in
// memory when few new keys arrive.
const sweepEvery = time.Minute

// minSweepSize keeps small maps from being swept on every new key.
const minSweepSize = 1024

type localKey struct {
	key  string
	size time.Duration
}

type localBudget struct {
	limiter *rate.Limiter
	limit   int
	// full is when the budget will have refilled completely: from then on
	// the key is as good as unknown and may be forgotten.
	full time.Time
}

// Local keeps one token bucket per key in process memory, on the injected
// clock. Its budget is per process: use Redis when several instances must
// share one.
type Local struct {
	clock ports.Clock

	mu      sync.Mutex
	budgets map[localKey]*localBudget
	// nextSweep and sweepAt decide when to drop the keys whose budget is
	// full again: after sweepEvery, or sooner once the map has doubled, so
	// memory follows the keys in use even under a flood of distinct keys.
	nextSweep time.Time
	sweepAt   int
}

// NewLocal returns an in-process limiter whose budgets refill by c.
func NewLocal(c ports.Clock) *Local {
	return &Local{clock: c, budgets: make(map[localKey]*localBudget), sweepAt: minSweepSize}
}

// Hit counts one event for key.
func (l *Local) Hit(_ context.Context, key string, limit int, size time.Duration) (ports.Decision, error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	if limit == 0 {
		return nothingAllowed(size), nil
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepIfDue(now)
	k := localKey{key, size}
	b := l.budgets[k]
	if b == nil || b.limit != limit {
		b = &localBudget{limiter: rate.NewLimiter(rate.Limit(float64(limit)/size.Seconds()), limit), limit: limit}
		l.budgets[k] = b
	}
	allowed := b.limiter.AllowN(now, 1)
	untilFull := b.untilFull(now, size)
	b.full = now.Add(untilFull)
	return decide(allowed, limit, size, untilFull), nil
}

// Check reports whether one more hit for key would be allowed.
func (l *Local) Check(_ context.Context, key string, limit int, size time.Duration) (ports.Decision, error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	if limit == 0 {
		return nothingAllowed(size), nil
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.budgets[localKey{key, size}]
	if b == nil || b.limit != limit {
		return decide(true, limit, size, 0), nil
	}
	return decide(b.limiter.TokensAt(now) >= 1, limit, size, b.untilFull(now, size)), nil
}

// Reset gives key its whole budget back.
func (l *Local) Reset(_ context.Context, key string, size time.Duration) error {
	if err := checkWindow(size); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.budgets, localKey{key, size})
	return nil
}

// Len returns how many keys are held, those whose budget has refilled but
// that were not swept yet included.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.budgets)
}

// untilFull is how long b takes from now to refill completely.
func (b *localBudget) untilFull(now time.Time, size time.Duration) time.Duration {
	missing := float64(b.limit) - b.limiter.TokensAt(now)
	return duration(missing * size.Seconds() / float64(b.limit))
}

func (l *Local) sweepIfDue(now time.Time) {
	if now.Before(l.nextSweep) && len(l.budgets) < l.sweepAt {
		return
	}
	for k, b := range l.budgets {
		if !now.Before(b.full) {
			delete(l.budgets, k)
		}
	}
	l.nextSweep = now.Add(sweepEvery)
	l.sweepAt = max(2*len(l.budgets), minSweepSize)
}
