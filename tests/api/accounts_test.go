package api_test

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// countingHasher counts the passwords verified by every instance it is
// given to.
type countingHasher struct {
	ports.PasswordHasher
	verified *atomic.Int64
}

func (c countingHasher) Verify(ctx context.Context, hash, password string) (bool, error) {
	c.verified.Add(1)
	return c.PasswordHasher.Verify(ctx, hash, password)
}

// 100 logins at once for one email, spread over two instances when they
// share Redis: at most the email's budget of passwords is verified, the
// rest answer 429.
func TestConcurrentLoginsVerifyAtMostTheBudget(t *testing.T) {
	t.Parallel()
	for _, limiter := range []string{"local", "redis"} {
		t.Run(limiter, func(t *testing.T) {
			var verified atomic.Int64
			o := options{databaseURL: "memory://", extra: []fx.Option{
				fx.Decorate(func(h ports.PasswordHasher) ports.PasswordHasher {
					return countingHasher{PasswordHasher: h, verified: &verified}
				}),
			}}
			instances := 1
			if limiter == "redis" {
				redisURL := os.Getenv(testenv.RedisURLVariable)
				if redisURL == "" {
					t.Skip(testenv.RedisURLVariable + " is not set")
				}
				o.databaseURL, o.redisURL = testenv.PostgresURL(t), redisURL
				// The budget is the shared limiter's: a Redis call that timed
				// out on a loaded machine would fall back to each instance's
				// own, which this test is not about.
				o.env = map[string]string{"REDIS_KEY_PREFIX": testenv.RedisKeyPrefix(t, testenv.RedisClient(t), "api-login"), "REDIS_TIMEOUT": "5s"}
				instances = 2
			}
			hs := make([]*harness, instances)
			for i := range hs {
				hs[i] = start(t, o)
			}
			a := hs[0].register(t)
			before := verified.Load()
			const n = 100
			codes := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					pw := "wrong password " + a.password
					if i == n-1 {
						pw = a.password
					}
					codes[i] = hs[i%instances].rawDo(http.MethodPost, "/api/v1/auth/login", `{"email":"`+a.email+`","password":"`+pw+`"}`)
				})
			}
			wg.Wait()
			budget := auth.DefaultPolicy().LoginAttemptsPerEmail
			limited := 0
			for _, c := range codes {
				switch c {
				case http.StatusTooManyRequests:
					limited++
				case http.StatusUnauthorized, http.StatusOK:
				default:
					t.Fatalf("a login answered %d", c)
				}
			}
			if got := verified.Load() - before; got > int64(budget) || limited < n-budget {
				t.Fatalf("%d passwords verified and %d answered 429; want at most %d and at least %d", got, limited, budget, n-budget)
			}
		})
	}
}

var passwordChangedPattern = regexp.MustCompile(`All API keys of this account were (revoked)`)

// A password reset cuts off what the old password produced: access tokens
// issued before it (even within the same second), the other reset tokens,
// and API keys. A sign-in after it works.
func TestPasswordResetRevokesEverySession(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		r := h.post("/api/v1/api-keys", map[string]any{"name": "ci"}, bearer(a.access)...)
		expect(t, r, http.StatusCreated)
		key := str(r.data()["key"])
		expect(t, h.get("/api/v1/me", "X-API-Key", key), http.StatusOK)
		expect(t, h.get("/api/v1/me", bearer(a.access)...), http.StatusOK)

		expect(t, h.post("/api/v1/auth/forgot-password", map[string]any{"email": a.email}), http.StatusAccepted)
		first := h.mailedResetToken(t, a.email)
		expect(t, h.post("/api/v1/auth/forgot-password", map[string]any{"email": a.email}), http.StatusAccepted)
		second := h.mailedResetToken(t, a.email)

		r = h.post("/api/v1/auth/reset-password", map[string]any{"token": second, "password": "a brand new password"})
		expect(t, r, http.StatusOK)
		if msg := str(r.data()["message"]); !strings.Contains(msg, "API keys were revoked") || !strings.Contains(msg, "signed out") {
			t.Fatalf("the answer does not say what was revoked: %s", r.raw)
		}
		expect(t, h.get("/api/v1/me", bearer(a.access)...), http.StatusUnauthorized)
		expect(t, h.get("/api/v1/me", "X-API-Key", key), http.StatusUnauthorized)
		expect(t, h.post("/api/v1/auth/reset-password", map[string]any{"token": first, "password": "the attackers password"}), http.StatusUnprocessableEntity)
		h.mailedToken(t, a.email, passwordChangedPattern)

		r = h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": "a brand new password"})
		expect(t, r, http.StatusOK)
		expect(t, h.get("/api/v1/me", bearer(str(r.data()["accessToken"]))...), http.StatusOK)
	})
}

// A reused refresh token revokes its family and the access tokens issued
// before.
func TestRefreshReuseRevokesEarlierAccessTokens(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		r := h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh})
		expect(t, r, http.StatusOK)
		next := str(r.data()["accessToken"])
		expect(t, h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh}), http.StatusUnauthorized)
		expect(t, h.get("/api/v1/me", bearer(a.access)...), http.StatusUnauthorized)
		expect(t, h.get("/api/v1/me", bearer(next)...), http.StatusUnauthorized)
	})
}

