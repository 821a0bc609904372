package teams_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/teams"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
)

func TestListTeamsShowsActiveMembershipsOldestFirst(t *testing.T) {
	e := newEnv()
	ada := e.user(t, "ada@example.com", "Ada")
	bob := e.user(t, "bob@example.com", "Bob")
	adaTeam := e.founded(t, "Ada's team", ada)
	e.clock.Advance(time.Hour)
	bobTeam := e.founded(t, "Bob's team", bob)
	e.join(t, bobTeam.TeamID, ada, team.RoleViewer)
	e.join(t, adaTeam.TeamID, bob, team.RoleMember)
	other := e.founded(t, "Bob's other team", bob)
	invited := team.NewInvited("mem_invited", other.TeamID, ada.ID, ada.Email, team.RoleAdmin, e.clock.Now())
	if err := e.store.Memberships().Create(ctx, invited); err != nil {
		t.Fatalf("invite: %v", err)
	}

	views, err := e.service().ListTeams(ctx, adaTeam)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(views) != 2 {
		t.Fatalf("%d teams, want 2: %+v", len(views), views)
	}
	if views[0].Team.Name != "Ada's team" || views[0].Role != team.RoleOwner || views[0].MemberCount != 2 {
		t.Fatalf("first %+v", views[0])
	}
	if views[1].Team.Name != "Bob's team" || views[1].Role != team.RoleViewer || views[1].MemberCount != 2 {
		t.Fatalf("second %+v", views[1])
	}

	lonely := e.user(t, "cat@example.com", "Cat")
	views, err = e.service().ListTeams(ctx, team.Actor{UserID: lonely.ID, TeamID: "team_x", Role: team.RoleViewer})
	if err != nil || views == nil || len(views) != 0 {
		t.Fatalf("no teams: %#v, %v", views, err)
	}
	_, err = e.service().ListTeams(ctx, team.Actor{UserID: ada.ID, TeamID: adaTeam.TeamID})
	apptest.WantKind(t, err, domain.KindForbidden)
}

func TestListTeamsStoreFailures(t *testing.T) {
	eachFailure(t, []failure{
		{"memberships", func(e *env) { e.deps.Memberships = failingMemberReads{e.deps.Memberships} }},
		{"team", func(e *env) { e.deps.Teams = failingTeamReads{e.deps.Teams} }},
		{"count", func(e *env) { e.deps.Memberships = countOnlyFails{e.deps.Memberships} }},
	}, func(t *testing.T, e *env, owner team.Actor, fail func()) {
		fail()
		_, err := e.service().ListTeams(ctx, owner)
		apptest.WantDown(t, err)
	})
}

func TestInviteAnEmailWithoutAccount(t *testing.T) {
	e, owner := adaEnv(t)

	v, err := e.service().Invite(ctx, owner, " Bob@Example.com ", "member")
	if err != nil {
		t.Fatalf("invite: %v", err)
	}
	m := v.Member
	if m.Email != "bob@example.com" || m.UserID != "" || m.Role != team.RoleMember || m.Status != team.StatusInvited || v.Name != "" || m.JoinedAt != nil {
		t.Fatalf("view %+v", v)
	}
	if stored := e.member(t, owner.TeamID, m.ID); stored.Status != team.StatusInvited {
		t.Fatalf("stored %+v", stored)
	}
	sent := e.mailer.Sent()
	if len(sent) != 1 || sent[0].To != "bob@example.com" || sent[0].Subject != "You are invited to Ada's team on profilesvc" {
		t.Fatalf("mail %+v", sent)
	}
	if !strings.Contains(sent[0].Text, "as member") || !strings.Contains(sent[0].Text, "within 168h0m0s") {
		t.Fatalf("mail text %q", sent[0].Text)
	}
	evs := e.events(t)
	if len(evs) != 1 || evs[0].Type != event.TeamMemberAdded || evs[0].TeamID != owner.TeamID {
		t.Fatalf("events %+v", evs)
	}
	var data struct {
		Team   map[string]string `json:"team"`
		Member map[string]string `json:"member"`
	}
	if err := json.Unmarshal(evs[0].Data, &data); err != nil {
		t.Fatalf("event data: %v", err)
	}
	if data.Team["name"] != "Ada's team" || data.Member["id"] != m.ID || data.Member["email"] != "bob@example.com" || data.Member["role"] != "member" {
		t.Fatalf("event data %s", evs[0].Data)
	}
}

