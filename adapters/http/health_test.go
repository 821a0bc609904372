package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestHealthz(t *testing.T) {
	t.Parallel()
	s := newTestStack(t, nil, nil)
	w := s.serve(httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if w.Code != 200 || w.Body.String() != `{"success":true,"data":{"status":"ok"}}`+"\n" {
		t.Fatalf("%d %s", w.Code, w.Body.Bytes())
	}
}

func readyStack(t *testing.T, checkers ...Checker) (http.Handler, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	reg := prometheus.NewRegistry()
	return NewRouter(OperationalRoutes(checkers, reg, log), nil, log, NewMetrics(reg)), logs
}

func TestReadyzAllOK(t *testing.T) {
	t.Parallel()
	h, _ := readyStack(t,
		Checker{Name: "store", Check: func(context.Context) error { return nil }},
		Checker{Name: "cache", Check: func(context.Context) error { return nil }},
	)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != 200 || w.Body.String() != `{"success":true,"data":{"status":"ok","checks":{"cache":"ok","store":"ok"}}}`+"\n" {
		t.Fatalf("%d %s", w.Code, w.Body.Bytes())
	}
}

func TestReadyzNamesFailingChecksWithoutTheirErrors(t *testing.T) {
	t.Parallel()
	const reason = "dial tcp 10.0.0.5:5432: connection refused"
	h, logs := readyStack(t,
		Checker{Name: "store", Check: func(context.Context) error { return errors.New(reason) }},
		Checker{Name: "cache", Check: func(context.Context) error { return nil }},
		Checker{Name: "blob", Check: func(context.Context) error { panic("blob store gone") }},
	)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != 503 {
		t.Fatalf("%d %s", w.Code, w.Body.Bytes())
	}
	body := w.Body.String()
	for _, want := range []string{`"success":false`, `"store":"failing"`, `"blob":"failing"`, `"cache":"ok"`, `not ready: blob, store`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s: %s", want, body)
		}
	}
	if strings.Contains(body, "10.0.0.5") || strings.Contains(body, "gone") {
		t.Fatalf("readyz leaks the reason: %s", body)
	}
	failed := logs.FilterMessage("readiness check failed").AllUntimed()
	if len(failed) != 2 {
		t.Fatalf("%d failure log entries", len(failed))
	}
	logged := false
	for _, e := range failed {
		if f := e.ContextMap(); f["check"] == "store" && strings.Contains(f["error"].(string), reason) && f["request_id"] != nil {
			logged = true
		}
	}
	if !logged {
		t.Fatalf("the store's reason is not in the log: %v", failed)
	}
}

func TestReadyzGivesUpOnACheckThatIgnoresItsContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	rd := readiness{
		checkers: []Checker{{Name: "stuck", Check: func(context.Context) error { <-release; return nil }}},
		timeout:  10 * time.Millisecond,
		log:      zap.NewNop(),
	}
	w := httptest.NewRecorder()
	rd.serve(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != 503 || !strings.Contains(w.Body.String(), `"stuck":"failing"`) {
		t.Fatalf("%d %s", w.Code, w.Body.Bytes())
	}
}

func TestReadyzTimeoutReachesTheCheck(t *testing.T) {
	t.Parallel()
	var deadline time.Time
	var hasDeadline bool
	h, _ := readyStack(t, Checker{Name: "store", Check: func(ctx context.Context) error {
		deadline, hasDeadline = ctx.Deadline()
		return nil
	}})
	start := time.Now()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/readyz", nil))
	end := time.Now()
	if !hasDeadline || deadline.Before(start.Add(checkTimeout)) || deadline.After(end.Add(checkTimeout)) {
		t.Fatalf("check deadline %v after start, want %v", deadline.Sub(start), checkTimeout)
	}
}

func TestReadyzStaysReadyWhenAPartThatDegradesFails(t *testing.T) {
	t.Parallel()
	h, _ := readyStack(t,
		Checker{Name: "store", Check: func(context.Context) error { return nil }},
		Checker{Name: "cache", Degrades: true, Check: func(context.Context) error { return errors.New("redis: i/o timeout") }},
	)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != 200 || w.Body.String() != `{"success":true,"data":{"status":"degraded","checks":{"cache":"degraded","store":"ok"}}}`+"\n" {
		t.Fatalf("%d %s", w.Code, w.Body.Bytes())
	}

	h, _ = readyStack(t,
		Checker{Name: "store", Check: func(context.Context) error { return errors.New("connection refused") }},
		Checker{Name: "cache", Degrades: true, Check: func(context.Context) error { return errors.New("redis: i/o timeout") }},
	)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != 503 || !strings.Contains(w.Body.String(), `"cache":"degraded"`) || !strings.Contains(w.Body.String(), "not ready: store") {
		t.Fatalf("a failing store with a degraded cache: %d %s", w.Code, w.Body.Bytes())
	}
}
