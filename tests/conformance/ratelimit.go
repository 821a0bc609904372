// Package conformance owns one suite per port, exported as Run... functions
// so that every adapter, this module's and any written elsewhere, is held to
// the same behaviour. An adapter is done when it passes its port's suite.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/ports"
)

// NewRateLimiter builds a limiter whose windows follow c. Limiters built by
// one factory must share a backend when the adapter has one to share.
type NewRateLimiter func(t *testing.T, c ports.Clock) ports.RateLimiter

// rateLimitWindow is long enough that no subtest's window ends by itself
// while it runs, for a backend that also expires keys on its own clock.
const rateLimitWindow = time.Minute

// suiteStart is on a window boundary of every window the suites use, so that a
// subtest starts with a whole window ahead of it.
var suiteStart = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// uniqueKey names a key no other run against the same backend uses.
func uniqueKey(name string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "conformance:" + name + ":" + hex.EncodeToString(b)
}

// RunRateLimiter checks that a ports.RateLimiter counts per key in fixed
// windows of the clock it is given. Every subtest gets its own fake clock and
// limiter, so they run in parallel.
func RunRateLimiter(t *testing.T, newLimiter NewRateLimiter) {
	t.Helper()
	ctx := context.Background()
	setup := func(t *testing.T) (ports.RateLimiter, *clock.Fake) {
		t.Helper()
		t.Parallel()
		c := clock.NewFake(suiteStart)
		return newLimiter(t, c), c
	}

	t.Run("limit is honoured and remaining decreases", func(t *testing.T) {
		l, _ := setup(t)
		key := uniqueKey("limit")
		for i := 1; i <= 3; i++ {
			d := mustHit(t, l, key, 3)
			if !d.Allowed || d.Remaining != 3-i {
				t.Fatalf("hit %d of 3: %+v, want allowed with %d remaining", i, d, 3-i)
			}
			if d.RetryAfter != 0 {
				t.Fatalf("hit %d of 3: allowed but RetryAfter = %s", i, d.RetryAfter)
			}
		}
		for i := 4; i <= 5; i++ {
			d := mustHit(t, l, key, 3)
			if d.Allowed || d.Remaining != 0 {
				t.Fatalf("hit %d of 3: %+v, want refused with 0 remaining", i, d)
			}
			if d.RetryAfter <= 0 || d.RetryAfter > rateLimitWindow {
				t.Fatalf("hit %d of 3: RetryAfter = %s, want in (0, %s]", i, d.RetryAfter, rateLimitWindow)
			}
		}
	})

	t.Run("reset tells when the window ends, allowed or not", func(t *testing.T) {
		l, c := setup(t)
		key := uniqueKey("reset")
		c.Advance(15 * time.Second) // the suite starts on a window boundary
		for i := range 3 {
			d := mustHit(t, l, key, 2)
			if d.Reset != rateLimitWindow-15*time.Second {
				t.Fatalf("hit %d: Reset = %s, want the %s left of the window", i+1, d.Reset, rateLimitWindow-15*time.Second)
			}
		}
		if d := mustCheck(t, l, key, 2); d.Reset != rateLimitWindow-15*time.Second {
			t.Fatalf("Check: Reset = %s, want %s", d.Reset, rateLimitWindow-15*time.Second)
		}
	})

	t.Run("retry after counts down with the clock", func(t *testing.T) {
		l, c := setup(t)
		key := uniqueKey("countdown")
		mustHit(t, l, key, 1)
		first := mustHit(t, l, key, 1)
		c.Advance(10 * time.Second)
		second := mustHit(t, l, key, 1)
		if first.Allowed || second.Allowed {
			t.Fatalf("over the limit but allowed: %+v, %+v", first, second)
		}
		if got := first.RetryAfter - second.RetryAfter; got != 10*time.Second {
			t.Fatalf("RetryAfter went from %s to %s after 10s, want 10s less", first.RetryAfter, second.RetryAfter)
		}
	})

	t.Run("check does not count", func(t *testing.T) {
		l, _ := setup(t)
		key := uniqueKey("check")
		for range 5 {
			d := mustCheck(t, l, key, 2)
			if !d.Allowed || d.Remaining != 2 {
				t.Fatalf("check of an unused key: %+v, want allowed with 2 remaining", d)
			}
		}
		if d := mustHit(t, l, key, 2); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("first hit after checks: %+v, want allowed with 1 remaining", d)
		}
		if d := mustCheck(t, l, key, 2); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("check after one hit: %+v, want allowed with 1 remaining", d)
		}
		mustHit(t, l, key, 2)
		d := mustCheck(t, l, key, 2)
		if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > rateLimitWindow {
			t.Fatalf("check of a used-up key: %+v, want refused, 0 remaining, RetryAfter in (0, %s]", d, rateLimitWindow)
		}
	})

	t.Run("keys are independent", func(t *testing.T) {
		l, _ := setup(t)
		a, b := uniqueKey("a"), uniqueKey("b")
		mustHit(t, l, a, 1)
		if d := mustHit(t, l, a, 1); d.Allowed {
			t.Fatalf("second hit on %s with limit 1 allowed", a)
		}
		if d := mustHit(t, l, b, 1); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("first hit on another key: %+v, want allowed", d)
		}
	})

	t.Run("a new window starts afresh", func(t *testing.T) {
		l, c := setup(t)
		key := uniqueKey("window")
		mustHit(t, l, key, 2)
		mustHit(t, l, key, 2)
		refused := mustHit(t, l, key, 2)
		if refused.Allowed {
			t.Fatalf("third hit with limit 2 allowed")
		}
		c.Advance(refused.RetryAfter - time.Second)
		if d := mustHit(t, l, key, 2); d.Allowed {
			t.Fatalf("a second before the window ends: %+v, want refused", d)
		}
		c.Advance(time.Second)
		if d := mustHit(t, l, key, 2); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("first hit of the next window: %+v, want allowed with 1 remaining", d)
		}
		if d := mustCheck(t, l, key, 2); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("check in the next window: %+v, want allowed with 1 remaining", d)
		}
	})

	t.Run("windows of different lengths count apart", func(t *testing.T) {
		l, _ := setup(t)
		key := uniqueKey("lengths")
		if _, err := l.Hit(ctx, key, 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		d, err := l.Hit(ctx, key, 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			t.Fatalf("first hit in an hour window after one in a minute window refused: %+v", d)
		}
	})

	t.Run("reset forgets the count", func(t *testing.T) {
		l, _ := setup(t)
		key, other := uniqueKey("reset"), uniqueKey("kept")
		mustHit(t, l, key, 1)
		mustHit(t, l, other, 1)
		if d := mustHit(t, l, key, 1); d.Allowed {
			t.Fatalf("second hit with limit 1 allowed")
		}
		if err := l.Reset(ctx, key, rateLimitWindow); err != nil {
			t.Fatalf("Reset: %v", err)
		}
		if d := mustCheck(t, l, key, 1); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("check after reset: %+v, want allowed with 1 remaining", d)
		}
		if d := mustHit(t, l, key, 1); !d.Allowed {
			t.Fatalf("hit after reset: %+v, want allowed", d)
		}
		if d := mustCheck(t, l, other, 1); d.Allowed {
			t.Fatalf("reset of one key cleared another: %+v", d)
		}
		if err := l.Reset(ctx, uniqueKey("never-used"), rateLimitWindow); err != nil {
			t.Fatalf("Reset of an unused key: %v", err)
		}
	})

	t.Run("concurrent hits allow exactly the limit", func(t *testing.T) {
		l, _ := setup(t)
		key := uniqueKey("concurrent")
		if n := concurrentHits(t, []ports.RateLimiter{l}, key, 100, 10); n != 10 {
			t.Fatalf("100 concurrent hits with limit 10: %d allowed, want 10", n)
		}
	})
}