// An invitation shows no user id nor name, so it does not tell whether the
// email has an account; the stored membership gets the user at acceptance.
func TestInviteAnEmailWithAccountShowsNoUser(t *testing.T) {
	e, owner := adaEnv(t)
	e.user(t, "bob@example.com", "Bob")
	v, _ := e.invite(t, e.service(), owner, "BOB@example.com", "viewer")
	if v.Member.UserID != "" || v.Name != "" || v.Member.Role != team.RoleViewer {
		t.Fatalf("view %+v", v)
	}
	if stored := e.member(t, owner.TeamID, v.Member.ID); stored.UserID != "" {
		t.Fatalf("stored %+v: the invitation looked the email up", stored)
	}
}

func TestInviteValidates(t *testing.T) {
	e, owner := adaEnv(t)
	_, err := e.service().Invite(ctx, owner, "not an email", "king")
	apptest.WantKind(t, err, domain.KindValidation)
	if got := fieldsOf(t, err); got != "email,role" {
		t.Fatalf("fields %s", got)
	}
}

func TestInviteRoleRules(t *testing.T) {
	for _, tc := range []struct {
		actor, invited team.Role
		allowed        bool
	}{
		{team.RoleViewer, team.RoleViewer, false},
		{team.RoleMember, team.RoleViewer, false},
		{team.RoleAdmin, team.RoleAdmin, true},
		{team.RoleAdmin, team.RoleOwner, false},
		{team.RoleOwner, team.RoleOwner, true},
	} {
		t.Run(string(tc.actor)+" invites "+string(tc.invited), func(t *testing.T) {
			e, owner := adaEnv(t)
			_, err := e.service().Invite(ctx, e.actorWith(t, owner, tc.actor), "new@example.com", string(tc.invited))
			if tc.allowed {
				if err != nil {
					t.Fatalf("invite: %v", err)
				}
				return
			}
			apptest.WantKind(t, err, domain.KindForbidden)
			e.wantNotInvited(t, owner.TeamID, "new@example.com")
		})
	}
}

func TestInviteAgainWhilePendingSendsANewToken(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	first, firstToken := e.invite(t, svc, owner, "bob@example.com", "member")
	e.clock.Advance(time.Hour)
	again, againToken := e.invite(t, svc, owner, "bob@example.com", "viewer")

	if again.Member.ID != first.Member.ID || again.Member.Role != team.RoleViewer || again.Member.Status != team.StatusInvited {
		t.Fatalf("again %+v, first %+v", again, first)
	}
	if stored := e.member(t, owner.TeamID, first.Member.ID); stored.Role != team.RoleViewer || stored.Status != team.StatusInvited {
		t.Fatalf("stored %+v", stored)
	}
	if againToken == firstToken {
		t.Fatal("the same token was sent again")
	}
	bob := e.user(t, "bob@example.com", "Bob")
	view, err := svc.Accept(ctx, team.Actor{UserID: bob.ID}, againToken)
	if err != nil || view.Role != team.RoleViewer {
		t.Fatalf("accept the new token: %+v, %v", view, err)
	}
}

