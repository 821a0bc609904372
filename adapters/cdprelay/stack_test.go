package cdprelay

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
)

// testStack is the transport's router over the relay's routes, with its own
// logger and registry, so every test reads exactly the lines and series it
// caused.
type testStack struct {
	handler http.Handler
	logs    *observer.ObservedLogs
	reg     *prometheus.Registry
}

// newTestStack mounts routes as wiring does: in httpapi.NewRouter, whose
// middleware logs, counts and maps errors. The relay's routes are public,
// so no authentication is given: a route that were not would panic.
func newTestStack(t *testing.T, routes []httpapi.Route) testStack {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	return testStack{handler: httpapi.NewRouter(routes, nil, zap.New(core), httpapi.NewMetrics(reg)), logs: logs, reg: reg}
}

// requestsCounted is the transport's count of GETs of route that answered
// status.
func (s testStack) requestsCounted(t *testing.T, route string, status int) float64 {
	t.Helper()
	families, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "profilesvc_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == route && labels["method"] == http.MethodGet && labels["status"] == strconv.Itoa(status) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// envelope is the transport's error envelope.
type envelope struct {
	Success *bool `json:"success"`
	Error   *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// expectErrorResponse sends req and expects the transport's error envelope
// with status and code.
func expectErrorResponse(t *testing.T, req *http.Request, status int, code string) envelope {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("body is not an envelope: %v: %s", err, body)
	}
	if env.Success == nil || *env.Success || env.Error == nil {
		t.Fatalf("not an error envelope: %s", body)
	}
	if env.Error.Code != code {
		t.Fatalf("code %q, want %q: %s", env.Error.Code, code, body)
	}
	if env.Error.Message == "" {
		t.Fatalf("empty message: %s", body)
	}
	// What the transport's one error mapper adds to these statuses.
	if header, ok := map[int]string{http.StatusUnauthorized: "WWW-Authenticate", http.StatusServiceUnavailable: "Retry-After"}[status]; ok && resp.Header.Get(header) == "" {
		t.Fatalf("a %d without %s: not the transport's error mapper", status, header)
	}
	return env
}
