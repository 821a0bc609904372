package ports

import (
	"context"
	"time"
)

// ProxyTarget is how to reach a proxy: everything a probe needs, the
// password in the clear (it never leaves the process).
type ProxyTarget struct {
	// Type is "http", "https" or "socks5".
	Type     string
	Host     string
	Port     int
	Username string
	Password string
}

// ProbeResult is what a probe through a proxy saw. A failed probe is a
// result with OK false and Error saying why in words a person understands
// (wrong credentials, refused, timed out, the check service's answer was
// unreadable), never a Go error.
type ProbeResult struct {
	OK      bool
	Latency time.Duration
	// ExitIP, Country, City and Timezone are what the check service
	// reported for the connection that came through the proxy; empty when
	// it did not say.
	ExitIP   string
	Country  string
	City     string
	Timezone string
	Error    string
}

// ProxyProber connects through a proxy to the configured check service
// (PROXY_CHECK_URL) and reports what it saw. It refuses proxy hosts that
// resolve to loopback, private, link-local or metadata addresses, unless
// the configuration allows private targets.
type ProxyProber interface {
	// Probe makes one request through the proxy, bounded by the prober's
	// time-out and by ctx.
	Probe(ctx context.Context, target ProxyTarget) ProbeResult
	// CheckHost refuses a proxy host the prober would not connect to (the
	// same rule as at dial time, after DNS resolution), without connecting.
	CheckHost(ctx context.Context, host string) error
}
