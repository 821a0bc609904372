// Package browser owns the implementations of ports.BrowserRuntime. LeaseOnly
// runs no browser: the service keeps the exclusive lease and the client runs
// the browser with the profile's fingerprint itself.
package browser

import (
	"context"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.BrowserRuntime = LeaseOnly{}

// LeaseOnly is the runtime of BROWSER_RUNTIME=none: sessions are leases
// without a browser, so there is no CDP address to hand out.
type LeaseOnly struct{}

// Start starts nothing and reports no CDP address.
func (LeaseOnly) Start(context.Context, ports.LaunchSpec) (ports.RunningBrowser, error) {
	return ports.RunningBrowser{}, nil
}

// Stop has nothing to stop and nothing to return.
func (LeaseOnly) Stop(context.Context, string, string) (*ports.BrowserState, error) { return nil, nil }

// Cookies has no browser to read.
func (LeaseOnly) Cookies(context.Context, string) ([]browserdata.Cookie, error) {
	return nil, domain.NotFound("browser")
}

// Connect has no browser to connect to.
func (LeaseOnly) Connect(context.Context, string) (ports.CDPConn, error) {
	return nil, domain.NotFound("browser")
}

// Exits is nil: no browser ends by itself.
func (LeaseOnly) Exits() <-chan ports.BrowserExit { return nil }
