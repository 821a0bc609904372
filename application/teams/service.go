// Package teams owns the team use cases: the caller's teams, invitations
// sent through the mail port and accepted by the invitee, the member list,
// and role changes and removals under the rule that a team keeps an owner.
package teams

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/teamstore"
)

// Policy holds the lifetime of invitations and their daily quotas.
type Policy struct {
	InvitationTTL time.Duration
	// MaxInvitationsPerDay bounds the invitations a team sends in any 24
	// hours, MaxResendsPerDay those to one membership; 0 is no bound.
	MaxInvitationsPerDay int
	MaxResendsPerDay     int
}

// quotaDay is the window of the invitation quotas.
const quotaDay = 24 * time.Hour

// DefaultPolicy is the policy of a production service.
func DefaultPolicy() Policy { return Policy{InvitationTTL: 7 * 24 * time.Hour} }

// Deps are the ports the service needs.
type Deps struct {
	Tx          ports.UnitOfWork
	Teams       teamstore.Teams
	Memberships teamstore.Memberships
	Invitations teamstore.Invitations
	Users       Users
	Keys        MemberKeys
	Outbox      ports.Outbox
	Mailer      ports.Mailer
	Clock       ports.Clock
	IDs         ports.IDs
	Log         *slog.Logger
	Policy      Policy
	// ConsoleURL is the web console's base URL (PUBLIC_URL/app), known once
	// the server listens: an invitation mail links to its page that
	// accepts the token.
	ConsoleURL func() string
}

// Users reads the users the accounts module owns (ports/accountstore): the
// invitee who accepts, and the names of active members. An invitation does
// not look the email up: whether it has an account shows nowhere, not even
// in how long the invitation takes.
type Users interface {
	ByID(ctx context.Context, id string) (account.User, error)
	ListByIDs(ctx context.Context, ids []string) ([]account.User, error)
}

// Service runs the team use cases.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

// TeamView is a team as one of its members sees it.
type TeamView struct {
	Team        team.Team
	Role        team.Role
	MemberCount int
}

// MemberView is a membership with the name of its user. An invited
// member has neither user id nor name until they accept: the invitation
// must not tell whether the email has an account.
type MemberView struct {
	Member team.Member
	Name   string
}

func memberView(m team.Member, name string) MemberView {
	if m.Status == team.StatusInvited {
		m.UserID, name = "", ""
	}
	return MemberView{Member: m, Name: name}
}

// ListTeams returns every team the actor is an active member of, oldest
// membership first.
func (s *Service) ListTeams(ctx context.Context, actor team.Actor) ([]TeamView, error) {
	if err := actor.Require(team.ActRead); err != nil {
		return nil, err
	}
	ms, err := s.d.Memberships.ListByUser(ctx, actor.UserID)
	if err != nil {
		return nil, err
	}
	out := []TeamView{}
	for _, m := range ms {
		if m.Status != team.StatusActive {
			continue
		}
		t, err := s.d.Teams.ByID(ctx, m.TeamID)
		if err != nil {
			return nil, err
		}
		active, _, err := s.d.Memberships.Count(ctx, m.TeamID)
		if err != nil {
			return nil, err
		}
		out = append(out, TeamView{Team: t, Role: m.Role, MemberCount: active})
	}
	return out, nil
}

// Invite makes email an invited member of the actor's team with role and
// mails it a single-use token. Inviting an email again while the invitation
// is open, or after removal, sends a new token; an active member is a
// conflict.
func (s *Service) Invite(ctx context.Context, actor team.Actor, email, role string) (MemberView, error) {
	v := &domain.Validation{}
	email = account.NormalizeEmail(email)
	if err := account.ValidateEmail(email); err != nil {
		v.Add("email", "must be an email address")
	}
	r, ok := team.ParseRole(role)
	if !ok {
		v.Add("role", "must be owner, admin, member or viewer")
	}
	if err := v.Err(); err != nil {
		return MemberView{}, err
	}
	if err := actor.MayInvite(r); err != nil {
		return MemberView{}, err
	}
	now := s.d.Clock.Now().UTC()
	secret := account.NewSecret(32)
	var view MemberView
	var t team.Team
	var inv team.Invitation
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		if err := s.d.Teams.Lock(ctx, actor.TeamID); err != nil {
			return err
		}
		var err error
		if t, err = s.d.Teams.ByID(ctx, actor.TeamID); err != nil {
			return err
		}
		m, err := s.d.Memberships.ByEmail(ctx, actor.TeamID, email)
		found := err == nil
		if err != nil && !domain.IsKind(err, domain.KindNotFound) {
			return err
		}
		if found {
			if m, err = m.Reinvite(actor, "", r, now); err != nil {
				return err
			}
		} else {
			m = team.NewInvited(s.d.IDs.New("mem"), actor.TeamID, "", email, r, now)
		}
		if err := s.checkInvitationQuotas(ctx, actor.TeamID, m.ID, now); err != nil {
			return err
		}
		if !found {
			if err := s.d.Memberships.Create(ctx, m); err != nil {
				return err
			}
		} else {
			if err := s.d.Memberships.Update(ctx, m); err != nil {
				return err
			}
		}
		inv = team.NewInvitation(s.d.IDs.New("inv"), actor.TeamID, m.ID, email, secret, now, s.d.Policy.InvitationTTL)
		if err := s.d.Invitations.Create(ctx, inv); err != nil {
			return err
		}
		view = memberView(m, "")
		return s.emit(ctx, t, m, event.TeamMemberAdded)
	})
	if err != nil {
		return MemberView{}, err
	}
	msg := ports.Mail{
		To:      email,
		Subject: "You are invited to " + t.Name + " on profilesvc",
		Text: "You are invited to the team " + t.Name + " as " + string(r) + ".\n\n" +
			"Accept at " + s.d.ConsoleURL() + "/invitations/accept?token=" + inv.ID + "." + secret + "\n" +
			"(sign in or register with this email first), or POST the token to /api/v1/teams/invitations/accept.\n\n" +
			"Invitation token: " + inv.ID + "." + secret + "\n\n" +
			"Either works within " +
			s.d.Policy.InvitationTTL.String() + ".\n",
	}
	if err := s.d.Mailer.Send(ctx, msg); err != nil {
		// The membership stands; the admin can invite again to resend.
		s.d.Log.ErrorContext(ctx, "sending invitation mail failed", "member_id", view.Member.ID, "error", err.Error())
	}
	return view, nil
}

