// Package ratelimit owns the rate limiters behind ports.RateLimiter: one in
// process for a single instance (golang.org/x/time/rate), one in Redis whose
// budget every instance sharing the Redis database draws from
// (github.com/go-redis/redis_rate, a Lua script that runs on Redis's clock).
//
// Both apply the generic cell rate algorithm: a budget of limit requests
// that refills evenly, one request every window/limit. At most limit
// requests pass at once, and a span of one window passes at most limit plus
// what refills during it; a fixed window let twice the limit through in a
// moment around its edge.
package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

func checkArgs(limit int, size time.Duration) error {
	if size <= 0 {
		return fmt.Errorf("ratelimit: window must be positive, got %s", size)
	}
	if limit < 0 {
		return fmt.Errorf("ratelimit: limit must not be negative, got %d", limit)
	}
	return nil
}

func checkWindow(size time.Duration) error {
	if size <= 0 {
		return errors.New("ratelimit: window must be positive")
	}
	return nil
}

// nothingAllowed is the answer for a limit of zero: the budget is always
// empty, so there is no refill to wait for; the caller is told to come back
// after a window, as it would for a spent budget.
func nothingAllowed(size time.Duration) ports.Decision {
	return ports.Decision{RetryAfter: size}
}

// tokenSlack absorbs the rounding of float arithmetic on the budget, so
// that a budget refilled to exactly one request counts as one.
const tokenSlack = 1e-6

// decide turns where a key stands into an answer: allowed is the verdict,
// and untilFull how long the budget of limit requests per size takes to
// refill completely, after this request if it was counted.
func decide(allowed bool, limit int, size time.Duration, untilFull time.Duration) ports.Decision {
	interval := size.Seconds() / float64(limit) // one request refills in this
	left := float64(limit) - untilFull.Seconds()/interval
	d := ports.Decision{
		Allowed:   allowed,
		Remaining: max(int(math.Floor(left+tokenSlack)), 0),
		Reset:     max(untilFull, 0),
	}
	if !allowed {
		d.Remaining = 0
		d.RetryAfter = max(duration((1-left)*interval), time.Microsecond)
	}
	return d
}

// duration turns seconds computed in floating point into a duration rounded
// up to the microsecond, ignoring a nanosecond of rounding error, so that a
// caller who waits that long finds what was promised.
func duration(seconds float64) time.Duration {
	return time.Duration(math.Ceil(seconds*1e6-1e-3)) * time.Microsecond
}
