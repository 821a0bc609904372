package conformance_test

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/cache"
	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/redisguard"
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

// redisDown is a Redis that refuses connections, and one that accepts and
// never answers (with TEST_REDIS_URL), each behind a fresh guard.
func redisDown(t *testing.T) map[string]func(t *testing.T, c ports.Clock) (*redis.Client, *redisguard.Guard) {
	clientFor := func(t *testing.T, addr string) *redis.Client {
		client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond,
			ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, PoolTimeout: 100 * time.Millisecond, MaxRetries: -1})
		t.Cleanup(func() { _ = client.Close() })
		return client
	}
	guard := func(c ports.Clock) *redisguard.Guard {
		return redisguard.New(c, time.Hour, zap.NewNop(), prometheus.NewRegistry())
	}
	return map[string]func(t *testing.T, c ports.Clock) (*redis.Client, *redisguard.Guard){
		"refused": func(t *testing.T, c ports.Clock) (*redis.Client, *redisguard.Guard) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			_ = ln.Close()
			return clientFor(t, addr), guard(c)
		},
		"blackholed": func(t *testing.T, c ports.Clock) (*redis.Client, *redisguard.Guard) {
			real := testenv.RedisClient(t) // skips without TEST_REDIS_URL
			p := testenv.StartProxy(t, real.Options().Addr)
			p.Blackhole()
			return clientFor(t, p.Addr()), guard(c)
		},
	}
}

func TestGuardedCacheWithRedisDown(t *testing.T) {
	for name, down := range redisDown(t) {
		t.Run(name, func(t *testing.T) {
			client, g := down(t, clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
			conformance.RunCacheWithoutBackend(t, cache.NewGuarded(cache.NewRedis(client, "unused:"), g))
		})
	}
}

func TestGuardedCacheWithRedisUp(t *testing.T) {
	client := testenv.RedisClient(t)
	prefix := testenv.RedisKeyPrefix(t, client, "guarded-cache")
	conformance.RunCache(t, func(t *testing.T) (ports.Cache, func(time.Duration)) {
		g := redisguard.New(clock.System{}, time.Second, zap.NewNop(), prometheus.NewRegistry())
		return cache.NewGuarded(cache.NewRedis(testenv.RedisClient(t), prefix), g), nil
	})
}
