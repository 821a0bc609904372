package httpapi

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/application/ratelimit"
)

// Middleware wraps a handler; the router applies the authentication one to
// every route that is not public.
type Middleware func(http.Handler) http.Handler

// requestInfo travels in the request context. route is filled in by the
// matched route's wrapper further down the chain, which is how middleware
// running before mux learns the route template.
type requestInfo struct {
	id    string
	route string
	// replayed is set when the answer is one kept for an Idempotency-Key.
	replayed bool
	// base is the server's logger; log, made from it when first asked
	// for, names the request's id. Most requests log nothing at the
	// configured level, and a child logger per request cost them time.
	base    *zap.Logger
	logOnce sync.Once
	log     *zap.Logger
}

// logger is the request's logger, which names its id.
func (i *requestInfo) logger() *zap.Logger {
	i.logOnce.Do(func() {
		if i.id == "" {
			i.log = i.base
			return
		}
		i.log = i.base.With(zap.String("request_id", i.id))
	})
	return i.log
}

type requestInfoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// RequestIDFrom returns the id of the request being served, or "" outside
// the middleware chain.
func RequestIDFrom(ctx context.Context) string {
	if info := infoFrom(ctx); info != nil {
		return info.id
	}
	return ""
}

// RequestLogger returns the logger of the request, which names its id. The
// fallback only serves handlers run outside the router's middleware.
func RequestLogger(ctx context.Context) *zap.Logger {
	if info := infoFrom(ctx); info != nil {
		return info.logger()
	}
	return zap.L()
}

// responseLogger finds the request's logger from the ResponseWriter, for the
// writers whose signature has no request.
func responseLogger(w http.ResponseWriter) *zap.Logger {
	for {
		if rec, ok := w.(*responseRecorder); ok {
			return rec.info.logger()
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return zap.L()
		}
		w = u.Unwrap()
	}
}

const (
	requestIDHeader   = "X-Request-ID"
	maxRequestIDBytes = 128
)

// validRequestID accepts what can be echoed into a header and a log line
// without escaping or flooding either.
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > maxRequestIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// instrument wraps h with what every request gets, outermost first: a
// request id, the access log and metrics, and panic recovery. Recovery sits
// inside the log so that a recovered panic is logged and counted as a 500.
func instrument(h http.Handler, log *zap.Logger, m *Metrics) http.Handler {
	return requestID(log)(observe(m)(recoverPanics(h)))
}

func requestID(log *zap.Logger) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get(requestIDHeader)
			if !validRequestID(id) {
				id = rand.Text()
			}
			w.Header().Set(requestIDHeader, id)
			info := &requestInfo{id: id, base: log}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info)))
		})
	}
}

// responseRecorder remembers the status and size of a response for the log
// and metrics.
type responseRecorder struct {
	http.ResponseWriter
	info        *requestInfo
	status      int
	bytes       int64
	wroteHeader bool
}

func (rec *responseRecorder) WriteHeader(status int) {
	// 1xx responses other than 101 are interim; the final status follows.
	if !rec.wroteHeader && (status >= 200 || status == http.StatusSwitchingProtocols) {
		rec.status = status
		rec.wroteHeader = true
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *responseRecorder) Write(b []byte) (int, error) {
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += int64(n)
	return n, err
}

// NoteSwitchedProtocols records a 101 for the access log and the metrics,
// for a handler that hands the connection over to a WebSocket whose 101 is
// written on the hijacked connection, past the recorder, which would
// otherwise count the request as a 200 (the CDP relay's proxy to another
// instance does so).
func NoteSwitchedProtocols(w http.ResponseWriter) {
	for {
		if rec, ok := w.(*responseRecorder); ok {
			rec.status = http.StatusSwitchingProtocols
			rec.wroteHeader = true
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (rec *responseRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// Flush keeps streaming responses working through the recorder.
func (rec *responseRecorder) Flush() {
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(rec.ResponseWriter).Flush()
}

const unmatchedRoute = "unmatched"

func observe(m *Metrics) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := infoFrom(r.Context())
			if info == nil {
				info = &requestInfo{base: zap.L()}
				r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
			}
			rec := &responseRecorder{ResponseWriter: w, info: info, status: http.StatusOK}
			start := time.Now()
			if m != nil {
				m.inFlight.Inc()
				defer m.inFlight.Dec()
			}
			// Deferred so that a response aborted by a panic is still logged
			// and counted while the panic travels on to net/http.
			defer func() {
				elapsed := time.Since(start)
				route := info.route
				if route == "" {
					route = unmatchedRoute
				}
				// The query string is left out: it may carry tokens or
				// cursors that do not belong in logs.
				if info.base.Core().Enabled(zap.InfoLevel) {
					info.logger().Info("request",
						zap.String("method", r.Method),
						zap.String("route", route),
						zap.String("path", r.URL.Path),
						zap.Int("status", rec.status),
						zap.Int64("bytes", rec.bytes),
						zap.Float64("latency_ms", float64(elapsed.Microseconds())/1000),
						zap.String("remote", r.RemoteAddr),
					)
				}
				if m != nil {
					m.observe(route, r.Method, rec.status, elapsed, info.replayed)
				}
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				// net/http's own signal to drop the connection quietly.
				panic(p)
			}
			RequestLogger(r.Context()).Error("panic while serving request",
				zap.String("panic", fmt.Sprint(p)),
				zap.ByteString("stack", debug.Stack()),
				zap.String("method", r.Method),
				zap.String("path", r.URL.Path),
			)
			if headerWritten(w) {
				// The client already has a status and part of a body; cutting
				// the connection tells it the response is incomplete.
				panic(http.ErrAbortHandler)
			}
			writeErrorEnvelope(w, internalClass.status, internalClass.code, internalClass.message, nil)
		}()
		next.ServeHTTP(w, r)
	})
}

func headerWritten(w http.ResponseWriter) bool {
	rec, ok := w.(*responseRecorder)
	return ok && rec.wroteHeader
}

// Metrics are the request counters and latency histograms of the HTTP
// transport.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// inFlight shows load at a glance and lets an operator (or a test) see
	// that requests are still being served during a graceful shutdown.
	inFlight prometheus.Gauge
	// throttled counts the 429s by route; loginFailures the sign-ins
	// refused for their credentials; replays the answers kept for an
	// Idempotency-Key and sent again.
	throttled     *prometheus.CounterVec
	loginFailures prometheus.Counter
	replays       prometheus.Counter
}

