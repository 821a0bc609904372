package auth_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/accountstore"
)

const password = "correct horse battery"

// Nothing is hashed at start (hashing holds the hasher's memory); the
// first unknown email hashes, and a hasher that fails then fails the login
// rather than answering as for a wrong password.
func TestUnknownEmailFailsWhenTheHasherFails(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc, err := auth.New(ctx, e.deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if n := e.hasher.hashes.Load(); n != 0 {
		t.Fatalf("New hashed %d times, want none", n)
	}
	e.hasher.hashErr = apptest.ErrDown
	_, err = svc.Login(ctx, auth.LoginInput{Email: "nobody@example.com", Password: password, ClientAddr: "a"})
	apptest.WantDown(t, err)
}

func TestRegisterCreatesUserWithOwnedTeam(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)

	in, err := svc.Register(ctx, auth.RegisterInput{Email: " Ada@Example.COM ", Password: password, Name: " Ada "})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if in.User.Email != "ada@example.com" || in.User.Name != "Ada" || in.Team.Name != "Ada's team" || in.Role != team.RoleOwner {
		t.Fatalf("sign-in %+v", in)
	}
	if in.User.DefaultTeamID != in.Team.ID || in.Tokens.ExpiresIn != 900 {
		t.Fatalf("default team %q of team %q, expires in %d", in.User.DefaultTeamID, in.Team.ID, in.Tokens.ExpiresIn)
	}
	stored, err := e.store.Users().ByEmail(ctx, "ada@example.com")
	if err != nil || stored.PasswordHash != "hash:"+password {
		t.Fatalf("stored user %+v, %v", stored, err)
	}
	m, err := e.store.Memberships().ByUser(ctx, in.Team.ID, in.User.ID)
	if err != nil || m.Role != team.RoleOwner || m.Status != team.StatusActive {
		t.Fatalf("membership %+v, %v", m, err)
	}
	actor, err := svc.Authenticate(ctx, auth.Credentials{BearerToken: in.Tokens.AccessToken})
	if err != nil || actor.UserID != in.User.ID || actor.TeamID != in.Team.ID || actor.Role != team.RoleOwner || actor.MemberID != m.ID {
		t.Fatalf("actor %+v, %v", actor, err)
	}
	if _, err := svc.Refresh(ctx, in.Tokens.RefreshToken); err != nil {
		t.Fatalf("refresh the registration's token: %v", err)
	}
}

func TestRegisterTakenEmailIsConflict(t *testing.T) {
	t.Parallel()
	_, svc, _ := adaRegistered(t)

	_, err := svc.Register(ctx, auth.RegisterInput{Email: "ADA@example.com", Password: password, Name: "Other"})
	apptest.WantKind(t, err, domain.KindConflict)
	if err.Error() != "an account with this email already exists" {
		t.Fatalf("message %q", err)
	}
}

func TestRegisterValidatesEveryField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		in     auth.RegisterInput
		fields []string
	}{
		{"invalid email", auth.RegisterInput{Email: "not an email", Password: password, Name: "Ada"}, []string{"email"}},
		{"short password", auth.RegisterInput{Email: "ada@example.com", Password: "short", Name: "Ada"}, []string{"password"}},
		{"password longer than the hasher takes", auth.RegisterInput{Email: "ada@example.com", Password: strings.Repeat("p", 65), Name: "Ada"}, []string{"password"}},
		{"no name", auth.RegisterInput{Email: "ada@example.com", Password: password, Name: "  "}, []string{"name"}},
		{"all at once", auth.RegisterInput{Email: "", Password: "", Name: ""}, []string{"password", "email", "name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv()
			_, err := e.service(t).Register(ctx, tc.in)
			apptest.WantKind(t, err, domain.KindValidation)
			var got []string
			for _, f := range asDomain(t, err).Fields {
				got = append(got, f.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("fields %v, want %v", got, tc.fields)
			}
			if _, err := e.store.Users().ByEmail(ctx, "ada@example.com"); !domain.IsKind(err, domain.KindNotFound) {
				t.Fatalf("a user was stored: %v", err)
			}
		})
	}
}

