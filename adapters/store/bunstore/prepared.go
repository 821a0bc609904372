package bunstore

import (
	"context"
	"time"
)

// prepared bounds a statement that goes to pgx directly, as bun's hook
// bounds bun's statements.
type prepared struct {
	timeout time.Duration
}

// bounded is ctx with the statement bound, and its cancel.
func (p prepared) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.timeout > 0 && ctx.Value(noDeadlineKey{}) == nil {
		return context.WithTimeout(ctx, p.timeout)
	}
	return ctx, func() {}
}
