package auth_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/accountstore"
)

// actorOf authenticates a sign-in's access token in its default team.
func actorOf(t *testing.T, svc *auth.Service, in auth.SignIn) team.Actor {
	t.Helper()
	return actorIn(t, svc, in, "")
}

// actorIn authenticates a sign-in's access token in teamID.
func actorIn(t *testing.T, svc *auth.Service, in auth.SignIn, teamID string) team.Actor {
	t.Helper()
	a, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: in.Tokens.AccessToken, TeamID: teamID})
	if err != nil {
		t.Fatalf("authenticate in team %q: %v", teamID, err)
	}
	return a
}

// joined makes in's user an active member of teamID with role and
// authenticates them there.
func (e *env) joined(t *testing.T, svc *auth.Service, in auth.SignIn, teamID string, role team.Role) team.Actor {
	t.Helper()
	e.join(t, teamID, in.User, role)
	return actorIn(t, svc, in, teamID)
}

// adaWithKey registers ada and creates her key "ci", and returns her actor in
// her team and the key.
func adaWithKey(t *testing.T, svc *auth.Service) (team.Actor, auth.NewAPIKey) {
	t.Helper()
	owner := actorOf(t, svc, register(t, svc, "ada@example.com"))
	return owner, createKey(t, svc, owner, "ci")
}

func createKey(t *testing.T, svc *auth.Service, actor team.Actor, name string) auth.NewAPIKey {
	t.Helper()
	k, err := svc.CreateAPIKey(ctx, actor, name)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return k
}

