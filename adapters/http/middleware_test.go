package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPanicAnswers500AndLogsTheStack(t *testing.T) {
	t.Parallel()
	const panicText = "nil map in profile 4711"
	s := newTestStack(t, []Route{{Method: http.MethodGet, Path: "/panic", Public: true, Handler: func(http.ResponseWriter, *http.Request) error {
		panic(panicText)
	}}}, nil)
	r := httptest.NewRequest(http.MethodGet, "/panic", nil)
	r.Header.Set("X-Request-ID", "req-panic")
	w := s.serve(r)
	expectError(t, w, 500, "internal")
	if strings.Contains(w.Body.String(), panicText) || strings.Contains(w.Body.String(), "goroutine") {
		t.Fatalf("panic leaked to the client: %s", w.Body.Bytes())
	}
	entries := s.logs.FilterMessage("panic while serving request").AllUntimed()
	if len(entries) != 1 {
		t.Fatalf("%d panic log entries", len(entries))
	}
	f := entries[0].ContextMap()
	if f["panic"] != panicText || f["request_id"] != "req-panic" || !strings.Contains(fmt.Sprint(f["stack"]), "goroutine") {
		t.Fatalf("panic log entry: %v", f)
	}
	access := s.logs.FilterMessage("request").AllUntimed()
	if len(access) != 1 || access[0].ContextMap()["status"] != int64(500) {
		t.Fatalf("access log after panic: %v", access)
	}
}

func TestPanicAfterHeadersAbortsTheResponse(t *testing.T) {
	t.Parallel()
	s := newTestStack(t, []Route{{Method: http.MethodGet, Path: "/half", Public: true, Handler: func(w http.ResponseWriter, _ *http.Request) error {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"success":true,`)
		// Flushed, so the client has the status before the panic.
		_ = http.NewResponseController(w).Flush()
		panic("late")
	}}}, nil)
	srv := httptest.NewServer(s.handler)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/half")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("a half-written response was delivered as complete")
	}
	if n := s.logs.FilterMessage("panic while serving request").Len(); n != 1 {
		t.Fatalf("%d panic log entries", n)
	}
}

func TestRequestIDIsEchoedOrGenerated(t *testing.T) {
	t.Parallel()
	var seen string
	s := newTestStack(t, []Route{{Method: http.MethodGet, Path: "/id", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) error {
		seen = RequestIDFrom(r.Context())
		writeNoContent(w)
		return nil
	}}}, nil)

	r := httptest.NewRequest(http.MethodGet, "/id", nil)
	r.Header.Set("X-Request-ID", "trace-abc-123")
	w := s.serve(r)
	if got := w.Header().Get("X-Request-ID"); got != "trace-abc-123" || seen != "trace-abc-123" {
		t.Fatalf("echoed %q, context %q", got, seen)
	}

	for _, bad := range []string{"", strings.Repeat("a", 129), "tab\there", "caf\u00e9"} {
		r := httptest.NewRequest(http.MethodGet, "/id", nil)
		if bad != "" {
			r.Header.Set("X-Request-ID", bad)
		}
		w := s.serve(r)
		got := w.Header().Get("X-Request-ID")
		if got == "" || got == bad || got != seen {
			t.Fatalf("client sent %q: response %q, context %q", bad, got, seen)
		}
	}

	first := s.serve(httptest.NewRequest(http.MethodGet, "/id", nil)).Header().Get("X-Request-ID")
	second := s.serve(httptest.NewRequest(http.MethodGet, "/id", nil)).Header().Get("X-Request-ID")
	if first == second {
		t.Fatalf("generated ids repeat: %q", first)
	}

	long := strings.Repeat("b", 128)
	r = httptest.NewRequest(http.MethodGet, "/id", nil)
	r.Header.Set("X-Request-ID", long)
	if got := s.serve(r).Header().Get("X-Request-ID"); got != long {
		t.Fatalf("128-byte id not echoed: %q", got)
	}
}

func TestAccessLogLine(t *testing.T) {
	t.Parallel()
	s := newTestStack(t, []Route{{Method: http.MethodGet, Path: "/profiles/{id}", Public: true, Handler: ok}}, nil)
	r := httptest.NewRequest(http.MethodGet, "/profiles/prf_9?cursor=secret-cursor&token=abc", nil)
	r.Header.Set("X-Request-ID", "req-log")
	r.Header.Set("Authorization", "Bearer sekrit-token")
	r.RemoteAddr = "192.0.2.7:5555"
	w := s.serve(r)

	lines := s.logs.FilterMessage("request").AllUntimed()
	if len(lines) != 1 {
		t.Fatalf("%d access log lines", len(lines))
	}
	f := lines[0].ContextMap()
	want := map[string]any{
		"method":     "GET",
		"route":      "/profiles/{id}",
		"path":       "/profiles/prf_9",
		"status":     int64(200),
		"bytes":      int64(w.Body.Len()),
		"request_id": "req-log",
		"remote":     "192.0.2.7:5555",
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, f[k], f[k], v)
		}
	}
	if _, ok := f["latency_ms"].(float64); !ok {
		t.Errorf("latency_ms %v", f["latency_ms"])
	}
	line := fmt.Sprint(f)
	for _, secret := range []string{"secret-cursor", "sekrit-token", "token=abc"} {
		if strings.Contains(line, secret) {
			t.Errorf("access log carries %q: %s", secret, line)
		}
	}

	s.serve(httptest.NewRequest(http.MethodGet, "/elsewhere", nil))
	last := s.logs.FilterMessage("request").AllUntimed()
	if got := last[len(last)-1].ContextMap()["route"]; got != "unmatched" {
		t.Fatalf("route of an unknown path: %v", got)
	}
}

func TestMetricsCountByRouteTemplate(t *testing.T) {
	t.Parallel()
	s := newTestStack(t, []Route{{Method: http.MethodGet, Path: "/profiles/{id}", Public: true, Handler: ok}}, nil)
	for _, id := range []string{"prf_1", "prf_2", "prf_3"} {
		s.serve(httptest.NewRequest(http.MethodGet, "/profiles/"+id, nil))
	}
	s.serve(httptest.NewRequest(http.MethodGet, "/missing", nil))
	s.serve(httptest.NewRequest("BREW", "/profiles/prf_1", nil))

	w := s.serve(httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if w.Code != 200 {
		t.Fatalf("/metrics: %d", w.Code)
	}
	series := map[string]string{}
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		if line := sc.Text(); !strings.HasPrefix(line, "#") {
			if i := strings.LastIndexByte(line, ' '); i > 0 {
				series[line[:i]] = line[i+1:]
			}
		}
	}
	for name, want := range map[string]string{
		`profilesvc_http_requests_total{method="GET",route="/profiles/{id}",status="200"}`:               "3",
		`profilesvc_http_requests_total{method="GET",route="unmatched",status="404"}`:                    "1",
		`profilesvc_http_requests_total{method="OTHER",route="unmatched",status="405"}`:                  "1",
		`profilesvc_http_request_duration_seconds_count{method="GET",route="/profiles/{id}"}`:            "3",
		`profilesvc_http_request_duration_seconds_bucket{method="GET",route="/profiles/{id}",le="+Inf"}`: "3",
	} {
		if got := series[name]; got != want {
			t.Errorf("%s = %q, want %s", name, got, want)
		}
	}
	for name := range series {
		if strings.Contains(name, "prf_") {
			t.Errorf("a raw path became a label: %s", name)
		}
	}
}
