package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/cache"
	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/redisguard"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// An invalidation that cannot reach Redis is not lost: the entry is not
// served meanwhile, and it is deleted from Redis once Redis answers again,
// before anything else is done there.
func TestGuardedDeleteReachesRedisWhenItIsBack(t *testing.T) {
	real := testenv.RedisClient(t)
	prefix := testenv.RedisKeyPrefix(t, real, "guarded-delete")
	proxy := testenv.StartProxy(t, real.Options().Addr)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, PoolTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	c := clock.NewFake(start)
	g := redisguard.New(c, time.Second, zap.NewNop(), prometheus.NewRegistry())
	cc := cache.NewGuarded(cache.NewRedis(client, prefix), g)
	ctx := context.Background()

	if err := cc.Set(ctx, "apikey:1", []byte("verified"), time.Minute); err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole()
	if err := cc.Delete(ctx, "apikey:1"); err != nil {
		t.Fatalf("Delete with Redis blackholed: %v, want it kept for later", err)
	}
	proxy.Forward()
	c.Advance(time.Second)
	if _, hit, err := cc.Get(ctx, "apikey:1"); hit || err != nil {
		t.Fatalf("Get after Redis came back: hit %v, %v; want the deleted entry gone", hit, err)
	}
	if n, err := real.Exists(ctx, prefix+"apikey:1").Result(); err != nil || n != 0 {
		t.Fatalf("the entry is still in Redis (%d, %v)", n, err)
	}
}