// An admin may not turn a pending owner invitation into another one.
func TestInviteAgainOfAPendingOwnerNeedsAnOwner(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	admin := e.newMember(t, owner.TeamID, "Adm", team.RoleAdmin)
	v, _ := e.invite(t, svc, owner, "bob@example.com", "owner")

	_, err := svc.Invite(ctx, admin, "bob@example.com", "member")
	apptest.WantKind(t, err, domain.KindForbidden)
	if stored := e.member(t, owner.TeamID, v.Member.ID); stored.Role != team.RoleOwner {
		t.Fatalf("stored %+v", stored)
	}
	if again, _ := e.invite(t, svc, owner, "bob@example.com", "member"); again.Member.Role != team.RoleMember {
		t.Fatalf("owner's re-invitation %+v", again)
	}
}

func TestInviteAnActiveMemberIsAConflict(t *testing.T) {
	e, owner := adaEnv(t)
	e.newMember(t, owner.TeamID, "Bob", team.RoleMember)
	_, err := e.service().Invite(ctx, owner, "bob@example.com", "admin")
	apptest.WantKind(t, err, domain.KindConflict)
	if len(e.mailer.Sent()) != 0 || len(e.events(t)) != 0 {
		t.Fatal("a refused invitation left mail or events")
	}
}

func TestInviteARemovedMemberAgain(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	bob := e.newMember(t, owner.TeamID, "Bob", team.RoleAdmin)
	if _, err := svc.UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Status: strp("removed")}); err != nil {
		t.Fatalf("remove: %v", err)
	}
	v, tok := e.invite(t, svc, owner, "bob@example.com", "viewer")
	if v.Member.ID != bob.MemberID || v.Member.Status != team.StatusInvited || v.Member.Role != team.RoleViewer || v.Member.JoinedAt != nil || v.Name != "" || v.Member.UserID != "" {
		t.Fatalf("view %+v", v)
	}
	if _, err := svc.Accept(ctx, team.Actor{UserID: bob.UserID}, tok); err != nil {
		t.Fatalf("accept: %v", err)
	}
}

// The membership stands when the mail cannot be sent: the admin invites
// again to resend.
func TestInviteMailFailureKeepsTheMembership(t *testing.T) {
	e, owner := adaEnv(t)
	e.mailer.Err = apptest.ErrDown
	v, err := e.service().Invite(ctx, owner, "bob@example.com", "member")
	if err != nil {
		t.Fatalf("invite: %v", err)
	}
	if stored := e.member(t, owner.TeamID, v.Member.ID); stored.Status != team.StatusInvited {
		t.Fatalf("stored %+v", stored)
	}
	if !e.logs.Has("ERROR sending invitation mail failed") {
		t.Fatalf("not logged: %v", e.logs.Lines())
	}
}

func TestInviteStoreFailureLeavesNothing(t *testing.T) {
	eachFailure(t, []failure{
		{"invitation", func(e *env) { e.deps.Invitations = failingInvitationCreate{e.deps.Invitations} }},
		{"event", func(e *env) { e.deps.Outbox = apptest.RefusingOutbox{Err: apptest.ErrDown} }},
		{"membership read", func(e *env) { e.deps.Memberships = failingMemberReads{e.deps.Memberships} }},
		{"team read", func(e *env) { e.deps.Teams = failingTeamReads{e.deps.Teams} }},
	}, func(t *testing.T, e *env, owner team.Actor, fail func()) {
		fail()
		_, err := e.service().Invite(ctx, owner, "bob@example.com", "member")
		apptest.WantDown(t, err)
		e.wantNotInvited(t, owner.TeamID, "bob@example.com")
	})
}

func TestInviteUpdateFailure(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	v, _ := e.invite(t, svc, owner, "bob@example.com", "member")
	e.deps.Memberships = failingMemberUpdate{e.deps.Memberships}
	_, err := e.service().Invite(ctx, owner, "bob@example.com", "viewer")
	apptest.WantDown(t, err)
	if stored := e.member(t, owner.TeamID, v.Member.ID); stored.Role != team.RoleMember {
		t.Fatalf("stored %+v", stored)
	}
}

