package bunstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// deadlineHook gives every statement on the database a deadline, the wait
// for a pooled connection included, so that a database that stalls (a
// network that drops packets, a server that hangs) fails the statement
// after the timeout instead of holding the request for as long as the
// stall lasts. The deadline set for BEGIN stays with the transaction, which
// database/sql rolls back when it passes: a transaction lasts at most the
// timeout, however many statements it runs.
type deadlineHook struct{ timeout time.Duration }

var _ bun.QueryHook = deadlineHook{}

type cancelKey struct{}

type noDeadlineKey struct{}

// withoutDeadline marks ctx for work that may rightly take longer than a
// request's statement (migrations).
func withoutDeadline(ctx context.Context) context.Context {
	return context.WithValue(ctx, noDeadlineKey{}, true)
}

func (h deadlineHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if ctx.Value(noDeadlineKey{}) != nil {
		return ctx
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	if e.Stash == nil {
		e.Stash = map[any]any{}
	}
	e.Stash[cancelKey{}] = cancel
	return ctx
}

func (deadlineHook) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if e.Query == "BEGIN" && e.Err == nil {
		// The transaction runs on BEGIN's context: cancelling it now would
		// roll the transaction back. Its deadline frees it.
		return
	}
	if cancel, ok := e.Stash[cancelKey{}].(context.CancelFunc); ok {
		cancel()
	}
}
