package conformance_test

import (
	"os"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/cache"
	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// TestMain fails the run when a Redis suite of this package leaves keys
// behind.
func TestMain(m *testing.M) { os.Exit(testenv.RunCheckingRedisKeys(m)) }

func TestLocalCache(t *testing.T) {
	conformance.RunCache(t, func(*testing.T) (ports.Cache, func(time.Duration)) {
		c := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		return cache.NewLocal(c), c.Advance
	})
}

func TestRedisCache(t *testing.T) {
	client := testenv.RedisClient(t) // skips the suite when TEST_REDIS_URL is unset
	prefix := testenv.RedisKeyPrefix(t, client, "cache")
	conformance.RunCache(t, func(t *testing.T) (ports.Cache, func(time.Duration)) {
		return cache.NewRedis(testenv.RedisClient(t), prefix), nil
	})
}
