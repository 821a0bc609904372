package conformance_test

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/redisguard"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// TestMain fails the run when a Redis suite of this package leaves keys
// behind.
func TestMain(m *testing.M) { os.Exit(testenv.RunCheckingRedisKeys(m)) }

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
