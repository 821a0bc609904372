package ports

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
)

// Missing rows are reported as domain not-found errors, unique-key clashes as
// domain conflict errors; anything else is an internal error.

// UserRepository stores users. Users are not team-scoped: one user may belong
// to many teams.
type UserRepository interface {
	// Create stores u; an email already taken (case-insensitive) is a conflict.
	Create(ctx context.Context, u account.User) error
	ByID(ctx context.Context, id string) (account.User, error)
	// ByEmail finds a user by normalised email.
	ByEmail(ctx context.Context, email string) (account.User, error)
	UpdatePassword(ctx context.Context, id, passwordHash string, at time.Time) error
	// ListByIDs returns the users of ids that exist, in no particular order.
	ListByIDs(ctx context.Context, ids []string) ([]account.User, error)
}

// TeamRepository stores teams.
type TeamRepository interface {
	Create(ctx context.Context, t team.Team) error
	ByID(ctx context.Context, id string) (team.Team, error)
	// Lock takes the team's lock until the unit of work ends: a second unit
	// locking the same team waits, so rules that count the team's members
	// (the last owner) hold under concurrent changes. A missing team is not
	// found.
	Lock(ctx context.Context, id string) error
}

// MembershipRepository stores the memberships of users in teams.
type MembershipRepository interface {
	// Create stores m; a second membership of one user (a non-empty user
	// id) or of one email (case-insensitively) in one team is a conflict.
	// Invited members whose email has no account yet have an empty user id.
	Create(ctx context.Context, m team.Member) error
	// ByUser returns the user's membership of the team, whatever its status.
	ByUser(ctx context.Context, teamID, userID string) (team.Member, error)
	// ListByUser returns the user's memberships in every team, oldest first.
	ListByUser(ctx context.Context, userID string) ([]team.Member, error)
	// ByID returns a membership of the team; another team's is not found.
	ByID(ctx context.Context, teamID, id string) (team.Member, error)
	// ByEmail returns the team's membership of an email (compared
	// case-insensitively), whatever its status.
	ByEmail(ctx context.Context, teamID, email string) (team.Member, error)
	// List returns up to limit memberships of the team with an id lower than
	// beforeID ("" for the first page), newest (highest id) first.
	List(ctx context.Context, teamID, beforeID string, limit int) ([]team.Member, error)
	// Update replaces the user id, role, status and joined time of a
	// membership of m.TeamID; a user already a member of the team is a
	// conflict.
	Update(ctx context.Context, m team.Member) error
	// Count returns the team's active members and, of those, owners.
	Count(ctx context.Context, teamID string) (active, owners int, err error)
}

// InvitationRepository stores invitation tokens as hashes.
type InvitationRepository interface {
	Create(ctx context.Context, inv team.Invitation) error
	ByID(ctx context.Context, id string) (team.Invitation, error)
	// Consume marks the invitation used if it is not yet used; exactly one
	// of concurrent callers gets true.
	Consume(ctx context.Context, id string, at time.Time) (bool, error)
}

// APIKeyRepository stores API keys as hashes.
type APIKeyRepository interface {
	Create(ctx context.Context, k account.APIKey) error
	// ByID finds a key by id alone: authentication learns the team from the key.
	ByID(ctx context.Context, id string) (account.APIKey, error)
	// ListByUser returns the user's keys in the team, newest first.
	ListByUser(ctx context.Context, teamID, userID string) ([]account.APIKey, error)
	// Delete removes the key of the team; a key of another team is not found.
	Delete(ctx context.Context, teamID, id string) error
}

// RefreshTokenRepository stores refresh tokens in rotation families.
type RefreshTokenRepository interface {
	Create(ctx context.Context, t account.RefreshToken) error
	ByID(ctx context.Context, id string) (account.RefreshToken, error)
	// Consume marks the token used at at if it is neither used nor revoked,
	// atomically: of concurrent callers for one token exactly one gets true.
	Consume(ctx context.Context, id string, at time.Time) (bool, error)
	// RevokeFamily revokes every token of the family that is not yet revoked.
	RevokeFamily(ctx context.Context, familyID string, at time.Time) error
	// RevokeUser revokes every token of the user that is not yet revoked.
	RevokeUser(ctx context.Context, userID string, at time.Time) error
}