func TestInviteIntoAMissingTeam(t *testing.T) {
	e := newEnv()
	_, err := e.service().Invite(ctx, team.Actor{UserID: "usr_x", TeamID: "team_gone", Role: team.RoleOwner}, "bob@example.com", "member")
	apptest.WantKind(t, err, domain.KindNotFound)
}

func TestAcceptMakesTheInviteeActive(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	v, tok := e.invite(t, svc, owner, "bob@example.com", "admin")
	// The account is made after the invitation, as a newcomer does.
	bob := e.user(t, "Bob@example.com", "Bob")
	e.clock.Advance(time.Hour)

	view, err := svc.Accept(ctx, team.Actor{UserID: bob.ID}, "  "+tok+"\n")
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	if view.Team.ID != owner.TeamID || view.Role != team.RoleAdmin || view.MemberCount != 2 {
		t.Fatalf("view %+v", view)
	}
	m := e.member(t, owner.TeamID, v.Member.ID)
	if m.UserID != bob.ID || m.Status != team.StatusActive || m.JoinedAt == nil || !m.JoinedAt.Equal(start.Add(time.Hour)) {
		t.Fatalf("membership %+v", m)
	}
}

func TestAcceptByAnotherEmailIsForbidden(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	v, tok := e.invite(t, svc, owner, "bob@example.com", "member")
	eve := e.user(t, "eve@example.com", "Eve")

	_, err := svc.Accept(ctx, team.Actor{UserID: eve.ID}, tok)
	apptest.WantKind(t, err, domain.KindForbidden)
	if m := e.member(t, owner.TeamID, v.Member.ID); m.Status != team.StatusInvited || m.UserID != "" {
		t.Fatalf("membership %+v", m)
	}
	bob := e.user(t, "bob@example.com", "Bob")
	if _, err := svc.Accept(ctx, team.Actor{UserID: bob.ID}, tok); err != nil {
		t.Fatalf("the refused attempt spent the token: %v", err)
	}
}

func TestAcceptExpiredInvitation(t *testing.T) {
	e, owner := adaEnv(t)
	in := e.inviteBob(t, owner)
	e.clock.Advance(7 * 24 * time.Hour)
	_, err := e.service().Accept(ctx, in.bob, in.token)
	apptest.WantKind(t, err, domain.KindValidation)
}

func TestAcceptTwice(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	in := e.inviteBob(t, owner)
	if _, err := svc.Accept(ctx, in.bob, in.token); err != nil {
		t.Fatalf("accept: %v", err)
	}
	_, err := svc.Accept(ctx, in.bob, in.token)
	apptest.WantKind(t, err, domain.KindValidation)
}

func TestAcceptRefusesBadTokens(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	in := e.inviteBob(t, owner)
	id, _, _ := account.SplitToken(in.token)
	for _, bad := range []string{"", "no-dot", "inv_00000000000000000099.secret", id + ".forged"} {
		_, err := svc.Accept(ctx, in.bob, bad)
		apptest.WantKind(t, err, domain.KindValidation)
	}
	if _, err := svc.Accept(ctx, in.bob, in.token); err != nil {
		t.Fatalf("a refused token spent the real one: %v", err)
	}
}

// Another accept consumes the invitation after this one read it: this
// one loses and changes nothing.
func TestAcceptLosesTheRaceOnConsume(t *testing.T) {
	e, owner := adaEnv(t)
	in := e.inviteBob(t, owner)
	e.deps.Invitations = racedInvitations{Invitations: e.deps.Invitations, at: start}

	_, err := e.service().Accept(ctx, in.bob, in.token)
	apptest.WantKind(t, err, domain.KindValidation)
	if m := e.member(t, owner.TeamID, in.view.Member.ID); m.Status != team.StatusInvited {
		t.Fatalf("membership %+v", m)
	}
}

