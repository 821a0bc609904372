package conformance_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/adapters/browser"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

func TestLeaseOnlyRuntime(t *testing.T) {
	conformance.RunBrowserRuntime(t, func(*testing.T) ports.BrowserRuntime { return browser.LeaseOnly{} })
}
