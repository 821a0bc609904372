package ports

import (
	"context"
	"time"
)

// IdempotencyRecord is what is kept under an idempotency key: the
// fingerprint of the first request and, once it has finished, its response.
type IdempotencyRecord struct {
	Fingerprint []byte
	// Done is false while the first request is still running.
	Done    bool
	Status  int
	Headers map[string]string
	Body    []byte
}

// IdempotencyStore keeps idempotency records for a while. Keys are already
// scoped by the caller (team and user).
type IdempotencyStore interface {
	// Reserve stores an in-progress record with fingerprint under key for
	// ttl when the key is free, and reports true. When the key is taken it
	// returns the record there and false. Of concurrent reservations of one
	// key exactly one gets true, across every instance sharing the store.
	Reserve(ctx context.Context, key string, fingerprint []byte, ttl time.Duration) (IdempotencyRecord, bool, error)
	// Complete replaces the record under key with rec (Done) for ttl.
	Complete(ctx context.Context, key string, rec IdempotencyRecord, ttl time.Duration) error
	// Release removes the record under key, so the request may run again.
	Release(ctx context.Context, key string) error
}
