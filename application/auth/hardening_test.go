package auth_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/ratelimit"
	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/accountstore"
	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// limiters are the rate limiter adapters the throttling tests run on: the
// in-process one always, Redis when TEST_REDIS_URL is set.
func limiters() []struct {
	name string
	make func(t *testing.T, e *env) ports.RateLimiter
} {
	return []struct {
		name string
		make func(t *testing.T, e *env) ports.RateLimiter
	}{
		{"local", func(_ *testing.T, e *env) ports.RateLimiter { return ratelimit.NewLocal(e.clock) }},
		{"redis", func(t *testing.T, e *env) ports.RateLimiter {
			client := testenv.RedisClient(t)
			return ratelimit.NewRedis(client, testenv.RedisKeyPrefix(t, client, "auth-login"))
		}},
	}
}

// 100 logins for one email at once: the hasher holds every verification
// until each attempt has either reached it or been answered, so attempts
// that were let through all overlap, as they would on a busy server.
func TestConcurrentLoginsVerifyAtMostTheBudget(t *testing.T) {
	t.Parallel()
	for _, l := range limiters() {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv()
			e.deps.Limiter = l.make(t, e)
			svc := e.service(t)
			register(t, svc, "ada@example.com")
			const attempts = 100
			var arrived, answered atomic.Int64
			release := make(chan struct{})
			e.hasher.gate = func() { arrived.Add(1); <-release }
			before := e.hasher.verifies.Load()

			var wg sync.WaitGroup
			errs := make([]error, attempts)
			for i := range attempts {
				wg.Go(func() {
					pw := "wrong password"
					if i == attempts-1 {
						pw = password
					}
					_, errs[i] = svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: pw, ClientAddr: "192.0.2.7"})
					answered.Add(1)
				})
			}
			poll.Until(t, "every attempt to reach the hasher or be answered", func() bool {
				return arrived.Load()+answered.Load() == attempts
			})
			close(release)
			wg.Wait()

			budget := auth.DefaultPolicy().LoginAttemptsPerEmail
			if got := e.hasher.verifies.Load() - before; got > int64(budget) {
				t.Fatalf("%d passwords verified, want at most the budget of %d", got, budget)
			}
			limited := 0
			for _, err := range errs {
				if domain.IsKind(err, domain.KindRateLimited) {
					limited++
				}
			}
			if limited < attempts-budget {
				t.Fatalf("%d attempts answered 429, want at least %d", limited, attempts-budget)
			}
		})
	}
}

// A successful login forgets the email's earlier attempts, so the owner who
// mistyped a few times is not locked out by their own success.
func TestSuccessfulLoginResetsTheEmailsCount(t *testing.T) {
	t.Parallel()
	e := newEnv()
	e.deps.Limiter = ratelimit.NewLocal(e.clock)
	svc := e.service(t)
	register(t, svc, "ada@example.com")
	for range 4 {
		_, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: "wrong password", ClientAddr: "a"})
		apptest.WantKind(t, err, domain.KindUnauthorized)
	}
	if !loginWorks(t, svc, password) {
		t.Fatal("the fifth attempt, with the right password, failed")
	}
	for i := range 4 {
		_, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: "wrong password", ClientAddr: "b"})
		if !domain.IsKind(err, domain.KindUnauthorized) {
			t.Fatalf("failure %d after a success: %v, want 401", i+1, err)
		}
	}
}

