package api_test

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/testenv"
)

// rateLimitChecks: with RATE_LIMIT=3/1m, each API key and each user (by
// token) gets 3 requests per minute of the service's clock, told in the
// RateLimit headers; the 4th answers 429 with Retry-After, and the next
// window starts afresh.
func rateLimitChecks(t *testing.T, h *harness) {
	a := h.register(t)
	key := h.apiKey(t, a) // one request of a's budget
	policy := `"default";q=3;w=60`
	for _, c := range []struct {
		name  string
		creds []string
		left  []int
	}{
		{"by token", bearer(a.access), []int{1, 0}},
		{"by API key", []string{"X-API-Key", key}, []int{2, 1, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, left := range c.left {
				r := h.get("/api/v1/me", c.creds...)
				expect(t, r, http.StatusOK)
				if got := r.header.Get("RateLimit-Policy"); got != policy {
					t.Fatalf("RateLimit-Policy %q, want %q", got, policy)
				}
				if got, want := r.header.Get("RateLimit"), fmt.Sprintf(`"default";r=%d;t=%d`, left, secondsLeft(h)); got != want {
					t.Fatalf("RateLimit %q, want %q", got, want)
				}
			}
			r := h.get("/api/v1/me", c.creds...)
			expect(t, r, http.StatusTooManyRequests)
			if r.errCode() != "rate_limited" || r.header.Get("Retry-After") != fmt.Sprint(secondsLeft(h)) {
				t.Fatalf("429: Retry-After %q, body %s", r.header.Get("Retry-After"), r.raw)
			}
			if got, want := r.header.Get("RateLimit"), fmt.Sprintf(`"default";r=0;t=%d`, secondsLeft(h)); got != want {
				t.Fatalf("429: RateLimit %q, want %q", got, want)
			}
		})
	}
	h.clock.Advance(time.Minute)
	expect(t, h.get("/api/v1/me", bearer(a.access)...), http.StatusOK)
	expect(t, h.get("/api/v1/me", "X-API-Key", key), http.StatusOK)
	// Another user has a budget of their own.
	b := h.register(t)
	expect(t, h.get("/api/v1/me", bearer(b.access)...), http.StatusOK)
}

// secondsLeft is what remains of the current minute of h's clock, in whole
// seconds rounded up: fixed windows start on the minute.
func secondsLeft(h *harness) int {
	now := h.clock.Now()
	end := now.Truncate(time.Minute).Add(time.Minute)
	return int((end.Sub(now) + time.Second - 1) / time.Second)
}

// withLimiters runs checks on a service that counts limits in process and
// on one that counts them in Redis (when TEST_REDIS_URL is set), each
// configured by env.
func withLimiters(t *testing.T, env map[string]string, checks func(*testing.T, *harness)) {
	t.Run("local", func(t *testing.T) {
		checks(t, start(t, options{databaseURL: "memory://", env: env}))
	})
	t.Run("redis", func(t *testing.T) {
		if os.Getenv(testenv.RedisURLVariable) == "" {
			t.Skip(testenv.RedisURLVariable + " is not set")
		}
		withPrefix := maps.Clone(env)
		withPrefix["REDIS_KEY_PREFIX"] = testenv.RedisKeyPrefix(t, testenv.RedisClient(t), "ratelimit")
		checks(t, start(t, options{databaseURL: "memory://", redisURL: os.Getenv(testenv.RedisURLVariable), env: withPrefix}))
	})
}

func TestRateLimitPerKeyAndUser(t *testing.T) {
	withLimiters(t, map[string]string{"RATE_LIMIT": "3/1m"}, rateLimitChecks)
}

// authLimitChecks: with AUTH_RATE_LIMIT=3/1m, the account endpoints that
// need no credentials share one budget per client address, told in the
// RateLimit headers of the "auth" policy whatever the answer; past it they
// answer 429 with Retry-After, other addresses and signed-in callers are
// not held back, and the next window starts afresh.
func authLimitChecks(t *testing.T, h *harness) {
	policy := `"auth";q=3;w=60`
	check := func(r response, status, left int) {
		t.Helper()
		expect(t, r, status)
		if got := r.header.Get("RateLimit-Policy"); got != policy {
			t.Fatalf("RateLimit-Policy %q, want %q", got, policy)
		}
		if got, want := r.header.Get("RateLimit"), fmt.Sprintf(`"auth";r=%d;t=%d`, left, secondsLeft(h)); got != want {
			t.Fatalf("RateLimit %q, want %q", got, want)
		}
	}
	a := h.register(t)
	check(h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": "not the password"}), http.StatusUnauthorized, 1)
	check(h.post("/api/v1/auth/forgot-password", map[string]any{"email": a.email}), http.StatusAccepted, 0)
	r := h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh})
	check(r, http.StatusTooManyRequests, 0)
	if r.errCode() != "rate_limited" || r.header.Get("Retry-After") != fmt.Sprint(secondsLeft(h)) {
		t.Fatalf("429: Retry-After %q, body %s", r.header.Get("Retry-After"), r.raw)
	}
	// The refusal came first: the refresh token was not spent.
	expect(t, h.get("/api/v1/me", bearer(a.access)...), http.StatusOK)
	// Another client address, as the trusted proxy forwards it, has its own.
	other := h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password}, "X-Forwarded-For", "127.0.0.9")
	check(other, http.StatusOK, 2)
	h.clock.Advance(time.Minute)
	check(h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh}), http.StatusOK, 2)
}

func TestAuthLimitPerAddress(t *testing.T) {
	withLimiters(t, map[string]string{"AUTH_RATE_LIMIT": "3/1m", "TRUSTED_PROXIES": "127.0.0.1"}, authLimitChecks)
}
