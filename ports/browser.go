package ports

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// LaunchSpec is what a browser runtime needs to start a profile's browser.
type LaunchSpec struct {
	Profile   profile.Profile
	SessionID string
	Headless  bool
}

// RunningBrowser is what a runtime reports about a browser it started.
type RunningBrowser struct {
	// CDPURL is the Chrome DevTools Protocol address clients connect to, or
	// "" when the client runs the browser itself.
	CDPURL string
}

// BrowserRuntime runs the browsers of launched profiles. The service holds
// the lease (one session per profile across instances) before it calls
// Start, and calls Stop before it ends the lease, so a runtime never sees two
// sessions of one profile at once.
type BrowserRuntime interface {
	// Start launches the browser of a session.
	Start(ctx context.Context, spec LaunchSpec) (RunningBrowser, error)
	// Stop ends the browser of a session and keeps its browser data; a
	// session the runtime does not know is not an error (another instance,
	// or the client, ran it).
	Stop(ctx context.Context, profileID, sessionID string) error
}
