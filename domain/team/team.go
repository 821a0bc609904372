// Package team owns teams, their memberships and the one rule that decides
// what a role may do (Role.Can). Every team-scoped use case asks it.
package team

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
)

// Team groups users and everything they manage.
type Team struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// NewTeam checks the name and returns the team to store.
func NewTeam(id, name string, now time.Time) (Team, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 200 || domain.UnsafeText(name) {
		return Team{}, domain.Invalid("name", "must be 1 to 200 characters without control or bidirectional formatting characters")
	}
	return Team{ID: id, Name: name, CreatedAt: now.UTC()}, nil
}

// Status is a membership's state.
type Status string

// Membership states.
const (
	StatusInvited Status = "invited"
	StatusActive  Status = "active"
	StatusRemoved Status = "removed"
)

// Member is a user's membership of one team.
type Member struct {
	ID        string
	TeamID    string
	UserID    string
	Email     string
	Role      Role
	Status    Status
	InvitedAt time.Time
	JoinedAt  *time.Time
}

// NewOwner returns the active owner membership of a team's founder.
func NewOwner(id, teamID, userID, email string, now time.Time) Member {
	now = now.UTC()
	return Member{ID: id, TeamID: teamID, UserID: userID, Email: email, Role: RoleOwner, Status: StatusActive, InvitedAt: now, JoinedAt: &now}
}

// Actor is who performs a use case: a user acting inside one team with the
// role of their active membership there.
type Actor struct {
	UserID   string
	TeamID   string
	MemberID string
	Role     Role
	// APIKeyID is set when the actor authenticated with an API key.
	APIKeyID string
}

// Require returns a forbidden error unless the actor's role allows action.
func (a Actor) Require(action Action) error {
	if !a.Role.Can(action) {
		return domain.Forbidden("your role in this team does not allow this action")
	}
	return nil
}
