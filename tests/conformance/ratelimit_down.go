package conformance

import (
	"context"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/clock"
)

// RunRateLimiterWithoutBackend checks a limiter whose backend does not
// answer and that must then count by itself, on the clock it is given: no
// call fails, the budget still holds, and it refills. newLimiter's limiter
// must reach the unanswering backend.
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
		if !d.Allowed && d.RetryAfter != rateLimitWindow/limit {
			t.Fatalf("denied hit %d: RetryAfter %s, want the %s one request takes to refill", i, d.RetryAfter, rateLimitWindow/limit)
		}
	}
	if d, err := l.Check(ctx, key, limit, rateLimitWindow); err != nil || d.Allowed {
		t.Fatalf("Check with the budget spent = %+v, %v; want denied without error", d, err)
	}
	c.Advance(rateLimitWindow / limit)
	if d, err := l.Hit(ctx, key, limit, rateLimitWindow); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("hit once one request refilled = %+v, %v; want allowed with nothing left", d, err)
	}
	c.Advance(rateLimitWindow)
	if d, err := l.Hit(ctx, key, limit, rateLimitWindow); err != nil || !d.Allowed || d.Remaining != limit-1 {
		t.Fatalf("hit once the whole budget refilled = %+v, %v; want allowed with %d left", d, err, limit-1)
	}
	if err := l.Reset(ctx, key, rateLimitWindow); err != nil {
		t.Fatalf("Reset with the backend down: %v", err)
	}
	if d, err := l.Check(ctx, key, limit, rateLimitWindow); err != nil || d.Remaining != limit {
		t.Fatalf("Check after Reset = %+v, %v; want the whole budget", d, err)
	}
}
