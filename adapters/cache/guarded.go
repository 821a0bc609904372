package cache

import (
	"context"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Cache = (*Guarded)(nil)

// Guarded is the Redis cache for a service that must not fail when Redis
// does: while Redis does not answer, reads miss and writes are skipped, so
// every read goes to the store. A Delete that cannot reach Redis is kept:
// this instance no longer reads the entry, and deletes it from Redis before
// anything else once Redis answers again. Another instance may still read
// the entry between Redis' return and that deletion (or, if this instance
// stops first, until the entry expires): the entries' TTL bounds that.
type Guarded struct {
	redis *Redis
	guard Guard

	mu      sync.Mutex
	pending map[string]struct{}
}

// maxPendingDeletes bounds the invalidations kept while Redis is down;
// past it, Delete fails, so an outage cannot grow memory without bound.
const maxPendingDeletes = 10_000

// Guard decides whether a call may go to Redis and learns from how it
// went (redisguard.Guard). Do returns an error of domain.KindUnavailable
// when Redis was skipped or did not answer.
type Guard interface {
	Do(ctx context.Context, component string, op func(context.Context) error) error
}

// NewGuarded returns r behind g.
func NewGuarded(r *Redis, g Guard) *Guarded {
	return &Guarded{redis: r, guard: g, pending: map[string]struct{}{}}
}

const component = "cache"

// Get returns key's value, or a miss, also when Redis does not answer.
func (c *Guarded) Get(ctx context.Context, key string) (value []byte, hit bool, err error) {
	if c.flushPending(ctx, key) {
		return nil, false, nil
	}
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
	if c.flushPending(ctx, key) {
		return nil
	}
	err := c.guard.Do(ctx, component, func(ctx context.Context) error { return c.redis.Set(ctx, key, value, ttl) })
	if domain.IsKind(err, domain.KindUnavailable) {
		return nil
	}
	return err
}

// Delete removes key. When Redis does not answer, the deletion is kept
// for when it does; Delete fails only when too many are kept already.
func (c *Guarded) Delete(ctx context.Context, key string) error {
	c.flushPending(ctx, "")
	err := c.guard.Do(ctx, component, func(ctx context.Context) error { return c.redis.Delete(ctx, key) })
	if !domain.IsKind(err, domain.KindUnavailable) {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) >= maxPendingDeletes {
		return err
	}
	c.pending[key] = struct{}{}
	return nil
}

// Ping reports whether Redis answers; while it does not, it is also how the
// guard finds out that Redis is back.
func (c *Guarded) Ping(ctx context.Context) error {
	c.flushPending(ctx, "")
	return c.guard.Do(ctx, component, c.redis.Ping)
}

// flushPending deletes the kept invalidations from Redis, when there are
// any and the guard lets a call through, and reports whether key is still
// among them (and so must not be read or written in Redis yet).
func (c *Guarded) flushPending(ctx context.Context, key string) bool {
	c.mu.Lock()
	keys := make([]string, 0, len(c.pending))
	for k := range c.pending {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	if len(keys) == 0 {
		return false
	}
	if c.guard.Do(ctx, component, func(ctx context.Context) error { return c.redis.deleteAll(ctx, keys) }) != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, kept := c.pending[key]
		return kept
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		delete(c.pending, k)
	}
	_, kept := c.pending[key] // deleted again since the snapshot
	return kept
}
