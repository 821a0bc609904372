package wiring

import (
	"context"
	"errors"
	"log/slog"

	"go.uber.org/fx"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// ProxyDeps are the ports of the proxy use cases. The prober is provided by
// the prober module; an app built without it gets noProber, which refuses
// to check or connect to anything.
type ProxyDeps struct {
	fx.In
	Store   storage.Store
	Tx      ports.UnitOfWork
	Outbox  ports.Outbox
	Prober  ports.ProxyProber `optional:"true"`
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
	prober := d.Prober
	if prober == nil {
		prober = noProber{}
	}
	return proxies.New(proxies.Deps{
		Tx: d.Tx, Teams: d.Store.Teams(), Proxies: d.Store.Proxies(), Outbox: d.Outbox, Prober: prober, Box: d.Box,
		Limiter: d.Limiter, Clock: d.Clock, IDs: d.IDs, Log: d.Log,
		Policy: proxies.Policy{
			AllowPrivateTargets: d.Config.AllowPrivateTargets,
			MaxProxies:          d.Config.Quotas.Proxies,
			ProbesPerMinute:     d.Config.Quotas.ProxyChecksPerMinute,
		},
	})
}

// noProber stands in when no prober is provided: nothing is probed and no
// host passes the check, so no proxy host goes unchecked.
type noProber struct{}

const noProberError = "proxy checks are not available on this instance"

func (noProber) Probe(context.Context, ports.ProxyTarget) ports.ProbeResult {
	return ports.ProbeResult{Error: noProberError}
}

func (noProber) CheckHost(context.Context, string) error { return errors.New(noProberError) }