func TestRegistrationsThrottledPerAddress(t *testing.T) {
	t.Parallel()
	e := newEnv()
	e.deps.Limiter = ratelimit.NewLocal(e.clock)
	e.deps.Policy.RegistrationsPerAddr = 3
	svc := e.service(t)
	for i := range 3 {
		email := string(rune('a'+i)) + "@example.com"
		if _, err := svc.Register(ctx, auth.RegisterInput{Email: email, Password: password, Name: "N", ClientAddr: "192.0.2.9"}); err != nil {
			t.Fatalf("registration %d: %v", i+1, err)
		}
	}
	hashes := e.hasher.hashes.Load()
	_, err := svc.Register(ctx, auth.RegisterInput{Email: "z@example.com", Password: password, Name: "N", ClientAddr: "192.0.2.9"})
	apptest.WantKind(t, err, domain.KindRateLimited)
	if de := asDomain(t, err); de.RetryAfter <= 0 {
		t.Fatalf("no Retry-After on %v", err)
	}
	if e.hasher.hashes.Load() != hashes {
		t.Fatal("a throttled registration hashed its password")
	}
	if _, err := svc.Register(ctx, auth.RegisterInput{Email: "z@example.com", Password: password, Name: "N", ClientAddr: "192.0.2.10"}); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

func TestConcurrentRegistrationsOfATakenEmailDoNotHash(t *testing.T) {
	t.Parallel()
	e, svc, _ := adaRegistered(t)
	before := e.hasher.hashes.Load()
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range 40 {
		wg.Go(func() {
			_, errs[i] = svc.Register(ctx, auth.RegisterInput{Email: "ADA@example.com", Password: "another password", Name: "Eve", ClientAddr: "192.0.2." + string(rune('0'+i%10))})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !domain.IsKind(err, domain.KindConflict) && !domain.IsKind(err, domain.KindRateLimited) {
			t.Fatalf("registration %d: %v, want 409 or 429", i, err)
		}
	}
	if got := e.hasher.hashes.Load() - before; got != 0 {
		t.Fatalf("%d hashes for a taken email, want none", got)
	}
}

func TestRegisterValidatesBeforeHashing(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	before := e.hasher.hashes.Load()
	_, err := svc.Register(ctx, auth.RegisterInput{Email: "not an email", Password: password, Name: "Ada"})
	apptest.WantKind(t, err, domain.KindValidation)
	if e.hasher.hashes.Load() != before {
		t.Fatal("an invalid registration hashed its password")
	}
}

// A reset at the same instant as an earlier sign-in (same second of iat,
// same clock reading) still cuts that sign-in's access token off, and a
// sign-in after it works.
func TestPasswordResetCutsOffEarlierAccessTokensKeysAndResetTokens(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	key, err := svc.CreateAPIKey(ctx, team.Actor{UserID: ada.User.ID, TeamID: ada.Team.ID, Role: team.RoleOwner}, "ci")
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	if _, err := svc.Authenticate(ctx, auth.Credentials{APIKey: key.Key}); err != nil {
		t.Fatalf("the key before the reset: %v", err)
	}
	if _, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken}); err != nil {
		t.Fatalf("the token before the reset: %v", err)
	}
	if err := svc.ForgotPassword(ctx, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	first := e.resetToken(t)
	if err := svc.ForgotPassword(ctx, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	second := e.resetToken(t)

	if err := svc.ResetPassword(ctx, second, "a brand new password"); err != nil {
		t.Fatalf("reset: %v", err)
	}
	_, err = svc.Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken})
	apptest.WantKind(t, err, domain.KindUnauthorized)
	_, err = svc.Authenticate(ctx, auth.Credentials{APIKey: key.Key})
	apptest.WantKind(t, err, domain.KindUnauthorized)
	apptest.WantKind(t, svc.ResetPassword(ctx, first, "an attackers password"), domain.KindValidation)

	sent := e.mailer.Sent()
	last := sent[len(sent)-1]
	if last.To != "ada@example.com" || !strings.Contains(last.Text, "API keys") || !strings.Contains(last.Text, "signed out") {
		t.Fatalf("no mail says what the reset revoked: %+v", last)
	}

	in, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: "a brand new password", ClientAddr: "a"})
	if err != nil {
		t.Fatalf("login after the reset: %v", err)
	}
	if _, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: in.Tokens.AccessToken}); err != nil {
		t.Fatalf("a token issued after the reset: %v", err)
	}
}

// Two instances share the store and the notices: a reset through one cuts
// off the token and the keys the other has already seen (and cached).
func TestPasswordResetReachesEveryInstanceThroughTheCache(t *testing.T) {
	t.Parallel()
	e, one, ada := adaRegistered(t)
	other := e.service(t)
	k := createKey(t, other, actorOf(t, other, ada), "ci")
	if _, err := other.Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken}); err != nil {
		t.Fatal(err)
	}
	if err := svcAuthKey(other, k.Key); err != nil {
		t.Fatal(err)
	}
	if hits, _ := other.NearLookups(); hits == 0 {
		t.Fatal("the other instance did not cache the token")
	}
	if err := one.ForgotPassword(ctx, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := one.ResetPassword(ctx, e.resetToken(t), "a brand new password"); err != nil {
		t.Fatal(err)
	}
	_, err := other.Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken})
	apptest.WantKind(t, err, domain.KindUnauthorized)
	apptest.WantKind(t, svcAuthKey(other, k.Key), domain.KindUnauthorized)
}

