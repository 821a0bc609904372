package ratelimit_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/ratelimit"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// TestMain fails the run when a Redis test leaves keys behind.
func TestMain(m *testing.M) { os.Exit(testenv.RunCheckingRedisKeys(m)) }

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestLocalForgetsFullBudgets(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(start)
	l := ratelimit.NewLocal(c)
	for i := range 5000 {
		if _, err := l.Hit(ctx, fmt.Sprintf("ip:%d", i), 5, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Len(); n != 5000 {
		t.Fatalf("budgets held while they refill = %d, want 5000", n)
	}
	// One request of 5 per minute refills in 12s, so every budget is whole
	// again and as good as unknown well before the sweep a minute on.
	c.Advance(time.Minute)
	if _, err := l.Hit(ctx, "fresh", 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := l.Len(); n != 1 {
		t.Fatalf("budgets held after every other one refilled = %d, want 1", n)
	}
}

func TestLocalFloodOfKeysStaysBounded(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(start)
	l := ratelimit.NewLocal(c)
	// A second per key and a budget that refills in a fifth of a second: at
	// any time only one key's budget is short, so memory must not follow
	// the total number of keys.
	peak := 0
	for i := range 20000 {
		if _, err := l.Hit(ctx, fmt.Sprintf("ip:%d", i), 5, time.Second); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
		peak = max(peak, l.Len())
	}
	if peak > 2048 {
		t.Fatalf("peak budgets = %d for one short budget at a time", peak)
	}
}

func TestRejectsBadArguments(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(start)
	limiters := map[string]ports.RateLimiter{"local": ratelimit.NewLocal(c), "redis": ratelimit.NewRedis(nil, "unused:")}
	for name, l := range limiters {
		if _, err := l.Hit(ctx, "k", 1, 0); err == nil {
			t.Errorf("%s: Hit with a zero window did not fail", name)
		}
		if _, err := l.Check(ctx, "k", -1, time.Minute); err == nil {
			t.Errorf("%s: Check with a negative limit did not fail", name)
		}
		if err := l.Reset(ctx, "k", -time.Second); err == nil {
			t.Errorf("%s: Reset with a negative window did not fail", name)
		}
	}
}

func TestRedisKeepsItsBudgetsUnderThePrefix(t *testing.T) {
	client := testenv.RedisClient(t)
	ctx := context.Background()
	prefix := testenv.RedisKeyPrefix(t, client, "ratelimit-ttl")
	l := ratelimit.NewRedis(client, prefix)
	if _, err := l.Hit(ctx, "k", 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := prefix + "rate:k:1m0s"; len(keys) != 1 || keys[0] != want {
		t.Fatalf("keys under the prefix = %v, want only %q (prefix, redis_rate's, key, window)", keys, want)
	}
	ttl, err := client.PTTL(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	// One request of 5 per minute refills in 12s, after which the budget
	// is whole and its key is not needed.
	if ttl <= 0 || ttl > 12*time.Second {
		t.Fatalf("budget expires in %s, want once it has refilled, within 12s", ttl)
	}
	if err := l.Reset(ctx, "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Exists(ctx, keys[0]).Result(); err != nil || n != 0 {
		t.Fatalf("key left after Reset: %d, %v", n, err)
	}
	if _, err := l.Hit(ctx, "k", 5, 0); err == nil {
		t.Fatal("Hit with a zero window did not fail")
	}
}
