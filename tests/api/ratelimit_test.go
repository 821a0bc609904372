package api_test

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// rateClock is the time a service's rate limits keep: its fake clock for
// the in-process limiter, which the test advances, or Redis's, which runs
// in real time with a short window so that a refill is awaited by polling.
type rateClock struct {
	h      *harness
	window time.Duration
	limit  int
	real   bool
}

// interval is how long one request of the budget takes to refill.
func (rc rateClock) interval() time.Duration { return rc.window / time.Duration(rc.limit) }

func (rc rateClock) now() time.Time {
	if rc.real {
		return time.Now()
	}
	return rc.h.clock.Now()
}

// policy is the RateLimit-Policy header of the named policy.
func (rc rateClock) policy(name string) string {
	return fmt.Sprintf(`"%s";q=%d;w=%d`, name, rc.limit, int(rc.window/time.Second))
}

// refilled waits until one request of a spent budget has refilled, and
// returns the answer to the request do makes then: on the fake clock it
// advances one refill interval, in real time it repeats do while it is
// refused (a refusal takes nothing from the budget).
func (rc rateClock) refilled(t *testing.T, what string, do func() response) response {
	t.Helper()
	if !rc.real {
		rc.h.clock.Advance(rc.interval())
		return do()
	}
	var r response
	poll.Until(t, what, func() bool {
		r = do()
		return r.status != http.StatusTooManyRequests
	})
	return r
}

// wantRateLimit checks r's RateLimit header: left requests remain and the
// budget is whole again once the taken requests, the first of them made no
// earlier than since, have refilled. On the fake clock that is exact; in
// real time the budget may have refilled by the time elapsed since then.
func (rc rateClock) wantRateLimit(t *testing.T, r response, name string, left, taken int, since time.Time) {
	t.Helper()
	m := rateLimitHeader.FindStringSubmatch(r.header.Get("RateLimit"))
	if m == nil || m[1] != name {
		t.Fatalf("RateLimit %q, want the %q policy's remaining and seconds", r.header.Get("RateLimit"), name)
	}
	remaining, _ := strconv.Atoi(m[2]) // digits, by the pattern
	secs, _ := strconv.Atoi(m[3])
	elapsed := rc.now().Sub(since)
	full := time.Duration(taken) * rc.interval()
	if most := left + int(elapsed/rc.interval()); remaining < left || remaining > most {
		t.Fatalf("RateLimit %q: r=%d, want %d (up to %d in real time after %s)", r.header.Get("RateLimit"), remaining, left, most, elapsed)
	}
	if lo, hi := wholeSeconds(full-elapsed), wholeSeconds(full); secs < lo || secs > hi {
		t.Fatalf("RateLimit %q: t=%d, want the seconds until %d requests have refilled: in [%d, %d]", r.header.Get("RateLimit"), secs, taken, lo, hi)
	}
}

// wantRetryAfter checks that a refusal of a budget spent since since tells
// to wait until one request has refilled.
func (rc rateClock) wantRetryAfter(t *testing.T, r response, since time.Time) {
	t.Helper()
	elapsed := rc.now().Sub(since)
	lo, hi := wholeSeconds(rc.interval()-elapsed), wholeSeconds(rc.interval())
	if got, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || r.errCode() != "rate_limited" || got < lo || got > hi {
		t.Fatalf("429: Retry-After %q, want in [%d, %d], the seconds until one request refills; body %s", r.header.Get("Retry-After"), lo, hi, r.raw)
	}
}

// rateLimitHeader is the RateLimit header: policy, remaining, seconds.
var rateLimitHeader = regexp.MustCompile(`^"([^"]+)";r=(\d+);t=(\d+)$`)

// wholeSeconds is d in whole seconds rounded up, at least 1, as the
// service writes the t of RateLimit and Retry-After.
func wholeSeconds(d time.Duration) int {
	return max(int((d+time.Second-1)/time.Second), 1)
}