func TestCreateAPIKeyAuthenticatesAsItsOwnerInItsTeam(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	owner := actorOf(t, svc, ada)

	k := createKey(t, svc, owner, "  ci  ")
	if k.APIKey.Name != "ci" || k.APIKey.TeamID != ada.Team.ID || k.APIKey.UserID != ada.User.ID || !k.APIKey.CreatedAt.Equal(start) {
		t.Fatalf("key %+v", k.APIKey)
	}
	if !strings.HasPrefix(k.Key, k.APIKey.Prefix+"_") || len(k.Key) != len(k.APIKey.Prefix)+1+64 {
		t.Fatalf("key %q with prefix %q", k.Key, k.APIKey.Prefix)
	}
	stored, err := e.store.APIKeys().ByID(ctx, k.APIKey.ID)
	if err != nil || strings.Contains(string(stored.Hash), k.Key[len(k.APIKey.Prefix)+1:]) {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	actor, err := svc.Authenticate(ctx, auth.Credentials{APIKey: k.Key})
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	want := team.Actor{UserID: ada.User.ID, TeamID: ada.Team.ID, MemberID: owner.MemberID, Role: team.RoleOwner, APIKeyID: k.APIKey.ID}
	if actor != want {
		t.Fatalf("actor %+v, want %+v", actor, want)
	}
	if _, err := svc.Authenticate(ctx, auth.Credentials{APIKey: k.Key, TeamID: ada.Team.ID}); err != nil {
		t.Fatalf("naming the key's own team: %v", err)
	}
}

func TestCreateAPIKeyChecksRoleAndName(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	owner := actorOf(t, svc, ada)
	for _, name := range []string{"", "   ", strings.Repeat("n", 101)} {
		_, err := svc.CreateAPIKey(ctx, owner, name)
		apptest.WantKind(t, err, domain.KindValidation)
	}
	if _, err := svc.CreateAPIKey(ctx, owner, strings.Repeat("ñ", 100)); err != nil {
		t.Fatalf("100 characters: %v", err)
	}
	noRole := owner
	noRole.Role = ""
	_, err := svc.CreateAPIKey(ctx, noRole, "ci")
	apptest.WantKind(t, err, domain.KindForbidden)

	e.deps.APIKeys = failingAPIKeys{e.deps.APIKeys}
	_, err = e.service(t).CreateAPIKey(ctx, owner, "ci")
	apptest.WantDown(t, err)
}

func TestListAPIKeysPagesTheActorsOwnKeys(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	bob := register(t, svc, "bob@example.com")
	adaOwner := actorOf(t, svc, ada)
	adaInBob := e.joined(t, svc, ada, bob.Team.ID, team.RoleMember)
	bobInAda := e.joined(t, svc, bob, ada.Team.ID, team.RoleAdmin)

	k1 := createKey(t, svc, adaOwner, "one")
	createKey(t, svc, adaInBob, "in another team")
	k2 := createKey(t, svc, adaOwner, "two")
	createKey(t, svc, bobInAda, "another user's")
	k3 := createKey(t, svc, adaOwner, "three")

	page, err := svc.ListAPIKeys(ctx, adaOwner, 2, "")
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(page.Items) != 2 || page.Items[0].ID != k3.APIKey.ID || page.Items[1].ID != k2.APIKey.ID || page.NextCursor != k2.APIKey.ID {
		t.Fatalf("first page %+v", page)
	}
	page, err = svc.ListAPIKeys(ctx, adaOwner, 2, page.NextCursor)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(page.Items) != 1 || page.Items[0].ID != k1.APIKey.ID || page.NextCursor != "" {
		t.Fatalf("second page %+v", page)
	}
	page, err = svc.ListAPIKeys(ctx, adaOwner, 2, k1.APIKey.ID)
	if err != nil || len(page.Items) != 0 || page.NextCursor != "" {
		t.Fatalf("past the last key: %+v, %v", page, err)
	}

	noRole := adaOwner
	noRole.Role = ""
	_, err = svc.ListAPIKeys(ctx, noRole, 2, "")
	apptest.WantKind(t, err, domain.KindForbidden)
	e.deps.APIKeys = failingAPIKeys{e.deps.APIKeys}
	_, err = e.service(t).ListAPIKeys(ctx, adaOwner, 2, "")
	apptest.WantDown(t, err)
}

func TestDeleteAPIKey(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	bob := register(t, svc, "bob@example.com")
	cat := register(t, svc, "cat@example.com")
	adaOwner := actorOf(t, svc, ada)
	bobOwner := actorOf(t, svc, bob)
	bobInAda := e.joined(t, svc, bob, ada.Team.ID, team.RoleMember)
	catInAda := e.joined(t, svc, cat, ada.Team.ID, team.RoleMember)

	adaKey := createKey(t, svc, adaOwner, "ada's")
	bobKey := createKey(t, svc, bobInAda, "bob's")

	t.Run("another team's key is not found", func(t *testing.T) {
		apptest.WantKind(t, svc.DeleteAPIKey(ctx, bobOwner, adaKey.APIKey.ID), domain.KindNotFound)
		apptest.WantKind(t, svc.DeleteAPIKey(ctx, bobOwner, "key_00000000000000000099"), domain.KindNotFound)
	})
	t.Run("a member may not delete another member's key", func(t *testing.T) {
		apptest.WantKind(t, svc.DeleteAPIKey(ctx, catInAda, bobKey.APIKey.ID), domain.KindForbidden)
	})
	if _, err := svc.Authenticate(ctx, auth.Credentials{APIKey: bobKey.Key}); err != nil {
		t.Fatalf("a refused delete removed the key: %v", err)
	}
	t.Run("an owner deletes another member's key, and it stops working at once", func(t *testing.T) {
		if err := svc.DeleteAPIKey(ctx, adaOwner, bobKey.APIKey.ID); err != nil {
			t.Fatalf("delete: %v", err)
		}
		apptest.WantKind(t, svcAuthKey(svc, bobKey.Key), domain.KindUnauthorized)
	})
	t.Run("one's own key", func(t *testing.T) {
		if err := svc.DeleteAPIKey(ctx, adaOwner, adaKey.APIKey.ID); err != nil {
			t.Fatalf("delete: %v", err)
		}
		apptest.WantKind(t, svc.DeleteAPIKey(ctx, adaOwner, adaKey.APIKey.ID), domain.KindNotFound)
	})
	t.Run("no role", func(t *testing.T) {
		noRole := adaOwner
		noRole.Role = ""
		apptest.WantKind(t, svc.DeleteAPIKey(ctx, noRole, adaKey.APIKey.ID), domain.KindForbidden)
	})
}

func TestDeleteAPIKeyFailures(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	owner, k := adaWithKey(t, svc)

	e.deps.APIKeys = failingAPIKeys{e.deps.APIKeys}
	apptest.WantDown(t, e.service(t).DeleteAPIKey(ctx, owner, k.APIKey.ID))
	if err := svcAuthKey(svc, k.Key); err != nil {
		t.Fatalf("a key whose deletion failed stopped working: %v", err)
	}
}

// A deletion whose notice cannot go out still deletes, and the deleting
// instance stops trusting the key at once; the failure is logged.
func TestDeleteAPIKeyWhoseNoticeIsLost(t *testing.T) {
	t.Parallel()
	e := newEnv()
	e.deps.Notices = failingPublish{e.notices}
	svc := e.service(t)
	owner, k := adaWithKey(t, svc)
	if err := svcAuthKey(svc, k.Key); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteAPIKey(ctx, owner, k.APIKey.ID); err != nil {
		t.Fatalf("delete with the notice lost: %v", err)
	}
	apptest.WantKind(t, svcAuthKey(svc, k.Key), domain.KindUnauthorized)
	if !e.logs.Has("WARN publishing an auth invalidation failed; other instances may trust the old value until it expires") {
		t.Fatalf("not logged: %v", e.logs.Lines())
	}
}

// failingKeyDelete refuses to delete keys.
type failingKeyDelete struct{ accountstore.APIKeys }

func (failingKeyDelete) Delete(context.Context, string, string) error { return apptest.ErrDown }

func TestDeleteAPIKeyStoreDeleteFailureKeepsTheCache(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	owner, k := adaWithKey(t, svc)
	if _, err := svc.Authenticate(ctx, auth.Credentials{APIKey: k.Key}); err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	e.deps.APIKeys = failingKeyDelete{e.deps.APIKeys}
	apptest.WantDown(t, e.service(t).DeleteAPIKey(ctx, owner, k.APIKey.ID))
	if _, err := svc.Authenticate(ctx, auth.Credentials{APIKey: k.Key}); err != nil {
		t.Fatalf("a key that was not deleted stopped working: %v", err)
	}
}

func svcAuthKey(svc *auth.Service, key string) error {
	_, err := svc.Authenticate(ctx, auth.Credentials{APIKey: key})
	return err
}

// The first authentication reads the store (the key, then its membership)
// and fills the cache; the next ones cost one lookup in process memory and
// no store read, and the secret is still checked.
func TestAuthenticateByKeyCacheMissThenHit(t *testing.T) {
	t.Parallel()
	e := newEnv()
	keyReads := e.countKeyReads()
	memberReads := e.countMemberReads()
	svc := e.service(t)
	_, k := adaWithKey(t, svc)
	hits0, misses0 := svc.NearLookups()
	memberReads0 := memberReads.Load()

	if err := svcAuthKey(svc, k.Key); err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	if hits, misses := svc.NearLookups(); keyReads.Load() != 1 || memberReads.Load()-memberReads0 != 1 || hits-hits0 != 0 || misses-misses0 != 1 {
		t.Fatalf("cold: %d key reads, %d membership reads, %d hits, %d misses; want 1, 1, 0, 1",
			keyReads.Load(), memberReads.Load()-memberReads0, hits-hits0, misses-misses0)
	}
	for range 3 {
		if err := svcAuthKey(svc, k.Key); err != nil {
			t.Fatalf("authenticate: %v", err)
		}
	}
	if hits, misses := svc.NearLookups(); keyReads.Load() != 1 || memberReads.Load()-memberReads0 != 1 || hits-hits0 != 3 || misses-misses0 != 1 {
		t.Fatalf("three warm requests: %d key reads, %d membership reads, %d hits, %d misses in all; want 1, 1, 3, 1",
			keyReads.Load(), memberReads.Load()-memberReads0, hits-hits0, misses-misses0)
	}
	forged := k.Key[:len(k.Key)-1] + "0"
	if strings.HasSuffix(k.Key, "0") {
		forged = k.Key[:len(k.Key)-1] + "1"
	}
	apptest.WantKind(t, svcAuthKey(svc, forged), domain.KindUnauthorized)
	if keyReads.Load() != 1 {
		t.Fatalf("a forged secret with a cached id read the store")
	}
}

// A bearer's warm path is the same: one lookup, no store read, whatever
// the team it asks for.
func TestAuthenticateByBearerCacheMissThenHit(t *testing.T) {
	t.Parallel()
	e, _, ada := adaRegistered(t)
	userReads := &atomic.Int64{}
	e.deps.Users = countingUsers{Users: e.deps.Users, reads: userReads}
	memberReads := e.countMemberReads()
	svc := e.service(t)
	for range 4 {
		if _, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken, TeamID: ada.Team.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if hits, misses := svc.NearLookups(); userReads.Load() != 1 || memberReads.Load() != 1 || hits != 7 || misses != 1 {
		t.Fatalf("%d user reads, %d membership reads, %d hits, %d misses; want 1, 1, 7, 1", userReads.Load(), memberReads.Load(), hits, misses)
	}
}

// While the notices are deaf the cache is not trusted: every request reads
// the store, and what was cached before is gone when they are heard again.
func TestAuthenticateReadsTheStoreWhileNoticesAreDeaf(t *testing.T) {
	t.Parallel()
	e := newEnv()
	bus := &switchedNotices{Local: e.notices}
	e.deps.Notices = bus
	keyReads := e.countKeyReads()
	svc := e.service(t)
	_, k := adaWithKey(t, svc)
	for range 2 {
		if err := svcAuthKey(svc, k.Key); err != nil {
			t.Fatal(err)
		}
	}
	if keyReads.Load() != 1 {
		t.Fatalf("%d key reads while listening, want 1", keyReads.Load())
	}
	bus.tell(ports.Notice{Kind: ports.NoticeDeaf})
	for range 2 {
		if err := svcAuthKey(svc, k.Key); err != nil {
			t.Fatal(err)
		}
	}
	if keyReads.Load() != 3 {
		t.Fatalf("%d key reads after two requests while deaf, want 3", keyReads.Load())
	}
	bus.tell(ports.Notice{Kind: ports.NoticeListening})
	for range 2 {
		if err := svcAuthKey(svc, k.Key); err != nil {
			t.Fatal(err)
		}
	}
	if keyReads.Load() != 4 {
		t.Fatalf("%d key reads once heard again, want 4 (one miss, then cached)", keyReads.Load())
	}
}

// A cached context expires after the policy's TTL even when nothing was
// heard.
func TestAuthenticateCacheExpires(t *testing.T) {
	t.Parallel()
	e := newEnv()
	keyReads := e.countKeyReads()
	svc := e.service(t)
	_, k := adaWithKey(t, svc)
	for _, advance := range []time.Duration{0, auth.DefaultPolicy().APIKeyCacheTTL - time.Second, time.Second} {
		e.clock.Advance(advance)
		if err := svcAuthKey(svc, k.Key); err != nil {
			t.Fatal(err)
		}
	}
	if keyReads.Load() != 2 {
		t.Fatalf("%d key reads, want 2: the first, and one once the TTL ran out", keyReads.Load())
	}
}

func TestAuthenticateByKeyStoreFailure(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	_, k := adaWithKey(t, svc)
	e.deps.APIKeys = failingAPIKeys{e.deps.APIKeys}
	apptest.WantDown(t, svcAuthKey(e.service(t), k.Key))
}

func TestAuthenticateRefusesMalformedKeys(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	secret := strings.Repeat("a", 64)
	for _, key := range []string{
		"key_1_" + secret,
		"psvc_" + secret,
		"psvc__" + secret,
		"psvc_1_" + secret[:63],
		"psvc_1_" + secret + "a",
		"psvc_" + strings.Repeat("1", 200) + "_" + secret,
		"psvc_00000000000000000099_" + secret,
	} {
		if err := svcAuthKey(svc, key); !domain.IsKind(err, domain.KindUnauthorized) || err.Error() != "invalid API key" {
			t.Fatalf("%q: %v", key, err)
		}
	}
}

// A member removed from the team loses what their keys could do on the
// next request, even while the key is cached: the key is a revoked
// credential (401), not a team the caller may not see (404).
func TestAuthenticateByKeyOfARemovedMember(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	bob := register(t, svc, "bob@example.com")
	bobInAda := e.joined(t, svc, bob, ada.Team.ID, team.RoleAdmin)
	k := createKey(t, svc, bobInAda, "ci")
	if err := svcAuthKey(svc, k.Key); err != nil {
		t.Fatalf("authenticate: %v", err)
	}

	e.setStatus(t, ada.Team.ID, bob.User.ID, team.StatusRemoved)
	svc.MembershipChanged(ctx, ada.Team.ID, bob.User.ID)
	apptest.WantKind(t, svcAuthKey(svc, k.Key), domain.KindUnauthorized)
}

func TestAuthenticateKeyCannotBePointedAtAnotherTeam(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	bob := register(t, svc, "bob@example.com")
	e.join(t, bob.Team.ID, ada.User, team.RoleOwner)
	k := createKey(t, svc, actorOf(t, svc, ada), "ci")
	_, err := svc.Authenticate(ctx, auth.Credentials{APIKey: k.Key, TeamID: bob.Team.ID})
	apptest.WantKind(t, err, domain.KindNotFound)
}

func TestAuthenticateResolvesTheActor(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	bob := register(t, svc, "bob@example.com")
	cat := register(t, svc, "cat@example.com")
	e.join(t, ada.Team.ID, bob.User, team.RoleViewer)
	invited := team.NewInvited("mem_cat", ada.Team.ID, cat.User.ID, cat.User.Email, team.RoleAdmin, start)
	if err := e.store.Memberships().Create(ctx, invited); err != nil {
		t.Fatalf("invite: %v", err)
	}

	bobInAda, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: bob.Tokens.AccessToken, TeamID: ada.Team.ID})
	if err != nil || bobInAda.Role != team.RoleViewer || bobInAda.TeamID != ada.Team.ID || bobInAda.APIKeyID != "" {
		t.Fatalf("bob in ada's team %+v, %v", bobInAda, err)
	}
	for _, tc := range []struct {
		name string
		c    auth.Credentials
		kind domain.Kind
	}{
		{"no credentials", auth.Credentials{}, domain.KindUnauthorized},
		{"both credentials", auth.Credentials{BearerToken: ada.Tokens.AccessToken, APIKey: "psvc_x"}, domain.KindUnauthorized},
		{"a token signed elsewhere", auth.Credentials{BearerToken: "eyJhbGciOiJIUzI1NiJ9.e30.x"}, domain.KindUnauthorized},
		{"not a member", auth.Credentials{BearerToken: ada.Tokens.AccessToken, TeamID: bob.Team.ID}, domain.KindNotFound},
		{"an unknown team", auth.Credentials{BearerToken: ada.Tokens.AccessToken, TeamID: "team_x"}, domain.KindNotFound},
		{"an invited member", auth.Credentials{BearerToken: cat.Tokens.AccessToken, TeamID: ada.Team.ID}, domain.KindNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.Authenticate(ctx, tc.c)
			apptest.WantKind(t, err, tc.kind)
		})
	}
	e.setStatus(t, ada.Team.ID, bob.User.ID, team.StatusRemoved)
	svc.MembershipChanged(ctx, ada.Team.ID, bob.User.ID)
	_, err = svc.Authenticate(ctx, auth.Credentials{BearerToken: bob.Tokens.AccessToken, TeamID: ada.Team.ID})
	apptest.WantKind(t, err, domain.KindNotFound)

	e.deps.Memberships = failingByUser{e.deps.Memberships}
	_, err = e.service(t).Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken})
	apptest.WantDown(t, err)
}

