// Package ratelimit owns the fixed-window rate limiters behind
// ports.RateLimiter: one in process for a single instance, one in Redis whose
// budget every instance sharing the Redis database draws from.
//
// Both number windows as floor(now / window) on the injected clock, so a
// window starts at the same instant on every instance and a fake clock drives
// window resets in tests.
package ratelimit

import (
	"errors"
	"fmt"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

// window locates the fixed window containing now: its index and its end.
func window(now time.Time, size time.Duration) (index int64, end time.Time) {
	n := now.UnixNano()
	index = n / int64(size)
	if n%int64(size) < 0 { // floor, not truncation, before 1970
		index--
	}
	return index, time.Unix(0, (index+1)*int64(size))
}

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

// afterHit turns the count including this hit into a decision: the hit that
// reaches the limit is still allowed.
func afterHit(count int64, limit int, now, end time.Time) ports.Decision {
	return decide(count <= int64(limit), count, limit, now, end)
}

// beforeHit answers whether one more hit would be allowed, without counting.
func beforeHit(count int64, limit int, now, end time.Time) ports.Decision {
	return decide(count < int64(limit), count, limit, now, end)
}

func decide(allowed bool, count int64, limit int, now, end time.Time) ports.Decision {
	d := ports.Decision{Allowed: allowed, Remaining: int(max(int64(limit)-count, 0)), Reset: end.Sub(now)}
	if !allowed {
		d.RetryAfter = end.Sub(now)
	}
	return d
}