func TestRegisterLongNameKeepsTeamNameWithinLimit(t *testing.T) {
	t.Parallel()
	e := newEnv()
	name := strings.Repeat("é", 200)
	in, err := e.service(t).Register(ctx, auth.RegisterInput{Email: "ada@example.com", Password: password, Name: name})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if want := strings.Repeat("é", 190) + "'s team"; in.Team.Name != want {
		t.Fatalf("team name has %d runes", len([]rune(in.Team.Name)))
	}
}

// A failure anywhere in the registration's unit leaves neither the user
// nor the team: the email stays free.
func TestRegisterStoreFailingMidUnitLeavesNoUser(t *testing.T) {
	t.Parallel()
	for _, tc := range []failure{
		{"team", func(e *env) { e.deps.Teams = failingTeams{e.deps.Teams} }},
		{"membership", func(e *env) { e.deps.Memberships = failingMemberships{e.deps.Memberships} }},
		{"access token", func(e *env) { e.deps.Tokens = failingIssuer{e.deps.Tokens} }},
		{"refresh token", func(e *env) { e.deps.RefreshTokens = failingRefreshCreate{e.deps.RefreshTokens} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv()
			healthy := e.deps
			tc.fail(e)
			_, err := e.service(t).Register(ctx, auth.RegisterInput{Email: "ada@example.com", Password: password, Name: "Ada"})
			apptest.WantDown(t, err)
			if _, err := e.store.Users().ByEmail(ctx, "ada@example.com"); !domain.IsKind(err, domain.KindNotFound) {
				t.Fatalf("user after the failed unit: %v", err)
			}
			// The fake makes ids in order: the team's is the first.
			if _, err := e.store.Teams().ByID(ctx, "team_00000000000000000001"); !domain.IsKind(err, domain.KindNotFound) {
				t.Fatalf("team after the failed unit: %v", err)
			}
			e.deps = healthy
			register(t, e.service(t), "ada@example.com")
		})
	}
}

func TestRegisterHashFailure(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	e.hasher.hashErr = apptest.ErrDown
	_, err := svc.Register(ctx, auth.RegisterInput{Email: "ada@example.com", Password: password, Name: "Ada"})
	apptest.WantDown(t, err)
}

func TestLoginIssuesTokensAndClearsEmailFailures(t *testing.T) {
	t.Parallel()
	e, svc, reg := adaRegistered(t)

	if _, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: "wrong password", ClientAddr: "192.0.2.1"}); !domain.IsKind(err, domain.KindUnauthorized) {
		t.Fatalf("wrong password: %v", err)
	}
	if e.limiter.count("login:email:ada@example.com") != 1 || e.limiter.count("login:addr:192.0.2.1") != 1 {
		t.Fatalf("a failure counts against the email and the address: %v", e.limiter.hits)
	}
	in, err := svc.Login(ctx, auth.LoginInput{Email: " ADA@example.com", Password: password, ClientAddr: "192.0.2.1"})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	if in.User.ID != reg.User.ID || in.Team.ID != reg.Team.ID || in.Role != team.RoleOwner || in.Tokens.AccessToken == "" || in.Tokens.RefreshToken == "" {
		t.Fatalf("sign-in %+v", in)
	}
	// Every attempt counts, the success included; the success then clears
	// the email's count, not the address's.
	if e.limiter.count("login:email:ada@example.com") != 0 || e.limiter.count("login:addr:192.0.2.1") != 2 {
		t.Fatalf("success clears the email's attempts only: %v", e.limiter.hits)
	}
}

// An unknown email costs a hash verification like a wrong password, and
// both answer the same.
func TestLoginWrongPasswordAndUnknownEmailAnswerAlike(t *testing.T) {
	t.Parallel()
	e, svc, _ := adaRegistered(t)

	// Hashing and verifying each cost one derivation: every attempt
	// spends exactly one, the first unknown email by hashing.
	work := func() int64 { return e.hasher.verifies.Load() + e.hasher.hashes.Load() }
	before := work()
	_, wrong := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: "wrong password", ClientAddr: "a"})
	_, unknown := svc.Login(ctx, auth.LoginInput{Email: "nobody@example.com", Password: password, ClientAddr: "a"})
	_, again := svc.Login(ctx, auth.LoginInput{Email: "nobody@example.com", Password: password, ClientAddr: "a"})
	apptest.WantKind(t, wrong, domain.KindUnauthorized)
	apptest.WantKind(t, unknown, domain.KindUnauthorized)
	if wrong.Error() != "invalid email or password" || unknown.Error() != wrong.Error() || again.Error() != wrong.Error() {
		t.Fatalf("answers differ: %q, %q and %q", wrong, unknown, again)
	}
	if got := work() - before; got != 3 {
		t.Fatalf("%d derivations for three attempts, want 3", got)
	}
	if e.limiter.count("login:email:nobody@example.com") != 2 {
		t.Fatalf("an unknown email's failure is counted too: %v", e.limiter.hits)
	}
}