// Removed from their own team, a user signs in to a team where they are
// active, and /me works.
func TestSignInAfterRemovalFromTheDefaultTeam(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		ada, bob := h.register(t), h.register(t)
		h.member(t, bob, ada, team.RoleOwner) // so that bob is not his team's last owner
		h.member(t, ada, bob, team.RoleMember)
		r := h.get("/api/v1/teams/members?limit=100", bearer(bob.access)...)
		expect(t, r, http.StatusOK)
		var bobInOwn string
		for _, m := range asList(r.env["data"]) {
			if m := m.(map[string]any); m["userId"] == bob.userID {
				bobInOwn = str(m["id"])
			}
		}
		expect(t, h.patch("/api/v1/teams/members/"+bobInOwn, map[string]any{"status": "removed"}, inTeam(ada, bob.teamID)...), http.StatusOK)

		r = h.post("/api/v1/auth/login", map[string]any{"email": bob.email, "password": bob.password})
		expect(t, r, http.StatusOK)
		if tm := r.data()["team"].(map[string]any); tm["id"] != ada.teamID || tm["role"] != "member" {
			t.Fatalf("signed in to %v as %v, want ada's team %s as member: %s", tm["id"], tm["role"], ada.teamID, r.raw)
		}
		access := str(r.data()["accessToken"])
		r = h.get("/api/v1/me", bearer(access)...)
		expect(t, r, http.StatusOK)
		if r.data()["team"].(map[string]any)["id"] != ada.teamID {
			t.Fatalf("me: %s", r.raw)
		}
		expect(t, h.get("/api/v1/profiles", bearer(access)...), http.StatusOK)
		r = h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": bob.refresh})
		expect(t, r, http.StatusOK)
		if r.data()["team"].(map[string]any)["id"] != ada.teamID {
			t.Fatalf("refresh: %s", r.raw)
		}
	})
}

func TestCommonPasswordsAndNFCEmails(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		for _, pw := range []string{"qwertyuiop", "Password123!", "zzzzzzzzzzzz"} {
			r := h.post("/api/v1/auth/register", map[string]any{"email": "weak@example.com", "password": pw, "name": "Weak"})
			expect(t, r, http.StatusUnprocessableEntity)
			if f := r.errFields(); len(f) != 1 || f[0] != "password" || !strings.Contains(string(r.raw), "common") && !strings.Contains(string(r.raw), "repeated") {
				t.Fatalf("%q: %s", pw, r.raw)
			}
		}
		composed, decomposed := "ren\u00e9e@example.com", "rene\u0301e@example.com"
		r := h.post("/api/v1/auth/register", map[string]any{"email": composed, "password": "a long good password", "name": "Renée"})
		expect(t, r, http.StatusCreated)
		expect(t, h.post("/api/v1/auth/register", map[string]any{"email": decomposed, "password": "a long good password", "name": "Other"}), http.StatusConflict)
		expect(t, h.post("/api/v1/auth/login", map[string]any{"email": decomposed, "password": "a long good password"}), http.StatusOK)
	})
}

func TestRegistrationsThrottledPerAddress(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", env: map[string]string{"REGISTRATIONS_PER_ADDR": "2"}})
	h.register(t)
	h.register(t)
	r := h.post("/api/v1/auth/register", map[string]any{"email": "third@example.com", "password": "a long good password", "name": "Third"})
	expect(t, r, http.StatusTooManyRequests)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
}

// 40 registrations of a taken email at once are refused without any of
// them being hashed: logins meanwhile are not slowed.
func TestConcurrentRegistrationsOfATakenEmail(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", env: map[string]string{"REGISTRATIONS_PER_ADDR": "100"}})
	a := h.register(t)
	body := `{"email":"` + a.email + `","password":"another long password","name":"Eve"}`
	var wg sync.WaitGroup
	codes := make([]int, 40)
	for i := range codes {
		wg.Go(func() { codes[i] = h.rawDo(http.MethodPost, "/api/v1/auth/register", body) })
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusConflict {
			t.Fatalf("registration %d: %d, want 409", i, c)
		}
	}
}

func TestAPIKeyQuotaPerUser(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", env: map[string]string{"API_KEYS_PER_USER": "2"}})
	a := h.register(t)
	for range 2 {
		expect(t, h.post("/api/v1/api-keys", map[string]any{"name": "k"}, bearer(a.access)...), http.StatusCreated)
	}
	r := h.post("/api/v1/api-keys", map[string]any{"name": "k"}, bearer(a.access)...)
	expect(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.raw), "at most 2 API keys") {
		t.Fatalf("quota answer does not name the quota: %s", r.raw)
	}
}

// login signs in and returns the access token.
func (h *harness) login(t *testing.T, email, password string) string {
	t.Helper()
	r := h.post("/api/v1/auth/login", map[string]any{"email": email, "password": password})
	expect(t, r, http.StatusOK)
	return str(r.data()["accessToken"])
}
