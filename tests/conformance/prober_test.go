package conformance_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/adapters/prober"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

func TestProxyProber(t *testing.T) {
	conformance.RunProxyProber(t, func(t *testing.T, cfg conformance.ProberConfig) ports.ProxyProber {
		p, err := prober.New(prober.Options{CheckURL: cfg.CheckURL, Timeout: cfg.Timeout, AllowPrivate: cfg.AllowPrivate})
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}
