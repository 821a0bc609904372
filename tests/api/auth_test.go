package api_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestRegister(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		r := h.post("/api/v1/auth/register", map[string]any{"email": "Ada@Example.com", "password": "analytical engine", "name": "Ada"})
		expect(t, r, http.StatusCreated)
		d := r.data()
		user := d["user"].(map[string]any)
		team := d["team"].(map[string]any)
		if user["email"] != "ada@example.com" || team["role"] != "owner" || d["tokenType"] != "Bearer" {
			t.Fatalf("unexpected session: %s", r.raw)
		}
		if !strings.HasPrefix(str(user["id"]), "usr_") || !strings.HasPrefix(str(team["id"]), "team_") {
			t.Fatalf("ids not prefixed: %s", r.raw)
		}
		if d["expiresIn"].(float64) != 900 {
			t.Fatalf("access tokens live 15 min, expiresIn = %v", d["expiresIn"])
		}

		t.Run("email taken, case-insensitively", func(t *testing.T) {
			r := h.post("/api/v1/auth/register", map[string]any{"email": "ADA@example.COM", "password": "another password", "name": "Imposter"})
			expect(t, r, http.StatusConflict)
		})
		t.Run("every invalid field is named", func(t *testing.T) {
			r := h.post("/api/v1/auth/register", map[string]any{"email": "not-an-email", "password": "short", "name": ""})
			expect(t, r, http.StatusUnprocessableEntity)
			for _, f := range []string{"email", "password", "name"} {
				if !slices.Contains(r.errFields(), f) {
					t.Errorf("details do not name %q: %s", f, r.raw)
				}
			}
		})
		t.Run("password longer than the hasher accepts is refused, not truncated", func(t *testing.T) {
			long := strings.Repeat("p", 257)
			r := h.post("/api/v1/auth/register", map[string]any{"email": "long@example.com", "password": long, "name": "Long"})
			expect(t, r, http.StatusUnprocessableEntity)
			if !strings.Contains(string(r.raw), "at most 256 bytes") {
				t.Fatalf("message does not say the limit: %s", r.raw)
			}
			// The same password cut to the limit must not have made an account.
			r = h.post("/api/v1/auth/login", map[string]any{"email": "long@example.com", "password": long[:256]})
			expect(t, r, http.StatusUnauthorized)
		})
		t.Run("unknown and read-only fields are refused", func(t *testing.T) {
			r := h.post("/api/v1/auth/register", map[string]any{"email": "x@example.com", "password": "long enough pw", "name": "X", "role": "admin"})
			expect(t, r, http.StatusUnprocessableEntity)
			if !slices.Contains(r.errFields(), "role") {
				t.Fatalf("unknown field not named: %s", r.raw)
			}
			r = h.post("/api/v1/auth/register", map[string]any{"email": "x@example.com", "password": "long enough pw", "name": "X", "id": "usr_1"})
			expect(t, r, http.StatusUnprocessableEntity)
			if !slices.Contains(r.errFields(), "id") {
				t.Fatalf("read-only field not named: %s", r.raw)
			}
		})
		t.Run("transport errors", func(t *testing.T) {
			r := h.do(req{method: http.MethodPost, path: "/api/v1/auth/register", rawBody: []byte(`{"email":`)})
			expect(t, r, http.StatusBadRequest)
			r = h.do(req{method: http.MethodPost, path: "/api/v1/auth/register", rawBody: []byte(`email=a`), headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
			expect(t, r, http.StatusUnsupportedMediaType)
			big := append([]byte(`{"name":"`), make([]byte, 1<<20)...)
			for i := 9; i < len(big); i++ {
				big[i] = 'a'
			}
			big = append(big, `"}`...)
			r = h.do(req{method: http.MethodPost, path: "/api/v1/auth/register", rawBody: big})
			expect(t, r, http.StatusRequestEntityTooLarge)
		})
	})
}

