package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.RateLimiter = (*Redis)(nil)

// expiryMargin keeps a counter a little past its window's end, so an instance
// whose clock runs slightly behind still finds the count of the window it is
// in.
const expiryMargin = 5 * time.Second

// hitScript increments and sets the expiry in one step: a counter left
// without an expiry (the process dying between two commands) would never go
// away.
var hitScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n
`)

// Redis counts in Redis, so every instance using the same database and
// prefix shares one budget per key.
type Redis struct {
	client redis.UniversalClient
	clock  ports.Clock
	prefix string
}

// NewRedis returns a limiter that keeps its counters in client under prefix
// and numbers windows by c.
func NewRedis(client redis.UniversalClient, c ports.Clock, prefix string) *Redis {
	return &Redis{client: client, clock: c, prefix: prefix}
}

func (r *Redis) key(key string, index int64) string {
	return r.prefix + key + ":" + strconv.FormatInt(index, 10)
}

// Hit counts one event for key.
func (r *Redis) Hit(ctx context.Context, key string, limit int, size time.Duration) (ports.Decision, error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	now := r.clock.Now()
	index, end := window(now, size)
	ttl := end.Sub(now) + expiryMargin
	count, err := hitScript.Run(ctx, r.client, []string{r.key(key, index)}, ttl.Milliseconds()).Int64()
	if err != nil {
		return ports.Decision{}, fmt.Errorf("ratelimit: counting in redis: %w", err)
	}
	return afterHit(count, limit, now, end), nil
}

// Check reports whether one more hit for key would be allowed.
func (r *Redis) Check(ctx context.Context, key string, limit int, size time.Duration) (ports.Decision, error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	now := r.clock.Now()
	index, end := window(now, size)
	count, err := r.client.Get(ctx, r.key(key, index)).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return ports.Decision{}, fmt.Errorf("ratelimit: reading count from redis: %w", err)
	}
	return beforeHit(count, limit, now, end), nil
}

// Reset forgets key's count in the current window.
func (r *Redis) Reset(ctx context.Context, key string, size time.Duration) error {
	if err := checkWindow(size); err != nil {
		return err
	}
	index, _ := window(r.clock.Now(), size)
	if err := r.client.Del(ctx, r.key(key, index)).Err(); err != nil {
		return fmt.Errorf("ratelimit: resetting in redis: %w", err)
	}
	return nil
}
