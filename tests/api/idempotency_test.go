package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/ports"
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
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) { idempotencyChecks(t, h, true) })
}

// TestIdempotencyKeySharedByInstances: two instances on one PostgreSQL
// database, without Redis, see each other's keys.
func TestIdempotencyKeySharedByInstances(t *testing.T) {
	t.Parallel()
	shared := options{databaseURL: testenv.PostgresURL(t)}
	one := start(t, shared)
	two := start(t, shared)

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

// TestIdempotencyReplaySurvivesARestart: the record lives in the primary
// store, so a fresh instance on the same database (no Redis) replays the
// first response.
func TestIdempotencyReplaySurvivesARestart(t *testing.T) {
	t.Parallel()
	for _, b := range backends()[1:] { // memory keeps nothing across restarts
		t.Run(b.name, func(t *testing.T) {
			o := options{databaseURL: b.url(t)}
			first := start(t, o)
			a := first.register(t)
			key := first.apiKey(t, a)
			body := map[string]any{"name": "Survivor", "templateId": windowsTemplate}
			created := first.post("/api/v1/profiles", body, "X-API-Key", key, "Idempotency-Key", "restart-1")
			expect(t, created, http.StatusCreated)
			first.stop()

			second := start(t, o)
			again := second.post("/api/v1/profiles", body, "X-API-Key", key, "Idempotency-Key", "restart-1")
			expect(t, again, http.StatusCreated)
			if again.header.Get("Idempotent-Replayed") != "true" || again.data()["id"] != created.data()["id"] {
				t.Fatalf("after a restart: %s (%v), first was %s", again.raw, again.header, created.raw)
			}
			if n := countProfiles(t, second, key, "Survivor"); n != 1 {
				t.Fatalf("%d profiles named Survivor, want 1", n)
			}
		})
	}
}

func countProfiles(t *testing.T, h *harness, key, name string) int {
	t.Helper()
	r := h.get("/api/v1/profiles?q="+url.QueryEscape(name)+"&limit=100", "X-API-Key", key)
	expect(t, r, http.StatusOK)
	n := 0
	for _, item := range asList(r.env["data"]) {
		if item.(map[string]any)["name"] == name {
			n++
		}
	}
	return n
}

func errMessage(r response) string {
	e, _ := r.env["error"].(map[string]any)
	return str(e["message"])
}

// TestIdempotencyKeysAreBoundedPerTeam: a team that holds its bound of keys
// gets 429; another team's keys are unaffected.
func TestIdempotencyKeysAreBoundedPerTeam(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			h := start(t, options{databaseURL: b.url(t), env: map[string]string{"IDEMPOTENCY_KEYS_PER_TEAM": "3"}})
			greedy, other := h.register(t), h.register(t)
			greedyKey, otherKey := h.apiKey(t, greedy), h.apiKey(t, other)
			for i := range 3 {
				r := h.post("/api/v1/profiles", map[string]any{"name": fmt.Sprintf("Bound %d", i), "templateId": windowsTemplate},
					"X-API-Key", greedyKey, "Idempotency-Key", fmt.Sprintf("bound-%d", i))
				expect(t, r, http.StatusCreated)
			}
			over := h.post("/api/v1/profiles", map[string]any{"name": "Bound 3", "templateId": windowsTemplate},
				"X-API-Key", greedyKey, "Idempotency-Key", "bound-3")
			expect(t, over, http.StatusTooManyRequests)
			if !strings.Contains(errMessage(over), "Idempotency-Key") || over.header.Get("Retry-After") == "" {
				t.Fatalf("429 without a clear message or Retry-After: %s %v", over.raw, over.header)
			}
			if n := countProfiles(t, h, greedyKey, "Bound 3"); n != 0 {
				t.Fatalf("the refused request created %d profiles", n)
			}
			// A replay of a kept key still answers, and so does a request
			// without a key.
			replay := h.post("/api/v1/profiles", map[string]any{"name": "Bound 0", "templateId": windowsTemplate},
				"X-API-Key", greedyKey, "Idempotency-Key", "bound-0")
			expect(t, replay, http.StatusCreated)
			if replay.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay within the bound: %v", replay.header)
			}
			expect(t, h.post("/api/v1/profiles", map[string]any{"name": "No key", "templateId": windowsTemplate}, "X-API-Key", greedyKey), http.StatusCreated)
			for i := range 3 {
				r := h.post("/api/v1/profiles", map[string]any{"name": fmt.Sprintf("Other %d", i), "templateId": windowsTemplate},
					"X-API-Key", otherKey, "Idempotency-Key", fmt.Sprintf("bound-%d", i))
				expect(t, r, http.StatusCreated)
			}
			// Records expire after 24 h, and the team's bound frees up.
			h.clock.Advance(24*time.Hour + time.Minute)
			expect(t, h.post("/api/v1/profiles", map[string]any{"name": "Bound 4", "templateId": windowsTemplate},
				"X-API-Key", greedyKey, "Idempotency-Key", "bound-4"), http.StatusCreated)
		})
	}
}