func TestLogin(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		r := h.post("/api/v1/auth/login", map[string]any{"email": strings.ToUpper(a.email), "password": a.password})
		expect(t, r, http.StatusOK)
		if str(r.data()["user"].(map[string]any)["id"]) != a.userID {
			t.Fatalf("login returned another user: %s", r.raw)
		}
		me := h.get("/api/v1/me", bearer(str(r.data()["accessToken"]))...)
		expect(t, me, http.StatusOK)

		wrongPassword := h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": "wrong password!"})
		unknownEmail := h.post("/api/v1/auth/login", map[string]any{"email": "nobody@example.com", "password": "wrong password!"})
		expect(t, wrongPassword, http.StatusUnauthorized)
		expect(t, unknownEmail, http.StatusUnauthorized)
		if string(wrongPassword.raw) != string(unknownEmail.raw) {
			t.Fatalf("wrong email and wrong password differ:\n%s\n%s", wrongPassword.raw, unknownEmail.raw)
		}
	})
}

func TestLoginFailuresAreThrottledPerEmail(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	for i := 0; i < 5; i++ {
		expect(t, h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": "wrong password!"}), http.StatusUnauthorized)
	}
	r := h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password})
	expect(t, r, http.StatusTooManyRequests)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// Another email from the same address is still allowed (its own budget
	// and the address budget are not used up).
	b := h.register(t)
	expect(t, h.post("/api/v1/auth/login", map[string]any{"email": b.email, "password": b.password}), http.StatusOK)
	// After the window, the right password works again.
	h.clock.Advance(16 * time.Minute)
	expect(t, h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password}), http.StatusOK)
}

func TestLoginFailuresAreThrottledPerAddress(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	for i := 0; i < 20; i++ {
		email := "guess" + strings.Repeat("x", i) + "@example.com"
		expect(t, h.post("/api/v1/auth/login", map[string]any{"email": email, "password": "wrong password!"}), http.StatusUnauthorized)
	}
	expect(t, h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password}), http.StatusTooManyRequests)
}

func TestRefreshRotation(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		r := h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh})
		expect(t, r, http.StatusOK)
		next := str(r.data()["refreshToken"])
		if next == a.refresh || next == "" {
			t.Fatal("refresh did not rotate the token")
		}
		expect(t, h.get("/api/v1/me", bearer(str(r.data()["accessToken"]))...), http.StatusOK)

		// The used token is refused and takes its family with it: the token
		// issued in its place stops working too.
		expect(t, h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh}), http.StatusUnauthorized)
		expect(t, h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": next}), http.StatusUnauthorized)

		// Another sign-in is another family and is unaffected.
		b := h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password})
		expect(t, b, http.StatusOK)
		expect(t, h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": str(b.data()["refreshToken"])}), http.StatusOK)

		for _, bad := range []string{"", "garbage", "rt_x.y", a.refresh + "x"} {
			r := h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": bad})
			if r.status != http.StatusUnauthorized && r.status != http.StatusUnprocessableEntity {
				t.Errorf("refresh with %q: %d", bad, r.status)
			}
		}
	})
}

func TestConcurrentRefreshWithOneTokenSucceedsOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		for round := 0; round < 5; round++ {
			a := h.register(t)
			const n = 2
			statuses := make([]int, n)
			var wg sync.WaitGroup
			startGate := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-startGate
					statuses[i] = h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh}).status
				}(i)
			}
			close(startGate)
			wg.Wait()
			ok := 0
			for _, s := range statuses {
				switch s {
				case http.StatusOK:
					ok++
				case http.StatusUnauthorized:
				default:
					t.Fatalf("unexpected status %d", s)
				}
			}
			if ok != 1 {
				t.Fatalf("round %d: %d of %d concurrent refreshes succeeded, want exactly 1", round, ok, n)
			}
		}
	})
}

