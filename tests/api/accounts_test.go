package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/profilesvc/profilesvc/domain/team"
)

var passwordChangedPattern = regexp.MustCompile(`All API keys of this account were (revoked)`)

// A password reset cuts off what the old password produced: access tokens
// issued before it (even within the same second), the other reset tokens,
// and API keys. A sign-in after it works.
func TestPasswordResetRevokesEverySession(t *testing.T) {
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
