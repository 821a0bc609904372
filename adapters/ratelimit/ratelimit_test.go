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

func TestLocalDropsEndedWindows(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(start)
	l := ratelimit.NewLocal(c)
	for i := range 5000 {
		if _, err := l.Hit(ctx, fmt.Sprintf("ip:%d", i), 5, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Len(); n != 5000 {
		t.Fatalf("counters of the live window = %d, want 5000", n)
	}
	c.Advance(2 * time.Minute)
	if _, err := l.Hit(ctx, "fresh", 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := l.Len(); n != 1 {
		t.Fatalf("counters after every other window ended = %d, want 1", n)
	}
}

func TestLocalFloodOfKeysStaysBounded(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(start)
	l := ratelimit.NewLocal(c)
	// A second per key and a one-second window: at any time only one key's
	// window is live, so memory must not follow the total number of keys.
	peak := 0
	for i := range 20000 {
		if _, err := l.Hit(ctx, fmt.Sprintf("ip:%d", i), 5, time.Second); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
		peak = max(peak, l.Len())
	}
	if peak > 2048 {
		t.Fatalf("peak counters = %d for one live window at a time", peak)
	}
}

func TestRejectsBadArguments(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(start)
	limiters := map[string]ports.RateLimiter{"local": ratelimit.NewLocal(c)}
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

func TestRedisCounterExpiresWithItsWindow(t *testing.T) {
	client := testenv.RedisClient(t)
	ctx := context.Background()
	c := clock.NewFake(start.Add(20 * time.Second))
	prefix := testenv.RedisKeyPrefix(t, client, "ratelimit-ttl")
	l := ratelimit.NewRedis(client, c, prefix)
	if _, err := l.Hit(ctx, "k", 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("keys under the prefix = %v, want one", keys)
	}
	wantKey := fmt.Sprintf("%sk:%d", prefix, start.Unix()/60)
	if keys[0] != wantKey {
		t.Fatalf("key = %q, want %q (prefix, key, window index)", keys[0], wantKey)
	}
	ttl, err := client.PTTL(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	// 40s are left of the window; the counter may outlive it by a margin of
	// seconds, never by another window.
	if ttl < 39*time.Second || ttl > 50*time.Second {
		t.Fatalf("counter expires in %s, want just over the 40s left of its window", ttl)
	}
	if _, err := l.Hit(ctx, "k", 5, 0); err == nil {
		t.Fatal("Hit with a zero window did not fail")
	}
}
