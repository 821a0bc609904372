package ratelimit

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.RateLimiter = (*Guarded)(nil)

// Guarded counts in Redis while Redis answers and in process memory while
// it does not, so an outage of Redis never refuses or fails a request. The
// price, while Redis is down: each instance has the whole budget to itself,
// and counts made before the outage are not seen.
type Guarded struct {
	redis *Redis
	local *Local
	guard Guard
}

// Guard decides whether a call may go to Redis and learns from how it
// went (redisguard.Guard). Do returns an error of domain.KindUnavailable
// when Redis was skipped or did not answer.
type Guard interface {
	Do(ctx context.Context, component string, op func(context.Context) error) error
}

// NewGuarded returns r behind g, with local as the fallback.
func NewGuarded(r *Redis, local *Local, g Guard) *Guarded {
	return &Guarded{redis: r, local: local, guard: g}
}

const component = "ratelimit"

// Hit counts one event for key.
func (l *Guarded) Hit(ctx context.Context, key string, limit int, size time.Duration) (d ports.Decision, err error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	err = l.guard.Do(ctx, component, func(ctx context.Context) error {
		d, err = l.redis.Hit(ctx, key, limit, size)
		return err
	})
	if domain.IsKind(err, domain.KindUnavailable) {
		return l.local.Hit(ctx, key, limit, size)
	}
	return d, err
}

// Check reports whether one more hit for key would be allowed.
func (l *Guarded) Check(ctx context.Context, key string, limit int, size time.Duration) (d ports.Decision, err error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	err = l.guard.Do(ctx, component, func(ctx context.Context) error {
		d, err = l.redis.Check(ctx, key, limit, size)
		return err
	})
	if domain.IsKind(err, domain.KindUnavailable) {
		return l.local.Check(ctx, key, limit, size)
	}
	return d, err
}

// Reset forgets key's count, in Redis and in the fallback.
func (l *Guarded) Reset(ctx context.Context, key string, size time.Duration) error {
	if err := l.local.Reset(ctx, key, size); err != nil {
		return err
	}
	err := l.guard.Do(ctx, component, func(ctx context.Context) error { return l.redis.Reset(ctx, key, size) })
	if domain.IsKind(err, domain.KindUnavailable) {
		return nil
	}
	return err
}
