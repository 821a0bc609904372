package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// headerList is the comma-separated values of a header, over all its lines.
func headerList(h http.Header, name string) []string {
	var out []string
	for _, line := range h.Values(name) {
		for _, v := range strings.Split(line, ",") {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

func preflight(h *harness, path, origin, method string) response {
	h.t.Helper()
	return h.do(req{method: http.MethodOptions, path: path, headers: map[string]string{
		"Origin": origin, "Access-Control-Request-Method": method,
		"Access-Control-Request-Headers": "x-api-key, content-type",
		// OPTIONS is answered by CORS, not by a route of the document.
		"X-Test-Unrouted": "1",
	}})
}

// With CORS_ORIGINS, scripts of a listed origin may read every answer (an
// error included) and their preflights are answered; other origins get
// nothing that grants them access.
func TestCORSAllowsTheListedOriginsOnly(t *testing.T) {
	t.Parallel()
	const app, other = "https://app.example.com", "https://other.example.com"
	eachBackendEnv(t, map[string]string{"CORS_ORIGINS": app + ", http://127.0.0.1:5173"}, func(t *testing.T, h *harness) {
		a := h.register(t)
		r := h.get("/api/v1/me", append(bearer(a.access), "Origin", app)...)
		expect(t, r, http.StatusOK)
		if got := r.header.Get("Access-Control-Allow-Origin"); got != app {
			t.Fatalf("Access-Control-Allow-Origin %q, want %q", got, app)
		}
		if !slices.Contains(headerList(r.header, "Vary"), "Origin") {
			t.Fatalf("Vary %q does not name Origin", r.header.Values("Vary"))
		}
		exposed := headerList(r.header, "Access-Control-Expose-Headers")
		for _, name := range []string{"X-Request-ID", "RateLimit", "RateLimit-Policy", "Retry-After", "Idempotent-Replayed"} {
			if !slices.Contains(exposed, name) {
				t.Errorf("Access-Control-Expose-Headers %q lacks %s", exposed, name)
			}
		}
		if got := h.get("/api/v1/me", "Origin", app); got.status != http.StatusUnauthorized || got.header.Get("Access-Control-Allow-Origin") != app {
			t.Fatalf("an error to a listed origin: %d, Access-Control-Allow-Origin %q", got.status, got.header.Get("Access-Control-Allow-Origin"))
		}

		r = h.get("/api/v1/me", append(bearer(a.access), "Origin", other)...)
		expect(t, r, http.StatusOK)
		if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Fatalf("an unlisted origin got Access-Control-Allow-Origin %q", got)
		}

		p := preflight(h, "/api/v1/profiles", "http://127.0.0.1:5173", http.MethodPost)
		if p.status != http.StatusNoContent || p.header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:5173" || p.header.Get("X-Request-ID") == "" {
			t.Fatalf("preflight from a listed origin: %d %v", p.status, p.header)
		}
		if !slices.Contains(headerList(p.header, "Access-Control-Allow-Methods"), "POST") ||
			!slices.Contains(headerList(p.header, "Access-Control-Allow-Headers"), "X-API-Key") ||
			p.header.Get("Access-Control-Max-Age") != "600" {
			t.Fatalf("preflight grants: %v", p.header)
		}
		if p := preflight(h, "/api/v1/profiles", other, http.MethodPost); p.status != http.StatusMethodNotAllowed || p.header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("preflight from an unlisted origin: %d %v", p.status, p.header)
		}
	})
}

// CORS is off by default: no answer grants an origin anything.
func TestCORSIsOffByDefault(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	r := h.get("/api/v1/me", append(bearer(a.access), "Origin", "https://app.example.com")...)
	expect(t, r, http.StatusOK)
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("Access-Control-Allow-Origin %q with CORS off", got)
	}
	if p := preflight(h, "/api/v1/profiles", "https://app.example.com", http.MethodPost); p.status != http.StatusMethodNotAllowed || p.header.Get("Access-Control-Allow-Methods") != "" {
		t.Fatalf("preflight with CORS off: %d %v", p.status, p.header)
	}
}

// With "*", any origin may read the answers; no credentials are granted
// (the API takes them by header, never by cookie).
func TestCORSAnyOrigin(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", env: map[string]string{"CORS_ORIGINS": "*"}})
	a := h.register(t)
	r := h.get("/api/v1/me", append(bearer(a.access), "Origin", "http://127.0.0.1:3000")...)
	expect(t, r, http.StatusOK)
	if r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("any origin: %v", r.header)
	}
}
