package api_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		expect(t, h.get("/healthz"), http.StatusOK)
		r := h.get("/readyz")
		expect(t, r, http.StatusOK)
		for _, check := range []string{"store", "cache"} {
			if !strings.Contains(string(r.raw), check) {
				t.Errorf("readyz does not report %q: %s", check, r.raw)
			}
		}
		doc := h.get("/openapi.yaml")
		expect(t, doc, http.StatusOK)
		if !strings.HasPrefix(string(doc.raw), "openapi: 3.1") {
			t.Fatalf("openapi.yaml: %.40s", doc.raw)
		}
		page := h.get("/docs")
		expect(t, page, http.StatusOK)
		for _, want := range []string{"/api/v1/auth/register", "/api/v1/api-keys/{id}", "SessionEnvelope"} {
			if !strings.Contains(string(page.raw), want) {
				t.Errorf("docs page lacks %q", want)
			}
		}
		h.register(t)
		m := h.get("/metrics")
		expect(t, m, http.StatusOK)
		for _, want := range []string{`route="/api/v1/auth/register"`, "profilesvc_http_request_duration_seconds_bucket"} {
			if !strings.Contains(string(m.raw), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

func TestUnroutedRequestsAnswerInTheErrorEnvelope(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	unrouted := map[string]string{"X-Test-Unrouted": "1"}
	r := h.do(req{method: http.MethodGet, path: "/api/v1/nothing-here", headers: unrouted})
	expect(t, r, http.StatusNotFound)
	if r.errCode() != "not_found" {
		t.Fatalf("404 body: %s", r.raw)
	}
	r = h.do(req{method: http.MethodPut, path: "/api/v1/auth/login", headers: unrouted})
	expect(t, r, http.StatusMethodNotAllowed)
	if r.errCode() != "method_not_allowed" || !strings.Contains(r.header.Get("Allow"), "POST") {
		t.Fatalf("405: %s Allow=%q", r.raw, r.header.Get("Allow"))
	}
}

func TestRequestIDIsEchoed(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	r := h.get("/healthz", "X-Request-ID", "trace-abc-123")
	if got := r.header.Get("X-Request-ID"); got != "trace-abc-123" {
		t.Fatalf("X-Request-ID %q", got)
	}
	found := false
	for _, e := range h.logs.All() {
		if e.ContextMap()["request_id"] == "trace-abc-123" {
			found = true
		}
	}
	if !found {
		t.Fatal("no access log line carries the request id")
	}
}
