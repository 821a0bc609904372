package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Browser is how launches run browsers: BROWSER_RUNTIME picks the runtime
// (Config.BrowserRuntime); these say where Chromium is, how many browsers
// one instance runs, and the addresses handed out for them.
type Browser struct {
	// ChromiumPath is CHROMIUM_PATH; "" finds Chromium on PATH.
	ChromiumPath string
	// Max is BROWSERS_MAX.
	Max int
	// PublicURL (PUBLIC_URL) is the base of the URLs the service hands
	// out (cdpUrl); "" means http://<the address the server listens on>.
	PublicURL string
	// NodeURL (NODE_URL) is this instance's address as the other instances
	// reach it, for the CDP relay; "" means PublicURL.
	NodeURL string
	// BwrapPath is BWRAP_PATH: the bubblewrap binary every browser runs in;
	// "" finds bwrap on PATH.
	BwrapPath string
	// ClientsPerSession (CDP_CLIENTS_PER_SESSION) bounds the CDP clients of
	// one browser, and RelayConnections (CDP_CONNECTIONS_MAX) the relayed
	// CDP connections of the instance.
	ClientsPerSession, RelayConnections int
	// CookieCheckpoint (COOKIE_CHECKPOINT_INTERVAL) is how often the
	// cookies of running browsers are saved: what an instance lost
	// without a shutdown loses at most.
	CookieCheckpoint time.Duration
}

// browserRuntime is BROWSER_RUNTIME on the system goos. Chromium runs only
// on Linux, each browser in a bubblewrap sandbox of Linux namespaces:
// elsewhere "chromium" stops the service at start, and "auto" finds no
// runtime, so sessions are leases only.
func (l *loader) browserRuntime(goos string) string {
	v := l.oneOf("BROWSER_RUNTIME", "auto", "auto", "chromium", "none")
	if v == "chromium" && goos != "linux" {
		l.fail("BROWSER_RUNTIME", "chromium is not available on "+goos+": the browser runtime needs Linux, with bubblewrap; use BROWSER_RUNTIME=none for leases only")
	}
	return v
}

func (l *loader) browser() Browser {
	return Browser{
		ChromiumPath: l.str("CHROMIUM_PATH", ""),
		Max:          l.atLeastOne("BROWSERS_MAX", 4),
		PublicURL:    l.baseURL("PUBLIC_URL"),
		NodeURL:      l.baseURL("NODE_URL"),
		BwrapPath:    l.str("BWRAP_PATH", ""),

		ClientsPerSession: l.atLeastOne("CDP_CLIENTS_PER_SESSION", 16),
		RelayConnections:  l.atLeastOne("CDP_CONNECTIONS_MAX", 512),
		CookieCheckpoint:  l.duration("COOKIE_CHECKPOINT_INTERVAL", time.Minute),
	}
}

// baseURL reads an optional http(s) URL without query or fragment; a
// trailing slash is dropped.
// maxURLBytes bounds a base URL or an origin, so that what the service
// builds from one (a cdpUrl, Access-Control-Allow-Origin) has a bound the
// API document can state.
const maxURLBytes = 2048

func (l *loader) baseURL(name string) string {
	v := strings.TrimSuffix(l.str(name, ""), "/")
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || len(v) > maxURLBytes || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		l.fail(name, fmt.Sprintf("%q is not an http or https base URL such as https://profiles.example.com", v))
		return ""
	}
	return v
}
