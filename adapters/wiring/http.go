package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/application/idempotency"
	"github.com/profilesvc/profilesvc/application/ratelimit"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
)

// Checker is a readiness check contributed to /readyz.
type Checker = httpapi.Checker

// Routes is one module's contribution to the route table.
type Routes []httpapi.Route

// HTTP provides the transport: the route table collected from every module
// (value group "routes"), the middleware, metrics and the server, which
// listens in OnStart and drains in OnStop.
var HTTP = fx.Module("http",
	fx.Provide(
		httpapi.NewRegistry,
		func(reg *prometheus.Registry) *httpapi.Metrics { return httpapi.NewMetrics(reg) },
		fx.Annotate(func(svc *auth.Service) Routes { return httpapi.NewAuthHandlers(svc).Routes() }, fx.ResultTags(`group:"routes"`)),
		fx.Annotate(func() (Routes, error) { return httpapi.DocsRoutes() }, fx.ResultTags(`group:"routes"`)),
		fx.Annotate(func(checkers []Checker, reg *prometheus.Registry, log *zap.Logger) Routes {
			return httpapi.OperationalRoutes(checkers, reg, log)
		}, fx.ParamTags(`group:"checkers"`), fx.ResultTags(`group:"routes"`)),
		fx.Annotate(newHandler, fx.ParamTags(`group:"routes"`)),
		newServer,
		func() *ListenAddr { return &ListenAddr{} },
		func(limiter ports.RateLimiter, cfg config.Config, log *slog.Logger) requestLimits {
			return requestLimits{
				callers:   ratelimit.New(limiter, "default", cfg.RateLimit.Requests, cfg.RateLimit.Window, log),
				addresses: ratelimit.New(limiter, "auth", cfg.AuthRateLimit.Requests, cfg.AuthRateLimit.Window, log),
			}
		},
	),
	// The server is invoked so that fx builds it even though nothing else
	// depends on it.
	fx.Invoke(func(*httpapi.Server) {}),
)

// RouteTable is every module's routes in one list, for the router and for
// tests that walk the table.
type RouteTable []httpapi.Route

// requestLimits are the general rate limits: RATE_LIMIT per authenticated
// caller, AUTH_RATE_LIMIT per client address on the account endpoints that
// need no credentials.
type requestLimits struct {
	callers, addresses *ratelimit.Service
}

// authPrefix begins the paths of the endpoints that AUTH_RATE_LIMIT counts.
const authPrefix = "/api/v1/auth/"

func newHandler(groups []Routes, svc *auth.Service, idem *idempotency.Service, limits requestLimits, cfg config.Config, log *zap.Logger, metrics *httpapi.Metrics) (RouteTable, http.Handler) {
	var table RouteTable
	for _, g := range groups {
		table = append(table, g...)
	}
	if cfg.AuthRateLimit.On() {
		limitAddr := httpapi.LimitAddresses(limits.addresses)
		for i, rt := range table {
			if rt.Public && strings.HasPrefix(rt.Path, authPrefix) {
				table[i].Handler = limitAddr(rt.Handler)
			}
		}
	}
	authenticate, idempotent := httpapi.Authenticate(svc), httpapi.Idempotent(idem)
	// Idempotency keys and rate limits belong to the authenticated caller,
	// so both come after authentication; a request refused by the limit
	// does not touch the idempotency store.
	limit := func(h http.Handler) http.Handler { return h }
	if cfg.RateLimit.On() {
		limit = httpapi.LimitRequests(limits.callers)
	}
	protect := func(h http.Handler) http.Handler { return authenticate(limit(idempotent(h))) }
	var inner []httpapi.Middleware
	if len(cfg.CORSOrigins) > 0 {
		inner = append(inner, httpapi.CORS(cfg.CORSOrigins))
	}
	return table, httpapi.TrustProxies(cfg.TrustedProxies)(httpapi.NewRouter(table, protect, log, metrics, inner...))
}

func newServer(lc fx.Lifecycle, cfg config.Config, h http.Handler, log *zap.Logger, listen *ListenAddr) *httpapi.Server {
	s := httpapi.NewServer(cfg.HTTPAddr, h, log, cfg.ShutdownTimeout, httpapi.Timeouts{
		ReadHeader: cfg.HTTPReadHeaderTimeout, Read: cfg.HTTPReadTimeout, Idle: cfg.HTTPIdleTimeout,
	})
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := s.Start(ctx); err != nil {
				return fmt.Errorf("HTTP_ADDR: %w", err)
			}
			listen.set(s.Addr())
			return nil
		},
		OnStop: s.Stop,
	})
	return s
}

// ListenAddr is the address the server listens on, known once it has
// started; the default PUBLIC_URL is built from it.
type ListenAddr struct{ v atomic.Value }

func (a *ListenAddr) set(addr string) { a.v.Store(addr) }

// Addr is the address, empty before the server has started.
func (a *ListenAddr) Addr() string {
	addr, _ := a.v.Load().(string)
	return addr
}

// BaseURL is http://<address>, with an unspecified host (":8080",
// "[::]:8080") named localhost.
func (a *ListenAddr) BaseURL() string {
	addr, _ := a.v.Load().(string)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://localhost"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
