package team

import (
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
)

// Invitation is a single-use token that makes an invited member active when
// the user signed in with the invited email presents it. Only the hash of
// its secret is kept.
type Invitation struct {
	ID        string
	TeamID    string
	MemberID  string
	Email     string
	Hash      []byte
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// NewInvitation returns the invitation of membership memberID, for email,
// valid for ttl from now; only the digest of secret is kept.
func NewInvitation(id, teamID, memberID, email, secret string, now time.Time, ttl time.Duration) Invitation {
	now = now.UTC()
	return Invitation{
		ID: id, TeamID: teamID, MemberID: memberID, Email: email,
		Hash: account.Digest(secret), CreatedAt: now, ExpiresAt: now.Add(ttl),
	}
}

// Redeemable reports whether secret is the invitation's and the invitation
// is unused and unexpired at now.
func (inv Invitation) Redeemable(secret string, now time.Time) bool {
	return account.SecretMatches(inv.Hash, secret) && inv.UsedAt == nil && now.Before(inv.ExpiresAt)
}

// NewInvited returns the membership of an invited email. userID is the
// user the email belongs to, or "" when no account has it yet.
func NewInvited(id, teamID, userID, email string, role Role, now time.Time) Member {
	return Member{ID: id, TeamID: teamID, UserID: userID, Email: email, Role: role, Status: StatusInvited, InvitedAt: now.UTC()}
}

// MayInvite checks that actor may invite someone with role.
func (a Actor) MayInvite(role Role) error {
	if err := a.Require(ActAdminister); err != nil {
		return err
	}
	if role == RoleOwner {
		if err := a.Require(ActManageOwners); err != nil {
			return domain.Forbidden("only an owner may make owners")
		}
	}
	return nil
}

// Reinvite opens an existing membership of the invited email again, with
// role, for userID ("" when the email has no account). An active member is
// a conflict; a membership that was an owner's takes an actor who may make
// owners, like an invitation as owner.
func (m Member) Reinvite(actor Actor, userID string, role Role, now time.Time) (Member, error) {
	if m.Status == StatusActive {
		return Member{}, domain.Conflict("this email is already an active member of the team")
	}
	if m.Role == RoleOwner {
		if err := actor.MayInvite(RoleOwner); err != nil {
			return Member{}, err
		}
	}
	m.UserID, m.Role, m.Status, m.InvitedAt, m.JoinedAt = userID, role, StatusInvited, now.UTC(), nil
	return m, nil
}

// MemberChange is a change to a membership: a new role, removal, or both
// (nil fields stay).
type MemberChange struct {
	Role   *Role
	Remove bool
}

// Change applies ch to m on behalf of actor. activeOwners is the number of
// active owners of the team, read in the same unit of work under the team's
// lock, so the last owner can neither be demoted nor removed.
func (m Member) Change(actor Actor, ch MemberChange, activeOwners int, now time.Time) (Member, error) {
	if err := actor.Require(ActAdminister); err != nil {
		return Member{}, err
	}
	if m.Status == StatusRemoved {
		return Member{}, domain.Conflict("the member has been removed; invite them again")
	}
	touchesOwner := m.Role == RoleOwner || (ch.Role != nil && *ch.Role == RoleOwner)
	if touchesOwner && !actor.Role.Can(ActManageOwners) {
		return Member{}, domain.Forbidden("only an owner may make or remove owners")
	}
	next := m
	if ch.Role != nil {
		next.Role = *ch.Role
	}
	if ch.Remove {
		next.Status = StatusRemoved
	}
	losesOwner := m.Role == RoleOwner && m.Status == StatusActive && (next.Role != RoleOwner || next.Status == StatusRemoved)
	if losesOwner && activeOwners <= 1 {
		return Member{}, domain.Conflict("a team keeps at least one owner: make another member owner first")
	}
	return next, nil
}

// Accept makes an invited membership active for userID.
func (m Member) Accept(userID string, now time.Time) (Member, error) {
	if m.Status != StatusInvited {
		return Member{}, domain.Conflict("the invitation is no longer open")
	}
	now = now.UTC()
	m.UserID, m.Status, m.JoinedAt = userID, StatusActive, &now
	return m, nil
}
