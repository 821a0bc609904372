package ports

import (
	"context"
	"time"
)

// Decision is a rate limiter's answer for one key.
type Decision struct {
	// Allowed is false once the key's budget holds less than one request.
	Allowed bool
	// Remaining is how many whole requests the budget allows right now.
	Remaining int
	// RetryAfter is how long until one request is allowed again; set when
	// !Allowed.
	RetryAfter time.Duration
	// Reset is how long until the budget is whole again, whatever the
	// answer.
	Reset time.Duration
}

// RateLimiter keeps a budget per key of limit events that refills evenly
// over window (the generic cell rate algorithm), so no span of one window
// sees more than limit events. Instances that share a backend share one
// budget.
type RateLimiter interface {
	// Hit counts one event for key and reports whether it was within limit.
	Hit(ctx context.Context, key string, limit int, window time.Duration) (Decision, error)
	// Check reports the key's state without counting.
	Check(ctx context.Context, key string, limit int, window time.Duration) (Decision, error)
	// Reset gives the key its whole budget back.
	Reset(ctx context.Context, key string, window time.Duration) error
}