// ResetTokenRepository stores password-reset tokens.
type ResetTokenRepository interface {
	Create(ctx context.Context, t account.ResetToken) error
	ByID(ctx context.Context, id string) (account.ResetToken, error)
	// Consume marks the token used if it is not yet used; exactly one of
	// concurrent callers gets true.
	Consume(ctx context.Context, id string, at time.Time) (bool, error)
}

// ProfileFilter selects a page of a team's profiles, newest (highest id)
// first.
type ProfileFilter struct {
	// Query keeps profiles whose name contains it, ignoring case; "" keeps all.
	Query string
	// Status keeps idle or running profiles; "" keeps both.
	Status profile.Status
	// Tag keeps profiles carrying exactly this tag; "" keeps all.
	Tag string
	// BeforeID keeps profiles with an id lower than it: the cursor of the
	// previous page. "" starts at the newest.
	BeforeID string
	// Limit is the most profiles returned (at least 1).
	Limit int
}

// SessionSwap is a compare-and-set on a profile's session: it applies only
// when the profile's current session matches.
type SessionSwap struct {
	// ExpectSessionID is the id of the session the profile must hold now,
	// or "" when it must hold none.
	ExpectSessionID string
	// ExpiredBy, when set, also requires the current session's ExpiresAt to
	// be at or before it (a reaper must not end a session a heartbeat has
	// just extended).
	ExpiredBy *time.Time
	// Next is the session the profile holds afterwards; nil ends it.
	Next *profile.Session
}

// ProfileRepository stores profiles, each with its session lease. Every
// call but ListExpiredSessions is scoped to one team: another team's profile
// is not found.
type ProfileRepository interface {
	// Create stores p (with its tags).
	Create(ctx context.Context, p profile.Profile) error
	ByID(ctx context.Context, teamID, id string) (profile.Profile, error)
	List(ctx context.Context, teamID string, f ProfileFilter) ([]profile.Profile, error)
	// Update replaces p's settings (not its session) if the stored version
	// is expectVersion; a different version is a precondition-failed error.
	Update(ctx context.Context, p profile.Profile, expectVersion int) error
	// Delete removes an idle profile; a running one is a conflict.
	Delete(ctx context.Context, teamID, id string) error
	// SwapSession applies s atomically and reports whether it matched: of
	// concurrent swaps expecting the same session exactly one applies, in
	// every instance of the service sharing the database.
	SwapSession(ctx context.Context, teamID, id string, s SessionSwap) (bool, error)
	// ListExpiredSessions returns up to limit profiles of any team whose
	// session expired at or before now, earliest expiry first.
	ListExpiredSessions(ctx context.Context, now time.Time, limit int) ([]profile.Profile, error)
}

// Outbox holds committed events until the webhook pipeline has taken them.
type Outbox interface {
	// Append adds e in the caller's transaction.
	Append(ctx context.Context, e event.Event) error
	// ListAfter returns up to limit events with an id greater than afterID
	// ("" for the first), in id order.
	ListAfter(ctx context.Context, afterID string, limit int) ([]event.Event, error)
	// ClaimUndispatched returns up to limit events not yet fanned out to
	// webhook deliveries, lowest id first, locked for the caller's unit of
	// work: concurrent units (other instances) skip them (PostgreSQL:
	// FOR UPDATE SKIP LOCKED) and see them again if the unit rolls back.
	ClaimUndispatched(ctx context.Context, limit int) ([]event.Event, error)
	// MarkDispatched records that the events have been fanned out.
	MarkDispatched(ctx context.Context, ids []string, at time.Time) error
}

// Repositories is the set of repositories, either bound to a transaction (inside
// UnitOfWork.Do) or each call on its own.
type Repositories interface {
	Users() UserRepository
	Teams() TeamRepository
	Memberships() MembershipRepository
	Invitations() InvitationRepository
	APIKeys() APIKeyRepository
	RefreshTokens() RefreshTokenRepository
	ResetTokens() ResetTokenRepository
	Profiles() ProfileRepository
	WebhookEndpoints() WebhookEndpointRepository
	Deliveries() DeliveryRepository
	Outbox() Outbox
}

// UnitOfWork runs a function in one transaction. If fn returns an error (or
// panics) nothing it wrote stays, outbox included; otherwise all of it commits.
type UnitOfWork interface {
	Do(ctx context.Context, fn func(ctx context.Context, tx Repositories) error) error
}

// Store is a storage adapter: repositories outside a transaction, the unit of
// work, and a readiness check.
type Store interface {
	Repositories
	UnitOfWork
	Ping(ctx context.Context) error
}
