// Package accountstore is the storage port of application/auth: users, API
// keys, refresh tokens and password-reset tokens. Another module that reads
// users declares the little it needs itself.
//
// Missing rows are reported as domain not-found errors, unique-key clashes as
// domain conflict errors; anything else is an internal error.
package accountstore

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain/account"
)

// Users stores users. Users are not team-scoped: one user may belong
// to many teams.
type Users interface {
	// Create stores u; an email already taken (case-insensitive) is a conflict.
	Create(ctx context.Context, u account.User) error
	ByID(ctx context.Context, id string) (account.User, error)
	// ByEmail finds a user by normalised email.
	ByEmail(ctx context.Context, email string) (account.User, error)
	UpdatePassword(ctx context.Context, id, passwordHash string, at time.Time) error
	// EndSessions raises the user's session version by one, in one step
	// (concurrent calls each count), and returns the new version.
	EndSessions(ctx context.Context, id string, at time.Time) (int, error)
	// ListByIDs returns the users of ids that exist, in no particular order.
	ListByIDs(ctx context.Context, ids []string) ([]account.User, error)
}

// APIKeys stores API keys as hashes.
type APIKeys interface {
	Create(ctx context.Context, k account.APIKey) error
	// ByID finds a key by id alone: authentication learns the team from the key.
	ByID(ctx context.Context, id string) (account.APIKey, error)
	// ListByUser returns the user's keys in the team, newest first.
	ListByUser(ctx context.Context, teamID, userID string) ([]account.APIKey, error)
	// Touch records that the key was used at at: its LastUsedAt becomes at
	// unless it is already at or after it. A key that no longer exists is
	// no error (it was deleted while in use).
	Touch(ctx context.Context, id string, at time.Time) error
	// Delete removes the key of the team; a key of another team is not found.
	Delete(ctx context.Context, teamID, id string) error
	// DeleteByUser removes every key of the user, in every team, and
	// returns their ids.
	DeleteByUser(ctx context.Context, userID string) ([]string, error)
	// DeleteByMember removes the user's keys in the team and returns their
	// ids; keys of the user in other teams stay.
	DeleteByMember(ctx context.Context, teamID, userID string) ([]string, error)
}

// RefreshTokens stores refresh tokens in rotation families.
type RefreshTokens interface {
	Create(ctx context.Context, t account.RefreshToken) error
	ByID(ctx context.Context, id string) (account.RefreshToken, error)
	// Consume marks the token used at at if it is neither used nor revoked,
	// and reports whether it did. A token is consumed once: the first call
	// for a stored token gets true, every later one false, and of concurrent
	// callers, each on its own or in a unit of work of its own, exactly one
	// gets true. An id never stored is a not-found error, not false: false
	// says the token was presented before (or revoked), which the caller
	// answers by revoking its family, and an unknown id is no such replay.
	Consume(ctx context.Context, id string, at time.Time) (bool, error)
	// RevokeFamily revokes every token of the family that is not yet revoked.
	RevokeFamily(ctx context.Context, familyID string, at time.Time) error
	// RevokeUser revokes every token of the user that is not yet revoked.
	RevokeUser(ctx context.Context, userID string, at time.Time) error
}

// ResetTokens stores password-reset tokens.
type ResetTokens interface {
	Create(ctx context.Context, t account.ResetToken) error
	ByID(ctx context.Context, id string) (account.ResetToken, error)
	// Consume marks the token used at at if it is not yet used, and reports
	// whether it did. A token is consumed once: the first call for a stored
	// token gets true, every later one false, and of concurrent callers, each
	// on its own or in a unit of work of its own, exactly one gets true. An
	// id never stored is a not-found error, not false: false means used.
	Consume(ctx context.Context, id string, at time.Time) (bool, error)
	// ConsumeUser marks every unused token of the user used at at, so that
	// none of them can be redeemed any more.
	ConsumeUser(ctx context.Context, userID string, at time.Time) error
}
