package ports

import (
	"context"
	"io"

	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
)

// LaunchSpec is what a browser runtime needs to start a profile's browser.
type LaunchSpec struct {
	// Profile is the profile as launched; its fingerprint is resolved (no
	// "auto" left in it).
	Profile   profile.Profile
	SessionID string
	Headless  bool
	// Proxy is the upstream proxy all of the browser's traffic goes
	// through, with its credentials; nil for a direct connection.
	Proxy *ProxyTarget
	// Data is the profile's browser-data archive (a tar.gz of a user-data
	// directory, checked when it was stored) to start from; nil for a
	// fresh profile. Start reads it to its end before it returns.
	Data io.Reader
	// Cookies are put into the browser before Start returns.
	Cookies []browserdata.Cookie
}

// RunningBrowser is what a runtime reports about a browser it started.
type RunningBrowser struct {
	// CDP says that clients reach the browser through the service's relay
	// (Connect); false when the client runs the browser itself.
	CDP bool
}

// CDPConn is one client's connection to a browser's DevTools protocol:
// JSON messages as a DevTools WebSocket carries them, each checked by the
// runtime before it reaches the browser.
type CDPConn interface {
	// Send passes one message of the client to the browser.
	Send(ctx context.Context, msg []byte) error
	// Receive returns the next message of the browser for the client; an
	// error ends the connection (the browser or the client is gone).
	Receive(ctx context.Context) ([]byte, error)
	// Close ends the connection and what the client opened on it.
	Close() error
}

// BrowserState is what a browser leaves when its session ends: its
// user-data directory packed as a tar.gz (caches may still be in it; the
// caller cleans it as any upload) and the cookies it held.
type BrowserState struct {
	// Archive streams the packed directory; closing it releases what the
	// runtime kept of the session (its directory).
	Archive io.ReadCloser
	Cookies []browserdata.Cookie
}

// BrowserExit reports a browser that ended without being asked: its client
// closed it (profile.StopClosed) or it died (profile.StopCrashed).
type BrowserExit struct {
	ProfileID string
	SessionID string
	Reason    profile.StopReason
}

// BrowserRuntime runs the browsers of launched profiles. The service holds
// the lease (one session per profile across instances) before it calls
// Start, and calls Stop before it ends the lease, so a runtime never sees two
// sessions of one profile at once.
type BrowserRuntime interface {
	// Start launches the browser of a session and answers once it accepts
	// CDP connections. A runtime running as many browsers as it may refuses
	// with a domain Unavailable error.
	Start(ctx context.Context, spec LaunchSpec) (RunningBrowser, error)
	// Stop closes the browser of a session gracefully (if it still runs)
	// and returns what it left, which the caller stores and then closes. A
	// session the runtime does not know is (nil, nil): another instance, or
	// the client, ran it.
	Stop(ctx context.Context, profileID, sessionID string) (*BrowserState, error)
	// Cookies reads the cookies of a running browser, for checkpoints; a
	// session the runtime does not run is a domain NotFound error.
	Cookies(ctx context.Context, sessionID string) ([]browserdata.Cookie, error)
	// Connect opens a client's CDP connection to a browser this runtime
	// runs; a session it does not run is a domain NotFound error, and a
	// browser with as many clients as it may take a domain Unavailable one.
	Connect(ctx context.Context, sessionID string) (CDPConn, error)
	// Exits delivers the browsers that ended by themselves; the service then
	// calls Stop to collect what they left. Nil for a runtime without
	// browsers.
	Exits() <-chan BrowserExit
}

// SessionMetrics count sessions as they commit (each launch, and each stop
// by its reason), and the launches an instance placed on another one or
// refused because the whole fleet was full.
type SessionMetrics interface {
	Launched()
	Stopped(reason string)
	PlacedElsewhere()
	FleetFull()
}
