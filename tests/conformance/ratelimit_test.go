package conformance_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/adapters/ratelimit"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

func TestLocalRateLimiter(t *testing.T) {
	conformance.RunRateLimiter(t, func(_ *testing.T, c ports.Clock) ports.RateLimiter {
		return ratelimit.NewLocal(c)
	})
}

func TestRedisRateLimiter(t *testing.T) {
	client := testenv.RedisClient(t) // skips the suite when TEST_REDIS_URL is unset
	// One prefix for the whole run: limiters built for one subtest must share
	// their counters, and the suite's keys are unique per run.
	prefix := testenv.RedisKeyPrefix(t, client, "ratelimit")
	newLimiter := func(t *testing.T, c ports.Clock) ports.RateLimiter {
		return ratelimit.NewRedis(testenv.RedisClient(t), c, prefix)
	}
	t.Run("suite", func(t *testing.T) { conformance.RunRateLimiter(t, newLimiter) })
	t.Run("shared", func(t *testing.T) { conformance.RunSharedRateLimiter(t, newLimiter) })
}