// checkInvitationQuotas refuses an invitation past the team's daily quota
// or past the re-sends of one membership, telling when the oldest counted
// invitation leaves the window. The caller holds the team's lock, so
// concurrent invitations count each other.
func (s *Service) checkInvitationQuotas(ctx context.Context, teamID, memberID string, now time.Time) error {
	c, err := s.d.Invitations.CountSince(ctx, teamID, memberID, now.Add(-quotaDay))
	if err != nil {
		return err
	}
	if limit := s.d.Policy.MaxInvitationsPerDay; limit > 0 && c.Team >= limit {
		return domain.RateLimited("quota reached: at most "+strconv.Itoa(limit)+" invitations per team a day", c.TeamOldest.Add(quotaDay).Sub(now))
	}
	if limit := s.d.Policy.MaxResendsPerDay; limit > 0 && c.Member >= limit {
		return domain.RateLimited("quota reached: at most "+strconv.Itoa(limit)+" invitations to one email a day", c.MemberOldest.Add(quotaDay).Sub(now))
	}
	return nil
}

var errBadInvitation = domain.Invalid("token", "is not a valid, unused and unexpired invitation token")

// Accept makes the actor an active member of the team that invited the
// actor's email. The token is single-use.
func (s *Service) Accept(ctx context.Context, actor team.Actor, token string) (TeamView, error) {
	id, secret, ok := account.SplitToken(strings.TrimSpace(token))
	if !ok {
		return TeamView{}, errBadInvitation
	}
	var out TeamView
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		inv, err := s.d.Invitations.ByID(ctx, id)
		if domain.IsKind(err, domain.KindNotFound) {
			return errBadInvitation
		}
		if err != nil {
			return err
		}
		now := s.d.Clock.Now()
		if !inv.Redeemable(secret, now) {
			return errBadInvitation
		}
		u, err := s.d.Users.ByID(ctx, actor.UserID)
		if err != nil {
			return err
		}
		if account.NormalizeEmail(u.Email) != account.NormalizeEmail(inv.Email) {
			return domain.Forbidden("this invitation was sent to another email; sign in with that email to accept it")
		}
		if err := s.d.Teams.Lock(ctx, inv.TeamID); err != nil {
			return err
		}
		m, err := s.d.Memberships.ByID(ctx, inv.TeamID, inv.MemberID)
		if err != nil {
			return err
		}
		if m, err = m.Accept(u.ID, now); err != nil {
			return err
		}
		used, err := s.d.Invitations.Consume(ctx, inv.ID, now)
		if err != nil {
			return err
		}
		if !used {
			return errBadInvitation
		}
		if err := s.d.Memberships.Update(ctx, m); err != nil {
			return err
		}
		t, err := s.d.Teams.ByID(ctx, inv.TeamID)
		if err != nil {
			return err
		}
		active, _, err := s.d.Memberships.Count(ctx, inv.TeamID)
		if err != nil {
			return err
		}
		out = TeamView{Team: t, Role: m.Role, MemberCount: active}
		return nil
	})
	if err != nil {
		return TeamView{}, err
	}
	// Like every membership change, an acceptance is told to every
	// instance, so that no cache has to know which changes it may skip.
	s.d.Keys.MembershipChanged(ctx, out.Team.ID, actor.UserID)
	return out, nil
}

