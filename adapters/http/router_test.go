package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/domain"
)

func ok(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"id": mux.Vars(r)["id"]})
	return nil
}

// denyAll stands in for authentication: it refuses every request.
func denyAll(calls *int) Middleware {
	return func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			*calls++
			writeError(w, r, domain.Unauthorized("no credentials"))
		})
	}
}

func TestRouterServesRoutesAndAuthenticatesOnlyNonPublicOnes(t *testing.T) {
	t.Parallel()
	var authCalls int
	s := newTestStack(t, []Route{
		{Method: http.MethodGet, Path: "/open/{id}", Handler: ok, Public: true, Name: "open"},
		{Method: http.MethodGet, Path: "/closed/{id}", Handler: ok, Name: "closed"},
	}, denyAll(&authCalls))

	w := s.serve(httptest.NewRequest(http.MethodGet, "/open/prf_1", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"id":"prf_1"`) {
		t.Fatalf("public route: %d %s", w.Code, w.Body.Bytes())
	}
	if authCalls != 0 {
		t.Fatalf("authentication ran for a public route")
	}
	w = s.serve(httptest.NewRequest(http.MethodGet, "/closed/prf_1", nil))
	expectError(t, w, 401, "unauthorized")
	if authCalls != 1 {
		t.Fatalf("authentication ran %d times for a protected route", authCalls)
	}
	// The operational endpoints are public.
	if w := s.serve(httptest.NewRequest(http.MethodGet, "/healthz", nil)); w.Code != 200 {
		t.Fatalf("healthz: %d", w.Code)
	}
	if authCalls != 1 {
		t.Fatalf("authentication ran for /healthz")
	}
}

func TestHandlerErrorIsAnsweredThroughTheMapper(t *testing.T) {
	t.Parallel()
	s := newTestStack(t, []Route{{Method: http.MethodPost, Path: "/profiles/{id}/launch", Public: true, Handler: func(w http.ResponseWriter, _ *http.Request) error {
		// Headers set before failing stay, as the 405 handler's Allow does.
		w.Header().Set("Cache-Control", "no-store")
		return fmt.Errorf("launch: %w", domain.Conflict("profile is already running"))
	}}}, nil)
	w := s.serve(httptest.NewRequest(http.MethodPost, "/profiles/prf_1/launch", nil))
	env := expectError(t, w, 409, "conflict")
	if env.Error.Message != "profile is already running" {
		t.Fatalf("message %q", env.Error.Message)
	}
	if w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("X-Request-ID") == "" {
		t.Fatalf("headers %v", w.Header())
	}
}

func TestUnknownPathIsJSON404(t *testing.T) {
	t.Parallel()
	s := newTestStack(t, []Route{{Method: http.MethodGet, Path: "/a", Handler: ok, Public: true}}, nil)
	w := s.serve(httptest.NewRequest(http.MethodGet, "/nothing/here", nil))
	expectError(t, w, 404, "not_found")
	if w.Header().Get("X-Request-ID") == "" {
		t.Fatal("404 without X-Request-ID")
	}
}

func TestKnownPathWithOtherMethodIsJSON405WithAllow(t *testing.T) {
	t.Parallel()
	noop := func(w http.ResponseWriter, _ *http.Request) error {
		writeNoContent(w)
		return nil
	}
	s := newTestStack(t, []Route{
		{Method: http.MethodGet, Path: "/profiles/{id}", Handler: noop, Public: true},
		{Method: http.MethodPatch, Path: "/profiles/{id}", Handler: noop, Public: true},
		{Method: http.MethodDelete, Path: "/profiles/{id}", Handler: noop, Public: true},
		{Method: http.MethodPost, Path: "/profiles", Handler: noop, Public: true},
		{Method: http.MethodPost, Path: "/profiles/{id}/launch", Handler: noop, Public: true},
	}, nil)
	w := s.serve(httptest.NewRequest(http.MethodPut, "/profiles/prf_1", nil))
	expectError(t, w, 405, "method_not_allowed")
	if got := w.Header().Get("Allow"); got != "DELETE, GET, HEAD, PATCH" {
		t.Fatalf("Allow %q", got)
	}
	w = s.serve(httptest.NewRequest(http.MethodGet, "/profiles", nil))
	expectError(t, w, 405, "method_not_allowed")
	if got := w.Header().Get("Allow"); got != "POST" {
		t.Fatalf("Allow %q", got)
	}
}

func TestRouterRefusesAMalformedTable(t *testing.T) {
	t.Parallel()
	noop := func(http.ResponseWriter, *http.Request) error { return nil }
	pass := func(h http.Handler) http.Handler { return h }
	cases := map[string]struct {
		routes []Route
		auth   Middleware
	}{
		"no handler":       {[]Route{{Method: "GET", Path: "/a"}}, pass},
		"no method":        {[]Route{{Path: "/a", Handler: noop}}, pass},
		"duplicate route":  {[]Route{{Method: "GET", Path: "/a", Handler: noop}, {Method: "GET", Path: "/a", Handler: noop}}, pass},
		"duplicate name":   {[]Route{{Method: "GET", Path: "/a", Handler: noop, Name: "n"}, {Method: "GET", Path: "/b", Handler: noop, Name: "n"}}, pass},
		"bad template":     {[]Route{{Method: "GET", Path: "/a/{id", Handler: noop}}, pass},
		"protected, no mw": {[]Route{{Method: "GET", Path: "/a", Handler: noop}}, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("NewRouter accepted the table")
				}
			}()
			newTestStack(t, c.routes, c.auth)
		})
	}
}

// HEAD is answered wherever GET is, with GET's status and headers and no
// body (net/http's server drops it); a route without GET refuses it.
func TestHeadIsAnsweredWhereGetIs(t *testing.T) {
	t.Parallel()
	s := newTestStack(t, []Route{
		{Method: http.MethodGet, Path: "/open/{id}", Handler: ok, Public: true},
		{Method: http.MethodPost, Path: "/act", Handler: ok, Public: true},
	}, nil)
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	for path, want := range map[string]int{"/open/prf_1": 200, "/healthz": 200, "/act": 405} {
		resp, err := http.Head(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("HEAD %s: %d, want %d", path, resp.StatusCode, want)
		}
		if want == 200 && resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("HEAD %s: Content-Type %q, as GET's", path, resp.Header.Get("Content-Type"))
		}
		if want == 405 && resp.Header.Get("Allow") != "POST" {
			t.Errorf("HEAD %s: Allow %q", path, resp.Header.Get("Allow"))
		}
	}
}

// SPEC.md puts webhooks under /v1; a client that looks under /api/v1 is
// told where.
func TestWebhooksUnderAPIV1AreSentToV1(t *testing.T) {
	t.Parallel()
	s := newTestStack(t, []Route{{Method: http.MethodGet, Path: "/a", Handler: ok, Public: true}}, nil)
	for path, want := range map[string]string{
		"/api/v1/webhooks":           "no such endpoint: webhook endpoints are at /v1/webhooks",
		"/api/v1/webhooks/whk_1":     "no such endpoint: webhook endpoints are at /v1/webhooks/whk_1",
		"/api/v1/webhooksandmore":    "no such endpoint",
		"/api/v1/profiles/x/nothing": "no such endpoint",
	} {
		env := expectError(t, s.serve(httptest.NewRequest(http.MethodGet, path, nil)), 404, "not_found")
		if env.Error.Message != want {
			t.Errorf("%s: %q, want %q", path, env.Error.Message, want)
		}
	}
}
