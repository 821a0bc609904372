package memory

import (
	"cmp"
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/teamstore"
)

type teams struct{ s *Store }

func (r teams) Create(ctx context.Context, t team.Team) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error { return st.teams.insert(undo, t) })
}

func (r teams) ByID(ctx context.Context, id string) (team.Team, error) {
	return readValue(ctx, r.s, func(st *state) (team.Team, error) { return st.teams.get(id) })
}

// Lock only checks that the team exists: the unit of work already holds the
// store's write lock, so no other unit runs until it ends.
func (r teams) Lock(ctx context.Context, id string) error {
	return r.s.read(ctx, func(st *state) error {
		_, err := st.teams.get(id)
		return err
	})
}

type memberships struct{ s *Store }

// sameUser matches no membership for the empty user id: that is the user id
// of every member invited by an email without an account, which names no
// user, so it never clashes and ByUser finds nothing for it (nor does
// ListByUser).
func sameUser(teamID, userID string) func(*team.Member) bool {
	return func(m *team.Member) bool { return userID != "" && m.TeamID == teamID && m.UserID == userID }
}

func sameEmail(teamID, email string) func(*team.Member) bool {
	email = account.NormalizeEmail(email)
	return func(m *team.Member) bool { return m.TeamID == teamID && account.NormalizeEmail(m.Email) == email }
}

func (r memberships) Create(ctx context.Context, m team.Member) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if st.members.exists(sameUser(m.TeamID, m.UserID)) {
			return domain.Conflict("the user is already a member of this team")
		}
		if st.members.exists(sameEmail(m.TeamID, m.Email)) {
			return domain.Conflict("the email is already a member of this team")
		}
		return st.members.insert(undo, m)
	})
}

func (r memberships) ByUser(ctx context.Context, teamID, userID string) (team.Member, error) {
	return readValue(ctx, r.s, func(st *state) (team.Member, error) {
		return st.members.find(sameUser(teamID, userID))
	})
}

// ListByUser breaks ties by id, so that the order never depends on map order.
func (r memberships) ListByUser(ctx context.Context, userID string) ([]team.Member, error) {
	return readValue(ctx, r.s, func(st *state) ([]team.Member, error) {
		return st.members.query(func(m *team.Member) bool {
			return userID != "" && m.UserID == userID
		}, func(a, b *team.Member) int {
			return cmp.Or(a.InvitedAt.Compare(b.InvitedAt), cmp.Compare(a.ID, b.ID))
		}, unlimited), nil
	})
}

func (r memberships) ByID(ctx context.Context, teamID, id string) (team.Member, error) {
	return readValue(ctx, r.s, func(st *state) (team.Member, error) { return st.members.inTeam(teamID, id) })
}

func (r memberships) ByEmail(ctx context.Context, teamID, email string) (team.Member, error) {
	return readValue(ctx, r.s, func(st *state) (team.Member, error) {
		return st.members.find(sameEmail(teamID, email))
	})
}

func (r memberships) List(ctx context.Context, teamID, beforeID string, limit int) ([]team.Member, error) {
	return readValue(ctx, r.s, func(st *state) ([]team.Member, error) {
		return st.members.pageDown(teamID, beforeID, limit, all), nil
	})
}

// Update keeps the stored email and invitation time: only the user id, role,
// status and JoinedAt come from m.
func (r memberships) Update(ctx context.Context, m team.Member) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		next, err := st.members.inTeam(m.TeamID, m.ID)
		if err != nil {
			return err
		}
		clash := sameUser(m.TeamID, m.UserID)
		if st.members.exists(func(o *team.Member) bool { return o.ID != m.ID && clash(o) }) {
			return domain.Conflict("the user is already a member of this team")
		}
		next.UserID, next.Role, next.Status, next.JoinedAt = m.UserID, m.Role, m.Status, m.JoinedAt
		st.members.put(undo, next)
		return nil
	})
}

func (r memberships) Count(ctx context.Context, teamID string) (active, owners int, err error) {
	members, err := readValue(ctx, r.s, func(st *state) ([]team.Member, error) {
		return st.members.query(func(m *team.Member) bool {
			return m.TeamID == teamID && m.Status == team.StatusActive
		}, nil, unlimited), nil
	})
	for _, m := range members {
		if m.Role == team.RoleOwner {
			owners++
		}
	}
	return len(members), owners, err
}

type invitations struct{ s *Store }

func (r invitations) Create(ctx context.Context, inv team.Invitation) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error { return st.invitations.insert(undo, inv) })
}

// ByID ignores the team: the invited person learns it from the invitation.
func (r invitations) ByID(ctx context.Context, id string) (team.Invitation, error) {
	return readValue(ctx, r.s, func(st *state) (team.Invitation, error) { return st.invitations.get(id) })
}

func (r invitations) CountSince(ctx context.Context, teamID, memberID string, since time.Time) (teamstore.InvitationCounts, error) {
	return readValue(ctx, r.s, func(st *state) (teamstore.InvitationCounts, error) {
		var c teamstore.InvitationCounts
		recent := st.invitations.query(func(inv *team.Invitation) bool {
			return inv.TeamID == teamID && inv.CreatedAt.After(since)
		}, nil, unlimited)
		for _, inv := range recent {
			c.Team++
			if c.TeamOldest.IsZero() || inv.CreatedAt.Before(c.TeamOldest) {
				c.TeamOldest = inv.CreatedAt
			}
			if inv.MemberID != memberID {
				continue
			}
			c.Member++
			if c.MemberOldest.IsZero() || inv.CreatedAt.Before(c.MemberOldest) {
				c.MemberOldest = inv.CreatedAt
			}
		}
		return c, nil
	})
}

func (r invitations) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	return consume(ctx, r.s, func(st *state) *table[team.Invitation] { return &st.invitations }, id,
		func(inv *team.Invitation) bool {
			if inv.UsedAt != nil {
				return false
			}
			inv.UsedAt = &at
			return true
		})
}

// Teams returns the team repository.
func (s *Store) Teams() teamstore.Teams { return teams{s: s} }

// Memberships returns the membership repository.
func (s *Store) Memberships() teamstore.Memberships { return memberships{s: s} }

// Invitations returns the invitation repository.
func (s *Store) Invitations() teamstore.Invitations { return invitations{s: s} }
