package ports

import (
	"context"
	"time"
)

// IdempotencyKey names an idempotency record: the team it counts against,
// the caller within that team (Scope), and the client's Idempotency-Key.
type IdempotencyKey struct {
	TeamID string
	Scope  string
	Key    string
}

// Why a finished request's response is not kept (IdempotencyRecord.Withheld).
const (
	// IdempotencyWithheldCredentials: the response carried credentials,
	// which are shown once and never stored.
	IdempotencyWithheldCredentials = "credentials"
	// IdempotencyWithheldTooLarge: the response was over the size kept.
	IdempotencyWithheldTooLarge = "too_large"
)

// IdempotencyRecord is what is kept under an idempotency key: the claim of
// the first request whose effect committed and, once that request has
// finished, its response.
type IdempotencyRecord struct {
	IdempotencyKey
	// Fingerprint identifies the first request (method, path and body).
	Fingerprint []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
	// Done is false until the first request's response has been recorded.
	Done bool
	// Withheld is "" when the response is kept, otherwise one of the
	// IdempotencyWithheld reasons; Status is kept either way.
	Withheld string
	Status   int
	Headers  map[string]string
	Body     []byte
}

// IdempotencyRecords keeps idempotency records in the primary store. Every
// call joins the unit of work its context carries, if any: a claim made in
// the unit of a request's effect commits or rolls back with it.
type IdempotencyRecords interface {
	// Claim inserts rec, not done, unless a record live at now (ExpiresAt
	// after now) holds its key; an expired record there is replaced. It
	// reports whether rec was inserted. Of concurrent claims of one key in
	// units that commit, exactly one is inserted.
	Claim(ctx context.Context, rec IdempotencyRecord, now time.Time) (bool, error)
	// Find returns the record of k live at now, and false when there is none.
	Find(ctx context.Context, k IdempotencyKey, now time.Time) (IdempotencyRecord, bool, error)
	// Complete records the response of the claim under rec's key: Done,
	// Withheld, Status, Headers and Body. A missing claim is not found.
	Complete(ctx context.Context, rec IdempotencyRecord) error
	// CountLive returns how many of the team's records are live at now.
	CountLive(ctx context.Context, teamID string, now time.Time) (int, error)
	// DeleteExpired removes up to limit records expired at now and returns
	// how many it removed.
	DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error)
}
