package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/teams"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
)

// teamRoutes are the team's members: roles, invitations, removal.
func (c *Console) teamRoutes() []route {
	get, post := http.MethodGet, http.MethodPost
	return []route{
		{get, Prefix + "/team", c.signedIn(c.teamList)},
		{post, Prefix + "/team/invite", c.signedIn(c.teamInvite)},
		{post, Prefix + "/team/members/{id}/role", c.signedIn(c.teamChangeRole)},
		{get, Prefix + "/team/members/{id}/remove", c.signedIn(c.teamRemoveForm)},
		{post, Prefix + "/team/members/{id}/remove", c.signedIn(c.teamRemove)},
	}
}

// teamPageSize is how many members the team page lists at once.
const teamPageSize = 25

// teamMember is one row of the member list with what the actor may do to
// it: the rules of team.Member.Change, so that no form is shown that the
// service would refuse for the actor's role.
type teamMember struct {
	teams.MemberView
	// Roles are the roles the actor may give the member (none: no form).
	Roles []team.Role
	// Removable: the actor may remove the member.
	Removable bool
	// SoleOwner: the member is the team's only active owner, whom the
	// service keeps (a team keeps at least one owner).
	SoleOwner bool
}

// teamInvite is the invitation form as sent, shown again on refusal.
type teamInviteForm struct {
	Email string
	Role  string
}

// teamPage is the member list, the invitation form and, after a refusal
// that would have left the team without an owner, how to proceed.
type teamPage struct {
	Members []teamMember
	Next    string
	Invite  teamInviteForm
	// InviteRoles are the roles the actor may invite (none: no form).
	InviteRoles []team.Role
	// Owners is the number of active owners of the team.
	Owners int
	// LastOwner: the refusal shown kept the team's last owner.
	LastOwner bool
	// Member is the member a removal is confirmed for.
	Member *teamMember
}

// allRoles lists the roles from most to least powerful.
var allRoles = []team.Role{team.RoleOwner, team.RoleAdmin, team.RoleMember, team.RoleViewer}

