package auth

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/team"
)

// The teams module owns teams and memberships (ports/teamstore); these are
// the few of its calls accounts make: a registration creates the user's
// personal team and membership, and signing in reads them.

// Teams creates, reads and locks teams (the lock keeps the API key quota
// under concurrent creations).
type Teams interface {
	Create(ctx context.Context, t team.Team) error
	ByID(ctx context.Context, id string) (team.Team, error)
	Lock(ctx context.Context, id string) error
}

// Memberships creates a membership and finds a user's, in a team or in
// every team (a sign-in picks a team where the user is active).
type Memberships interface {
	Create(ctx context.Context, m team.Member) error
	ByUser(ctx context.Context, teamID, userID string) (team.Member, error)
	ListByUser(ctx context.Context, userID string) ([]team.Member, error)
}
