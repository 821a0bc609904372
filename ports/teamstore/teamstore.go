// Package teamstore is the storage port of application/teams: teams, their
// memberships and invitations.
//
// Missing rows are reported as domain not-found errors, unique-key clashes as
// domain conflict errors; anything else is an internal error.
package teamstore

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain/team"
)

// Teams stores teams.
type Teams interface {
	Create(ctx context.Context, t team.Team) error
	ByID(ctx context.Context, id string) (team.Team, error)
	// Lock takes the team's lock until the unit of work ends: a second unit
	// locking the same team waits, so rules that count the team's members
	// (the last owner) hold under concurrent changes. A missing team is not
	// found.
	Lock(ctx context.Context, id string) error
}

// Memberships stores the memberships of users in teams.
type Memberships interface {
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

// InvitationCounts are a team's recent invitations, in all and to one
// membership, each with the creation time of its oldest.
type InvitationCounts struct {
	Team, Member             int
	TeamOldest, MemberOldest time.Time
}

// Invitations stores invitation tokens as hashes.
type Invitations interface {
	Create(ctx context.Context, inv team.Invitation) error
	ByID(ctx context.Context, id string) (team.Invitation, error)
	// CountSince returns how many invitations the team has created after
	// since, and how many of those were for the membership memberID,
	// with the creation time of the oldest of each (zero when there is
	// none), so that a caller over a daily bound can tell when it frees.
	CountSince(ctx context.Context, teamID, memberID string, since time.Time) (InvitationCounts, error)
	// Consume marks the invitation used at at if it is not yet used, and
	// reports whether it did. An invitation is consumed once: the first call
	// for a stored invitation gets true, every later one false, and of
	// concurrent callers, each on its own or in a unit of work of its own,
	// exactly one gets true. An id never stored is a not-found error, not
	// false: false means used.
	Consume(ctx context.Context, id string, at time.Time) (bool, error)
}
