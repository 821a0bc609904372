package conformance_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/ratelimit"
	"github.com/profilesvc/profilesvc/adapters/redisguard"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

func TestLocalRateLimiter(t *testing.T) {
	newLimiter := func(_ *testing.T, c ports.Clock) ports.RateLimiter { return ratelimit.NewLocal(c) }
	t.Run("suite", func(t *testing.T) { conformance.RunRateLimiter(t, newLimiter) })
	t.Run("clocked", func(t *testing.T) { conformance.RunClockedRateLimiter(t, newLimiter) })
}

func TestRedisRateLimiter(t *testing.T) {
	client := testenv.RedisClient(t) // skips the suite when TEST_REDIS_URL is unset
	// One prefix for the whole run: limiters built for one subtest must share
	// their counters, and the suite's keys are unique per run.
	prefix := testenv.RedisKeyPrefix(t, client, "ratelimit")
	newLimiter := func(t *testing.T, _ ports.Clock) ports.RateLimiter {
		return ratelimit.NewRedis(testenv.RedisClient(t), prefix)
	}
	t.Run("suite", func(t *testing.T) { conformance.RunRateLimiter(t, newLimiter) })
	t.Run("real time", func(t *testing.T) { conformance.RunRealTimeRateLimiter(t, newLimiter) })
	t.Run("shared", func(t *testing.T) { conformance.RunSharedRateLimiter(t, newLimiter) })
}

func TestGuardedRateLimiterWithRedisDown(t *testing.T) {
	for name, down := range redisDown(t) {
		t.Run(name, func(t *testing.T) {
			conformance.RunRateLimiterWithoutBackend(t, func(t *testing.T, c ports.Clock) ports.RateLimiter {
				client, g := down(t, c)
				return ratelimit.NewGuarded(ratelimit.NewRedis(client, "unused:"), ratelimit.NewLocal(c), g)
			})
		})
	}
}

func TestGuardedRateLimiterWithRedisUp(t *testing.T) {
	client := testenv.RedisClient(t)
	prefix := testenv.RedisKeyPrefix(t, client, "guarded-ratelimit")
	newLimiter := func(t *testing.T, c ports.Clock) ports.RateLimiter {
		g := redisguard.New(c, time.Second, zap.NewNop(), prometheus.NewRegistry())
		return ratelimit.NewGuarded(ratelimit.NewRedis(testenv.RedisClient(t), prefix), ratelimit.NewLocal(c), g)
	}
	t.Run("suite", func(t *testing.T) { conformance.RunRateLimiter(t, newLimiter) })
	t.Run("real time", func(t *testing.T) { conformance.RunRealTimeRateLimiter(t, newLimiter) })
	t.Run("shared", func(t *testing.T) { conformance.RunSharedRateLimiter(t, newLimiter) })
}