func TestLoginThrottledWhenTheLimiterDenies(t *testing.T) {
	t.Parallel()
	e, svc, _ := adaRegistered(t)
	e.limiter.deny["login:email:ada@example.com"] = 3 * time.Minute
	e.limiter.deny["login:addr:192.0.2.1"] = 7 * time.Minute

	before := e.hasher.verifies.Load()
	_, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: password, ClientAddr: "192.0.2.1"})
	apptest.WantKind(t, err, domain.KindRateLimited)
	if de := asDomain(t, err); de.RetryAfter != 7*time.Minute {
		t.Fatalf("retry after %s, want the longer wait 7m", de.RetryAfter)
	}
	if e.hasher.verifies.Load() != before {
		t.Fatal("a throttled login still verified the password")
	}
}

func TestLoginThrottledAfterTheEmailsFailureBudget(t *testing.T) {
	t.Parallel()
	_, svc, _ := adaRegistered(t)
	for i := range 5 {
		_, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: "wrong password", ClientAddr: "a"})
		if !domain.IsKind(err, domain.KindUnauthorized) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	_, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: password, ClientAddr: "b"})
	apptest.WantKind(t, err, domain.KindRateLimited)
	if _, err := svc.Login(ctx, auth.LoginInput{Email: "other@example.com", Password: password, ClientAddr: "b"}); !domain.IsKind(err, domain.KindUnauthorized) {
		t.Fatalf("another email from another address is not throttled: %v", err)
	}
}

func TestLoginRefusesPasswordsLongerThanTheHasherTakes(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	before := e.hasher.verifies.Load()
	_, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: strings.Repeat("p", 65)})
	apptest.WantKind(t, err, domain.KindValidation)
	if e.hasher.verifies.Load() != before {
		t.Fatal("an over-long password was verified")
	}
}

// An email longer than any account's is refused before it is counted: it
// never becomes a throttling key, nor reaches a lookup or the hasher.
func TestLoginRefusesEmailsLongerThanAnyAccountHas(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	at := "@example.com"
	longest := strings.Repeat("a", account.MaxEmailBytes-len(at)) + at
	_, err := svc.Login(ctx, auth.LoginInput{Email: longest, Password: password, ClientAddr: "a"})
	apptest.WantKind(t, err, domain.KindUnauthorized)

	before := e.hasher.verifies.Load()
	tooLong := "a" + longest
	_, err = svc.Login(ctx, auth.LoginInput{Email: tooLong, Password: password, ClientAddr: "a"})
	apptest.WantKind(t, err, domain.KindValidation)
	if f := asDomain(t, err).Fields; len(f) != 1 || f[0].Field != "email" {
		t.Fatalf("fields %v, want email alone", f)
	}
	if n := e.limiter.count("login:email:" + tooLong); n != 0 {
		t.Fatalf("the over-long email was counted %d times", n)
	}
	if e.hasher.verifies.Load() != before {
		t.Fatal("a login with an over-long email reached the hasher")
	}
}

// failingLimiterHit fails Hit, which counts an attempt before anything else.
type failingLimiterHit struct{ ports.RateLimiter }

func (failingLimiterHit) Hit(context.Context, string, int, time.Duration) (ports.Decision, error) {
	return ports.Decision{}, apptest.ErrDown
}

// failingLimiterReset fails Reset only.
type failingLimiterReset struct{ ports.RateLimiter }

func (failingLimiterReset) Reset(context.Context, string, time.Duration) error {
	return apptest.ErrDown
}

