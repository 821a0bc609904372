package wiring

import (
	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/prober"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
)

// Prober provides the ports.ProxyProber that proxy tests and checks use:
// PROXY_CHECK_URL through the proxy, bounded by PROXY_CHECK_TIMEOUT, proxy
// hosts behind the shared SSRF guard unless ALLOW_PRIVATE_TARGETS.
var Prober = fx.Module("prober", fx.Provide(newProxyProber))

func newProxyProber(cfg config.Config) (ports.ProxyProber, error) {
	p, err := prober.New(prober.Options{
		CheckURL:     cfg.ProxyCheckURL,
		Timeout:      cfg.ProxyCheckTimeout,
		AllowPrivate: cfg.AllowPrivateTargets,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
