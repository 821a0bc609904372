package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Cache = (*Redis)(nil)

// Redis is a cache in Redis, shared by every instance using the same
// database and prefix, so a Delete on one instance invalidates for all.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

// NewRedis returns a cache that keeps its entries in client under prefix.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// Get returns key's value, or a miss.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := r.client.Get(ctx, r.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache: reading from redis: %w", err)
	}
	return v, true, nil
}

// Set stores value for ttl, which must be positive: a cache entry that never
// expires would outlive the data it copies.
func (r *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("cache: ttl must be positive, got %s", ttl)
	}
	if err := r.client.Set(ctx, r.prefix+key, value, ttl).Err(); err != nil {
		return fmt.Errorf("cache: writing to redis: %w", err)
	}
	return nil
}

// Delete removes key; removing a missing key is not an error.
func (r *Redis) Delete(ctx context.Context, key string) error {
	if err := r.client.Del(ctx, r.prefix+key).Err(); err != nil {
		return fmt.Errorf("cache: deleting from redis: %w", err)
	}
	return nil
}

// deleteAll removes keys in one call.
func (r *Redis) deleteAll(ctx context.Context, keys []string) error {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = r.prefix + k
	}
	if err := r.client.Del(ctx, full...).Err(); err != nil {
		return fmt.Errorf("cache: deleting from redis: %w", err)
	}
	return nil
}

// Ping reports whether Redis answers.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("cache: redis does not answer: %w", err)
	}
	return nil
}
