package forwarder

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/adapters/netguard/netguardtest"
	"github.com/profilesvc/profilesvc/ports"
)

// TestRefusalsReadAlike: a name that does not resolve and a name that
// resolves to a refused address get the same answer, or the forwarder
// would tell whoever drives the browser which internal names exist. The
// log keeps the cause.
func TestRefusalsReadAlike(t *testing.T) {
	// internal.test is the test resolver's loopback name; missing.test it
	// does not know.
	resolver := netguardtest.FakeResolver(t, map[string][]netip.Addr{
		"internal.test":       {netip.MustParseAddr("127.0.0.1")},
		"proxy.internal.test": {netip.MustParseAddr("127.0.0.1")},
	})
	t.Run("targets", func(t *testing.T) {
		plain := startTarget(t, false, "plain")
		_, port := splitHostPort(t, plain.addr())
		f, logs := start(t, Options{Guard: netguard.DialControl, Resolver: resolver})
		const want = "the target is not reachable or not allowed\n"
		for _, host := range []string{"internal.test", "missing.test"} {
			resp, body, _, _ := rawConnect(t, f, host+":443")
			if resp.StatusCode != http.StatusBadGateway || body != want {
				t.Errorf("CONNECT %s:443 = %d %q, want 502 %q", host, resp.StatusCode, body, want)
			}
			u := fmt.Sprintf("http://%s:%d/", host, port)
			answers := rawExchange(t, f, "GET "+u+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
			if got := bodyOf(t, answers[0]); answers[0].StatusCode != http.StatusBadGateway || got != want {
				t.Errorf("GET %s = %d %q, want 502 %q", u, answers[0].StatusCode, got, want)
			}
		}
		if n := plain.hits.Load(); n != 0 {
			t.Fatalf("the loopback target was reached %d times", n)
		}
		for _, cause := range []string{"refused by the guard", "no such host"} {
			if !strings.Contains(logs.String(), cause) {
				t.Errorf("the log does not keep the cause %q:\n%s", cause, logs)
			}
		}
	})
	t.Run("upstreams", func(t *testing.T) {
		up, _ := startHTTPUpstream(t, false, routes{})
		const want = "the upstream proxy is not reachable or not allowed\n"
		for _, host := range []string{"proxy.internal.test", "proxy.missing.invalid"} {
			t.Run(host, func(t *testing.T) {
				f, _ := start(t, Options{Guard: netguard.DialControl, Resolver: resolver,
					Upstream: &ports.ProxyTarget{Type: "http", Host: host, Port: up.port, Username: user, Password: pass}})
				resp, body, _, _ := rawConnect(t, f, "secure.test:443")
				if resp.StatusCode != http.StatusBadGateway || body != want {
					t.Errorf("CONNECT through %s = %d %q, want 502 %q", host, resp.StatusCode, body, want)
				}
				answers := rawExchange(t, f, "GET http://plain.test/ HTTP/1.1\r\nHost: plain.test\r\n\r\n")
				if got := bodyOf(t, answers[0]); answers[0].StatusCode != http.StatusBadGateway || got != want {
					t.Errorf("GET through %s = %d %q, want 502 %q", host, answers[0].StatusCode, got, want)
				}
			})
		}
		if n := up.conns.Load(); n != 0 {
			t.Fatalf("the upstream on loopback was connected to %d times", n)
		}
	})
}

// TestReservedNamesGoNowhere: a target under .invalid (RFC 6761), where
// the runtime sends the browser's own background requests, is refused
// before anything is dialled, the upstream proxy included.
func TestReservedNamesGoNowhere(t *testing.T) {
	up, _ := startHTTPUpstream(t, false, routes{})
	f, _ := start(t, Options{Upstream: &ports.ProxyTarget{Type: "http", Host: "127.0.0.1", Port: up.port, Username: user, Password: pass}})
	const want = "the target is not reachable or not allowed\n"
	for _, host := range []string{"components.invalid", "COMPONENTS.INVALID.", "invalid"} {
		resp, body, _, _ := rawConnect(t, f, host+":443")
		if resp.StatusCode != http.StatusBadGateway || body != want {
			t.Errorf("CONNECT %s:443 = %d %q, want 502 %q", host, resp.StatusCode, body, want)
		}
		answers := rawExchange(t, f, "GET http://"+host+"/ HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		if got := bodyOf(t, answers[0]); answers[0].StatusCode != http.StatusBadGateway || got != want {
			t.Errorf("GET http://%s/ = %d %q, want 502 %q", host, answers[0].StatusCode, got, want)
		}
	}
	if n := up.conns.Load(); n != 0 {
		t.Fatalf("the upstream was connected to %d times for reserved names", n)
	}
}