func TestLoginBackendFailures(t *testing.T) {
	t.Parallel()
	loginWith := func(pw string) func(t *testing.T, e *env, _ auth.SignIn) {
		return func(t *testing.T, e *env, _ auth.SignIn) {
			_, err := e.service(t).Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: pw, ClientAddr: "a"})
			apptest.WantDown(t, err)
		}
	}
	eachFailure(t, []failure{
		{"limiter check", func(e *env) { e.limiter.err = apptest.ErrDown }},
		{"user read", func(e *env) { e.deps.Users = failingUserReads{e.deps.Users} }},
		{"hash verification", func(e *env) { e.hasher.verifyErr = apptest.ErrDown }},
		{"clearing failures", func(e *env) { e.deps.Limiter = failingLimiterReset{e.limiter} }},
		{"membership read", func(e *env) { e.deps.Memberships = failingByUser{e.deps.Memberships} }},
		{"refresh token", func(e *env) { e.deps.RefreshTokens = failingRefreshCreate{e.deps.RefreshTokens} }},
	}, loginWith(password))
	eachFailure(t, []failure{
		{"counting a failure", func(e *env) { e.deps.Limiter = failingLimiterHit{e.limiter} }},
	}, loginWith("wrong password"))
}

func TestRefreshRotatesTheToken(t *testing.T) {
	t.Parallel()
	e, svc, reg := adaRegistered(t)

	next, err := svc.Refresh(ctx, reg.Tokens.RefreshToken)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if next.User.ID != reg.User.ID || next.Team.ID != reg.Team.ID || next.Role != team.RoleOwner || next.Tokens.ExpiresIn != 900 {
		t.Fatalf("sign-in %+v", next)
	}
	if next.Tokens.RefreshToken == reg.Tokens.RefreshToken {
		t.Fatal("the refresh token was not rotated")
	}
	oldID, _, _ := account.SplitToken(reg.Tokens.RefreshToken)
	newID, _, _ := account.SplitToken(next.Tokens.RefreshToken)
	old, _ := e.store.RefreshTokens().ByID(ctx, oldID)
	fresh, _ := e.store.RefreshTokens().ByID(ctx, newID)
	if old.UsedAt == nil || !old.UsedAt.Equal(start) || fresh.FamilyID != old.FamilyID || fresh.UsedAt != nil {
		t.Fatalf("old %+v, new %+v", old, fresh)
	}
	if !fresh.ExpiresAt.Equal(start.Add(30 * 24 * time.Hour)) {
		t.Fatalf("new token expires at %s", fresh.ExpiresAt)
	}
	if _, err := svc.Refresh(ctx, next.Tokens.RefreshToken); err != nil {
		t.Fatalf("refresh the rotated token: %v", err)
	}
}

func TestRefreshReuseRevokesTheFamily(t *testing.T) {
	t.Parallel()
	e, svc, reg := adaRegistered(t)
	other, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: password, ClientAddr: "a"})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	next, err := svc.Refresh(ctx, reg.Tokens.RefreshToken)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}

	_, err = svc.Refresh(ctx, reg.Tokens.RefreshToken)
	apptest.WantKind(t, err, domain.KindUnauthorized)
	if !strings.Contains(err.Error(), "already used") {
		t.Fatalf("reuse answered %q", err)
	}
	if !e.logs.Has("WARN refresh token reused; family revoked") {
		t.Fatalf("reuse not logged: %v", e.logs.Lines())
	}
	if _, err := svc.Refresh(ctx, next.Tokens.RefreshToken); !domain.IsKind(err, domain.KindUnauthorized) {
		t.Fatalf("the family's newest token still works: %v", err)
	}
	if _, err := svc.Refresh(ctx, other.Tokens.RefreshToken); err != nil {
		t.Fatalf("another sign-in's family was revoked too: %v", err)
	}
}

func TestRefreshExpired(t *testing.T) {
	t.Parallel()
	e, svc, reg := adaRegistered(t)
	e.clock.Advance(30*24*time.Hour - time.Second)
	next, err := svc.Refresh(ctx, reg.Tokens.RefreshToken)
	if err != nil {
		t.Fatalf("refresh a second before expiry: %v", err)
	}
	e.clock.Advance(30 * 24 * time.Hour)
	_, err = svc.Refresh(ctx, next.Tokens.RefreshToken)
	apptest.WantKind(t, err, domain.KindUnauthorized)
	if err.Error() != "invalid, expired or revoked refresh token" {
		t.Fatalf("expired answered %q", err)
	}
}