// RunSharedRateLimiter checks that limiters built by newLimiter on one backend
// draw from one budget per key, as instances of the service behind a load
// balancer must. Run it only for adapters with a shared backend.
func RunSharedRateLimiter(t *testing.T, newLimiter NewRateLimiter) {
	t.Helper()
	ctx := context.Background()
	setup := func(t *testing.T) (a, b ports.RateLimiter) {
		t.Helper()
		t.Parallel()
		c := clock.NewFake(suiteStart)
		return newLimiter(t, c), newLimiter(t, c)
	}

	t.Run("one budget across instances", func(t *testing.T) {
		a, b := setup(t)
		key := uniqueKey("shared")
		mustHit(t, a, key, 3)
		if d := mustHit(t, b, key, 3); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("second hit, on the other instance: %+v, want allowed with 1 remaining", d)
		}
		mustHit(t, a, key, 3)
		if d := mustHit(t, b, key, 3); d.Allowed {
			t.Fatalf("fourth hit with limit 3, on the other instance: %+v, want refused", d)
		}
		if d := mustCheck(t, a, key, 3); d.Allowed {
			t.Fatalf("check on the first instance after the budget was used: %+v, want refused", d)
		}
	})

	t.Run("reset on one instance is seen by the other", func(t *testing.T) {
		a, b := setup(t)
		key := uniqueKey("shared-reset")
		mustHit(t, a, key, 1)
		if err := b.Reset(ctx, key, rateLimitWindow); err != nil {
			t.Fatalf("Reset: %v", err)
		}
		if d := mustHit(t, a, key, 1); !d.Allowed {
			t.Fatalf("hit after the other instance reset the key: %+v, want allowed", d)
		}
	})

	t.Run("concurrent hits on two instances allow exactly the limit", func(t *testing.T) {
		a, b := setup(t)
		key := uniqueKey("shared-concurrent")
		if n := concurrentHits(t, []ports.RateLimiter{a, b}, key, 100, 10); n != 10 {
			t.Fatalf("100 concurrent hits on two instances with limit 10: %d allowed, want 10", n)
		}
	})
}

func concurrentHits(t *testing.T, limiters []ports.RateLimiter, key string, hits, limit int) int {
	t.Helper()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, hits)
	start := make(chan struct{})
	for i := range hits {
		l := limiters[i%len(limiters)]
		wg.Go(func() {
			<-start
			d, err := l.Hit(context.Background(), key, limit, rateLimitWindow)
			if err != nil {
				errs <- err
				return
			}
			if d.Allowed {
				allowed.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Hit: %v", err)
	}
	return int(allowed.Load())
}

func mustHit(t *testing.T, l ports.RateLimiter, key string, limit int) ports.Decision {
	t.Helper()
	d, err := l.Hit(context.Background(), key, limit, rateLimitWindow)
	if err != nil {
		t.Fatalf("Hit(%s): %v", key, err)
	}
	return d
}

func mustCheck(t *testing.T, l ports.RateLimiter, key string, limit int) ports.Decision {
	t.Helper()
	d, err := l.Check(context.Background(), key, limit, rateLimitWindow)
	if err != nil {
		t.Fatalf("Check(%s): %v", key, err)
	}
	return d
}
