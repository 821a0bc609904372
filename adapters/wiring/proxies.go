package wiring

import (
	"log/slog"

	"go.uber.org/fx"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// ProxyDeps are the ports of the proxy use cases; the prober module
// provides the prober.
type ProxyDeps struct {
	fx.In
	Store   storage.Store
	Tx      ports.UnitOfWork
	Outbox  ports.Outbox
	Prober  ports.ProxyProber
	Box     ports.SecretBox
	Limiter ports.RateLimiter
	Clock   ports.Clock
	IDs     ports.IDs
	Log     *slog.Logger
	Config  config.Config
}

// Proxies provides the proxy use cases and their routes.
var Proxies = fx.Module("proxies",
	fx.Provide(
		newProxies,
		fx.Annotate(func(svc *proxies.Service) Routes { return httpapi.NewProxyHandlers(svc).Routes() }, fx.ResultTags(`group:"routes"`)),
	),
)

func newProxies(d ProxyDeps) *proxies.Service {
	return proxies.New(proxies.Deps{
		Tx: d.Tx, Teams: d.Store.Teams(), Proxies: d.Store.Proxies(), Outbox: d.Outbox, Prober: d.Prober, Box: d.Box,
		Limiter: d.Limiter, Clock: d.Clock, IDs: d.IDs, Log: d.Log,
		Policy: proxies.Policy{
			AllowPrivateTargets: d.Config.AllowPrivateTargets,
			MaxProxies:          d.Config.Quotas.Proxies,
			ProbesPerMinute:     d.Config.Quotas.ProxyChecksPerMinute,
		},
	})
}
