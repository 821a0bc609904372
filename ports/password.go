package ports

import "context"

// PasswordHasher hashes and verifies passwords. Implementations bound how many
// hashes run at once, so a burst of logins cannot exhaust memory; callers wait
// (honouring ctx) for a slot.
type PasswordHasher interface {
	Hash(ctx context.Context, password string) (string, error)
	// Verify reports whether password matches hash.
	Verify(ctx context.Context, hash, password string) (bool, error)
	// MaxBytes is the longest password accepted; longer ones must be refused
	// before hashing, never truncated.
	MaxBytes() int
}