func TestRefreshRevoked(t *testing.T) {
	t.Parallel()
	e, svc, reg := adaRegistered(t)
	if err := e.store.RefreshTokens().RevokeUser(ctx, reg.User.ID, start); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	_, err := svc.Refresh(ctx, reg.Tokens.RefreshToken)
	apptest.WantKind(t, err, domain.KindUnauthorized)
	if err.Error() != "invalid, expired or revoked refresh token" {
		t.Fatalf("revoked answered %q", err)
	}
}

func TestRefreshRefusesMalformedAndForgedTokens(t *testing.T) {
	t.Parallel()
	_, svc, reg := adaRegistered(t)
	id, _, _ := account.SplitToken(reg.Tokens.RefreshToken)

	for _, tok := range []string{"", "no-dot", "rt_00000000000000000099.secret", id + ".forged-secret"} {
		if _, err := svc.Refresh(ctx, tok); !domain.IsKind(err, domain.KindUnauthorized) {
			t.Fatalf("%q: %v", tok, err)
		}
	}
	if _, err := svc.Refresh(ctx, reg.Tokens.RefreshToken); err != nil {
		t.Fatalf("a forged secret spent the real token: %v", err)
	}
}

// Another request consumes the token between this one's read and its
// Consume: this one loses, and the family is revoked as for any reuse.
func TestRefreshLosesTheRaceOnConsume(t *testing.T) {
	t.Parallel()
	e, _, reg := adaRegistered(t)
	e.deps.RefreshTokens = racedRefreshTokens{RefreshTokens: e.deps.RefreshTokens, at: start}

	_, err := e.service(t).Refresh(ctx, reg.Tokens.RefreshToken)
	apptest.WantKind(t, err, domain.KindUnauthorized)
	if !strings.Contains(err.Error(), "already used") {
		t.Fatalf("lost race answered %q", err)
	}
	id, _, _ := account.SplitToken(reg.Tokens.RefreshToken)
	rt, _ := e.store.RefreshTokens().ByID(ctx, id)
	if rt.RevokedAt == nil {
		t.Fatal("the family was not revoked")
	}
}

func TestConcurrentRefreshesOneWins(t *testing.T) {
	t.Parallel()
	_, svc, reg := adaRegistered(t)

	const n = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []auth.SignIn
		refused int
	)
	gate := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			in, err := svc.Refresh(ctx, reg.Tokens.RefreshToken)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, in)
			case domain.IsKind(err, domain.KindUnauthorized):
				refused++
			default:
				t.Errorf("refresh: %v", err)
			}
		}()
	}
	close(gate)
	wg.Wait()
	if len(winners) != 1 || refused != n-1 {
		t.Fatalf("%d won, %d refused; want 1 and %d", len(winners), refused, n-1)
	}
	// The losers presented a used token: the winner's pair is revoked with
	// its family.
	if _, err := svc.Refresh(ctx, winners[0].Tokens.RefreshToken); !domain.IsKind(err, domain.KindUnauthorized) {
		t.Fatalf("the winner's token outlived the reuse: %v", err)
	}
}

func TestRefreshBackendFailures(t *testing.T) {
	t.Parallel()
	eachFailure(t, []failure{
		{"token read", func(e *env) { e.deps.RefreshTokens = failingRefreshReads{e.deps.RefreshTokens} }},
		{"user read", func(e *env) { e.deps.Users = failingUserReads{e.deps.Users} }},
		{"membership read", func(e *env) { e.deps.Memberships = failingByUser{e.deps.Memberships} }},
		{"next token", func(e *env) { e.deps.RefreshTokens = failingRefreshCreate{e.deps.RefreshTokens} }},
	}, func(t *testing.T, e *env, ada auth.SignIn) {
		_, err := e.service(t).Refresh(ctx, ada.Tokens.RefreshToken)
		apptest.WantDown(t, err)
	})
}