func TestAccessTokensAreVerifiedStrictly(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	now := h.clock.Now()
	claims := jwt.MapClaims{"sub": a.userID, "tid": a.teamID, "jti": "jti_1", "iss": "profilesvc", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	sign := func(method jwt.SigningMethod, key any, c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(method, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	without := func(k string) jwt.MapClaims {
		c := jwt.MapClaims{}
		for kk, v := range claims {
			if kk != k {
				c[kk] = v
			}
		}
		return c
	}
	with := func(k string, v any) jwt.MapClaims {
		c := without(k)
		c[k] = v
		return c
	}
	secret := []byte(sharedSecrets.jwt)
	good := sign(jwt.SigningMethodHS256, secret, claims)
	expect(t, h.get("/api/v1/me", bearer(good)...), http.StatusOK)

	cases := map[string]string{
		"alg none":      sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims),
		"HS512":         sign(jwt.SigningMethodHS512, secret, claims),
		"another key":   sign(jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef0123456789"), claims),
		"no exp":        sign(jwt.SigningMethodHS256, secret, without("exp")),
		"another iss":   sign(jwt.SigningMethodHS256, secret, with("iss", "someone-else")),
		"expired":       sign(jwt.SigningMethodHS256, secret, with("exp", now.Add(-time.Minute).Unix())),
		"tampered body": good[:strings.LastIndex(good, ".")-2] + "xx" + good[strings.LastIndex(good, "."):],
		"not a jwt":     "hello",
	}
	for name, token := range cases {
		t.Run(name, func(t *testing.T) {
			r := h.get("/api/v1/me", bearer(token)...)
			expect(t, r, http.StatusUnauthorized)
			if r.errCode() != "unauthorized" {
				t.Fatalf("code %q", r.errCode())
			}
		})
	}
	t.Run("issued token expires after 15 minutes", func(t *testing.T) {
		expect(t, h.get("/api/v1/me", bearer(a.access)...), http.StatusOK)
		h.clock.Advance(15*time.Minute + 6*time.Second) // past the 5 s leeway for clock skew between instances
		expect(t, h.get("/api/v1/me", bearer(a.access)...), http.StatusUnauthorized)
	})
	t.Run("no credentials", func(t *testing.T) {
		expect(t, h.get("/api/v1/me"), http.StatusUnauthorized)
		expect(t, h.get("/api/v1/me", "Authorization", "Basic abc"), http.StatusUnauthorized)
	})
}

var resetTokenPattern = regexp.MustCompile(`Reset token: (\S+)`)

// mailedResetToken reads the token from the log mail transport's message.
func (h *harness) mailedResetToken(t *testing.T, email string) string {
	t.Helper()
	return h.mailedToken(t, email, resetTokenPattern)
}

// mailedToken reads the newest token matching pattern from the messages
// the log mail transport wrote for email.
func (h *harness) mailedToken(t *testing.T, email string, pattern *regexp.Regexp) string {
	t.Helper()
	var token string
	for _, e := range h.logs.All() {
		fields := e.ContextMap()
		if !strings.EqualFold(str(fields["to"]), email) {
			continue
		}
		for _, v := range fields {
			if m := pattern.FindStringSubmatch(str(v)); m != nil {
				token = m[1]
			}
		}
	}
	if token == "" {
		t.Fatalf("no mail to %s matching %s in the log", email, pattern)
	}
	return token
}

func TestPasswordReset(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		unknown := h.post("/api/v1/auth/forgot-password", map[string]any{"email": "nobody@example.com"})
		known := h.post("/api/v1/auth/forgot-password", map[string]any{"email": a.email})
		expect(t, unknown, http.StatusAccepted)
		expect(t, known, http.StatusAccepted)
		if string(unknown.raw) != string(known.raw) {
			t.Fatal("forgot-password answers differ for known and unknown emails")
		}
		token := h.mailedResetToken(t, a.email)

		expect(t, h.post("/api/v1/auth/reset-password", map[string]any{"token": token, "password": "short"}), http.StatusUnprocessableEntity)
		expect(t, h.post("/api/v1/auth/reset-password", map[string]any{"token": token, "password": "a brand new password"}), http.StatusOK)
		// Single use.
		expect(t, h.post("/api/v1/auth/reset-password", map[string]any{"token": token, "password": "yet another password"}), http.StatusUnprocessableEntity)
		// Every refresh token of the user is revoked; the new password works,
		// the old one does not.
		expect(t, h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh}), http.StatusUnauthorized)
		expect(t, h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password}), http.StatusUnauthorized)
		expect(t, h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": "a brand new password"}), http.StatusOK)
	})
}

