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

// memberKeys stands in for the accounts module's keys: it records which
// memberships' keys were revoked, and which ids were forgotten (evicted
// from the cache) once the removal committed.
type memberKeys struct {
	mu        sync.Mutex
	revoked   []string
	forgotten []string
	err       error
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

func (k *memberKeys) ForgetAPIKeys(_ context.Context, ids []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.forgotten = append(k.forgotten, ids...)
}

func TestRemovingAMemberRevokesTheirKeysInTheTeam(t *testing.T) {
	e, owner := adaEnv(t)
	keys := e.deps.Keys.(*memberKeys)
	svc := e.service()
	bob := e.newMember(t, owner.TeamID, "Bob", team.RoleMember)

	if _, err := svc.UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Role: strp("viewer")}); err != nil {
		t.Fatal(err)
	}
	if len(keys.revoked) != 0 {
		t.Fatalf("a role change revoked keys: %v", keys.revoked)
	}
	if _, err := svc.UpdateMember(ctx, owner, bob.MemberID, teams.UpdateInput{Status: strp("removed")}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys.revoked, []string{owner.TeamID + "/" + bob.UserID}) || !slices.Equal(keys.forgotten, []string{"key_of_" + bob.UserID}) {
		t.Fatalf("revoked %v, forgotten %v", keys.revoked, keys.forgotten)
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
	if len(keys.forgotten) != 0 || len(e.events(t)) != 0 {
		t.Fatalf("forgot %v, events %v", keys.forgotten, e.events(t))
	}
}