// ListMembers returns a page of the actor's team's members, newest first.
func (s *Service) ListMembers(ctx context.Context, actor team.Actor, cursor string, limit int) (paging.Page[MemberView], error) {
	if err := actor.Require(team.ActRead); err != nil {
		return paging.Page[MemberView]{}, err
	}
	if err := paging.CheckCursor(cursor, "mem_"); err != nil {
		return paging.Page[MemberView]{}, err
	}
	ms, err := s.d.Memberships.List(ctx, actor.TeamID, cursor, limit+1)
	if err != nil {
		return paging.Page[MemberView]{}, err
	}
	cut := paging.Cut(ms, limit, func(m team.Member) string { return m.ID })
	page := paging.Page[MemberView]{NextCursor: cut.NextCursor, Limit: limit}
	page.Items, err = s.withNames(ctx, cut.Items)
	return page, err
}

// withNames pairs memberships with their users' names, in one read.
func (s *Service) withNames(ctx context.Context, ms []team.Member) ([]MemberView, error) {
	var ids []string
	for _, m := range ms {
		if m.UserID != "" {
			ids = append(ids, m.UserID)
		}
	}
	users, err := s.d.Users.ListByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(users))
	for _, u := range users {
		names[u.ID] = u.Name
	}
	out := make([]MemberView, 0, len(ms))
	for _, m := range ms {
		out = append(out, memberView(m, names[m.UserID]))
	}
	return out, nil
}

// MemberKeys is what the accounts module does when a membership changes:
// a removed member's API keys die with the membership, so that
// re-inviting the person does not bring them back, and every instance
// forgets what the member's credentials resolved to.
type MemberKeys interface {
	// RevokeMemberKeys deletes the user's keys in the team, joining the
	// caller's unit of work, and returns their ids.
	RevokeMemberKeys(ctx context.Context, teamID, userID string) ([]string, error)
	// MembershipChanged tells every instance, once the change has
	// committed, that the user's role or status in the team changed.
	MembershipChanged(ctx context.Context, teamID, userID string)
}

// UpdateInput changes a member: a new role, removal ("removed"), or both.
type UpdateInput struct {
	Role   *string
	Status *string
}

// UpdateMember changes a member's role or removes them. The team is locked
// for the unit of work, so two changes that would each leave one owner
// cannot together leave none. The member's next request, on any instance,
// acts with the new role or is refused: every instance is told once the
// change commits, and a removed member's API keys in the team are revoked
// with the removal.
func (s *Service) UpdateMember(ctx context.Context, actor team.Actor, id string, in UpdateInput) (MemberView, error) {
	v := &domain.Validation{}
	var ch team.MemberChange
	if in.Role != nil {
		r, ok := team.ParseRole(*in.Role)
		if !ok {
			v.Add("role", "must be owner, admin, member or viewer")
		}
		ch.Role = &r
	}
	if in.Status != nil {
		if *in.Status != string(team.StatusRemoved) {
			v.Add("status", `can only be set to "removed"`)
		}
		ch.Remove = true
	}
	if in.Role == nil && in.Status == nil {
		v.Add("role", "send role, status or both")
	}
	if err := v.Err(); err != nil {
		return MemberView{}, err
	}
	if err := actor.Require(team.ActAdminister); err != nil {
		return MemberView{}, err
	}
	var out []MemberView
	var userID string
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		if err := s.d.Teams.Lock(ctx, actor.TeamID); err != nil {
			return err
		}
		m, err := s.d.Memberships.ByID(ctx, actor.TeamID, id)
		if err != nil {
			return err
		}
		_, owners, err := s.d.Memberships.Count(ctx, actor.TeamID)
		if err != nil {
			return err
		}
		next, err := m.Change(actor, ch, owners, s.d.Clock.Now())
		if err != nil {
			return err
		}
		if err := s.d.Memberships.Update(ctx, next); err != nil {
			return err
		}
		userID = m.UserID
		if out, err = s.withNames(ctx, []team.Member{next}); err != nil {
			return err
		}
		if !ch.Remove {
			return nil
		}
		if m.UserID != "" {
			if _, err = s.d.Keys.RevokeMemberKeys(ctx, actor.TeamID, m.UserID); err != nil {
				return err
			}
		}
		t, err := s.d.Teams.ByID(ctx, actor.TeamID)
		if err != nil {
			return err
		}
		return s.emit(ctx, t, m, event.TeamMemberRemoved)
	})
	if err != nil {
		return MemberView{}, err
	}
	if userID != "" { // an invited member has no credentials yet
		s.d.Keys.MembershipChanged(ctx, actor.TeamID, userID)
	}
	return out[0], nil
}

// emit appends a team event with API.md's data.team and data.member.
func (s *Service) emit(ctx context.Context, t team.Team, m team.Member, typ event.Type) error {
	data := map[string]any{
		"team":   map[string]string{"id": t.ID, "name": t.Name},
		"member": map[string]string{"id": m.ID, "email": m.Email, "role": string(m.Role)},
	}
	e, err := event.New(s.d.IDs.New("evt"), t.ID, typ, s.d.Clock.Now(), data)
	if err != nil {
		return err
	}
	return s.d.Outbox.Append(ctx, e)
}
