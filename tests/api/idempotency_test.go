package api_test

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

func (h *harness) apiKey(t *testing.T, a account) string {
	t.Helper()
	r := h.post("/api/v1/api-keys", map[string]any{"name": "idempotency"}, bearer(a.access)...)
	expect(t, r, http.StatusCreated)
	return str(r.data()["key"])
}

func idempotencyChecks(t *testing.T, h *harness, fakeExpiry bool) {
	a, b := h.register(t), h.register(t)
	key := h.apiKey(t, a)
	auth := []string{"X-API-Key", key, "Idempotency-Key", "order-42"}
	body := map[string]any{"name": "Once", "templateId": windowsTemplate}

	first := h.post("/api/v1/profiles", body, auth...)
	expect(t, first, http.StatusCreated)
	again := h.post("/api/v1/profiles", body, auth...)
	expect(t, again, http.StatusCreated)
	if again.data()["id"] != first.data()["id"] || again.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("replay: first %s, again %s (%v)", first.raw, again.raw, again.header)
	}
	if again.header.Get("ETag") != first.header.Get("ETag") || again.header.Get("X-Request-ID") == first.header.Get("X-Request-ID") {
		t.Fatalf("replayed headers: %v vs %v", again.header, first.header)
	}
	created := 0
	for _, e := range h.events(t, event.ProfileCreated) {
		if e.TeamID == a.teamID {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d profile.created events, want 1: the work ran twice", created)
	}

	t.Run("the same key with another body is refused", func(t *testing.T) {
		r := h.post("/api/v1/profiles", map[string]any{"name": "Twice", "templateId": windowsTemplate}, auth...)
		expect(t, r, http.StatusUnprocessableEntity)
		if !slices.Contains(r.errFields(), "Idempotency-Key") {
			t.Fatalf("%s", r.raw)
		}
	})
	t.Run("keys belong to their user", func(t *testing.T) {
		r := h.post("/api/v1/profiles", body, append(bearer(b.access), "Idempotency-Key", "order-42")...)
		expect(t, r, http.StatusCreated)
		if r.data()["id"] == first.data()["id"] || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("another user's request replayed: %s", r.raw)
		}
	})
	t.Run("malformed keys", func(t *testing.T) {
		for _, k := range []string{strings.Repeat("k", 256), "tab\tkey"} {
			expect(t, h.post("/api/v1/profiles", body, "X-API-Key", key, "Idempotency-Key", k), http.StatusBadRequest)
		}
	})
	t.Run("concurrent requests with one key run once", func(t *testing.T) {
		const n = 10
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				statuses[i] = h.rawDo(http.MethodPost, "/api/v1/profiles", `{"name":"Race","templateId":"tpl_chrome_win_us"}`, "X-API-Key", key, "Idempotency-Key", "race-1")
			})
		}
		wg.Wait()
		for _, s := range statuses {
			if s != http.StatusCreated && s != http.StatusConflict {
				t.Fatalf("statuses %v: want only 201 (first or replayed) and 409 (in progress)", statuses)
			}
		}
		races := 0
		for _, item := range asList(h.get("/api/v1/profiles?q=Race", "X-API-Key", key).env["data"]) {
			if item.(map[string]any)["name"] == "Race" {
				races++
			}
		}
		if races != 1 {
			t.Fatalf("%d profiles created by %d requests with one key", races, n)
		}
	})
	if fakeExpiry {
		t.Run("after 24 hours the key runs again", func(t *testing.T) {
			h.clock.Advance(24*time.Hour + time.Minute)
			r := h.post("/api/v1/profiles", body, auth...)
			expect(t, r, http.StatusCreated)
			if r.data()["id"] == first.data()["id"] {
				t.Fatal("replayed after the retention window")
			}
		})
	}
}

func TestIdempotencyKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, h *harness) { idempotencyChecks(t, h, true) })
}

// TestIdempotencyKeyOnRedis: with REDIS_URL, two instances share keys.
func TestIdempotencyKeyOnRedis(t *testing.T) {
	redisURL := os.Getenv(testenv.RedisURLVariable)
	if redisURL == "" {
		t.Skip(testenv.RedisURLVariable + " is not set")
	}
	dbURL := testenv.PostgresURL(t)
	// Both instances share one prefix, of this test alone, removed at its end.
	prefix := testenv.RedisKeyPrefix(t, testenv.RedisClient(t), "api")
	shared := options{databaseURL: dbURL, redisURL: redisURL, env: map[string]string{"REDIS_KEY_PREFIX": prefix}}
	one := start(t, shared)
	two := start(t, shared)
	idempotencyChecks(t, one, false)

	a := one.register(t)
	key := one.apiKey(t, a)
	idem := "shared-" + testenv.UniqueName("")
	body := map[string]any{"name": "Shared", "templateId": windowsTemplate}
	first := one.post("/api/v1/profiles", body, "X-API-Key", key, "Idempotency-Key", idem)
	expect(t, first, http.StatusCreated)
	again := two.post("/api/v1/profiles", body, "X-API-Key", key, "Idempotency-Key", idem)
	expect(t, again, http.StatusCreated)
	if again.data()["id"] != first.data()["id"] || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the second instance did not replay: %s", again.raw)
	}
}
