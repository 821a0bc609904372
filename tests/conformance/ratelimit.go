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
	"github.com/profilesvc/profilesvc/tests/poll"
)

// NewRateLimiter builds a limiter whose budgets refill by c, or by its
// backend's clock for an adapter that keeps time there (Redis). Limiters
// built by one factory must share a backend when the adapter has one to
// share.
type NewRateLimiter func(t *testing.T, c ports.Clock) ports.RateLimiter

// rateLimitWindow is long enough that a budget refills by a negligible
// fraction of a request while a subtest runs, for a backend that keeps
// time by its own clock.
const rateLimitWindow = time.Minute

// suiteStart is on a boundary of every window the suites use, as fixed
// windows would have numbered them, so that the edge-burst tests straddle
// what used to be a window's end.
var suiteStart = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// uniqueKey names a key no other run against the same backend uses.
func uniqueKey(name string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "conformance:" + name + ":" + hex.EncodeToString(b)
}

// RunRateLimiter checks that a ports.RateLimiter keeps a budget per key of
// limit requests per window, whatever clock it keeps time by: on the suite's
// fake clock, which these subtests never advance, or on its backend's, in
// which a subtest lasts a negligible part of rateLimitWindow. Every subtest
// gets its own clock and limiter, so they run in parallel.
func RunRateLimiter(t *testing.T, newLimiter NewRateLimiter) {
	t.Helper()
	ctx := context.Background()
	setup := func(t *testing.T) ports.RateLimiter {
		t.Helper()
		t.Parallel()
		return newLimiter(t, clock.NewFake(suiteStart))
	}
	interval := rateLimitWindow / 3 // one request of a budget of 3 refills in this

	t.Run("limit is honoured and remaining decreases", func(t *testing.T) {
		l := setup(t)
		key := uniqueKey("limit")
		for i := 1; i <= 3; i++ {
			d := mustHit(t, l, key, 3)
			if !d.Allowed || d.Remaining != 3-i {
				t.Fatalf("hit %d of 3: %+v, want allowed with %d remaining", i, d, 3-i)
			}
			if d.RetryAfter != 0 {
				t.Fatalf("hit %d of 3: allowed but RetryAfter = %s", i, d.RetryAfter)
			}
			// The budget is whole again once the i requests taken have
			// refilled, less the little that refilled while the hits ran.
			if full := time.Duration(i) * interval; d.Reset > full || d.Reset < full-time.Second {
				t.Fatalf("hit %d of 3: Reset = %s, want the %s that %d requests take to refill", i, d.Reset, full, i)
			}
		}
		for i := 4; i <= 5; i++ {
			d := mustHit(t, l, key, 3)
			if d.Allowed || d.Remaining != 0 {
				t.Fatalf("hit %d of 3: %+v, want refused with 0 remaining", i, d)
			}
			// One request refills in a third of the window: the refused
			// caller waits for that, not for the whole window.
			if d.RetryAfter <= 0 || d.RetryAfter > interval {
				t.Fatalf("hit %d of 3: RetryAfter = %s, want in (0, %s]", i, d.RetryAfter, interval)
			}
			if d.Reset <= 2*interval || d.Reset > rateLimitWindow {
				t.Fatalf("hit %d of 3: Reset = %s, want in (%s, %s]: a refusal takes nothing", i, d.Reset, 2*interval, rateLimitWindow)
			}
		}
	})

	t.Run("check does not count", func(t *testing.T) {
		l := setup(t)
		key := uniqueKey("check")
		for range 5 {
			d := mustCheck(t, l, key, 2)
			if !d.Allowed || d.Remaining != 2 || d.Reset != 0 {
				t.Fatalf("check of an unused key: %+v, want allowed with 2 remaining, whole now", d)
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
		if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > rateLimitWindow/2 {
			t.Fatalf("check of a used-up key: %+v, want refused, 0 remaining, RetryAfter in (0, %s]", d, rateLimitWindow/2)
		}
	})

	t.Run("keys are independent", func(t *testing.T) {
		l := setup(t)
		a, b := uniqueKey("a"), uniqueKey("b")
		mustHit(t, l, a, 1)
		if d := mustHit(t, l, a, 1); d.Allowed {
			t.Fatalf("second hit on %s with limit 1 allowed", a)
		}
		if d := mustHit(t, l, b, 1); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("first hit on another key: %+v, want allowed", d)
		}
	})

	t.Run("windows of different lengths count apart", func(t *testing.T) {
		l := setup(t)
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

	t.Run("reset gives the whole budget back", func(t *testing.T) {
		l := setup(t)
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

	t.Run("a limit of zero allows nothing", func(t *testing.T) {
		l := setup(t)
		key := uniqueKey("zero")
		for _, d := range []ports.Decision{mustHit(t, l, key, 0), mustCheck(t, l, key, 0)} {
			if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 {
				t.Fatalf("limit 0: %+v, want refused with a RetryAfter", d)
			}
		}
	})

	t.Run("concurrent hits allow exactly the limit", func(t *testing.T) {
		l := setup(t)
		key := uniqueKey("concurrent")
		if n := concurrentHits(t, []ports.RateLimiter{l}, key, 100, 10); n != 10 {
			t.Fatalf("100 concurrent hits with limit 10: %d allowed, want 10", n)
		}
	})
}

// RunClockedRateLimiter checks, on the fake clock the limiter is given,
// that a budget refills evenly: no burst at what a fixed window would call
// its edge, one request back after RetryAfter, the whole budget after
// Reset.
func RunClockedRateLimiter(t *testing.T, newLimiter NewRateLimiter) {
	t.Helper()
	setup := func(t *testing.T) (ports.RateLimiter, *clock.Fake) {
		t.Helper()
		t.Parallel()
		c := clock.NewFake(suiteStart)
		return newLimiter(t, c), c
	}

	t.Run("no double burst across a window's edge", func(t *testing.T) {
		l, c := setup(t)
		key := uniqueKey("edge")
		const limit = 5
		c.Advance(rateLimitWindow - time.Second) // the last second of a fixed window
		first := hits(t, l, key, limit, limit)
		c.Advance(time.Second) // the first instant of the next one
		second := hits(t, l, key, limit, limit)
		if first != limit || second != 0 {
			t.Fatalf("%d then %d of %d allowed a second apart across a window's edge, want %d then 0 (a fixed window allows %d in that second)",
				first, second, limit, limit, 2*limit)
		}
		// What refills is one request per window/limit: 12s here.
		c.Advance(rateLimitWindow/limit - time.Second)
		if n := hits(t, l, key, limit, limit); n != 1 {
			t.Fatalf("%d allowed one refill interval after the burst, want 1", n)
		}
	})

	t.Run("at most the limit plus what refills in any span", func(t *testing.T) {
		l, c := setup(t)
		key := uniqueKey("spans")
		const limit, step = 4, time.Second
		interval := rateLimitWindow / limit
		// A caller that tries 3 times a second for 3 windows.
		var allowed []time.Duration
		for at := time.Duration(0); at < 3*rateLimitWindow; at += step {
			for range 3 {
				if mustHit(t, l, key, limit).Allowed {
					allowed = append(allowed, at)
				}
			}
			c.Advance(step)
		}
		for i, from := range allowed {
			for span := step; span <= rateLimitWindow; span += step {
				n := 0
				for _, at := range allowed[i:] {
					if at < from+span {
						n++
					}
				}
				if most := limit + int((span-step)/interval); n > most {
					t.Fatalf("%d allowed in the %s from %s, want at most %d: the burst plus what refills", n, span, from, most)
				}
			}
		}
		if want := limit + int((3*rateLimitWindow-step)/interval); len(allowed) != want {
			t.Fatalf("%d allowed in three windows, want %d: the burst, then one per %s", len(allowed), want, interval)
		}
	})

	t.Run("one request is back after RetryAfter", func(t *testing.T) {
		l, c := setup(t)
		key := uniqueKey("refill")
		c.Advance(7 * time.Second)
		hits(t, l, key, 3, 3)
		refused := mustHit(t, l, key, 3)
		if refused.Allowed || refused.RetryAfter != rateLimitWindow/3 {
			t.Fatalf("fourth hit of 3: %+v, want refused for %s", refused, rateLimitWindow/3)
		}
		c.Advance(refused.RetryAfter - time.Millisecond)
		if d := mustCheck(t, l, key, 3); d.Allowed {
			t.Fatalf("a millisecond before RetryAfter: %+v, want refused", d)
		}
		c.Advance(time.Millisecond)
		if d := mustHit(t, l, key, 3); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("at RetryAfter: %+v, want allowed, and only one", d)
		}
		if d := mustHit(t, l, key, 3); d.Allowed {
			t.Fatalf("second hit at RetryAfter: %+v, want refused", d)
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

	t.Run("reset tells when the budget is whole again", func(t *testing.T) {
		l, c := setup(t)
		key := uniqueKey("reset")
		c.Advance(15 * time.Second)
		for i := 1; i <= 2; i++ {
			if d := mustHit(t, l, key, 2); d.Reset != time.Duration(i)*rateLimitWindow/2 {
				t.Fatalf("hit %d of 2: Reset = %s, want %s", i, d.Reset, time.Duration(i)*rateLimitWindow/2)
			}
		}
		c.Advance(15 * time.Second)
		d := mustCheck(t, l, key, 2)
		if d.Reset != rateLimitWindow-15*time.Second || d.Remaining != 0 {
			t.Fatalf("15s after: %+v, want Reset %s and nothing left", d, rateLimitWindow-15*time.Second)
		}
		c.Advance(d.Reset)
		if d := mustCheck(t, l, key, 2); !d.Allowed || d.Remaining != 2 || d.Reset != 0 {
			t.Fatalf("after Reset: %+v, want the whole budget", d)
		}
	})
}

// RunRealTimeRateLimiter is RunClockedRateLimiter for an adapter that keeps
// time by its backend's clock (Redis): with a short window, in real time,
// polling until a refused caller is let in again.
func RunRealTimeRateLimiter(t *testing.T, newLimiter NewRateLimiter) {
	t.Helper()
	const limit, window = 3, 2 * time.Second
	interval := window / limit
	setup := func(t *testing.T) ports.RateLimiter {
		t.Helper()
		t.Parallel()
		return newLimiter(t, clock.NewFake(suiteStart))
	}

	t.Run("no double burst across a window's edge", func(t *testing.T) {
		l := setup(t)
		key := uniqueKey("edge")
		// A fixed window would have started every multiple of the window
		// since 1970: send the limit in the last tenth of one, the limit
		// again in the next.
		index := func() int64 { return time.Now().UnixNano() / int64(window) }
		poll.Until(t, "the last tenth of a window", func() bool {
			return time.Now().UnixNano()%int64(window) >= int64(window*9/10)
		})
		start, before := time.Now(), index()
		first := hitsWithin(t, l, key, limit, limit, window)
		poll.Until(t, "the next window", func() bool { return index() > before })
		second := hitsWithin(t, l, key, limit, limit, window)
		refilled := int(time.Since(start) / interval)
		if first != limit || second > refilled {
			t.Fatalf("%d then %d of %d allowed across a window's edge in %s, want %d then at most the %d refilled (a fixed window allows %d)",
				first, second, limit, time.Since(start), limit, refilled, 2*limit)
		}
	})

	t.Run("one request is back after RetryAfter", func(t *testing.T) {
		l := setup(t)
		key := uniqueKey("refill")
		hitsWithin(t, l, key, limit, limit, window)
		before := time.Now()
		refused := hitWithin(t, l, key, limit, window)
		if refused.Allowed || refused.RetryAfter <= 0 || refused.RetryAfter > interval {
			t.Fatalf("hit %d of %d: %+v, want refused for at most %s", limit+1, limit, refused, interval)
		}
		poll.Within(t, refused.RetryAfter+poll.Timeout, "the budget to allow a request again", func() bool {
			d, err := l.Check(context.Background(), key, limit, window)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			return d.Allowed
		})
		if waited := time.Since(before); waited < refused.RetryAfter {
			t.Fatalf("allowed again after %s, before the RetryAfter of %s", waited, refused.RetryAfter)
		}
		if d := hitWithin(t, l, key, limit, window); !d.Allowed {
			t.Fatalf("hit once Check allowed it: %+v", d)
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

// hits makes n hits on key in rateLimitWindow and returns how many were
// allowed.
func hits(t *testing.T, l ports.RateLimiter, key string, limit, n int) int {
	t.Helper()
	return hitsWithin(t, l, key, limit, n, rateLimitWindow)
}

func hitsWithin(t *testing.T, l ports.RateLimiter, key string, limit, n int, window time.Duration) int {
	t.Helper()
	allowed := 0
	for range n {
		if hitWithin(t, l, key, limit, window).Allowed {
			allowed++
		}
	}
	return allowed
}

func mustHit(t *testing.T, l ports.RateLimiter, key string, limit int) ports.Decision {
	t.Helper()
	return hitWithin(t, l, key, limit, rateLimitWindow)
}

func hitWithin(t *testing.T, l ports.RateLimiter, key string, limit int, window time.Duration) ports.Decision {
	t.Helper()
	d, err := l.Hit(context.Background(), key, limit, window)
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