// The cut-off is read once per user and then from the cache: a hot token
// does not read the user on every request.
func TestAccessTokenCutOffIsCached(t *testing.T) {
	t.Parallel()
	e, _, ada := adaRegistered(t)
	reads := &atomic.Int64{}
	e.deps.Users = countingUsers{Users: e.deps.Users, reads: reads}
	svc := e.service(t)
	for range 5 {
		if _, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken}); err != nil {
			t.Fatal(err)
		}
	}
	if reads.Load() != 1 {
		t.Fatalf("%d user reads for five requests, want one", reads.Load())
	}
}

func TestRefreshReuseCutsOffEarlierAccessTokens(t *testing.T) {
	t.Parallel()
	_, svc, ada := adaRegistered(t)
	next, err := svc.Refresh(ctx, ada.Tokens.RefreshToken)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Refresh(ctx, ada.Tokens.RefreshToken)
	apptest.WantKind(t, err, domain.KindUnauthorized)
	for _, tok := range []string{ada.Tokens.AccessToken, next.Tokens.AccessToken} {
		_, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: tok})
		apptest.WantKind(t, err, domain.KindUnauthorized)
	}
	in, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: password, ClientAddr: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: in.Tokens.AccessToken}); err != nil {
		t.Fatalf("a sign-in after the revocation: %v", err)
	}
}

func TestRevokeMemberKeysEvictsTheCache(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	bob := register(t, svc, "bob@example.com")
	m := e.join(t, bob.Team.ID, ada.User, team.RoleMember)
	actor := team.Actor{UserID: ada.User.ID, TeamID: bob.Team.ID, MemberID: m.ID, Role: team.RoleMember}
	inTeam, err := svc.CreateAPIKey(ctx, actor, "in bob's team")
	if err != nil {
		t.Fatal(err)
	}
	own, err := svc.CreateAPIKey(ctx, team.Actor{UserID: ada.User.ID, TeamID: ada.Team.ID, Role: team.RoleOwner}, "own")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, auth.Credentials{APIKey: inTeam.Key}); err != nil {
		t.Fatal(err)
	}
	ids, err := svc.RevokeMemberKeys(ctx, bob.Team.ID, ada.User.ID)
	if err != nil || len(ids) != 1 || ids[0] != inTeam.APIKey.ID {
		t.Fatalf("revoked %v, %v; want [%s]", ids, err, inTeam.APIKey.ID)
	}
	svc.MembershipChanged(ctx, bob.Team.ID, ada.User.ID)
	_, err = svc.Authenticate(ctx, auth.Credentials{APIKey: inTeam.Key})
	apptest.WantKind(t, err, domain.KindUnauthorized)
	if _, err := svc.Authenticate(ctx, auth.Credentials{APIKey: own.Key}); err != nil {
		t.Fatalf("a key in another team was revoked: %v", err)
	}
}

// Removed from her own team, Ada signs in to a team where she is active,
// and the answer names it; refresh does the same.
func TestSignInChoosesAnActiveTeam(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	bob := register(t, svc, "bob@example.com")
	e.join(t, bob.Team.ID, ada.User, team.RoleMember)
	e.setStatus(t, ada.Team.ID, ada.User.ID, team.StatusRemoved)

	in, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: password, ClientAddr: "a"})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	if in.Team.ID != bob.Team.ID || in.Role != team.RoleMember {
		t.Fatalf("signed in to %s as %s, want %s as member", in.Team.ID, in.Role, bob.Team.ID)
	}
	actor, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: in.Tokens.AccessToken})
	if err != nil || actor.TeamID != bob.Team.ID {
		t.Fatalf("actor %+v, %v", actor, err)
	}
	next, err := svc.Refresh(ctx, ada.Tokens.RefreshToken)
	if err != nil || next.Team.ID != bob.Team.ID || next.Role != team.RoleMember {
		t.Fatalf("refresh: %+v, %v", next, err)
	}
	if _, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: next.Tokens.AccessToken}); err != nil {
		t.Fatalf("refreshed token: %v", err)
	}
}

func TestSignInWithoutAnyActiveTeamIsRefused(t *testing.T) {
	t.Parallel()
	e, svc, ada := adaRegistered(t)
	e.setStatus(t, ada.Team.ID, ada.User.ID, team.StatusRemoved)
	_, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: password, ClientAddr: "a"})
	apptest.WantKind(t, err, domain.KindForbidden)
}

