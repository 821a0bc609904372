package api_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// authChange is a change made through one instance to what bob's
// credentials in owner's team resolve to, and what the other instance must
// answer once it has heard of it.
type authChange struct {
	name   string
	change func(t *testing.T, a *harness, w authWarm)
	// keyRole and bearerRole are what bob's key and bearer act with
	// afterwards; "" when refused.
	keyRole, bearerRole string
}

// authWarm is bob, an admin of owner's team, with a key there.
type authWarm struct {
	owner, bob account
	memberID   string
	keyID, key string
}

var authChanges = []authChange{
	{"role change", func(t *testing.T, a *harness, w authWarm) {
		expect(t, a.patch("/api/v1/teams/members/"+w.memberID, map[string]any{"role": "viewer"}, bearer(w.owner.access)...), http.StatusOK)
	}, "viewer", "viewer"},
	{"member removal", func(t *testing.T, a *harness, w authWarm) {
		expect(t, a.patch("/api/v1/teams/members/"+w.memberID, map[string]any{"status": "removed"}, bearer(w.owner.access)...), http.StatusOK)
	}, "", ""},
	{"key deletion", func(t *testing.T, a *harness, w authWarm) {
		expect(t, a.delete("/api/v1/api-keys/"+w.keyID, inTeam(w.bob, w.owner.teamID)...), http.StatusNoContent)
	}, "", "admin"},
	{"password reset", func(t *testing.T, a *harness, w authWarm) {
		expect(t, a.post("/api/v1/auth/forgot-password", map[string]any{"email": w.bob.email}), http.StatusAccepted)
		token := a.mailedResetToken(t, w.bob.email)
		expect(t, a.post("/api/v1/auth/reset-password", map[string]any{"token": token, "password": "a brand new password"}), http.StatusOK)
	}, "", ""},
}

// checkAuthChanges runs every change through a while b has bob's
// credentials cached, and polls b until it answers as the change says.
func checkAuthChanges(t *testing.T, a, b *harness) {
	for _, c := range authChanges {
		t.Run(c.name, func(t *testing.T) {
			w := authWarm{owner: a.register(t), bob: a.register(t)}
			w.memberID = a.member(t, w.owner, w.bob, team.RoleAdmin)
			r := b.post("/api/v1/api-keys", map[string]any{"name": "ci"}, inTeam(w.bob, w.owner.teamID)...)
			expect(t, r, http.StatusCreated)
			w.keyID, w.key = str(r.data()["id"]), str(r.data()["key"])
			byKey, byBearer := []string{"X-API-Key", w.key}, inTeam(w.bob, w.owner.teamID)
			for range 2 {
				for _, creds := range [][]string{byKey, byBearer} {
					if r := b.get("/api/v1/me", creds...); r.status != http.StatusOK || r.data()["role"] != "admin" {
						t.Fatalf("warming the other instance: %d %s", r.status, r.raw)
					}
				}
			}

			c.change(t, a, w)

			for _, want := range []struct {
				name  string
				creds []string
				role  string
			}{{"key", byKey, c.keyRole}, {"bearer", byBearer, c.bearerRole}} {
				poll.Until(t, "the other instance to answer the "+want.name+" as of the "+c.name, func() bool {
					r := b.get("/api/v1/me", want.creds...)
					if want.role == "" {
						return r.status == http.StatusUnauthorized || r.status == http.StatusNotFound
					}
					return r.status == http.StatusOK && r.data()["role"] == want.role
				})
			}
		})
	}
}

// waitListening waits until h hears the other instances' notices, so that
// its cache is in use when the test warms it.
func (h *harness) waitListening(t *testing.T) {
	t.Helper()
	poll.Until(t, "the notices to listen", func() bool {
		return h.logs.FilterMessage("notices: listening").Len() > 0
	})
}

// Two instances on one PostgreSQL database, with Redis (notices over
// pub/sub) and without (LISTEN/NOTIFY): a change through one instance
// reaches the cache of the other.
func TestAuthChangesReachAnotherInstance(t *testing.T) {
	t.Parallel()
	for _, withRedis := range []bool{false, true} {
		name := "postgres"
		if withRedis {
			name = "postgres and redis"
		}
		t.Run(name, func(t *testing.T) {
			o := options{databaseURL: testenv.PostgresURL(t)}
			if withRedis {
				o.redisURL = os.Getenv(testenv.RedisURLVariable)
				if o.redisURL == "" {
					t.Skip(testenv.RedisURLVariable + " is not set")
				}
				o.env = map[string]string{"REDIS_KEY_PREFIX": testenv.RedisKeyPrefix(t, testenv.RedisClient(t), "api-authcache")}
			}
			a, b := start(t, o), start(t, o)
			a.waitListening(t)
			b.waitListening(t)
			checkAuthChanges(t, a, b)
		})
	}
}

// One instance on every store stays as correct: its own changes evict its
// cache at once.
func TestAuthChangesOnOneInstance(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) { checkAuthChanges(t, h, h) })
}