// TestIdempotencyOversizeResponseIsNotKept: a response over the size limit
// is not stored; a replay answers 409 saying the first request succeeded,
// and the work is not done again.
func TestIdempotencyOversizeResponseIsNotKept(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			h := start(t, options{databaseURL: b.url(t), env: map[string]string{"IDEMPOTENCY_MAX_RESPONSE_BYTES": "100"}})
			a := h.register(t)
			key := h.apiKey(t, a)
			body := map[string]any{"name": "Large", "templateId": windowsTemplate}
			first := h.post("/api/v1/profiles", body, "X-API-Key", key, "Idempotency-Key", "large-1")
			expect(t, first, http.StatusCreated)
			if len(first.raw) <= 100 {
				t.Fatalf("the response (%d bytes) is not over the limit", len(first.raw))
			}
			again := h.post("/api/v1/profiles", body, "X-API-Key", key, "Idempotency-Key", "large-1")
			expect(t, again, http.StatusConflict)
			if msg := errMessage(again); !strings.Contains(msg, "succeeded") || !strings.Contains(msg, "not kept") {
				t.Fatalf("message %q", msg)
			}
			if n := countProfiles(t, h, key, "Large"); n != 1 {
				t.Fatalf("%d profiles, want 1", n)
			}
		})
	}
}

// TestIdempotencyAPIKeyIsNotKept: a created API key is shown once; a replay
// answers 409 and the key's plaintext never reaches the store.
func TestIdempotencyAPIKeyIsNotKept(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		first := h.post("/api/v1/api-keys", map[string]any{"name": "ci"}, append(bearer(a.access), "Idempotency-Key", "key-1")...)
		expect(t, first, http.StatusCreated)
		plaintext := str(first.data()["key"])
		if plaintext == "" {
			t.Fatalf("no key in %s", first.raw)
		}
		again := h.post("/api/v1/api-keys", map[string]any{"name": "ci"}, append(bearer(a.access), "Idempotency-Key", "key-1")...)
		expect(t, again, http.StatusConflict)
		if strings.Contains(string(again.raw), plaintext) || !strings.Contains(errMessage(again), "shown once") {
			t.Fatalf("replay of a created key: %s", again.raw)
		}
		list := h.get("/api/v1/api-keys", bearer(a.access)...)
		expect(t, list, http.StatusOK)
		if n := len(asList(list.env["data"])); n != 1 {
			t.Fatalf("%d keys after a retry, want 1", n)
		}
		rec, found, err := h.store.IdempotencyRecords().Find(context.Background(),
			ports.IdempotencyKey{TeamID: a.teamID, Scope: a.userID, Key: "key-1"}, h.clock.Now())
		if err != nil || !found {
			t.Fatalf("record: %v %v", found, err)
		}
		if len(rec.Body) != 0 || len(rec.Headers) != 0 || strings.Contains(fmt.Sprint(rec), plaintext) {
			t.Fatalf("the stored record holds the response: %+v", rec)
		}
	})
}

// TestIdempotencyRequestWithoutEffectKeepsNothing: a request refused before
// it changed anything leaves the key free, so the corrected request runs.
func TestIdempotencyRequestWithoutEffectKeepsNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		key := h.apiKey(t, a)
		bad := h.post("/api/v1/profiles", map[string]any{"name": "Fixed", "templateId": "tpl_unknown"}, "X-API-Key", key, "Idempotency-Key", "fix-1")
		expect(t, bad, http.StatusUnprocessableEntity)
		good := h.post("/api/v1/profiles", map[string]any{"name": "Fixed", "templateId": windowsTemplate}, "X-API-Key", key, "Idempotency-Key", "fix-1")
		expect(t, good, http.StatusCreated)
		if good.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("replayed: %v", good.header)
		}
	})
}

// TestIdempotencyWebhookEndpointCreatedOnce: a use case that writes outside
// a unit of work (creating an endpoint) keeps its record too.
func TestIdempotencyWebhookEndpointCreatedOnce(t *testing.T) {
	t.Parallel()
	eachWebhookBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		rc := newReceiver(t)
		body := map[string]any{"url": rc.srv.URL + "/in", "events": []string{"*"}, "secret": webhookSecret}
		headers := append(bearer(a.access), "Idempotency-Key", "hook-1")
		first := h.post("/v1/webhooks", body, headers...)
		expect(t, first, http.StatusCreated)
		again := h.post("/v1/webhooks", body, headers...)
		expect(t, again, http.StatusCreated)
		if again.header.Get("Idempotent-Replayed") != "true" || again.data()["id"] != first.data()["id"] {
			t.Fatalf("replay: %s (%v)", again.raw, again.header)
		}
		list := h.get("/v1/webhooks", bearer(a.access)...)
		expect(t, list, http.StatusOK)
		if n := len(asList(list.env["data"])); n != 1 {
			t.Fatalf("%d endpoints after a retry, want 1", n)
		}
	})
}
