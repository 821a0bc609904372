package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	socks5 "github.com/armon/go-socks5"

	"github.com/profilesvc/profilesvc/ports"
)

// ProberConfig is what a ports.ProxyProber is built from.
type ProberConfig struct {
	CheckURL     string
	Timeout      time.Duration
	AllowPrivate bool
}

// NewProxyProber builds the prober under test from cfg.
type NewProxyProber func(t *testing.T, cfg ProberConfig) ports.ProxyProber

// TestProxy is a proxy a test started on loopback.
type TestProxy struct {
	Host    string
	Port    int
	tunnels atomic.Int32
}

// Tunnels is how many connections the proxy opened for its clients.
func (p *TestProxy) Tunnels() int { return int(p.tunnels.Load()) }

func (p *TestProxy) target(typ, user, pass string) ports.ProxyTarget {
	return ports.ProxyTarget{Type: typ, Host: p.Host, Port: p.Port, Username: user, Password: pass}
}

// ConnectHandler is an HTTP CONNECT proxy that wants basic auth with user
// and pass and counts the tunnels it opens in p.
func ConnectHandler(p *TestProxy, user, pass string) http.Handler {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("Proxy-Authorization") != want {
			w.Header().Set("Proxy-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusProxyAuthRequired)
			return
		}
		upstream, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(r.Context(), "tcp", r.Host)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		client, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			_ = upstream.Close()
			return
		}
		p.tunnels.Add(1)
		_, _ = io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() {
			_, _ = io.Copy(upstream, rw.Reader)
			_ = upstream.Close()
		}()
		_, _ = io.Copy(client, upstream)
		_ = client.Close()
	})
}

// StartConnectProxy starts a plain HTTP CONNECT proxy on loopback that
// wants basic auth with user and pass.
func StartConnectProxy(t *testing.T, user, pass string) *TestProxy {
	t.Helper()
	p := &TestProxy{}
	srv := httptest.NewServer(ConnectHandler(p, user, pass))
	t.Cleanup(srv.Close)
	p.Host, p.Port = splitHostPort(t, srv.Listener.Addr().String())
	return p
}

// StartSOCKS5Proxy starts a SOCKS5 proxy on loopback that wants
// username/password authentication with user and pass.
func StartSOCKS5Proxy(t *testing.T, user, pass string) *TestProxy {
	t.Helper()
	p := &TestProxy{}
	srv, err := socks5.New(&socks5.Config{
		Credentials: socks5.StaticCredentials{user: pass},
		Logger:      log.New(io.Discard, "", 0),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
			if err == nil {
				p.tunnels.Add(1)
			}
			return c, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() { _ = srv.Serve(l) }()
	p.Host, p.Port = splitHostPort(t, l.Addr().String())
	return p
}

// StartStallingProxy accepts connections on loopback and never answers.
func StartStallingProxy(t *testing.T) *TestProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	p := &TestProxy{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	p.Host, p.Port = splitHostPort(t, l.Addr().String())
	return p
}

// ClosedPort is a loopback port nothing listens on.
func ClosedPort(t *testing.T) *TestProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &TestProxy{}
	p.Host, p.Port = splitHostPort(t, l.Addr().String())
	_ = l.Close()
	return p
}

// IPEchoHandler answers like an IP echo service: the caller's address as
// ip, and the country, city and timezone given.
func IPEchoHandler(country, city, timezone string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"ip": host, "country": country, "city": city, "timezone": timezone})
	})
}

// StartIPEcho starts an IP echo service on loopback and returns its URL.
func StartIPEcho(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/json"
}

func splitHostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, n
}

