package ports

import (
	"context"
	"time"
)

// Decision is a rate limiter's answer for one key.
type Decision struct {
	// Allowed is false once the key has used its budget for the window.
	Allowed bool
	// Remaining is what is left of the budget in the current window.
	Remaining int
	// RetryAfter is how long until the window resets; set when !Allowed.
	RetryAfter time.Duration
	// Reset is how long until the window resets, whatever the answer.
	Reset time.Duration
}

// RateLimiter counts events per key in fixed windows of the limiter's clock.
// Instances that share a backend share one budget.
type RateLimiter interface {
	// Hit counts one event for key and reports whether it was within limit.
	Hit(ctx context.Context, key string, limit int, window time.Duration) (Decision, error)
	// Check reports the key's state without counting.
	Check(ctx context.Context, key string, limit int, window time.Duration) (Decision, error)
	// Reset forgets the key's count in the current window.
	Reset(ctx context.Context, key string, window time.Duration) error
}
