package cache_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/cache"
	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// TestMain fails the run when a Redis test leaves keys behind.
func TestMain(m *testing.M) { os.Exit(testenv.RunCheckingRedisKeys(m)) }

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestLocalStaysWithinCapacity(t *testing.T) {
	ctx := context.Background()
	l := cache.NewLocalWithCapacity(clock.NewFake(start), 1000)
	for i := range 10_000 {
		if err := l.Set(ctx, fmt.Sprint(i), []byte("v"), time.Hour); err != nil {
			t.Fatal(err)
		}
		if n := l.Len(); n > 1000 {
			t.Fatalf("after %d sets the cache holds %d entries, capacity 1000", i+1, n)
		}
	}
	// The newest entry is never the one dropped to make room for itself.
	if _, ok, _ := l.Get(ctx, "9999"); !ok {
		t.Fatal("the entry just set is missing")
	}
}

func TestLocalPrefersDroppingExpiredEntries(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(start)
	l := cache.NewLocalWithCapacity(c, 100)
	for i := range 50 {
		if err := l.Set(ctx, fmt.Sprint("live", i), []byte("v"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if err := l.Set(ctx, fmt.Sprint("short", i), []byte("v"), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(2 * time.Second)
	if err := l.Set(ctx, "new", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, ok, _ := l.Get(ctx, fmt.Sprint("live", i)); !ok {
			t.Fatalf("live entry %d dropped while expired ones could go", i)
		}
	}
	if n := l.Len(); n != 51 {
		t.Fatalf("entries = %d, want the 50 live ones and the new one", n)
	}
}

func TestLocalSweepsExpiredEntries(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(start)
	l := cache.NewLocal(c)
	for i := range 500 {
		if err := l.Set(ctx, fmt.Sprint(i), []byte("v"), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(2 * time.Minute)
	if err := l.Set(ctx, "new", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := l.Len(); n != 1 {
		t.Fatalf("entries = %d after every other entry expired, want 1", n)
	}
}

func TestNonPositiveTTLRefused(t *testing.T) {
	expectTTLRefused(t, cache.NewLocal(clock.NewFake(start)))
}

func TestRedisNonPositiveTTLRefused(t *testing.T) {
	client := testenv.RedisClient(t)
	prefix := testenv.RedisKeyPrefix(t, client, "cache-ttl")
	expectTTLRefused(t, cache.NewRedis(client, prefix))
	if n, err := client.Exists(context.Background(), prefix+"k").Result(); err != nil || n != 0 {
		t.Fatalf("a refused Set stored the key: exists = %d, %v", n, err)
	}
}

func expectTTLRefused(t *testing.T, c ports.Cache) {
	t.Helper()
	for _, ttl := range []time.Duration{0, -time.Second} {
		if err := c.Set(context.Background(), "k", []byte("v"), ttl); err == nil {
			t.Errorf("Set with ttl %s did not fail", ttl)
		}
	}
}