func TestPasswordResetWithTheMailedToken(t *testing.T) {
	t.Parallel()
	e, svc, reg := adaRegistered(t)

	if err := svc.ForgotPassword(ctx, " ADA@example.com "); err != nil {
		t.Fatalf("forgot: %v", err)
	}
	sent := e.mailer.Sent()
	if len(sent) != 1 || sent[0].To != "ada@example.com" || sent[0].Subject != "Reset your profilesvc password" {
		t.Fatalf("mail %+v", sent)
	}
	if !strings.Contains(sent[0].Text, "within 1h0m0s") {
		t.Fatalf("mail does not state the lifetime: %q", sent[0].Text)
	}
	tok := e.resetToken(t)

	if err := svc.ResetPassword(ctx, tok, "a brand new password"); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if _, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: "a brand new password", ClientAddr: "a"}); err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
	if _, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: password, ClientAddr: "a"}); !domain.IsKind(err, domain.KindUnauthorized) {
		t.Fatalf("the old password still works: %v", err)
	}
	if _, err := svc.Refresh(ctx, reg.Tokens.RefreshToken); !domain.IsKind(err, domain.KindUnauthorized) {
		t.Fatalf("a refresh token from before the reset still works: %v", err)
	}

	err := svc.ResetPassword(ctx, tok, "yet another password")
	apptest.WantKind(t, err, domain.KindValidation)
	if _, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: "a brand new password", ClientAddr: "a"}); err != nil {
		t.Fatalf("the second use changed the password: %v", err)
	}
}

func TestForgotPasswordUnknownEmailAnswersTheSame(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	if err := svc.ForgotPassword(ctx, "nobody@example.com"); err != nil {
		t.Fatalf("forgot: %v", err)
	}
	if sent := e.mailer.Sent(); len(sent) != 0 {
		t.Fatalf("mailed %+v", sent)
	}
}

func TestForgotPasswordRefusesAnInvalidEmail(t *testing.T) {
	t.Parallel()
	e := newEnv()
	apptest.WantKind(t, e.service(t).ForgotPassword(ctx, "not an email"), domain.KindValidation)
}

// Past the budget the answer stays the same, but no more mail goes out.
func TestForgotPasswordThrottledSendsNothing(t *testing.T) {
	t.Parallel()
	e, svc, _ := adaRegistered(t)
	for range 6 {
		if err := svc.ForgotPassword(ctx, "ada@example.com"); err != nil {
			t.Fatalf("forgot: %v", err)
		}
	}
	if sent := e.mailer.Sent(); len(sent) != 5 {
		t.Fatalf("%d mails, want the budget of 5", len(sent))
	}
}

func TestForgotPasswordMailerFailingAnswersTheSame(t *testing.T) {
	t.Parallel()
	e, svc, _ := adaRegistered(t)
	e.mailer.Err = apptest.ErrDown
	if err := svc.ForgotPassword(ctx, "ada@example.com"); err != nil {
		t.Fatalf("forgot: %v", err)
	}
	if !e.logs.Has("ERROR sending password reset mail failed") {
		t.Fatalf("failure not logged: %v", e.logs.Lines())
	}
}

func TestForgotPasswordBackendFailures(t *testing.T) {
	t.Parallel()
	eachFailure(t, []failure{
		{"limiter", func(e *env) { e.limiter.err = apptest.ErrDown }},
		{"user read", func(e *env) { e.deps.Users = failingUserReads{e.deps.Users} }},
		{"token write", func(e *env) { e.deps.ResetTokens = failingResetCreate{e.deps.ResetTokens} }},
	}, func(t *testing.T, e *env, _ auth.SignIn) {
		apptest.WantDown(t, e.service(t).ForgotPassword(ctx, "ada@example.com"))
		if sent := e.mailer.Sent(); len(sent) != 0 {
			t.Fatalf("mailed %+v", sent)
		}
	})
}

// forgot mails a reset token to ada and returns it.
func forgot(t *testing.T, e *env, svc *auth.Service) string {
	t.Helper()
	register(t, svc, "ada@example.com")
	if err := svc.ForgotPassword(ctx, "ada@example.com"); err != nil {
		t.Fatalf("forgot: %v", err)
	}
	return e.resetToken(t)
}