// answerWith is a check service that always answers status and body.
func answerWith(status int, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

// RunProxyProber checks a ports.ProxyProber against real proxies and a
// check service started on loopback: what it reports through each kind of
// proxy, how it tells failures apart, and that its guard refuses internal
// proxy hosts unless private targets are allowed.
func RunProxyProber(t *testing.T, newProber NewProxyProber) {
	t.Helper()
	const user, pass = "alice", "s3cret-Pa55"
	const timeout = 5 * time.Second
	echo := IPEchoHandler("NL", "Amsterdam", "Europe/Amsterdam")
	probe := func(t *testing.T, cfg ProberConfig, target ports.ProxyTarget) ports.ProbeResult {
		t.Helper()
		res := newProber(t, cfg).Probe(context.Background(), target)
		if strings.Contains(res.Error, pass) || strings.Contains(res.Error, "wrong-"+pass) {
			t.Fatalf("the error repeats the password: %q", res.Error)
		}
		return res
	}
	wantFailure := func(t *testing.T, res ports.ProbeResult, want string) {
		t.Helper()
		if res.OK || res.Error != want {
			t.Fatalf("probe = %+v, want not ok with error %q", res, want)
		}
		if res.ExitIP != "" {
			t.Fatalf("a failed probe reports exit IP %q", res.ExitIP)
		}
	}

	for _, kind := range []struct {
		typ   string
		start func(t *testing.T, user, pass string) *TestProxy
	}{
		{"http", StartConnectProxy},
		{"socks5", StartSOCKS5Proxy},
	} {
		t.Run(kind.typ, func(t *testing.T) {
			t.Run("ok through the proxy", func(t *testing.T) {
				t.Parallel()
				cfg := ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: timeout, AllowPrivate: true}
				p := kind.start(t, user, pass)
				res := probe(t, cfg, p.target(kind.typ, user, pass))
				want := ports.ProbeResult{OK: true, ExitIP: "127.0.0.1", Country: "NL", City: "Amsterdam", Timezone: "Europe/Amsterdam", Latency: res.Latency}
				if res != want {
					t.Fatalf("probe = %+v, want %+v", res, want)
				}
				if res.Latency <= 0 || res.Latency > timeout {
					t.Fatalf("latency %s", res.Latency)
				}
				if p.Tunnels() != 1 {
					t.Fatalf("the proxy opened %d tunnels, want 1: the probe did not go through it", p.Tunnels())
				}
			})
			t.Run("wrong password", func(t *testing.T) {
				t.Parallel()
				cfg := ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: timeout, AllowPrivate: true}
				p := kind.start(t, user, pass)
				wantFailure(t, probe(t, cfg, p.target(kind.typ, user, "wrong-"+pass)), "proxy authentication failed")
				if p.Tunnels() != 0 {
					t.Fatalf("the proxy opened a tunnel for a wrong password")
				}
			})
			t.Run("no credentials for a proxy that wants them", func(t *testing.T) {
				t.Parallel()
				cfg := ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: timeout, AllowPrivate: true}
				p := kind.start(t, user, pass)
				wantFailure(t, probe(t, cfg, p.target(kind.typ, "", "")), "proxy authentication failed")
			})
			t.Run("closed port", func(t *testing.T) {
				t.Parallel()
				cfg := ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: timeout, AllowPrivate: true}
				wantFailure(t, probe(t, cfg, ClosedPort(t).target(kind.typ, user, pass)), "proxy refused the connection")
			})
			t.Run("proxy stalls past the time-out", func(t *testing.T) {
				t.Parallel()
				cfg := ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: 300 * time.Millisecond, AllowPrivate: true}
				res := probe(t, cfg, StartStallingProxy(t).target(kind.typ, user, pass))
				wantFailure(t, res, "timed out after 300ms")
				if res.Latency < 300*time.Millisecond || res.Latency > 5*time.Second {
					t.Fatalf("latency %s, want the time-out (300ms) and not much more", res.Latency)
				}
			})
			t.Run("caller gives up", func(t *testing.T) {
				t.Parallel()
				cfg := ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: time.Minute, AllowPrivate: true}
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				res := newProber(t, cfg).Probe(ctx, StartStallingProxy(t).target(kind.typ, user, pass))
				wantFailure(t, res, "the probe was cancelled")
			})
		})
	}

	t.Run("check service answers", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			status int
			body   string
			want   ports.ProbeResult
		}{
			{"with status 503", 503, `{"ip":"127.0.0.1"}`, ports.ProbeResult{Error: "the check service answered with status 503"}},
			{"nonsense", 200, `<html>hello</html>`, ports.ProbeResult{Error: "the check service's answer was not JSON"}},
			{"JSON without an IP", 200, `{"hello":"world"}`, ports.ProbeResult{Error: "the check service's answer had no IP address"}},
			{"an IP that is not one", 200, `{"ip":"not-an-ip"}`, ports.ProbeResult{Error: "the check service's answer had no IP address"}},
			{"ipinfo.io's form", 200, `{"ip":"203.0.113.7","hostname":"exit.example","city":"Berlin","region":"Berlin","country":"DE","loc":"52.5,13.4","timezone":"Europe/Berlin"}`,
				ports.ProbeResult{OK: true, ExitIP: "203.0.113.7", Country: "DE", City: "Berlin", Timezone: "Europe/Berlin"}},
			// Other services' fields are not guessed at: ip-api.com's query
			// and countryCode, httpbin's origin, a country by name.
			{"ip-api.com's form", 200, `{"status":"success","query":"203.0.113.7","countryCode":"DE"}`, ports.ProbeResult{Error: "the check service's answer had no IP address"}},
			{"httpbin's form", 200, `{"origin":"198.51.100.4, 10.0.0.9"}`, ports.ProbeResult{Error: "the check service's answer had no IP address"}},
			{"a country by name", 200, `{"ip":"203.0.113.7","country":"Germany","city":"Berlin"}`, ports.ProbeResult{OK: true, ExitIP: "203.0.113.7", City: "Berlin"}},
			{"a country in lower case", 200, `{"ip":"203.0.113.7","country":"de"}`, ports.ProbeResult{OK: true, ExitIP: "203.0.113.7"}},
			{"IPv6", 200, `{"ip":"2001:db8::5","country":"US"}`, ports.ProbeResult{OK: true, ExitIP: "2001:db8::5", Country: "US"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				cfg := ProberConfig{CheckURL: StartIPEcho(t, answerWith(c.status, c.body)), Timeout: timeout, AllowPrivate: true}
				p := StartConnectProxy(t, user, pass)
				res := probe(t, cfg, p.target("http", user, pass))
				c.want.Latency = res.Latency
				if res != c.want {
					t.Fatalf("probe = %+v, want %+v", res, c.want)
				}
			})
		}
	})

	t.Run("guard", func(t *testing.T) {
		t.Run("refuses internal hosts without connecting", func(t *testing.T) {
			t.Parallel()
			pr := newProber(t, ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: timeout})
			for _, host := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "100.64.0.1", "localhost"} {
				if err := pr.CheckHost(context.Background(), host); err == nil {
					t.Errorf("CheckHost(%s) = nil, want a refusal", host)
				}
			}
		})
		t.Run("refuses to dial a proxy on loopback", func(t *testing.T) {
			t.Parallel()
			cfg := ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: timeout}
			for _, kind := range []struct {
				typ   string
				start func(t *testing.T, user, pass string) *TestProxy
			}{{"http", StartConnectProxy}, {"socks5", StartSOCKS5Proxy}} {
				p := kind.start(t, user, pass)
				wantFailure(t, probe(t, cfg, p.target(kind.typ, user, pass)), "proxy host not allowed")
				if p.Tunnels() != 0 {
					t.Fatalf("%s: the proxy on loopback was used", kind.typ)
				}
			}
		})
		t.Run("private targets allowed", func(t *testing.T) {
			t.Parallel()
			pr := newProber(t, ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: timeout, AllowPrivate: true})
			for _, host := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "localhost"} {
				if err := pr.CheckHost(context.Background(), host); err != nil {
					t.Errorf("CheckHost(%s) with private targets allowed = %v", host, err)
				}
			}
		})
	})

	t.Run("invalid targets", func(t *testing.T) {
		t.Parallel()
		cfg := ProberConfig{CheckURL: StartIPEcho(t, echo), Timeout: timeout, AllowPrivate: true}
		wantFailure(t, probe(t, cfg, ports.ProxyTarget{Type: "ftp", Host: "127.0.0.1", Port: 21}), `unsupported proxy type "ftp"`)
		wantFailure(t, probe(t, cfg, ports.ProxyTarget{Type: "http", Host: "127.0.0.1", Port: 0}), "invalid proxy port 0")
		wantFailure(t, probe(t, cfg, ports.ProxyTarget{Type: "socks5", Host: "", Port: 1080}), "the proxy has no host")
	})
}
