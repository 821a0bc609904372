package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/password"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/ports"
)

// TestSecretsNeverLeak runs every flow that handles a secret and then looks
// for each secret in every response body and every log entry. The log mail
// transport's own message is the one place a reset token may appear.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		secrets := map[string]string{"password": a.password, "first refresh token": a.refresh}
		expect(t, h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": "wrong " + a.password}), http.StatusUnauthorized)
		secrets["wrong password"] = "wrong " + a.password
		r := h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh})
		expect(t, r, http.StatusOK)
		secrets["second refresh token"] = str(r.data()["refreshToken"])
		expect(t, h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": a.refresh}), http.StatusUnauthorized)
		// The reuse signed every session out: sign in again.
		a.access = h.login(t, a.email, a.password)
		k := h.post("/api/v1/api-keys", map[string]any{"name": "deploy"}, bearer(a.access)...)
		expect(t, k, http.StatusCreated)
		secrets["api key"] = str(k.data()["key"])
		expect(t, h.get("/api/v1/me", "X-API-Key", secrets["api key"]), http.StatusOK)
		expect(t, h.get("/api/v1/me", "X-API-Key", secrets["api key"]+"0"), http.StatusUnauthorized)
		expect(t, h.post("/api/v1/auth/forgot-password", map[string]any{"email": a.email}), http.StatusAccepted)
		token := h.mailedResetToken(t, a.email)
		secrets["reset token"] = token
		secrets["new password"] = "the new password 123"
		expect(t, h.post("/api/v1/auth/reset-password", map[string]any{"token": token, "password": secrets["new password"]}), http.StatusOK)
		expect(t, h.post("/api/v1/auth/reset-password", map[string]any{"token": token, "password": secrets["new password"]}), http.StatusUnprocessableEntity)
		a.access = h.login(t, a.email, secrets["new password"])

		secrets["webhook secret"] = "whsec-never-shown-0123456789abcdef01"
		w := h.post("/v1/webhooks", map[string]any{"url": "https://hooks.example.test/hook", "events": []string{"*"}, "secret": secrets["webhook secret"]}, bearer(a.access)...)
		expect(t, w, http.StatusCreated)
		secrets["rotated webhook secret"] = "whsec-rotated-0123456789abcdef0123456"
		expect(t, h.patch("/v1/webhooks/"+str(w.data()["id"]), map[string]any{"secret": secrets["rotated webhook secret"]}, bearer(a.access)...), http.StatusOK)
		expect(t, h.get("/v1/webhooks/"+str(w.data()["id"]), bearer(a.access)...), http.StatusOK)
		stored, err := h.store.WebhookEndpoints().ByID(context.Background(), a.teamID, str(w.data()["id"]))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(stored.SecretSealed), "whsec-") {
			t.Error("the webhook secret is stored in the clear")
		}

		mailEntries := 0
		for _, e := range h.logs.All() {
			b, _ := json.Marshal(e.ContextMap())
			line := e.Message + " " + string(b)
			if e.LoggerName == "mail" || strings.Contains(e.Message, "mail (log transport)") {
				mailEntries++
				continue
			}
			for name, s := range secrets {
				if strings.Contains(line, s) {
					t.Errorf("log line contains the %s: %s", name, line)
				}
			}
		}
		// The reset token's mail, and the notice that the password changed.
		if mailEntries != 2 {
			t.Errorf("%d mail log entries, want 2", mailEntries)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, body := range h.bodies {
			for _, name := range []string{"password", "wrong password", "new password", "reset token", "webhook secret", "rotated webhook secret"} {
				if strings.Contains(string(body), secrets[name]) {
					t.Errorf("a response contains the %s: %s", name, truncate(body))
				}
			}
		}
	})
}

// TestConcurrentLoginsAreBounded sends 200 logins at once with the production
// hasher memory (19 MiB per hash). Unbounded, they would need about 3.8 GiB;
// the hasher's semaphore keeps at most GOMAXPROCS hashes in memory. One pass
// instead of two keeps the queue short under the race detector; memory per
// hash, the figure under test, is unchanged.
func TestConcurrentLoginsAreBounded(t *testing.T) {
	params := password.DefaultParams()
	params.Time = 1
	hasher := password.NewArgon2id(params)
	h := start(t, options{databaseURL: "memory://", extra: []fx.Option{
		fx.Decorate(func(ports.PasswordHasher) ports.PasswordHasher { return hasher }),
		// Every attempt counts against the login budgets before hashing;
		// what is under test here is the hasher's bound, so the budgets
		// let all n through.
		fx.Decorate(func(p auth.Policy) auth.Policy {
			p.LoginAttemptsPerEmail, p.LoginAttemptsPerAddr = 1000, 1000
			return p
		}),
	}})
	// The logins queue for the hasher by design; the last one waits for the
	// 199 before it.
	h.client.Timeout = 5 * time.Minute
	a := h.register(t)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peakHeap.Load() {
				peakHeap.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	const n = 200
	var wg sync.WaitGroup
	var ok atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password}).status == http.StatusOK {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	if ok.Load() != n {
		t.Fatalf("%d of %d logins succeeded", ok.Load(), n)
	}
	if peak, limit := hasher.PeakConcurrent(), runtime.GOMAXPROCS(0); peak > limit {
		t.Fatalf("%d hashes ran at once, limit %d", peak, limit)
	}
	grown := int64(peakHeap.Load()) - int64(before.HeapInuse)
	const budget = 400 << 20
	t.Logf("peak heap growth during %d concurrent logins: %d MiB (unbounded would be ~%d MiB)", n, grown>>20, n*19)
	if grown > budget {
		t.Fatalf("heap grew by %d MiB during %d concurrent logins", grown>>20, n)
	}
}

// TestCredentialResponsesAreNotStored: every response that carries tokens
// or a new API key forbids caches to keep it; others need not.
func TestCredentialResponsesAreNotStored(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	email, password := "cache@example.com", "correct horse battery staple"
	reg := h.post("/api/v1/auth/register", map[string]any{"email": email, "password": password, "name": "Cache"})
	login := h.post("/api/v1/auth/login", map[string]any{"email": email, "password": password})
	expect(t, login, http.StatusOK)
	refresh := h.post("/api/v1/auth/refresh", map[string]any{"refreshToken": str(login.data()["refreshToken"])})
	bearer := "Bearer " + str(login.data()["accessToken"])
	key := h.post("/api/v1/api-keys", map[string]any{"name": "ci"}, "Authorization", bearer)
	for name, r := range map[string]response{"register": reg, "login": login, "refresh": refresh, "api key": key} {
		if r.status != http.StatusOK && r.status != http.StatusCreated {
			t.Fatalf("%s: status %d: %s", name, r.status, r.raw)
		}
		if got := r.header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", name, got)
		}
	}
	me := h.get("/api/v1/me", "Authorization", bearer)
	expect(t, me, http.StatusOK)
	if got := me.header.Get("Cache-Control"); got == "no-store" {
		t.Errorf("GET /me carries no credential, yet Cache-Control is %q", got)
	}
}