func TestAcceptAfterTheMemberWasRemoved(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	v, tok := e.invite(t, svc, owner, "bob@example.com", "member")
	if _, err := svc.UpdateMember(ctx, owner, v.Member.ID, teams.UpdateInput{Status: strp("removed")}); err != nil {
		t.Fatalf("remove: %v", err)
	}
	bob := e.user(t, "bob@example.com", "Bob")
	_, err := svc.Accept(ctx, team.Actor{UserID: bob.ID}, tok)
	apptest.WantKind(t, err, domain.KindConflict)
}

func TestAcceptStoreFailures(t *testing.T) {
	eachFailure(t, []failure{
		{"user read", func(e *env) { e.deps.Users = apptest.UnreadableUsers{Err: apptest.ErrDown} }},
		{"membership update", func(e *env) { e.deps.Memberships = failingMemberUpdate{e.deps.Memberships} }},
		{"team read", func(e *env) { e.deps.Teams = failingTeamReads{e.deps.Teams} }},
		{"count", func(e *env) { e.deps.Memberships = countOnlyFails{e.deps.Memberships} }},
	}, func(t *testing.T, e *env, owner team.Actor, fail func()) {
		in := e.inviteBob(t, owner)
		healthy := e.deps
		fail()
		_, err := e.service().Accept(ctx, in.bob, in.token)
		apptest.WantDown(t, err)
		if m := e.member(t, owner.TeamID, in.view.Member.ID); m.Status != team.StatusInvited {
			t.Fatalf("membership after the failed unit %+v", m)
		}
		e.deps = healthy
		if _, err := e.service().Accept(ctx, in.bob, in.token); err != nil {
			t.Fatalf("the failed unit spent the token: %v", err)
		}
	})
}

func TestUpdateMemberValidates(t *testing.T) {
	e, owner := adaEnv(t)
	for _, tc := range []struct {
		name   string
		in     teams.UpdateInput
		fields string
	}{
		{"unknown role", teams.UpdateInput{Role: strp("king")}, "role"},
		{"status other than removed", teams.UpdateInput{Status: strp("active")}, "status"},
		{"nothing", teams.UpdateInput{}, "role"},
		{"both wrong", teams.UpdateInput{Role: strp(""), Status: strp("invited")}, "role,status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.service().UpdateMember(ctx, owner, owner.MemberID, tc.in)
			apptest.WantKind(t, err, domain.KindValidation)
			if got := fieldsOf(t, err); got != tc.fields {
				t.Fatalf("fields %s, want %s", got, tc.fields)
			}
		})
	}
}

func TestUpdateMemberRoleRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		actor  team.Role
		target team.Role
		in     teams.UpdateInput
		kind   domain.Kind // KindInternal for success
	}{
		{"a member may not change roles", team.RoleMember, team.RoleViewer, teams.UpdateInput{Role: strp("member")}, domain.KindForbidden},
		{"an admin demotes a member", team.RoleAdmin, team.RoleMember, teams.UpdateInput{Role: strp("viewer")}, domain.KindInternal},
		{"an admin may not make owners", team.RoleAdmin, team.RoleMember, teams.UpdateInput{Role: strp("owner")}, domain.KindForbidden},
		{"an admin may not demote an owner", team.RoleAdmin, team.RoleOwner, teams.UpdateInput{Role: strp("admin")}, domain.KindForbidden},
		{"an admin may not remove an owner", team.RoleAdmin, team.RoleOwner, teams.UpdateInput{Status: strp("removed")}, domain.KindForbidden},
		{"an owner makes an owner", team.RoleOwner, team.RoleMember, teams.UpdateInput{Role: strp("owner")}, domain.KindInternal},
		{"an owner demotes another owner", team.RoleOwner, team.RoleOwner, teams.UpdateInput{Role: strp("admin")}, domain.KindInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, owner := adaEnv(t)
			actor := e.actorWith(t, owner, tc.actor)
			target := e.newMember(t, owner.TeamID, "Tgt", tc.target)
			v, err := e.service().UpdateMember(ctx, actor, target.MemberID, tc.in)
			stored := e.member(t, owner.TeamID, target.MemberID)
			if tc.kind != domain.KindInternal {
				apptest.WantKind(t, err, tc.kind)
				if stored.Role != tc.target || stored.Status != team.StatusActive {
					t.Fatalf("a refused change was stored: %+v", stored)
				}
				return
			}
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if string(v.Member.Role) != *tc.in.Role || v.Name != "Tgt" || stored.Role != v.Member.Role {
				t.Fatalf("view %+v, stored %+v", v, stored)
			}
		})
	}
}

