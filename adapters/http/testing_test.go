package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// testStack is a router with its own logger and registry, so every test
// can read exactly the lines and series it caused.
type testStack struct {
	handler http.Handler
	logs    *observer.ObservedLogs
	reg     *prometheus.Registry
}

func newTestStack(t *testing.T, routes []Route, authenticate Middleware) testStack {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	log := zap.New(core)
	routes = append(routes, OperationalRoutes(nil, reg, log)...)
	return testStack{handler: NewRouter(routes, authenticate, log, NewMetrics(reg)), logs: logs, reg: reg}
}

func (s testStack) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)
	return w
}

type envelope struct {
	Success *bool           `json:"success"`
	Data    json.RawMessage `json:"data"`
	Meta    json.RawMessage `json:"meta"`
	Error   *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Field string `json:"field"`
			Issue string `json:"issue"`
		} `json:"details"`
	} `json:"error"`
}

// decodeEnvelope also fails on keys outside the envelope, so a stray field
// in a response is caught.
func decodeEnvelope(t *testing.T, body []byte) envelope {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, body)
	}
	for k := range keys {
		switch k {
		case "success", "data", "meta", "error":
		default:
			t.Fatalf("unexpected key %q in %s", k, body)
		}
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("decode envelope: %v", err)
	}
	if env.Success == nil {
		t.Fatalf("no success field: %s", body)
	}
	return env
}

func expectError(t *testing.T, w *httptest.ResponseRecorder, status int, code string) envelope {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body.Bytes())
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	env := decodeEnvelope(t, w.Body.Bytes())
	if *env.Success || env.Error == nil {
		t.Fatalf("not an error envelope: %s", w.Body.Bytes())
	}
	if env.Error.Code != code {
		t.Fatalf("code %q, want %q: %s", env.Error.Code, code, w.Body.Bytes())
	}
	if env.Error.Message == "" {
		t.Fatalf("empty message: %s", w.Body.Bytes())
	}
	return env
}
