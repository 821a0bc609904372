//go:build !linux

package wiring

import (
	"github.com/profilesvc/profilesvc/adapters/browser"
	"github.com/profilesvc/profilesvc/ports"
)

// newBrowserRuntime runs sessions as leases only: the Chromium runtime
// needs Linux, and config refuses BROWSER_RUNTIME=chromium elsewhere.
func newBrowserRuntime() ports.BrowserRuntime { return browser.LeaseOnly{} }
