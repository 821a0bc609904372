package teams_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/teams"
	"github.com/profilesvc/profilesvc/domain/team"
)

// memberKeys stands in for the accounts module: it records which
// memberships' keys were revoked, and which memberships every instance was
// told had changed once the change committed.
type memberKeys struct {
	mu      sync.Mutex
	revoked []string
	changed []string
	err     error
}

func (k *memberKeys) RevokeMemberKeys(_ context.Context, teamID, userID string) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return nil, k.err
	}
	k.revoked = append(k.revoked, teamID+"/"+userID)
	return []string{"key_of_" + userID}, nil
}

func (k *memberKeys) MembershipChanged(_ context.Context, teamID, userID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.changed = append(k.changed, teamID+"/"+userID)
}

func (k *memberKeys) changes() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.changed)
}

func TestRemovingAMemberRevokesTheirKeysInTheTeam(t *testing.T) {
	e, owner := adaEnv(t)
	keys := e.deps.Keys.(*memberKeys)
	svc := e.service()
	bob := e.newMember(t, owner.TeamID, "Bob", team.RoleMember)

	bobInTeam := owner.TeamID + "/" + bob.UserID
	if _, err := svc.UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Role: strp("viewer")}); err != nil {
		t.Fatal(err)
	}
	if len(keys.revoked) != 0 {
		t.Fatalf("a role change revoked keys: %v", keys.revoked)
	}
	if got := keys.changes(); !slices.Equal(got, []string{bobInTeam}) {
		t.Fatalf("after a role change every instance was told %v, want %v", got, []string{bobInTeam})
	}
	if _, err := svc.UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Status: strp("removed")}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys.revoked, []string{bobInTeam}) || !slices.Equal(keys.changes(), []string{bobInTeam, bobInTeam}) {
		t.Fatalf("revoked %v, changed %v", keys.revoked, keys.changes())
	}
}

// A removal that fails to revoke the keys does not happen at all.
func TestRemovalFailingToRevokeKeysChangesNothing(t *testing.T) {
	e, owner := adaEnv(t)
	keys := e.deps.Keys.(*memberKeys)
	keys.err = apptest.ErrDown
	svc := e.service()
	bob := e.newMember(t, owner.TeamID, "Bob", team.RoleMember)

	_, err := svc.UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Status: strp("removed")})
	apptest.WantDown(t, err)
	m, err := e.store.Memberships().ByID(ctx, owner.TeamID, bob.MemberID)
	if err != nil || m.Status != team.StatusActive {
		t.Fatalf("membership %+v, %v; want still active", m, err)
	}
	if len(keys.changes()) != 0 || len(e.events(t)) != 0 {
		t.Fatalf("told every instance of %v, events %v", keys.changes(), e.events(t))
	}
}

// Changing an invited member, who has no credentials yet, tells nobody; an
// acceptance is told once it has committed, and a refused one is not.
func TestMembershipChangesAreToldOnlyWhenTheyCommit(t *testing.T) {
	e, owner := adaEnv(t)
	keys := e.deps.Keys.(*memberKeys)
	svc := e.service()
	in := e.inviteBob(t, owner)
	if _, err := svc.UpdateMember(ctx, owner, in.view.Member.ID, teams.UpdateInput{Role: strp("viewer")}); err != nil {
		t.Fatal(err)
	}
	if got := keys.changes(); len(got) != 0 {
		t.Fatalf("changing an invited member told %v", got)
	}
	if _, err := svc.Accept(ctx, in.bob, "inv_unknown.secret"); err == nil {
		t.Fatal("a bad token was accepted")
	}
	if got := keys.changes(); len(got) != 0 {
		t.Fatalf("a refused acceptance told %v", got)
	}
	if _, err := svc.Accept(ctx, in.bob, in.token); err != nil {
		t.Fatal(err)
	}
	if got, want := keys.changes(), []string{owner.TeamID + "/" + in.bob.UserID}; !slices.Equal(got, want) {
		t.Fatalf("after the acceptance every instance was told %v, want %v", got, want)
	}
}
