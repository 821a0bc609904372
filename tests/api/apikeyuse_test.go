package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// An API key's lastUsedAt is when it last authenticated a request, to the
// minute: null until its first use, set then, kept through uses within the
// minute that follows, moved by the first use after it. Uses of one key
// leave the user's other keys alone.
func TestAPIKeyLastUsedAt(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		used, idle := h.apiKey(t, a), h.apiKey(t, a)
		lastUsed := func() map[string]any {
			t.Helper()
			r := h.get("/api/v1/api-keys", bearer(a.access)...)
			expect(t, r, http.StatusOK)
			out := map[string]any{}
			for _, k := range asList(r.env["data"]) {
				m := k.(map[string]any)
				out[str(m["id"])] = m["lastUsedAt"]
			}
			return out
		}
		// A key is psvc_<id>_<secret>, its id key_<id>.
		id := func(key string) string { return "key_" + strings.Split(key, "_")[1] }
		for p, at := range lastUsed() {
			if at != nil {
				t.Fatalf("key %s was used at %v before any use", p, at)
			}
		}
		first := h.clock.Now()
		expect(t, h.get("/api/v1/me", "X-API-Key", used), http.StatusOK)
		h.clock.Advance(59 * time.Second)
		expect(t, h.get("/api/v1/me", "X-API-Key", used), http.StatusOK)
		got := lastUsed()
		if got[id(used)] != float64(first.UnixMilli()) || got[id(idle)] != nil {
			t.Fatalf("lastUsedAt %v; want %d for the key used and null for the other", got, first.UnixMilli())
		}
		h.clock.Advance(time.Second)
		expect(t, h.get("/api/v1/me", "X-API-Key", used), http.StatusOK)
		if got := lastUsed(); got[id(used)] != float64(h.clock.Now().UnixMilli()) {
			t.Fatalf("lastUsedAt %v after a use a minute later; want %d", got, h.clock.Now().UnixMilli())
		}
	})
}
