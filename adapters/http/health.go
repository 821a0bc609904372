package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// Checker is one dependency that /readyz asks.
type Checker struct {
	Name  string
	Check func(context.Context) error
	// Degrades marks a dependency the service can do without, at some
	// cost: when it fails, /readyz still answers 200, with the status
	// "degraded" and the check named "degraded", so a balancer keeps an
	// instance that still serves.
	Degrades bool
}

// checkTimeout bounds each readiness check, so a hung dependency answers 503
// instead of hanging the probe.
const checkTimeout = 2 * time.Second

type healthDTO struct {
	Status string `json:"status"`
}

type readyDTO struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

type readyEnvelope struct {
	Success bool       `json:"success"`
	Data    readyDTO   `json:"data"`
	Error   *errorBody `json:"error,omitempty"`
}

// OperationalRoutes serves /healthz (alive while the process serves),
// /readyz (every checker answers within 2 s) and /metrics (gatherer in the
// Prometheus text format). log receives failed checks when a request has no
// logger of its own.
func OperationalRoutes(checkers []Checker, gatherer prometheus.Gatherer, log *zap.Logger) []Route {
	rd := readiness{checkers: checkers, timeout: checkTimeout, log: log}
	metrics := promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{})
	return []Route{
		{Method: http.MethodGet, Path: "/healthz", Public: true, Name: "healthz", Handler: func(w http.ResponseWriter, _ *http.Request) error {
			writeJSON(w, http.StatusOK, healthDTO{Status: "ok"})
			return nil
		}},
		{Method: http.MethodGet, Path: "/readyz", Public: true, Name: "readyz", Handler: func(w http.ResponseWriter, r *http.Request) error {
			// A 503 here is an answer, not a failure of the handler: it
			// carries the result of every check, which the error envelope
			// has no room for.
			rd.serve(w, r)
			return nil
		}},
		{Method: http.MethodGet, Path: "/metrics", Public: true, Name: "metrics", Handler: func(w http.ResponseWriter, r *http.Request) error {
			metrics.ServeHTTP(w, r)
			return nil
		}},
	}
}

type readiness struct {
	checkers []Checker
	timeout  time.Duration
	log      *zap.Logger
}

type checkResult struct {
	name     string
	degrades bool
	err      error
}

func (rd readiness) serve(w http.ResponseWriter, r *http.Request) {
	log := rd.log
	if infoFrom(r.Context()) != nil {
		log = RequestLogger(r.Context())
	}
	results := make(chan checkResult, len(rd.checkers))
	for _, c := range rd.checkers {
		go func() { results <- checkResult{name: c.Name, degrades: c.Degrades, err: rd.run(r.Context(), c)} }()
	}
	out := readyDTO{Status: "ok", Checks: make(map[string]string, len(rd.checkers))}
	var failing []string
	for range rd.checkers {
		res := <-results
		switch {
		case res.err == nil:
			out.Checks[res.name] = "ok"
		case res.degrades:
			log.Warn("readiness check degraded", zap.String("check", res.name), zap.Error(res.err))
			out.Checks[res.name] = "degraded"
			out.Status = "degraded"
		default:
			// The reason goes to the log only: it may name hosts or
			// credentials that an unauthenticated probe must not see.
			log.Warn("readiness check failed", zap.String("check", res.name), zap.Error(res.err))
			out.Checks[res.name] = "failing"
			failing = append(failing, res.name)
		}
	}
	if len(failing) == 0 {
		WriteBody(w, http.StatusOK, readyEnvelope{Success: true, Data: out})
		return
	}
	out.Status = "unavailable"
	slices.Sort(failing)
	WriteBody(w, http.StatusServiceUnavailable, readyEnvelope{Data: out, Error: &errorBody{
		Code:    "unavailable",
		Message: "not ready: " + strings.Join(failing, ", "),
	}})
}

// run gives up on a check at the timeout even when the check ignores its
// context, so one stuck dependency cannot stall the probe.
func (rd readiness) run(ctx context.Context, c Checker) (err error) {
	ctx, cancel := context.WithTimeout(ctx, rd.timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("check panicked: %v", p)
			}
		}()
		done <- c.Check(ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer within %s: %w", rd.timeout, ctx.Err())
	}
}
