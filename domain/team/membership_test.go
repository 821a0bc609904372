package team_test

import (
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
)

var now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// ok marks a change that must succeed.
const ok = domain.KindInternal

func role(r team.Role) *team.Role { return &r }

func TestMemberChange(t *testing.T) {
	owner := team.Actor{UserID: "usr_o", Role: team.RoleOwner}
	admin := team.Actor{UserID: "usr_a", Role: team.RoleAdmin}
	member := team.Actor{UserID: "usr_m", Role: team.RoleMember}
	anOwner := team.Member{ID: "mem_1", Role: team.RoleOwner, Status: team.StatusActive}
	aMember := team.Member{ID: "mem_2", Role: team.RoleMember, Status: team.StatusActive}
	removed := team.Member{ID: "mem_3", Role: team.RoleMember, Status: team.StatusRemoved}

	for _, tc := range []struct {
		name   string
		actor  team.Actor
		m      team.Member
		ch     team.MemberChange
		owners int
		want   domain.Kind // KindInternal (zero) for success
	}{
		{"admin demotes a member", admin, aMember, team.MemberChange{Role: role(team.RoleViewer)}, 1, ok},
		{"admin removes a member", admin, aMember, team.MemberChange{Remove: true}, 1, ok},
		{"member may not change roles", member, aMember, team.MemberChange{Role: role(team.RoleViewer)}, 1, domain.KindForbidden},
		{"admin may not make owners", admin, aMember, team.MemberChange{Role: role(team.RoleOwner)}, 1, domain.KindForbidden},
		{"admin may not demote owners", admin, anOwner, team.MemberChange{Role: role(team.RoleAdmin)}, 2, domain.KindForbidden},
		{"owner makes owners", owner, aMember, team.MemberChange{Role: role(team.RoleOwner)}, 1, ok},
		{"owner demotes one of two owners", owner, anOwner, team.MemberChange{Role: role(team.RoleAdmin)}, 2, ok},
		{"the last owner stays", owner, anOwner, team.MemberChange{Role: role(team.RoleAdmin)}, 1, domain.KindConflict},
		{"the last owner is not removed", owner, anOwner, team.MemberChange{Remove: true}, 1, domain.KindConflict},
		{"an owner stays owner", owner, anOwner, team.MemberChange{Role: role(team.RoleOwner)}, 1, ok},
		{"a removed member is invited again, not changed", owner, removed, team.MemberChange{Role: role(team.RoleViewer)}, 1, domain.KindConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := tc.m.Change(tc.actor, tc.ch, tc.owners, now)
			if got := domain.KindOf(err); err != nil && got != tc.want || err == nil && tc.want != ok {
				t.Fatalf("err = %v, want kind %d", err, tc.want)
			}
			if err == nil && tc.ch.Remove && next.Status != team.StatusRemoved {
				t.Fatalf("status %s after removal", next.Status)
			}
		})
	}
}

func TestAccept(t *testing.T) {
	m := team.NewInvited("mem_1", "team_1", "", "a@example.com", team.RoleViewer, now)
	got, err := m.Accept("usr_1", now.Add(time.Hour))
	if err != nil || got.Status != team.StatusActive || got.UserID != "usr_1" || got.JoinedAt == nil {
		t.Fatalf("accept: %+v, %v", got, err)
	}
	if _, err := got.Accept("usr_1", now); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("second accept: %v", err)
	}
}

func TestReinvite(t *testing.T) {
	owner := team.Actor{UserID: "usr_o", Role: team.RoleOwner}
	admin := team.Actor{UserID: "usr_a", Role: team.RoleAdmin}
	joined := now.Add(-time.Hour)
	removedOwner := team.Member{ID: "mem_1", Email: "a@example.com", Role: team.RoleOwner, Status: team.StatusRemoved, JoinedAt: &joined}
	active := team.Member{ID: "mem_2", Role: team.RoleMember, Status: team.StatusActive}

	if _, err := active.Reinvite(owner, "usr_x", team.RoleViewer, now); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("re-inviting an active member: %v, want conflict", err)
	}
	if _, err := removedOwner.Reinvite(admin, "", team.RoleMember, now); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("an admin re-inviting a former owner: %v, want forbidden", err)
	}
	later := time.Date(2030, 2, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600))
	got, err := removedOwner.Reinvite(owner, "usr_new", team.RoleAdmin, later)
	if err != nil {
		t.Fatalf("an owner re-inviting a former owner: %v", err)
	}
	want := team.Member{ID: "mem_1", Email: "a@example.com", UserID: "usr_new", Role: team.RoleAdmin, Status: team.StatusInvited,
		InvitedAt: time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC)}
	if got.JoinedAt != nil || got.InvitedAt.Location() != time.UTC {
		t.Fatalf("re-invited member keeps JoinedAt %v or a non-UTC InvitedAt %v", got.JoinedAt, got.InvitedAt)
	}
	got.JoinedAt = nil
	if got != want {
		t.Fatalf("Reinvite = %+v, want %+v", got, want)
	}
}

func TestInvitationRedeemable(t *testing.T) {
	inv := team.NewInvitation("inv_1", "tm_1", "mem_1", "a@example.com", "s3cret", now, time.Hour)
	if !inv.ExpiresAt.Equal(now.Add(time.Hour)) || inv.Email != "a@example.com" || inv.MemberID != "mem_1" {
		t.Fatalf("NewInvitation = %+v", inv)
	}
	if string(inv.Hash) == "s3cret" {
		t.Fatal("the invitation keeps its secret in the clear")
	}
	cases := []struct {
		name   string
		secret string
		at     time.Time
		used   bool
		want   bool
	}{
		{"right secret, in time", "s3cret", now.Add(59 * time.Minute), false, true},
		{"wrong secret", "s3creT", now, false, false},
		{"at expiry", "s3cret", now.Add(time.Hour), false, false},
		{"used", "s3cret", now, true, false},
	}
	for _, c := range cases {
		i := inv
		if c.used {
			i.UsedAt = &now
		}
		if got := i.Redeemable(c.secret, c.at); got != c.want {
			t.Errorf("%s: Redeemable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestTeamNameRefusesDisguisingCharacters: a team name goes into invitation
// mails, so CR/LF and bidirectional controls are refused.
func TestTeamNameRefusesDisguisingCharacters(t *testing.T) {
	for _, name := range []string{"Growth\r\nBcc: x@example.com", "Growth \u202egnp.exe", "a\u2066b"} {
		if _, err := team.NewTeam("tm_1", name, now); !domain.IsKind(err, domain.KindValidation) {
			t.Errorf("NewTeam(%q): %v, want a validation error", name, err)
		}
	}
	if _, err := team.NewTeam("tm_1", "Équipe ☃", now); err != nil {
		t.Fatalf("NewTeam of a plain Unicode name: %v", err)
	}
}