func TestCommonAndRepeatedPasswordsRefused(t *testing.T) {
	t.Parallel()
	e, svc, _ := adaRegistered(t)
	for pw, why := range map[string]string{
		"1234567890":   "common",
		"qwertyuiop":   "common",
		"Password123":  "common",
		"aaaaaaaaaaaa": "repeat",
		"ééééééééééé":  "repeat",
	} {
		before := e.hasher.hashes.Load()
		_, err := svc.Register(ctx, auth.RegisterInput{Email: "new@example.com", Password: pw, Name: "N"})
		de := asDomain(t, err)
		if de.Kind != domain.KindValidation || len(de.Fields) != 1 || de.Fields[0].Field != "password" || !strings.Contains(de.Fields[0].Issue, why) {
			t.Errorf("%q: %v %+v, want a password issue saying %q", pw, err, de.Fields, why)
		}
		if e.hasher.hashes.Load() != before {
			t.Errorf("%q was hashed", pw)
		}
	}
	if err := svc.ForgotPassword(ctx, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	apptest.WantKind(t, svc.ResetPassword(ctx, e.resetToken(t), "1234567890"), domain.KindValidation)
}

// "é" composed (U+00E9) and decomposed (e + U+0301) are one address.
func TestEmailsComparedAfterNFC(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	composed, decomposed := "jos\u00e9@example.com", "jose\u0301@example.com"
	reg := register(t, svc, composed)
	_, err := svc.Register(ctx, auth.RegisterInput{Email: decomposed, Password: password, Name: "Other"})
	apptest.WantKind(t, err, domain.KindConflict)
	in, err := svc.Login(ctx, auth.LoginInput{Email: strings.ToUpper(decomposed), Password: password, ClientAddr: "a"})
	if err != nil || in.User.ID != reg.User.ID {
		t.Fatalf("login with the decomposed form: %+v, %v", in.User, err)
	}
	if err := svc.ForgotPassword(ctx, decomposed); err != nil {
		t.Fatal(err)
	}
	if sent := e.mailer.Sent(); len(sent) != 1 || sent[0].To != composed {
		t.Fatalf("reset mail %+v, want one to %s", sent, composed)
	}
}

func TestAPIKeysPerUserQuota(t *testing.T) {
	t.Parallel()
	e, _, ada := adaRegistered(t)
	e.deps.Policy.APIKeysPerUser = 3
	svc := e.service(t)
	actor := team.Actor{UserID: ada.User.ID, TeamID: ada.Team.ID, Role: team.RoleOwner}
	for i := range 3 {
		if _, err := svc.CreateAPIKey(ctx, actor, "k"); err != nil {
			t.Fatalf("key %d: %v", i+1, err)
		}
	}
	_, err := svc.CreateAPIKey(ctx, actor, "k")
	de := asDomain(t, err)
	if de.Kind != domain.KindValidation || !strings.Contains(de.Error()+issueText(de), "at most 3 API keys") {
		t.Fatalf("fourth key: %v %+v, want a validation error naming the quota", err, de.Fields)
	}
}

func issueText(de *domain.Error) string {
	var b strings.Builder
	for _, f := range de.Fields {
		b.WriteString(f.Issue)
	}
	return b.String()
}

// hookedUsers runs after, once, right after its first read of a user: a
// change that commits between a cache miss's store read and its cache write.
type hookedUsers struct {
	accountstore.Users
	after *func()
}

func (u hookedUsers) ByID(ctx context.Context, id string) (account.User, error) {
	got, err := u.Users.ByID(ctx, id)
	if f := *u.after; f != nil {
		*u.after = nil
		f()
	}
	return got, err
}

// A revocation whose eviction lands between a request's store read and its
// cache write must not be undone by that write: earlier tokens stay refused.
func TestRevocationRacingACacheFillIsNotUndone(t *testing.T) {
	t.Parallel()
	e := newEnv()
	var after func()
	e.deps.Users = hookedUsers{Users: e.deps.Users, after: &after}
	svc := e.service(t)
	ada := register(t, svc, "ada@example.com")
	if _, err := svc.Refresh(ctx, ada.Tokens.RefreshToken); err != nil {
		t.Fatal(err)
	}
	after = func() {
		// Presenting the spent refresh token again ends every session.
		_, err := svc.Refresh(ctx, ada.Tokens.RefreshToken)
		apptest.WantKind(t, err, domain.KindUnauthorized)
	}
	_, _ = svc.Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken})
	if after != nil {
		t.Fatal("the revocation did not run inside the cache fill")
	}
	_, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: ada.Tokens.AccessToken})
	apptest.WantKind(t, err, domain.KindUnauthorized)
}
