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
