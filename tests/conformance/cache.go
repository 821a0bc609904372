package conformance

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

// NewCache builds a cache for one subtest. advance moves the cache's clock
// forward; it is nil for a cache whose expiries follow a clock the test
// cannot move (such as Redis's own), and the suite then waits for a short
// expiry, polling with a deadline.
type NewCache func(t *testing.T) (c ports.Cache, advance func(time.Duration))

// RunCache checks that a ports.Cache stores, overwrites, deletes and expires
// values, and answers Ping. Every subtest gets its own cache and keys, so they
// run in parallel.
func RunCache(t *testing.T, newCache NewCache) {
	t.Helper()
	ctx := context.Background()
	setup := func(t *testing.T) (ports.Cache, func(time.Duration)) {
		t.Helper()
		t.Parallel()
		return newCache(t)
	}

	t.Run("missing key is a miss", func(t *testing.T) {
		c, _ := setup(t)
		v, ok, err := c.Get(ctx, uniqueKey("missing"))
		if err != nil || ok || v != nil {
			t.Fatalf("Get of a missing key = (%q, %v, %v), want (nil, false, nil)", v, ok, err)
		}
	})

	t.Run("set then get", func(t *testing.T) {
		c, _ := setup(t)
		key := uniqueKey("set")
		mustSet(t, c, key, []byte("hello"), time.Minute)
		expectHit(t, c, key, []byte("hello"))
	})

	t.Run("empty value is a hit", func(t *testing.T) {
		c, _ := setup(t)
		key := uniqueKey("empty")
		mustSet(t, c, key, []byte{}, time.Minute)
		expectHit(t, c, key, []byte{})
	})

	t.Run("binary value survives", func(t *testing.T) {
		c, _ := setup(t)
		key := uniqueKey("binary")
		value := []byte{0, 1, 2, 0xff, '\n', 0}
		mustSet(t, c, key, value, time.Minute)
		expectHit(t, c, key, value)
	})

	t.Run("caller's slices are not shared", func(t *testing.T) {
		c, _ := setup(t)
		key := uniqueKey("copy")
		value := []byte("abc")
		mustSet(t, c, key, value, time.Minute)
		value[0] = 'X'
		got := expectHit(t, c, key, []byte("abc"))
		got[1] = 'Y'
		expectHit(t, c, key, []byte("abc"))
	})

	t.Run("set overwrites", func(t *testing.T) {
		c, _ := setup(t)
		key := uniqueKey("overwrite")
		mustSet(t, c, key, []byte("first"), time.Minute)
		mustSet(t, c, key, []byte("second"), time.Minute)
		expectHit(t, c, key, []byte("second"))
	})

	t.Run("keys are independent", func(t *testing.T) {
		c, _ := setup(t)
		a, b := uniqueKey("a"), uniqueKey("b")
		mustSet(t, c, a, []byte("A"), time.Minute)
		mustSet(t, c, b, []byte("B"), time.Minute)
		expectHit(t, c, a, []byte("A"))
		expectHit(t, c, b, []byte("B"))
		if err := c.Delete(ctx, a); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		expectMiss(t, c, a)
		expectHit(t, c, b, []byte("B"))
	})

	t.Run("delete", func(t *testing.T) {
		c, _ := setup(t)
		key := uniqueKey("delete")
		mustSet(t, c, key, []byte("v"), time.Minute)
		if err := c.Delete(ctx, key); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		expectMiss(t, c, key)
		if err := c.Delete(ctx, key); err != nil {
			t.Fatalf("Delete of a missing key: %v", err)
		}
	})

	t.Run("entries expire after their ttl", func(t *testing.T) {
		c, advance := setup(t)
		short, long := uniqueKey("short"), uniqueKey("long")
		if advance != nil {
			mustSet(t, c, short, []byte("s"), time.Minute)
			mustSet(t, c, long, []byte("l"), time.Hour)
			advance(time.Minute - time.Second)
			expectHit(t, c, short, []byte("s"))
			advance(time.Second)
			expectMiss(t, c, short)
			expectHit(t, c, long, []byte("l"))
			advance(time.Hour)
			expectMiss(t, c, long)
			return
		}
		const ttl = 200 * time.Millisecond
		mustSet(t, c, long, []byte("l"), time.Hour)
		set := time.Now()
		mustSet(t, c, short, []byte("s"), ttl)
		v, ok, err := c.Get(ctx, short)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		// A slow machine may take longer than the ttl to get here; only a
		// miss well inside the ttl is wrong.
		if !ok && time.Since(set) < ttl/2 {
			t.Fatalf("miss %s after setting a %s ttl", time.Since(set), ttl)
		}
		if ok && !bytes.Equal(v, []byte("s")) {
			t.Fatalf("Get = %q, want %q", v, "s")
		}
		deadline := time.Now().Add(5 * time.Second)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			_, ok, err := c.Get(ctx, short)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("entry with a %s ttl still there after 5s", ttl)
			}
			<-tick.C
		}
		if elapsed := time.Since(set); elapsed < ttl {
			t.Fatalf("entry with a %s ttl gone after %s", ttl, elapsed)
		}
		expectHit(t, c, long, []byte("l"))
	})

	t.Run("ping", func(t *testing.T) {
		c, _ := setup(t)
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
}

func mustSet(t *testing.T, c ports.Cache, key string, value []byte, ttl time.Duration) {
	t.Helper()
	if err := c.Set(context.Background(), key, value, ttl); err != nil {
		t.Fatalf("Set(%s): %v", key, err)
	}
}

func expectHit(t *testing.T, c ports.Cache, key string, want []byte) []byte {
	t.Helper()
	v, ok, err := c.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	if !ok {
		t.Fatalf("Get(%s): miss, want %q", key, want)
	}
	if !bytes.Equal(v, want) {
		t.Fatalf("Get(%s) = %q, want %q", key, v, want)
	}
	return v
}

func expectMiss(t *testing.T, c ports.Cache, key string) {
	t.Helper()
	v, ok, err := c.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	if ok {
		t.Fatalf("Get(%s) = %q, want a miss", key, v)
	}
}