func TestUpdateMemberKeepsTheLastOwner(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	for _, in := range []teams.UpdateInput{{Role: strp("admin")}, {Status: strp("removed")}} {
		_, err := svc.UpdateMember(ctx, owner, owner.MemberID, in)
		apptest.WantKind(t, err, domain.KindConflict)
	}
	if m := e.member(t, owner.TeamID, owner.MemberID); m.Role != team.RoleOwner || m.Status != team.StatusActive {
		t.Fatalf("the last owner changed: %+v", m)
	}
}

// Another owner demotes this one while this unit waits for the team's
// lock: counted under the lock, this owner is now the last and stays.
func TestUpdateMemberCountsOwnersUnderTheTeamLock(t *testing.T) {
	e, ada := adaEnv(t)
	bob := e.newMember(t, ada.TeamID, "Bob", team.RoleOwner)
	e.deps.Teams = lockRace{Teams: e.deps.Teams, change: func(ctx context.Context) error {
		m, err := e.store.Memberships().ByID(ctx, ada.TeamID, ada.MemberID)
		if err != nil {
			return err
		}
		m.Role = team.RoleAdmin
		return e.store.Memberships().Update(ctx, m)
	}}

	_, err := e.service().UpdateMember(ctx, ada, bob.MemberID, teams.UpdateInput{Role: strp("admin")})
	apptest.WantKind(t, err, domain.KindConflict)
}

// Two owners remove each other at once: one change wins, the team keeps
// an owner.
func TestConcurrentOwnerRemovalsKeepAnOwner(t *testing.T) {
	e, ada := adaEnv(t)
	svc := e.service()
	bob := e.newMember(t, ada.TeamID, "Bob", team.RoleOwner)

	errs := make([]error, 2)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, pair := range [][2]team.Actor{{ada, bob}, {bob, ada}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			_, errs[i] = svc.UpdateMember(ctx, pair[0], pair[1].MemberID, teams.UpdateInput{Status: strp("removed")})
		}()
	}
	close(gate)
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("errors %v; want exactly one removal", errs)
	}
	for _, err := range errs {
		if err != nil {
			apptest.WantKind(t, err, domain.KindConflict)
		}
	}
	if active, owners, err := e.store.Memberships().Count(ctx, ada.TeamID); err != nil || active != 1 || owners != 1 {
		t.Fatalf("%d active, %d owners, %v; want 1 and 1", active, owners, err)
	}
}

func TestRemoveMemberEmitsAnEvent(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	bob := e.newMember(t, owner.TeamID, "Bob", team.RoleMember)

	if _, err := svc.UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Role: strp("viewer")}); err != nil {
		t.Fatalf("change role: %v", err)
	}
	if evs := e.events(t); len(evs) != 0 {
		t.Fatalf("a role change emitted %+v", evs)
	}
	v, err := svc.UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Role: strp("member"), Status: strp("removed")})
	if err != nil {
		t.Fatalf("remove: %v", err)
	}
	if v.Member.Status != team.StatusRemoved || v.Member.Role != team.RoleMember || v.Name != "Bob" {
		t.Fatalf("view %+v", v)
	}
	evs := e.events(t)
	if len(evs) != 1 || evs[0].Type != event.TeamMemberRemoved || !strings.Contains(string(evs[0].Data), `"id":"`+bob.MemberID+`"`) {
		t.Fatalf("events %+v", evs)
	}
	_, err = svc.UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Role: strp("admin")})
	apptest.WantKind(t, err, domain.KindConflict)
}