func TestResetTokenExpiresAfterAnHour(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	expect(t, h.post("/api/v1/auth/forgot-password", map[string]any{"email": a.email}), http.StatusAccepted)
	token := h.mailedResetToken(t, a.email)
	h.clock.Advance(time.Hour + time.Second)
	expect(t, h.post("/api/v1/auth/reset-password", map[string]any{"token": token, "password": "a brand new password"}), http.StatusUnprocessableEntity)
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		r := h.post("/api/v1/api-keys", map[string]any{"name": "ci"}, bearer(a.access)...)
		expect(t, r, http.StatusCreated)
		key, id := str(r.data()["key"]), str(r.data()["id"])
		if !strings.HasPrefix(id, "key_") || key == "" {
			t.Fatalf("bad key: %s", r.raw)
		}
		me := h.get("/api/v1/me", "X-API-Key", key)
		expect(t, me, http.StatusOK)
		if me.data()["authMethod"] != "api_key" || str(me.data()["user"].(map[string]any)["id"]) != a.userID {
			t.Fatalf("key acts as someone else: %s", me.raw)
		}
		list := h.get("/api/v1/api-keys", bearer(a.access)...)
		expect(t, list, http.StatusOK)
		if strings.Contains(string(list.raw), key[len(key)-20:]) {
			t.Fatal("the key's secret is listed")
		}
		if n := len(asList(list.env["data"])); n != 1 {
			t.Fatalf("%d keys listed, want 1", n)
		}

		// Another user cannot see or delete it, and learns nothing.
		b := h.register(t)
		expect(t, h.do(req{method: http.MethodDelete, path: "/api/v1/api-keys/" + id, headers: pairs(bearer(b.access))}), http.StatusNotFound)
		if n := len(asList(h.get("/api/v1/api-keys", bearer(b.access)...).env["data"])); n != 0 {
			t.Fatalf("another user lists %d keys", n)
		}
		// A key cannot be pointed at another team.
		expect(t, h.get("/api/v1/me", "X-API-Key", key, "X-Team-ID", b.teamID), http.StatusNotFound)

		expect(t, h.do(req{method: http.MethodDelete, path: "/api/v1/api-keys/" + id, headers: pairs(bearer(a.access))}), http.StatusNoContent)
		expect(t, h.get("/api/v1/me", "X-API-Key", key), http.StatusUnauthorized)
		expect(t, h.get("/api/v1/me", "X-API-Key", "psvc_nope_"+strings.Repeat("0", 64)), http.StatusUnauthorized)
	})
}

func TestTeamContext(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a, b := h.register(t), h.register(t)
		r := h.get("/api/v1/me", append(bearer(a.access), "X-Team-ID", a.teamID)...)
		expect(t, r, http.StatusOK)
		if r.data()["role"] != "owner" {
			t.Fatalf("role %v", r.data()["role"])
		}
		// A team the caller is not a member of does not exist for them.
		r = h.get("/api/v1/me", append(bearer(a.access), "X-Team-ID", b.teamID)...)
		expect(t, r, http.StatusNotFound)
		expect(t, h.get("/api/v1/me", append(bearer(a.access), "X-Team-ID", "team_doesnotexist")...), http.StatusNotFound)
	})
}