func TestMe(t *testing.T) {
	t.Parallel()
	_, svc, ada := adaRegistered(t)
	me, err := svc.Me(ctx, actorOf(t, svc, ada))
	if err != nil || me.User.Email != "ada@example.com" || me.Team.Name != "Ada's team" || me.Role != team.RoleOwner {
		t.Fatalf("me %+v, %v", me, err)
	}
	_, err = svc.Me(ctx, team.Actor{UserID: ada.User.ID, TeamID: "team_gone", Role: team.RoleOwner})
	apptest.WantKind(t, err, domain.KindNotFound)
	_, err = svc.Me(ctx, team.Actor{UserID: "usr_gone", TeamID: ada.Team.ID, Role: team.RoleOwner})
	apptest.WantKind(t, err, domain.KindNotFound)
}

// An API key sent as a bearer token is refused with the header it goes in,
// the key itself never tried as a token.
func TestAnAPIKeyAsABearerTokenIsToldWhereItGoes(t *testing.T) {
	t.Parallel()
	_, svc, ada := adaRegistered(t)
	k := createKey(t, svc, actorOf(t, svc, ada), "ci")
	_, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: k.Key})
	if !domain.IsKind(err, domain.KindUnauthorized) || !strings.Contains(err.Error(), "X-API-Key") {
		t.Fatalf("an API key as a bearer token: %v, want 401 naming X-API-Key", err)
	}
}
