//go:build linux

package wiring

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/browser"
	"github.com/profilesvc/profilesvc/adapters/browser/chromium"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
)

// The Chromium runtime tells its engine's version to the profiles module.
var _ engine = (*chromium.Runtime)(nil)

// newBrowserRuntime picks the runtime of BROWSER_RUNTIME: Chromium
// ("chromium", or "auto" when it is found) or leases only ("none", or
// "auto" without Chromium). The Chromium runtime closes what it still runs
// when the app stops, after the sessions have ended (runBrowsers).
func newBrowserRuntime(lc fx.Lifecycle, cfg config.Config, log *slog.Logger) (ports.BrowserRuntime, error) {
	if cfg.BrowserRuntime == "none" {
		return browser.LeaseOnly{}, nil
	}
	path, found := chromium.Find(cfg.Browser.ChromiumPath)
	if !found {
		if cfg.BrowserRuntime == "auto" {
			log.Debug("no Chromium found: sessions are leases only (install chromium or set CHROMIUM_PATH)")
			return browser.LeaseOnly{}, nil
		}
		if cfg.Browser.ChromiumPath != "" {
			return nil, fmt.Errorf("CHROMIUM_PATH: %q is not an executable Chromium", cfg.Browser.ChromiumPath)
		}
		return nil, fmt.Errorf("BROWSER_RUNTIME: chromium is not installed (apt-get install chromium) and CHROMIUM_PATH is not set")
	}
	bwrap, found := chromium.FindBwrap(cfg.Browser.BwrapPath)
	if !found {
		// A browser never runs outside its sandbox.
		if cfg.BrowserRuntime == "auto" && cfg.Browser.BwrapPath == "" {
			log.Warn("Chromium is installed but bubblewrap is not: sessions are leases only (apt-get install bubblewrap)")
			return browser.LeaseOnly{}, nil
		}
		if cfg.Browser.BwrapPath != "" {
			return nil, fmt.Errorf("BWRAP_PATH: %q is not an executable bubblewrap", cfg.Browser.BwrapPath)
		}
		return nil, fmt.Errorf("BROWSER_RUNTIME: every browser runs in a bubblewrap sandbox, and bwrap is not installed (apt-get install bubblewrap) nor BWRAP_PATH set")
	}
	rt, err := chromium.New(chromium.Options{
		Path: path, MaxBrowsers: cfg.Browser.Max, WorkDir: filepath.Join(cfg.DataDir, "browsers"),
		AllowPrivateTargets: cfg.AllowPrivateTargets, Log: log,
		Sandbox:    chromium.Sandbox{Bwrap: bwrap},
		MaxClients: cfg.Browser.ClientsPerSession,
	})
	if err != nil {
		return nil, fmt.Errorf("BROWSER_RUNTIME: %w", err)
	}
	lc.Append(fx.Hook{OnStop: rt.Close})
	log.Debug("browsers run in Chromium", "path", path, "max", cfg.Browser.Max)
	return rt, nil
}
