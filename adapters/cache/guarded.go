package cache

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Cache = (*Guarded)(nil)

// Guarded is the Redis cache for a service that must not fail when Redis
// does: while Redis does not answer, reads miss and writes are skipped, so
// every read goes to the store. A Delete that cannot reach Redis still
// fails: the entry it should have removed would be served again once Redis
// is back, so the caller must learn that the invalidation did not happen.
type Guarded struct {
	redis *Redis
	guard Guard
}

// Guard decides whether a call may go to Redis and learns from how it
// went (redisguard.Guard). Do returns an error of domain.KindUnavailable
// when Redis was skipped or did not answer.
type Guard interface {
	Do(ctx context.Context, component string, op func(context.Context) error) error
}

// NewGuarded returns r behind g.
func NewGuarded(r *Redis, g Guard) *Guarded { return &Guarded{redis: r, guard: g} }

const component = "cache"

// Get returns key's value, or a miss, also when Redis does not answer.
func (c *Guarded) Get(ctx context.Context, key string) (value []byte, hit bool, err error) {
	err = c.guard.Do(ctx, component, func(ctx context.Context) error {
		value, hit, err = c.redis.Get(ctx, key)
		return err
	})
	if domain.IsKind(err, domain.KindUnavailable) {
		return nil, false, nil
	}
	return value, hit, err
}

// Set stores value for ttl; it does nothing when Redis does not answer.
func (c *Guarded) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return c.redis.Set(ctx, key, value, ttl) // refused without a call to Redis
	}
	err := c.guard.Do(ctx, component, func(ctx context.Context) error { return c.redis.Set(ctx, key, value, ttl) })
	if domain.IsKind(err, domain.KindUnavailable) {
		return nil
	}
	return err
}

// Delete removes key, and fails with a domain.KindUnavailable error when Redis
// does not answer.
func (c *Guarded) Delete(ctx context.Context, key string) error {
	return c.guard.Do(ctx, component, func(ctx context.Context) error { return c.redis.Delete(ctx, key) })
}

// Ping reports whether Redis answers; while it does not, it is also how the
// guard finds out that Redis is back.
func (c *Guarded) Ping(ctx context.Context) error {
	return c.guard.Do(ctx, component, c.redis.Ping)
}