func TestUpdateMemberOfAnotherTeamIsNotFound(t *testing.T) {
	e, ada := adaEnv(t)
	bob := e.founded(t, "Bob's team", e.user(t, "bob@example.com", "Bob"))
	_, err := e.service().UpdateMember(ctx, ada, bob.MemberID, teams.UpdateInput{Role: strp("viewer")})
	apptest.WantKind(t, err, domain.KindNotFound)
}

func TestUpdateMemberStoreFailures(t *testing.T) {
	eachFailure(t, []failure{
		{"count", func(e *env) { e.deps.Memberships = countOnlyFails{e.deps.Memberships} }},
		{"update", func(e *env) { e.deps.Memberships = failingMemberUpdate{e.deps.Memberships} }},
		{"names", func(e *env) { e.deps.Users = apptest.UnreadableUsers{Err: apptest.ErrDown} }},
		{"team read", func(e *env) { e.deps.Teams = failingTeamReads{e.deps.Teams} }},
		{"event", func(e *env) { e.deps.Outbox = apptest.RefusingOutbox{Err: apptest.ErrDown} }},
	}, func(t *testing.T, e *env, owner team.Actor, fail func()) {
		bob := e.newMember(t, owner.TeamID, "Bob", team.RoleMember)
		fail()
		_, err := e.service().UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Status: strp("removed")})
		apptest.WantDown(t, err)
		if m := e.member(t, owner.TeamID, bob.MemberID); m.Status != team.StatusActive {
			t.Fatalf("membership after the failed unit %+v", m)
		}
	})
}

func TestListMembersPagesNewestFirstWithNames(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	bob := e.newMember(t, owner.TeamID, "Bob", team.RoleMember)
	cat, _ := e.invite(t, svc, owner, "cat@example.com", "viewer")
	dan := e.newMember(t, owner.TeamID, "Dan", team.RoleAdmin)
	e.founded(t, "Other team", e.user(t, "eve@example.com", "Eve"))

	type row struct{ id, name string }
	var got []row
	cursor, pages := "", 0
	for {
		page, err := svc.ListMembers(ctx, owner, cursor, 2)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if page.Limit != 2 || len(page.Items) > 2 {
			t.Fatalf("page %+v", page)
		}
		for _, v := range page.Items {
			got = append(got, row{v.Member.ID, v.Name})
		}
		pages++
		if page.NextCursor == "" {
			break
		}
		if page.NextCursor != page.Items[len(page.Items)-1].Member.ID {
			t.Fatalf("cursor %q is not the last item's id", page.NextCursor)
		}
		cursor = page.NextCursor
	}
	want := []row{{dan.MemberID, "Dan"}, {cat.Member.ID, ""}, {bob.MemberID, "Bob"}, {owner.MemberID, "Ada"}}
	if pages != 2 || len(got) != len(want) {
		t.Fatalf("%d pages, rows %v; want 2 pages, %v", pages, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rows %v, want %v", got, want)
		}
	}
}

func TestListMembersRefuses(t *testing.T) {
	e, owner := adaEnv(t)
	svc := e.service()
	_, err := svc.ListMembers(ctx, owner, "prf_00000000000000000001", 10)
	apptest.WantKind(t, err, domain.KindBadRequest)
	noRole := owner
	noRole.Role = ""
	_, err = svc.ListMembers(ctx, noRole, "", 10)
	apptest.WantKind(t, err, domain.KindForbidden)

	eachFailure(t, []failure{
		{"memberships", func(e *env) { e.deps.Memberships = failingMemberReads{e.deps.Memberships} }},
		{"names", func(e *env) { e.deps.Users = apptest.UnreadableUsers{Err: apptest.ErrDown} }},
	}, func(t *testing.T, e *env, owner team.Actor, fail func()) {
		fail()
		_, err := e.service().ListMembers(ctx, owner, "", 10)
		apptest.WantDown(t, err)
	})
}