// assignable are the roles actor may give or invite: an admin every
// role but owner, an owner every role, anyone else none (team.Actor's
// MayInvite and team.Member.Change).
func assignable(actor team.Actor) []team.Role {
	var out []team.Role
	for _, r := range allRoles {
		if actor.MayInvite(r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// allMembers reads every membership of the actor's team, page by page:
// the owners are counted over all of them, and a member is found by id.
func (c *Console) allMembers(q *request) ([]teams.MemberView, error) {
	var out []teams.MemberView
	cursor := ""
	for {
		page, err := c.svc.Teams.ListMembers(q.r.Context(), q.actor, cursor, 100)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" || page.NextCursor == cursor {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

func activeOwners(ms []teams.MemberView) int {
	n := 0
	for _, m := range ms {
		if m.Member.Role == team.RoleOwner && m.Member.Status == team.StatusActive {
			n++
		}
	}
	return n
}

// row is m with what actor may do to it.
func row(actor team.Actor, m teams.MemberView, owners int) teamMember {
	out := teamMember{MemberView: m}
	out.SoleOwner = m.Member.Role == team.RoleOwner && m.Member.Status == team.StatusActive && owners <= 1
	if !actor.Role.Can(team.ActAdminister) || m.Member.Status == team.StatusRemoved {
		return out
	}
	if m.Member.Role == team.RoleOwner && !actor.Role.Can(team.ActManageOwners) {
		return out
	}
	out.Roles = assignable(actor)
	out.Removable = true
	return out
}

// teamData reads the page of members at cursor, with the invitation form
// f.
func (c *Console) teamData(q *request, cursor string, f teamInviteForm) (teamPage, error) {
	all, err := c.allMembers(q)
	if err != nil {
		return teamPage{}, err
	}
	owners := activeOwners(all)
	page, err := c.svc.Teams.ListMembers(q.r.Context(), q.actor, cursor, teamPageSize)
	if err != nil {
		return teamPage{}, err
	}
	data := teamPage{Invite: f, InviteRoles: assignable(q.actor), Owners: owners}
	if data.Invite.Role == "" {
		data.Invite.Role = string(team.RoleMember)
	}
	for _, m := range page.Items {
		data.Members = append(data.Members, row(q.actor, m, owners))
	}
	if page.NextCursor != "" {
		data.Next = Prefix + "/team?" + url.Values{"cursor": {page.NextCursor}}.Encode()
	}
	return data, nil
}

func (c *Console) teamList(q *request) error {
	data, err := c.teamData(q, q.r.URL.Query().Get("cursor"), teamInviteForm{})
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "team", "Team", data)
}

// teamRefused shows the team page again with failure said above it; a
// refusal that kept the last owner says how to proceed.
func (c *Console) teamRefused(q *request, f teamInviteForm, failure error, lastOwner bool) error {
	data, err := c.teamData(q, "", f)
	if err != nil {
		return err
	}
	data.LastOwner = lastOwner
	return c.renderWith(q, 0, "team", "Team", data, failure)
}

func (c *Console) teamInvite(q *request) error {
	v, err := form(q)
	if err != nil {
		return err
	}
	f := teamInviteForm{Email: strings.TrimSpace(v.Get("email")), Role: v.Get("role")}
	m, err := c.svc.Teams.Invite(q.r.Context(), q.actor, f.Email, f.Role)
	if err != nil {
		if domain.IsKind(err, domain.KindForbidden) {
			return err
		}
		return c.teamRefused(q, f, err, false)
	}
	return c.redirect(q, Prefix+"/team", "Invitation sent to "+m.Member.Email+" as "+string(m.Member.Role)+". They join once they accept the link in the mail.")
}

// member finds a member of the actor's team by id.
func (c *Console) member(q *request, id string) (teamMember, error) {
	all, err := c.allMembers(q)
	if err != nil {
		return teamMember{}, err
	}
	owners := activeOwners(all)
	for _, m := range all {
		if m.Member.ID == id {
			return row(q.actor, m, owners), nil
		}
	}
	return teamMember{}, domain.NotFound("member")
}

// changed answers a role change or removal: done, refused by a rule the
// team page explains, or refused outright (forbidden, not found).
func (c *Console) changed(q *request, id string, in teams.UpdateInput, done func(teams.MemberView) string) error {
	m, err := c.svc.Teams.UpdateMember(q.r.Context(), q.actor, id, in)
	if err == nil {
		return c.redirect(q, Prefix+"/team", done(m))
	}
	if !domain.IsKind(err, domain.KindConflict) && !domain.IsKind(err, domain.KindValidation) {
		return err
	}
	lastOwner := false
	if domain.IsKind(err, domain.KindConflict) {
		if cur, ferr := c.member(q, id); ferr == nil {
			lastOwner = cur.SoleOwner
		}
	}
	return c.teamRefused(q, teamInviteForm{}, err, lastOwner)
}

func who(m teams.MemberView) string {
	if m.Name != "" {
		return m.Name + " (" + m.Member.Email + ")"
	}
	return m.Member.Email
}

func (c *Console) teamChangeRole(q *request) error {
	v, err := form(q)
	if err != nil {
		return err
	}
	role := v.Get("role")
	return c.changed(q, mux.Vars(q.r)["id"], teams.UpdateInput{Role: &role}, func(m teams.MemberView) string {
		return who(m) + " is now " + string(m.Member.Role) + "."
	})
}

func (c *Console) teamRemoveForm(q *request) error {
	m, err := c.member(q, mux.Vars(q.r)["id"])
	if err != nil {
		return err
	}
	if !m.Removable {
		if err := q.actor.Require(team.ActAdminister); err != nil {
			return err
		}
		if m.Member.Status == team.StatusRemoved {
			return domain.Conflict("the member has been removed already")
		}
		return domain.Forbidden("only an owner may make or remove owners")
	}
	return c.render(q, http.StatusOK, "team_remove", "Remove "+m.Member.Email, teamPage{Member: &m})
}

func (c *Console) teamRemove(q *request) error {
	if _, err := form(q); err != nil {
		return err
	}
	removed := string(team.StatusRemoved)
	return c.changed(q, mux.Vars(q.r)["id"], teams.UpdateInput{Status: &removed}, func(m teams.MemberView) string {
		return who(m) + " was removed from the team."
	})
}