// rateLimitChecks: each API key and each user (by token) gets a budget of
// 3 requests that refills one every third of the window, told in the
// RateLimit headers; the 4th answers 429 with Retry-After, the time until
// one request has refilled, and that one request is then allowed.
func rateLimitChecks(t *testing.T, rc rateClock) {
	h := rc.h
	a := h.register(t)
	tokenSince := rc.now()
	key := h.apiKey(t, a) // one request of a's budget
	policy := rc.policy("default")
	for _, c := range []struct {
		name  string
		creds []string
		taken int
		left  []int
		since *time.Time
	}{
		{"by token", bearer(a.access), 1, []int{1, 0}, &tokenSince},
		{"by API key", []string{"X-API-Key", key}, 0, []int{2, 1, 0}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			since := rc.now()
			if c.since != nil {
				since = *c.since
			}
			for i, left := range c.left {
				r := h.get("/api/v1/me", c.creds...)
				expect(t, r, http.StatusOK)
				if got := r.header.Get("RateLimit-Policy"); got != policy {
					t.Fatalf("RateLimit-Policy %q, want %q", got, policy)
				}
				rc.wantRateLimit(t, r, "default", left, c.taken+i+1, since)
			}
			r := h.get("/api/v1/me", c.creds...)
			expect(t, r, http.StatusTooManyRequests)
			rc.wantRetryAfter(t, r, since)
			rc.wantRateLimit(t, r, "default", 0, rc.limit, since)
			again := rc.refilled(t, "one request refilled", func() response { return h.get("/api/v1/me", c.creds...) })
			expect(t, again, http.StatusOK)
			rc.wantRateLimit(t, again, "default", 0, rc.limit, rc.now())
		})
	}
	// Another user has a budget of their own.
	b := h.register(t)
	expect(t, h.get("/api/v1/me", bearer(b.access)...), http.StatusOK)
}

// withLimiters runs checks on a service that counts limits in process, on
// its fake clock with limit requests per minute, and on one that counts
// them in Redis (when TEST_REDIS_URL is set), in real time with limit
// requests per three seconds. variable is the setting that takes the
// limit, env more of the configuration.
func withLimiters(t *testing.T, variable string, limit int, env map[string]string, checks func(*testing.T, rateClock)) {
	t.Run("local", func(t *testing.T) {
		withLimit := map[string]string{variable: fmt.Sprintf("%d/1m", limit)}
		maps.Copy(withLimit, env)
		h := start(t, options{databaseURL: "memory://", env: withLimit})
		checks(t, rateClock{h: h, window: time.Minute, limit: limit})
	})
	t.Run("redis", func(t *testing.T) {
		if os.Getenv(testenv.RedisURLVariable) == "" {
			t.Skip(testenv.RedisURLVariable + " is not set")
		}
		withLimit := map[string]string{variable: fmt.Sprintf("%d/3s", limit)}
		maps.Copy(withLimit, env)
		withLimit["REDIS_KEY_PREFIX"] = testenv.RedisKeyPrefix(t, testenv.RedisClient(t), "ratelimit")
		h := start(t, options{databaseURL: "memory://", redisURL: os.Getenv(testenv.RedisURLVariable), env: withLimit})
		checks(t, rateClock{h: h, window: 3 * time.Second, limit: limit, real: true})
	})
}

func TestRateLimitPerKeyAndUser(t *testing.T) {
	withLimiters(t, "RATE_LIMIT", 3, nil, rateLimitChecks)
}

// authLimitChecks: the account endpoints that need no credentials share
// one budget of 3 per client address, told in the RateLimit headers of the
// "auth" policy whatever the answer; past it they answer 429 with
// Retry-After, other addresses and signed-in callers are not held back, and
// a refilled request is allowed.
func authLimitChecks(t *testing.T, rc rateClock) {
	h := rc.h
	policy := rc.policy("auth")
	check := func(r response, status, left, taken int, since time.Time) {
		t.Helper()
		expect(t, r, status)
		if got := r.header.Get("RateLimit-Policy"); got != policy {
			t.Fatalf("RateLimit-Policy %q, want %q", got, policy)
		}
		rc.wantRateLimit(t, r, "auth", left, taken, since)
	}
	since := rc.now()
	a := h.register(t)
	check(h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": "not the password"}), http.StatusUnauthorized, 1, 2, since)
	check(h.post("/api/v1/auth/forgot-password", map[string]any{"email": a.email}), http.StatusAccepted, 0, 3, since)
	r := h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh})
	check(r, http.StatusTooManyRequests, 0, 3, since)
	rc.wantRetryAfter(t, r, since)
	// The refusal came first: the refresh token was not spent.
	expect(t, h.get("/api/v1/me", bearer(a.access)...), http.StatusOK)
	// Another client address, as the trusted proxy forwards it, has its own.
	otherSince := rc.now()
	other := h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password}, "X-Forwarded-For", "127.0.0.9")
	check(other, http.StatusOK, 2, 1, otherSince)
	again := rc.refilled(t, "one request refilled", func() response {
		return h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh})
	})
	check(again, http.StatusOK, 0, 3, rc.now())
}

func TestAuthLimitPerAddress(t *testing.T) {
	withLimiters(t, "AUTH_RATE_LIMIT", 3, map[string]string{"TRUSTED_PROXIES": "127.0.0.1"}, authLimitChecks)
}