// NewMetrics registers the HTTP metrics on reg. A registry per server (not
// the global one) lets tests build as many servers as they like; registering
// twice on one registry is a wiring bug and panics, as MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "profilesvc_http_requests_total",
			Help: "HTTP requests served, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "profilesvc_http_request_duration_seconds",
			Help:    "Time to serve HTTP requests, by route template and method.",
			Buckets: requestBuckets,
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "profilesvc_http_requests_in_flight",
			Help: "HTTP requests being served right now.",
		}),
	}
	m.throttled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "profilesvc_throttled_requests_total",
		Help: "Requests refused with 429 by a rate limit, quota of attempts or throttle, by route template.",
	}, []string{"route"})
	m.loginFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "profilesvc_login_failures_total",
		Help: "Sign-ins refused for a wrong email or password.",
	})
	m.replays = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "profilesvc_idempotency_replays_total",
		Help: "Requests answered with the response kept for their Idempotency-Key.",
	})
	reg.MustRegister(m.requests, m.duration, m.inFlight, m.throttled, m.loginFailures, m.replays)
	return m
}

// requestBuckets resolve what most requests take (0.1 to 10 ms, in steps
// of about 2x) and reach the seconds a slow one may.
var requestBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// NewRegistry returns a registry with the Go runtime and process
// collectors under their stock names (go_*, process_*), which stock
// dashboards and alerts look for, and which /metrics serves along with the
// service's own profilesvc_ families.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func (m *Metrics) observe(route, method string, status int, elapsed time.Duration, replayed bool) {
	method = methodLabel(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(elapsed.Seconds())
	switch {
	case status == http.StatusTooManyRequests:
		m.throttled.WithLabelValues(route).Inc()
	case status == http.StatusUnauthorized && route == loginRoute:
		m.loginFailures.Inc()
	}
	if replayed {
		m.replays.Inc()
	}
}

// loginRoute is the sign-in's route template, which the metrics count
// failures of.
const loginRoute = "/api/v1/auth/login"

// methodLabel folds methods nobody serves into one label, so a client
// sending invented methods cannot grow the series without bound.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// LimitRequests applies the general rate limit to authenticated requests
// (it runs after authentication, which names the caller), and tells every
// answer where the caller stands in the RateLimit-Policy and RateLimit
// headers of the IETF draft httpapi-ratelimit-headers.
func LimitRequests(svc *ratelimit.Service) Middleware {
	return func(next http.Handler) http.Handler {
		return HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			q, err := svc.Take(r.Context(), actorFrom(r.Context()))
			setRateLimitHeaders(w.Header(), q)
			if err != nil {
				return err
			}
			next.ServeHTTP(w, r)
			return nil
		})
	}
}

// LimitAddresses applies svc's limit to each client address, for the
// endpoints that serve callers not yet known (signing up, signing in), with
// the same headers as LimitRequests.
func LimitAddresses(svc *ratelimit.Service) func(HandlerFunc) HandlerFunc {
	return func(next HandlerFunc) HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error {
			q, err := svc.TakeAddress(r.Context(), ClientAddr(r))
			setRateLimitHeaders(w.Header(), q)
			if err != nil {
				return err
			}
			return next(w, r)
		}
	}
}

func setRateLimitHeaders(h http.Header, q ratelimit.Quota) {
	h.Set("RateLimit-Policy", fmt.Sprintf(`"%s";q=%d;w=%d`, q.Policy, q.Limit, int(q.Window/time.Second)))
	h.Set("RateLimit", fmt.Sprintf(`"%s";r=%d;t=%d`, q.Policy, q.Remaining, retryAfterSeconds(q.Reset)))
}