// resetToken returns the reset token the last mail states.
func (e *env) resetToken(t *testing.T) string {
	t.Helper()
	tok, ok := e.mailer.TokenAfter("Reset token: ")
	if !ok {
		t.Fatalf("no reset token in the last mail of %+v", e.mailer.Sent())
	}
	return tok
}

// loginWorks reports whether ada signs in with pw.
func loginWorks(t *testing.T, svc *auth.Service, pw string) bool {
	t.Helper()
	_, err := svc.Login(ctx, auth.LoginInput{Email: "ada@example.com", Password: pw, ClientAddr: "a"})
	if err != nil && !domain.IsKind(err, domain.KindUnauthorized) {
		t.Fatalf("login: %v", err)
	}
	return err == nil
}

func TestResetTokenExpires(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	tok := forgot(t, e, svc)
	e.clock.Advance(time.Hour)
	apptest.WantKind(t, svc.ResetPassword(ctx, tok, "a brand new password"), domain.KindValidation)
	if !loginWorks(t, svc, password) {
		t.Fatal("an expired token changed the password")
	}
}

func TestResetPasswordRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	tok := forgot(t, e, svc)
	id, _, _ := account.SplitToken(tok)
	for _, tc := range []struct{ name, token, password, field string }{
		{"short password", tok, "short", "password"},
		{"malformed token", "no-dot", "a brand new password", "token"},
		{"unknown token", "rst_00000000000000000099.secret", "a brand new password", "token"},
		{"forged secret", id + ".forged", "a brand new password", "token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := svc.ResetPassword(ctx, tc.token, tc.password)
			apptest.WantKind(t, err, domain.KindValidation)
			if de := asDomain(t, err); de.Fields[0].Field != tc.field {
				t.Fatalf("field %q, want %q", de.Fields[0].Field, tc.field)
			}
		})
	}
	if err := svc.ResetPassword(ctx, tok, "a brand new password"); err != nil {
		t.Fatalf("the refused attempts spent the token: %v", err)
	}
}

// Another reset consumes the token between this one's read and its
// Consume: this one changes nothing.
func TestResetPasswordLosesTheRaceOnConsume(t *testing.T) {
	t.Parallel()
	e := newEnv()
	tok := forgot(t, e, e.service(t))
	e.deps.ResetTokens = racedResetTokens{ResetTokens: e.deps.ResetTokens, at: start}
	svc := e.service(t)
	apptest.WantKind(t, svc.ResetPassword(ctx, tok, "a brand new password"), domain.KindValidation)
	if !loginWorks(t, svc, password) || loginWorks(t, svc, "a brand new password") {
		t.Fatal("the losing reset changed the password")
	}
}

// The password update fails after the token was consumed in the same
// unit: the token is not spent.
func TestResetPasswordStoreFailureKeepsTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	tok := forgot(t, e, svc)
	users := e.deps.Users
	e.deps.Users = failingPasswordUpdate{users}
	apptest.WantDown(t, e.service(t).ResetPassword(ctx, tok, "a brand new password"))
	if err := svc.ResetPassword(ctx, tok, "a brand new password"); err != nil {
		t.Fatalf("the token was spent by the failed unit: %v", err)
	}
}

func TestResetPasswordHashFailure(t *testing.T) {
	t.Parallel()
	e := newEnv()
	svc := e.service(t)
	tok := forgot(t, e, svc)
	e.hasher.hashErr = apptest.ErrDown
	apptest.WantDown(t, svc.ResetPassword(ctx, tok, "a brand new password"))
}

// failingRevokeFamily cannot revoke.
type failingRevokeFamily struct{ accountstore.RefreshTokens }

func (failingRevokeFamily) RevokeFamily(context.Context, string, time.Time) error {
	return apptest.ErrDown
}

// A reuse whose revocation fails is not answered as a plain refusal: the
// family would still be alive behind it.
func TestRefreshReuseWhenTheRevocationFails(t *testing.T) {
	t.Parallel()
	e, svc, reg := adaRegistered(t)
	if _, err := svc.Refresh(ctx, reg.Tokens.RefreshToken); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	e.deps.RefreshTokens = failingRevokeFamily{e.deps.RefreshTokens}
	_, err := e.service(t).Refresh(ctx, reg.Tokens.RefreshToken)
	apptest.WantDown(t, err)
}
