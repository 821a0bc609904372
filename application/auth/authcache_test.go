package auth_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
)

// Two instances share the store and the notices. Instance b has served
// bob's bearer and key from its cache; each change committed through
// instance a reaches b's next request.
func TestEveryChangeReachesTheOtherInstancesCache(t *testing.T) {
	t.Parallel()
	type warm struct {
		e        *env
		a, b     *auth.Service
		ada, bob auth.SignIn
		key      auth.NewAPIKey
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, w warm)
		// role is what b's next requests act with; "" when they are
		// refused.
		role team.Role
	}{
		{"role change", func(t *testing.T, w warm) {
			m, err := w.e.store.Memberships().ByUser(ctx, w.ada.Team.ID, w.bob.User.ID)
			if err != nil {
				t.Fatal(err)
			}
			m.Role = team.RoleViewer
			if err := w.e.store.Memberships().Update(ctx, m); err != nil {
				t.Fatal(err)
			}
			w.a.MembershipChanged(ctx, w.ada.Team.ID, w.bob.User.ID)
		}, team.RoleViewer},
		{"member removal", func(t *testing.T, w warm) {
			w.e.setStatus(t, w.ada.Team.ID, w.bob.User.ID, team.StatusRemoved)
			w.a.MembershipChanged(ctx, w.ada.Team.ID, w.bob.User.ID)
		}, ""},
		{"password reset", func(t *testing.T, w warm) {
			if err := w.a.ForgotPassword(ctx, "bob@example.com"); err != nil {
				t.Fatal(err)
			}
			if err := w.a.ResetPassword(ctx, w.e.resetToken(t), "a brand new password"); err != nil {
				t.Fatal(err)
			}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv()
			a, b := e.service(t), e.service(t)
			ada := register(t, a, "ada@example.com")
			bob := register(t, a, "bob@example.com")
			e.join(t, ada.Team.ID, bob.User, team.RoleAdmin)
			bobInAda := actorIn(t, b, bob, ada.Team.ID)
			key := createKey(t, b, bobInAda, "ci")
			bearer := auth.Credentials{BearerToken: bob.Tokens.AccessToken, TeamID: ada.Team.ID}
			byKey := auth.Credentials{APIKey: key.Key}
			for _, c := range []auth.Credentials{bearer, byKey, bearer, byKey} {
				if actor, err := b.Authenticate(ctx, c); err != nil || actor.Role != team.RoleAdmin {
					t.Fatalf("warming b: %+v, %v", actor, err)
				}
			}
			hits0, misses0 := b.NearLookups()
			if hits0 < 2 {
				t.Fatalf("b served %d requests from its cache while warming, want at least 2", hits0)
			}

			tc.change(t, warm{e: e, a: a, b: b, ada: ada, bob: bob, key: key})

			for name, c := range map[string]auth.Credentials{"bearer": bearer, "key": byKey} {
				actor, err := b.Authenticate(ctx, c)
				switch {
				case tc.role != "" && (err != nil || actor.Role != tc.role):
					t.Errorf("%s on b after the change: %+v, %v; want role %s", name, actor, err, tc.role)
				case tc.role == "" && err == nil:
					t.Errorf("%s on b after the change still works: %+v", name, actor)
				}
			}
			if _, misses := b.NearLookups(); misses-misses0 != 2 {
				t.Errorf("b missed %d times after the change, want 2: both entries evicted", misses-misses0)
			}
		})
	}
}

// A key deleted through one instance stops working on the other, which
// had it cached; the owner's other key does not.
func TestKeyDeletionReachesTheOtherInstancesCache(t *testing.T) {
	t.Parallel()
	e := newEnv()
	a, b := e.service(t), e.service(t)
	owner, k := adaWithKey(t, a)
	other := createKey(t, a, owner, "other")
	for _, key := range []string{k.Key, k.Key, other.Key} {
		if err := svcAuthKey(b, key); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.DeleteAPIKey(ctx, owner, k.APIKey.ID); err != nil {
		t.Fatal(err)
	}
	apptest.WantKind(t, svcAuthKey(b, k.Key), domain.KindUnauthorized)
	hits0, _ := b.NearLookups()
	if err := svcAuthKey(b, other.Key); err != nil {
		t.Fatal(err)
	}
	if hits, _ := b.NearLookups(); hits != hits0+1 {
		t.Fatal("deleting one key evicted another")
	}
}

// Reusing a refresh token signs out every session of the user: a bearer
// the other instance has cached is refused there.
func TestSignOutEverywhereReachesTheOtherInstancesCache(t *testing.T) {
	t.Parallel()
	e := newEnv()
	a, b := e.service(t), e.service(t)
	ada := register(t, a, "ada@example.com")
	bearer := auth.Credentials{BearerToken: ada.Tokens.AccessToken}
	for range 2 {
		if _, err := b.Authenticate(ctx, bearer); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Refresh(ctx, ada.Tokens.RefreshToken); err != nil {
		t.Fatal(err)
	}
	_, err := a.Refresh(ctx, ada.Tokens.RefreshToken)
	apptest.WantKind(t, err, domain.KindUnauthorized)
	_, err = b.Authenticate(ctx, bearer)
	apptest.WantKind(t, err, domain.KindUnauthorized)
}
