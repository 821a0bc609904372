package conformance

import (
	"context"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/clock"
)

// RunRateLimiterWithoutBackend checks a limiter whose backend does not
// answer and that must then count by itself: no call fails, the budget
// still holds, and a new window starts afresh. newLimiter's limiter must
// reach the unanswering backend.
func RunRateLimiterWithoutBackend(t *testing.T, newLimiter NewRateLimiter) {
	ctx := context.Background()
	c := clock.NewFake(suiteStart)
	l := newLimiter(t, c)
	key := uniqueKey("down")
	const limit = 3
	for i := 1; i <= limit+2; i++ {
		d, err := l.Hit(ctx, key, limit, rateLimitWindow)
		if err != nil {
			t.Fatalf("hit %d with the backend down: %v", i, err)
		}
		if want := i <= limit; d.Allowed != want {
			t.Fatalf("hit %d of %d allowed = %v, want %v", i, limit, d.Allowed, want)
		}
		if !d.Allowed && (d.RetryAfter <= 0 || d.RetryAfter > rateLimitWindow) {
			t.Fatalf("denied hit %d: RetryAfter %s, want within the window", i, d.RetryAfter)
		}
	}
	if d, err := l.Check(ctx, key, limit, rateLimitWindow); err != nil || d.Allowed {
		t.Fatalf("Check with the budget spent = %+v, %v; want denied without error", d, err)
	}
	c.Advance(rateLimitWindow)
	if d, err := l.Hit(ctx, key, limit, rateLimitWindow); err != nil || !d.Allowed || d.Remaining != limit-1 {
		t.Fatalf("first hit of the next window = %+v, %v; want allowed with %d left", d, err, limit-1)
	}
	if err := l.Reset(ctx, key, rateLimitWindow); err != nil {
		t.Fatalf("Reset with the backend down: %v", err)
	}
	if d, err := l.Check(ctx, key, limit, rateLimitWindow); err != nil || d.Remaining != limit {
		t.Fatalf("Check after Reset = %+v, %v; want the whole budget", d, err)
	}
}
