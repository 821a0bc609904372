package auth_test

import (
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
)

func session(token, teamID string) auth.Credentials {
	return auth.Credentials{SessionToken: token, TeamID: teamID}
}

func TestDashboardSessionOpensWithoutRotating(t *testing.T) {
	t.Parallel()
	e, svc, reg := adaRegistered(t)
	for range 3 {
		actor, err := svc.Authenticate(ctx, session(reg.Tokens.RefreshToken, ""))
		if err != nil {
			t.Fatalf("authenticate: %v", err)
		}
		if actor.UserID != reg.User.ID || actor.TeamID != reg.Team.ID || actor.Role != team.RoleOwner || actor.APIKeyID != "" {
			t.Fatalf("actor %+v", actor)
		}
	}
	id, _, _ := account.SplitToken(reg.Tokens.RefreshToken)
	if rt, _ := e.store.RefreshTokens().ByID(ctx, id); rt.UsedAt != nil || rt.RevokedAt != nil {
		t.Fatalf("opening the console consumed the token: %+v", rt)
	}
}

func TestDashboardSessionActsInAnotherTeamOnlyAsAMember(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	bob := register(t, svc, "bob@example.com")
	e.join(t, bob.Team.ID, ada.User, team.RoleViewer)

	actor, err := svc.Authenticate(ctx, session(ada.Tokens.RefreshToken, bob.Team.ID))
	if err != nil || actor.TeamID != bob.Team.ID || actor.Role != team.RoleViewer {
		t.Fatalf("in bob's team: %+v, %v", actor, err)
	}
	carol := register(t, svc, "carol@example.com")
	_, err = svc.Authenticate(ctx, session(ada.Tokens.RefreshToken, carol.Team.ID))
	apptest.WantKind(t, err, domain.KindNotFound)

	e.setStatus(t, bob.Team.ID, ada.User.ID, team.StatusRemoved)
	_, err = svc.Authenticate(ctx, session(ada.Tokens.RefreshToken, bob.Team.ID))
	apptest.WantKind(t, err, domain.KindNotFound)
}

func TestDashboardSessionRefusesWhatNoLongerOpensIt(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t *testing.T, e *env, svc *auth.Service, reg auth.SignIn) string{
		"a forged secret": func(_ *testing.T, _ *env, _ *auth.Service, reg auth.SignIn) string {
			id, _, _ := account.SplitToken(reg.Tokens.RefreshToken)
			return id + "." + strings.Repeat("0", 43)
		},
		"an unknown id":   func(*testing.T, *env, *auth.Service, auth.SignIn) string { return "rt_unknown.secret" },
		"no separator":    func(*testing.T, *env, *auth.Service, auth.SignIn) string { return "garbage" },
		"an access token": func(_ *testing.T, _ *env, _ *auth.Service, reg auth.SignIn) string { return reg.Tokens.AccessToken },
		"a token rotated through the API": func(t *testing.T, _ *env, svc *auth.Service, reg auth.SignIn) string {
			if _, err := svc.Refresh(ctx, reg.Tokens.RefreshToken); err != nil {
				t.Fatalf("refresh: %v", err)
			}
			return reg.Tokens.RefreshToken
		},
		"an expired session": func(_ *testing.T, e *env, _ *auth.Service, reg auth.SignIn) string {
			e.clock.Advance(30*24*time.Hour + time.Second)
			return reg.Tokens.RefreshToken
		},
		"a session of a password reset since": func(t *testing.T, e *env, svc *auth.Service, reg auth.SignIn) string {
			if err := svc.ForgotPassword(ctx, "ada@example.com"); err != nil {
				t.Fatal(err)
			}
			tok, ok := e.mailer.TokenAfter("Reset token: ")
			if !ok {
				t.Fatal("no reset mail")
			}
			if err := svc.ResetPassword(ctx, tok, "a brand new password"); err != nil {
				t.Fatal(err)
			}
			return reg.Tokens.RefreshToken
		},
		"a signed-out session": func(t *testing.T, _ *env, svc *auth.Service, reg auth.SignIn) string {
			if err := svc.SignOut(ctx, reg.Tokens.RefreshToken); err != nil {
				t.Fatal(err)
			}
			return reg.Tokens.RefreshToken
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, svc, reg := adaRegistered(t)
			token := tc(t, e, svc, reg)
			_, err := svc.Authenticate(ctx, session(token, ""))
			apptest.WantKind(t, err, domain.KindUnauthorized)
		})
	}
}

func TestDashboardSessionIsPresentedAlone(t *testing.T) {
	t.Parallel()
	_, svc, reg := adaRegistered(t)
	for _, c := range []auth.Credentials{
		{SessionToken: reg.Tokens.RefreshToken, BearerToken: reg.Tokens.AccessToken},
		{SessionToken: reg.Tokens.RefreshToken, APIKey: "psvc_x_y"},
	} {
		_, err := svc.Authenticate(ctx, c)
		apptest.WantKind(t, err, domain.KindUnauthorized)
	}
}

func TestSignOutRevokesTheFamilyOnce(t *testing.T) {
	t.Parallel()
	e, svc, reg := adaRegistered(t)
	other, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: "correct horse battery", ClientAddr: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SignOut(ctx, reg.Tokens.RefreshToken); err != nil {
		t.Fatalf("sign out: %v", err)
	}
	// Signing out an ended session, or garbage, is done already.
	for _, token := range []string{reg.Tokens.RefreshToken, "garbage", ""} {
		if err := svc.SignOut(ctx, token); err != nil {
			t.Fatalf("sign out %q again: %v", token, err)
		}
	}
	// Another sign-in of the same user is another family: it stays open.
	if _, err := svc.Authenticate(ctx, session(other.Tokens.RefreshToken, "")); err != nil {
		t.Fatalf("the other sign-in: %v", err)
	}
	id, _, _ := account.SplitToken(reg.Tokens.RefreshToken)
	if rt, _ := e.store.RefreshTokens().ByID(ctx, id); rt.RevokedAt == nil {
		t.Fatalf("the signed-out token is not revoked: %+v", rt)
	}
}

func TestDashboardSessionStoreFailures(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	reg := register(t, svc, "ada@example.com")
	e.deps.RefreshTokens = failingRefreshReads{e.deps.RefreshTokens}
	failing := e.service(t)
	_, err := failing.Authenticate(ctx, session(reg.Tokens.RefreshToken, ""))
	if !domain.IsKind(err, domain.KindInternal) {
		t.Fatalf("a failed read: %v", err)
	}
	if err := failing.SignOut(ctx, reg.Tokens.RefreshToken); domain.IsKind(err, domain.KindUnauthorized) || err == nil {
		t.Fatalf("a failed read at sign-out: %v", err)
	}
}
