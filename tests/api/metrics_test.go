package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
)

// metricValue is the value of the series named exactly series (its name
// and labels as /metrics prints them), "" when absent.
func metricValue(page, series string) string {
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// After a scenario, /metrics holds every family the service keeps, each
// prefixed profilesvc_, with the counts of what the scenario did.
func TestMetricsAfterAScenario(t *testing.T) {
	t.Parallel()
	eachBackendEnv(t, map[string]string{"RATE_LIMIT": "8/1m"}, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		expect(t, h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": "not the password"}), http.StatusUnauthorized)
		body := map[string]any{"name": "Metered", "templateId": "tpl_chrome_win_us"}
		first := h.post("/api/v1/profiles", body, append(auth, "Idempotency-Key", "metrics-1")...)
		expect(t, first, http.StatusCreated)
		expect(t, h.post("/api/v1/profiles", body, append(auth, "Idempotency-Key", "metrics-1")...), http.StatusCreated)
		id := str(first.data()["id"])
		expect(t, h.post("/api/v1/profiles/"+id+"/launch", nil, auth...), http.StatusOK)
		expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)
		// Launched again and left running: the service runs one session.
		expect(t, h.post("/api/v1/profiles/"+id+"/launch", nil, auth...), http.StatusOK)
		throttled := false
		for range 10 {
			if h.get("/api/v1/profiles", auth...).status == http.StatusTooManyRequests {
				throttled = true
				break
			}
		}
		if !throttled {
			t.Fatal("no request was throttled under RATE_LIMIT=8/1m")
		}

		r := h.get("/metrics")
		expect(t, r, http.StatusOK)
		page := string(r.raw)
		// The service's own families are prefixed profilesvc_; the Go
		// runtime's and the process's keep their stock names.
		for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+)`).FindAllStringSubmatch(page, -1) {
			if !strings.HasPrefix(m[1], "profilesvc_") && !strings.HasPrefix(m[1], "go_") && !strings.HasPrefix(m[1], "process_") {
				t.Errorf("family %s is neither the service's (profilesvc_) nor a stock go_ or process_ one", m[1])
			}
		}
		counts := map[string]string{
			"profilesvc_login_failures_total":                               "1",
			"profilesvc_idempotency_replays_total":                          "1",
			"profilesvc_session_launches_total":                             "2",
			"profilesvc_sessions_running":                                   "1",
			`profilesvc_session_stops_total{reason="released"}`:             "1",
			`profilesvc_throttled_requests_total{route="/api/v1/profiles"}`: "1",
			"profilesvc_browsers_running":                                   "0",
			`profilesvc_http_request_duration_seconds_bucket{method="POST",route="/api/v1/profiles",le="0.0001"}`: "",
		}
		for series, want := range counts {
			got := metricValue(page, series)
			if got == "" || (want != "" && got != want) {
				t.Errorf("%s = %q, want %q", series, got, want)
			}
		}
		for _, family := range []string{"profilesvc_http_requests_total", "profilesvc_http_requests_in_flight",
			"go_goroutines", "process_resident_memory_bytes", "profilesvc_webhook_attempts_total",
			"profilesvc_webhook_oldest_pending_seconds"} {
			if !strings.Contains(page, "# TYPE "+family+" ") {
				t.Errorf("no family %s", family)
			}
		}
		if !regexp.MustCompile(`(?m)^profilesvc_build_info\{commit="[^"]+",version="[^"]+"\} 1$`).MatchString(page) {
			t.Errorf("no build info in\n%s", page)
		}
		if _, sql := h.store.(*bunstore.Store); sql {
			for _, family := range []string{"profilesvc_db_pool_max_connections", "profilesvc_db_pool_open_connections",
				"profilesvc_db_pool_in_use_connections", "profilesvc_db_pool_idle_connections",
				"profilesvc_db_pool_waits_total", "profilesvc_db_pool_wait_seconds_total"} {
				if !strings.Contains(page, "# TYPE "+family+" ") {
					t.Errorf("no family %s", family)
				}
			}
		}
	})
}
