package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.RateLimiter = (*Redis)(nil)

// Redis keeps each key's budget in Redis with redis_rate's GCRA script, so
// every instance using the same database and prefix shares one budget per
// key. The script reads the time from Redis (TIME), so the instances agree
// on it whatever their own clocks say.
type Redis struct {
	limiter *redis_rate.Limiter
}

// NewRedis returns a limiter that keeps its budgets in client under prefix.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{limiter: redis_rate.NewLimiter(prefixed{UniversalClient: client, prefix: prefix})}
}

// redisKey names key's budget for windows of size: budgets of different
// windows are kept apart.
func redisKey(key string, size time.Duration) string {
	return key + ":" + size.String()
}

func gcra(limit int, size time.Duration) redis_rate.Limit {
	return redis_rate.Limit{Rate: limit, Burst: limit, Period: size}
}

// Hit counts one event for key.
func (r *Redis) Hit(ctx context.Context, key string, limit int, size time.Duration) (ports.Decision, error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	if limit == 0 {
		return nothingAllowed(size), nil
	}
	res, err := r.limiter.Allow(ctx, redisKey(key, size), gcra(limit, size))
	if err != nil {
		return ports.Decision{}, fmt.Errorf("ratelimit: counting in redis: %w", err)
	}
	return decide(res.Allowed > 0, limit, size, duration(res.ResetAfter.Seconds())), nil
}

// Check reports whether one more hit for key would be allowed: the script
// run at a cost of nothing answers without counting.
func (r *Redis) Check(ctx context.Context, key string, limit int, size time.Duration) (ports.Decision, error) {
	if err := checkArgs(limit, size); err != nil {
		return ports.Decision{}, err
	}
	if limit == 0 {
		return nothingAllowed(size), nil
	}
	res, err := r.limiter.AllowN(ctx, redisKey(key, size), gcra(limit, size), 0)
	if err != nil {
		return ports.Decision{}, fmt.Errorf("ratelimit: reading the budget in redis: %w", err)
	}
	untilFull := duration(res.ResetAfter.Seconds())
	if d := decide(true, limit, size, untilFull); d.Remaining > 0 {
		return d, nil
	}
	return decide(false, limit, size, untilFull), nil
}

// Reset gives key its whole budget back.
func (r *Redis) Reset(ctx context.Context, key string, size time.Duration) error {
	if err := checkWindow(size); err != nil {
		return err
	}
	if err := r.limiter.Reset(ctx, redisKey(key, size)); err != nil {
		return fmt.Errorf("ratelimit: resetting in redis: %w", err)
	}
	return nil
}

// prefixed puts prefix before every key redis_rate names (which already
// starts them with its own "rate:"), so that every key the service writes
// starts with the service's prefix.
type prefixed struct {
	redis.UniversalClient
	prefix string
}

func (p prefixed) keys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = p.prefix + k
	}
	return out
}

func (p prefixed) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.Eval(ctx, script, p.keys(keys), args...)
}

func (p prefixed) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.EvalSha(ctx, sha1, p.keys(keys), args...)
}

func (p prefixed) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.EvalRO(ctx, script, p.keys(keys), args...)
}

func (p prefixed) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.EvalShaRO(ctx, sha1, p.keys(keys), args...)
}

func (p prefixed) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return p.UniversalClient.Del(ctx, p.keys(keys)...)
}
