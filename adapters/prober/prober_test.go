package prober_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/adapters/netguard/netguardtest"
	"github.com/profilesvc/profilesvc/adapters/prober"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

const user, pass = "bob", "pr0xy-Secret"

// startTLS starts h over TLS on loopback; every httptest TLS server shares
// one certificate, for 127.0.0.1 and example.com.
func startTLS(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPSProxyAndHTTPSCheckURL(t *testing.T) {
	echo := startTLS(t, conformance.IPEchoHandler("JP", "Tokyo", "Asia/Tokyo"))
	tp := &conformance.TestProxy{}
	proxySrv := startTLS(t, conformance.ConnectHandler(tp, user, pass))
	roots := echo.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	p, err := prober.New(prober.Options{CheckURL: echo.URL + "/json", Timeout: 5 * time.Second, AllowPrivate: true, RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	port := proxySrv.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	res := p.Probe(context.Background(), ports.ProxyTarget{Type: "https", Host: "127.0.0.1", Port: int(port), Username: user, Password: pass})
	want := ports.ProbeResult{OK: true, ExitIP: "127.0.0.1", Country: "JP", City: "Tokyo", Timezone: "Asia/Tokyo", Latency: res.Latency}
	if res != want {
		t.Fatalf("probe = %+v, want %+v", res, want)
	}
	if tp.Tunnels() != 1 {
		t.Fatalf("the proxy opened %d tunnels, want 1", tp.Tunnels())
	}

	// A proxy whose certificate is not trusted is not used.
	untrusting, err := prober.New(prober.Options{CheckURL: echo.URL + "/json", Timeout: 5 * time.Second, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	res = untrusting.Probe(context.Background(), ports.ProxyTarget{Type: "https", Host: "127.0.0.1", Port: int(port), Username: user, Password: pass})
	if res.OK || !strings.HasPrefix(res.Error, "the connection through the proxy failed: TLS to the proxy failed") || strings.Contains(res.Error, pass) {
		t.Fatalf("probe through an untrusted proxy = %+v", res)
	}
	if tp.Tunnels() != 1 {
		t.Fatal("a proxy with an untrusted certificate was sent the credentials")
	}
}

func TestProxyCannotReachTheCheckService(t *testing.T) {
	closed := conformance.ClosedPort(t)
	checkURL := "http://" + closed.Host + ":" + strconv.Itoa(closed.Port) + "/json"
	p, err := prober.New(prober.Options{CheckURL: checkURL, Timeout: 5 * time.Second, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		typ   string
		proxy *conformance.TestProxy
	}{
		{"http", conformance.StartConnectProxy(t, user, pass)},
		{"socks5", conformance.StartSOCKS5Proxy(t, user, pass)},
	} {
		res := p.Probe(context.Background(), ports.ProxyTarget{Type: c.typ, Host: c.proxy.Host, Port: c.proxy.Port, Username: user, Password: pass})
		if res.OK || !strings.HasPrefix(res.Error, "the proxy could not connect to the check service") {
			t.Errorf("%s: probe = %+v, want the proxy's failure to reach the check service", c.typ, res)
		}
	}
}

func TestGuardResolvesProxyNamesAtDialTime(t *testing.T) {
	echo := conformance.StartIPEcho(t, conformance.IPEchoHandler("NL", "Amsterdam", "Europe/Amsterdam"))
	proxy := conformance.StartConnectProxy(t, user, pass)
	resolver := netguardtest.FakeResolver(t, map[string][]netip.Addr{
		"proxy.example":    {netip.MustParseAddr(proxy.Host)},
		"metadata.example": {netip.MustParseAddr("169.254.169.254")},
	})
	target := ports.ProxyTarget{Type: "http", Host: "proxy.example", Port: proxy.Port, Username: user, Password: pass}

	guarded, err := prober.New(prober.Options{CheckURL: echo, Timeout: 5 * time.Second, Resolver: resolver})
	if err != nil {
		t.Fatal(err)
	}
	// A name that does not resolve reads as one that resolves to an
	// internal address: a difference would tell which internal names exist.
	for _, host := range []string{"proxy.example", "metadata.example", "unknown.example"} {
		err := guarded.CheckHost(context.Background(), host)
		var refused *netguard.HostError
		if !errors.As(err, &refused) || refused.Host != host {
			t.Errorf("CheckHost(%s) = %v, want a refusal naming the host", host, err)
		}
		if want := "host " + host + " is not reachable or not allowed"; err == nil || err.Error() != want {
			t.Errorf("CheckHost(%s) says %v, want %q", host, err, want)
		}
	}
	if res := guarded.Probe(context.Background(), target); res.OK || res.Error != "proxy host not allowed" {
		t.Fatalf("probe through a name resolving to loopback = %+v", res)
	}
	if proxy.Tunnels() != 0 {
		t.Fatal("the guarded prober reached the proxy on loopback")
	}
	if res := guarded.Probe(context.Background(), ports.ProxyTarget{Type: "socks5", Host: "metadata.example", Port: 1080}); res.Error != "proxy host not allowed" {
		t.Fatalf("socks5 probe through a name resolving to the metadata address = %+v", res)
	}
	if res := guarded.Probe(context.Background(), ports.ProxyTarget{Type: "http", Host: "unknown.example", Port: 3128}); res.Error != "proxy host not allowed" {
		t.Fatalf("probe through a name that does not resolve = %+v, want the refusal's words", res)
	}

	open, err := prober.New(prober.Options{CheckURL: echo, Timeout: 5 * time.Second, Resolver: resolver, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	if res := open.Probe(context.Background(), target); !res.OK || res.ExitIP != "127.0.0.1" {
		t.Fatalf("probe with private targets allowed = %+v", res)
	}
	// Without the guard nothing is refused, so there is nothing to hide.
	if res := open.Probe(context.Background(), ports.ProxyTarget{Type: "http", Host: "unknown.example", Port: 3128}); res.Error != "proxy host not found" {
		t.Fatalf("probe through a name that does not resolve, private targets allowed = %+v", res)
	}
}

func TestNewRefusesABadCheckURL(t *testing.T) {
	for _, u := range []string{"", "ipinfo.io/json", "ftp://example.com/", "https:///json", "://"} {
		if _, err := prober.New(prober.Options{CheckURL: u}); err == nil {
			t.Errorf("New accepted check URL %q", u)
		}
	}
}

// startHeaderFlood is a proxy that answers CONNECT with headers that never
// end.
func startHeaderFlood(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n"); err != nil {
					return
				}
				line := "X-Padding: " + strings.Repeat("a", 1000) + "\r\n"
				for {
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func TestProxyAnswerToConnectIsBounded(t *testing.T) {
	echo := conformance.StartIPEcho(t, conformance.IPEchoHandler("NL", "Amsterdam", "Europe/Amsterdam"))
	p, err := prober.New(prober.Options{CheckURL: echo, Timeout: time.Minute, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Probe(context.Background(), ports.ProxyTarget{Type: "http", Host: "127.0.0.1", Port: startHeaderFlood(t)})
	if res.OK || res.Error != "the proxy's answer to CONNECT was too long" {
		t.Fatalf("probe = %+v", res)
	}
	if res.Latency > 30*time.Second {
		t.Fatalf("the probe read the proxy's headers for %s", res.Latency)
	}
}

func TestTimeOutNamesTheCallersShorterDeadline(t *testing.T) {
	echo := conformance.StartIPEcho(t, conformance.IPEchoHandler("NL", "Amsterdam", "Europe/Amsterdam"))
	p, err := prober.New(prober.Options{CheckURL: echo, Timeout: time.Minute, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	stall := conformance.StartStallingProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := p.Probe(ctx, ports.ProxyTarget{Type: "socks5", Host: stall.Host, Port: stall.Port})
	if res.OK || res.Error != "timed out after 200ms" {
		t.Fatalf("probe = %+v, want the caller's 200ms named", res)
	}
}
