package forwarder

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	socks5 "github.com/armon/go-socks5"

	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

const (
	user = "alice"
	pass = "s3cret-pa55"
)

// target is an origin server on loopback that counts its requests and
// keeps the headers of the last one.
type target struct {
	srv  *httptest.Server
	hits atomic.Int32
	mu   sync.Mutex
	last *http.Request
}

func startTarget(t *testing.T, tlsToo bool, body string) *target {
	t.Helper()
	tg := &target{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.hits.Add(1)
		tg.mu.Lock()
		tg.last = r.Clone(context.Background())
		tg.mu.Unlock()
		if r.Method == http.MethodPost {
			sent, _ := io.ReadAll(r.Body)
			_, _ = io.WriteString(w, "posted "+string(sent))
			return
		}
		_, _ = io.WriteString(w, body+" "+r.URL.RequestURI())
	})
	if tlsToo {
		tg.srv = httptest.NewTLSServer(h)
	} else {
		tg.srv = httptest.NewServer(h)
	}
	t.Cleanup(tg.srv.Close)
	return tg
}

func (tg *target) addr() string { return tg.srv.Listener.Addr().String() }

func (tg *target) lastRequest() *http.Request {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.last
}

// upstream is a proxy on loopback that wants user and pass and records
// what it was asked.
type upstream struct {
	host string
	port int
	mu   sync.Mutex
	// creds are the credentials of each request: every Proxy-Authorization
	// value, joined, for an HTTP proxy; user:pass for SOCKS5.
	creds []string
	// asked are an HTTP proxy's requests: "CONNECT secure.test:443",
	// "GET http://plain.test/path".
	asked []string
	// tunnels is how many tunnels the upstream opened.
	tunnels func() int
	// conns is how many connections an HTTP proxy accepted.
	conns atomic.Int32
}

func (u *upstream) saw(cred, asked string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.creds = append(u.creds, cred)
	if asked != "" {
		u.asked = append(u.asked, asked)
	}
}

func (u *upstream) seen() ([]string, []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.creds...), append([]string(nil), u.asked...)
}

func (u *upstream) proxyTarget(typ, username, password string) *ports.ProxyTarget {
	return &ports.ProxyTarget{Type: typ, Host: u.host, Port: u.port, Username: username, Password: password}
}

// routes map the names tests ask for ("plain.test:80") to servers on
// loopback: the test proxies resolve names only through them, so no test
// looks a name up or dials anything but loopback.
type routes map[string]string

func (r routes) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	to, ok := r[addr]
	if !ok {
		return nil, fmt.Errorf("no route to %s", addr)
	}
	return (&net.Dialer{}).DialContext(ctx, "tcp", to)
}

// squidHandler is an HTTP proxy that behaves as Squid does in its default
// configuration: it wants user and pass, opens CONNECT tunnels only to
// port 443 ("http_access deny CONNECT !SSL_ports", answered 403), and
// serves requests in absolute form by making them itself, without the
// Proxy-Authorization meant for it.
func (u *upstream) squidHandler(t *testing.T, via routes) http.Handler {
	var tunnels atomic.Int32
	u.tunnels = func() int { return int(tunnels.Load()) }
	toOrigin := &http.Transport{DialContext: via.dial, DisableKeepAlives: true}
	t.Cleanup(toOrigin.CloseIdleConnections)
	want := basic(user, pass)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := strings.Join(r.Header.Values("Proxy-Authorization"), ", ")
		u.saw(cred, r.Method+" "+r.RequestURI)
		if cred != want {
			w.Header().Set("Proxy-Authenticate", `Basic realm="squid"`)
			w.WriteHeader(http.StatusProxyAuthRequired)
			return
		}
		if r.Method == http.MethodConnect {
			if _, port, _ := net.SplitHostPort(r.Host); port != "443" {
				http.Error(w, "CONNECT is allowed to port 443 only", http.StatusForbidden)
				return
			}
			target, err := via.dial(r.Context(), "tcp", r.Host)
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			client, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				_ = target.Close()
				return
			}
			tunnels.Add(1)
			_, _ = io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n")
			go func() {
				_, _ = io.Copy(target, rw.Reader)
				_ = target.Close()
			}()
			_, _ = io.Copy(client, target)
			_ = client.Close()
			return
		}
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.Header.Del("Proxy-Authorization")
		resp, err := toOrigin.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

func basic(u, p string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p))
}

// startHTTPUpstream starts a Squid-style proxy, over TLS for overTLS,
// reaching the servers of via.
func startHTTPUpstream(t *testing.T, overTLS bool, via routes) (*upstream, *x509.CertPool) {
	t.Helper()
	u := &upstream{}
	srv := httptest.NewUnstartedServer(u.squidHandler(t, via))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			u.conns.Add(1)
		}
	}
	if overTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	u.host, u.port = splitHostPort(t, srv.Listener.Addr().String())
	if !overTLS {
		return u, nil
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return u, pool
}

// recordingCredentials accepts user and pass and records every attempt.
type recordingCredentials struct{ u *upstream }

func (c recordingCredentials) Valid(username, password string) bool {
	c.u.saw(username+":"+password, "")
	return username == user && password == pass
}

// socksRoutes resolve and rewrite the SOCKS5 proxy's targets through
// routes; addresses pass as they are.
type socksRoutes routes

func (r socksRoutes) Resolve(ctx context.Context, name string) (context.Context, net.IP, error) {
	for addr := range r {
		if host, _, _ := net.SplitHostPort(addr); host == name {
			return ctx, net.IPv4(127, 0, 0, 1), nil
		}
	}
	return ctx, nil, fmt.Errorf("no route to %s", name)
}

func (r socksRoutes) Rewrite(ctx context.Context, req *socks5.Request) (context.Context, *socks5.AddrSpec) {
	to, ok := r[net.JoinHostPort(req.DestAddr.FQDN, strconv.Itoa(req.DestAddr.Port))]
	if req.DestAddr.FQDN == "" || !ok {
		return ctx, req.DestAddr
	}
	host, port, _ := net.SplitHostPort(to)
	n, _ := strconv.Atoi(port)
	return ctx, &socks5.AddrSpec{IP: net.ParseIP(host), Port: n}
}

func startSOCKS5Upstream(t *testing.T, via routes) *upstream {
	t.Helper()
	u := &upstream{}
	var accepted atomic.Int32
	u.tunnels = func() int { return int(accepted.Load()) }
	srv, err := socks5.New(&socks5.Config{
		Credentials: recordingCredentials{u},
		Resolver:    socksRoutes(via),
		Rewriter:    socksRoutes(via),
		Logger:      log.New(io.Discard, "", 0),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				accepted.Add(1)
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
	u.host, u.port = splitHostPort(t, l.Addr().String())
	return u
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

// start runs a forwarder for the test, logging into the returned buffer,
// and checks at the end that Close leaves none of its goroutines behind.
func start(t *testing.T, opts Options) (*Forwarder, *testenv.Output) {
	t.Helper()
	logs := &testenv.Output{}
	opts.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		waitNoForwarderGoroutines(t)
	})
	return f, logs
}

// waitNoForwarderGoroutines polls, with a deadline, until no goroutine
// runs a method of Forwarder.
func waitNoForwarderGoroutines(t *testing.T) {
	t.Helper()
	poll.Check(t, poll.Timeout, "the forwarder's goroutines to end after Close", func() error {
		buf := make([]byte, 1<<20)
		if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "forwarder.(*Forwarder)") {
			return fmt.Errorf("still running:\n%s", stacks)
		}
		return nil
	})
}

// browserAuth is what the test's browser sends the forwarder as its
// Proxy-Authorization; it must go no further.
var browserAuth = basic("browser", "not-for-upstream")

// tracked is how many connections f holds to cut at Close.
func tracked(f *Forwarder) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

// client is an HTTP client that uses the forwarder as its proxy, with
// credentials of its own that must not travel further, and trusts tlsTarget
// under its own address and under any name a test proxy routes to it.
func client(t *testing.T, f *Forwarder, tlsTarget *target) *http.Client {
	t.Helper()
	proxyURL := &url.URL{Scheme: "http", Host: f.Addr(), User: url.UserPassword("browser", "not-for-upstream")}
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	if tlsTarget != nil {
		tr.TLSClientConfig = tlsTarget.srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		// httptest's certificate names 127.0.0.1 and example.com only.
		tr.TLSClientConfig.ServerName = "example.com"
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestThroughUpstream: through every kind of upstream, plain requests and
// HTTPS reach their targets with the upstream's credentials only. An HTTP
// upstream, which like Squid opens tunnels only to port 443, is asked for
// plain pages in absolute form and for a tunnel for HTTPS.
func TestThroughUpstream(t *testing.T) {
	httpAsked := []string{"GET http://plain.test/path?q=1", "CONNECT secure.test:443", "GET http://plain.test/again", "POST http://plain.test/form"}
	cases := []struct {
		name  string
		typ   string
		start func(t *testing.T, via routes) (*upstream, *x509.CertPool)
		// cred is what the upstream must have seen.
		cred string
		// asked is what an HTTP upstream must have been asked, in order.
		asked []string
		// tunnels is how many tunnels the upstream must have opened.
		tunnels int
	}{
		{"http", "http", func(t *testing.T, via routes) (*upstream, *x509.CertPool) { return startHTTPUpstream(t, false, via) },
			basic(user, pass), httpAsked, 1},
		{"https", "https", func(t *testing.T, via routes) (*upstream, *x509.CertPool) { return startHTTPUpstream(t, true, via) },
			basic(user, pass), httpAsked, 1},
		// Over SOCKS5 every request is a tunnel; the plain ones share one.
		{"socks5", "socks5", func(t *testing.T, via routes) (*upstream, *x509.CertPool) { return startSOCKS5Upstream(t, via), nil },
			user + ":" + pass, nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plain := startTarget(t, false, "plain")
			secure := startTarget(t, true, "secure")
			up, roots := tc.start(t, routes{"plain.test:80": plain.addr(), "secure.test:443": secure.addr()})
			f, logs := start(t, Options{Upstream: up.proxyTarget(tc.typ, user, pass), RootCAs: roots})
			c := client(t, f, secure)

			status, body := get(t, c, "http://plain.test/path?q=1")
			if status != http.StatusOK || body != "plain /path?q=1" {
				t.Fatalf("plain GET = %d %q", status, body)
			}
			status, body = get(t, c, "https://secure.test/tls")
			if status != http.StatusOK || body != "secure /tls" {
				t.Fatalf("HTTPS GET = %d %q", status, body)
			}
			// A second plain request on the kept-alive connection.
			status, body = get(t, c, "http://plain.test/again")
			if status != http.StatusOK || body != "plain /again" {
				t.Fatalf("second plain GET = %d %q", status, body)
			}
			resp, err := c.Post("http://plain.test/form", "text/plain", strings.NewReader("a=1&b=2"))
			if err != nil {
				t.Fatal(err)
			}
			posted, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(posted) != "posted a=1&b=2" {
				t.Fatalf("plain POST = %d %q", resp.StatusCode, posted)
			}
			if plain.hits.Load() != 3 || secure.hits.Load() != 1 {
				t.Fatalf("target hits: plain %d, secure %d; want 3 and 1", plain.hits.Load(), secure.hits.Load())
			}
			creds, asked := up.seen()
			if len(creds) == 0 {
				t.Fatal("the upstream saw no request")
			}
			for _, c := range creds {
				if c != tc.cred {
					t.Fatalf("upstream saw credentials %q, want %q", c, tc.cred)
				}
			}
			if tc.asked != nil && !slices.Equal(asked, tc.asked) {
				t.Fatalf("upstream was asked %q, want %q", asked, tc.asked)
			}
			if got := up.tunnels(); got != tc.tunnels {
				t.Fatalf("upstream opened %d tunnels, want %d", got, tc.tunnels)
			}

			last := plain.lastRequest()
			for _, h := range []string{"Proxy-Authorization", "Proxy-Connection"} {
				if v := last.Header.Get(h); v != "" {
					t.Fatalf("target received %s: %q", h, v)
				}
			}
			if last.RequestURI != "/form" || last.Host != "plain.test" {
				t.Fatalf("target's request = %q for host %q, want origin form /form for plain.test", last.RequestURI, last.Host)
			}
			if strings.Contains(logs.String(), pass) {
				t.Fatalf("the logs name the password:\n%s", logs)
			}
		})
	}
}

// rawConnect sends CONNECT addr to the forwarder and returns its answer
// and the connection.
func rawConnect(t *testing.T, f *Forwarder, addr string) (*http.Response, string, net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", f.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	var body string
	if resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = string(b)
	}
	return resp, body, conn, br
}

func TestWrongCredentials(t *testing.T) {
	cases := []struct {
		name  string
		typ   string
		start func(t *testing.T, via routes) *upstream
	}{
		{"http", "http", func(t *testing.T, via routes) *upstream { u, _ := startHTTPUpstream(t, false, via); return u }},
		{"socks5", "socks5", startSOCKS5Upstream},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plain := startTarget(t, false, "plain")
			secure := startTarget(t, true, "secure")
			up := tc.start(t, routes{"plain.test:80": plain.addr(), "secure.test:443": secure.addr()})
			const wrong = "wrong-pa55word"
			f, logs := start(t, Options{Upstream: up.proxyTarget(tc.typ, user, wrong)})

			resp, body, _, _ := rawConnect(t, f, "secure.test:443")
			if resp.StatusCode != http.StatusBadGateway || body != "upstream proxy authentication failed\n" {
				t.Fatalf("CONNECT with wrong upstream credentials = %d %q, want 502 naming the authentication", resp.StatusCode, body)
			}

			c := client(t, f, nil)
			status, body := get(t, c, "http://plain.test/")
			if status != http.StatusBadGateway || body != "upstream proxy authentication failed\n" {
				t.Fatalf("plain GET with wrong upstream credentials = %d %q", status, body)
			}
			if plain.hits.Load() != 0 || secure.hits.Load() != 0 || up.tunnels() != 0 {
				t.Fatalf("something reached a target: plain %d, secure %d, tunnels %d", plain.hits.Load(), secure.hits.Load(), up.tunnels())
			}
			creds, _ := up.seen()
			if len(creds) == 0 {
				t.Fatal("the upstream was never asked")
			}
			if !strings.Contains(logs.String(), "authentication failed") {
				t.Fatalf("the refusal was not logged:\n%s", logs)
			}
			if strings.Contains(logs.String(), wrong) {
				t.Fatalf("the logs name the password:\n%s", logs)
			}
		})
	}
}

func TestUnreachableUpstream(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port := splitHostPort(t, l.Addr().String())
	_ = l.Close()
	f, _ := start(t, Options{Upstream: &ports.ProxyTarget{Type: "http", Host: host, Port: port, Username: user, Password: pass}})
	resp, body, _, _ := rawConnect(t, f, "127.0.0.1:443")
	if resp.StatusCode != http.StatusBadGateway || body != "cannot reach the upstream proxy\n" {
		t.Fatalf("CONNECT through a closed upstream port = %d %q", resp.StatusCode, body)
	}
}

func TestDirect(t *testing.T) {
	t.Run("guard refuses loopback", func(t *testing.T) {
		plain := startTarget(t, false, "plain")
		secure := startTarget(t, true, "secure")
		f, _ := start(t, Options{Guard: netguard.DialControl})

		resp, body, _, _ := rawConnect(t, f, secure.addr())
		if resp.StatusCode != http.StatusBadGateway || body != "the target is not reachable or not allowed\n" {
			t.Fatalf("CONNECT to loopback past the guard = %d %q", resp.StatusCode, body)
		}
		status, body := get(t, client(t, f, nil), plain.srv.URL+"/")
		if status != http.StatusBadGateway || body != "the target is not reachable or not allowed\n" {
			t.Fatalf("plain GET to loopback past the guard = %d %q", status, body)
		}
		if plain.hits.Load() != 0 || secure.hits.Load() != 0 {
			t.Fatalf("a refused target was reached: plain %d, secure %d", plain.hits.Load(), secure.hits.Load())
		}
	})
	t.Run("no guard", func(t *testing.T) {
		plain := startTarget(t, false, "plain")
		secure := startTarget(t, true, "secure")
		f, _ := start(t, Options{})
		c := client(t, f, secure)
		if status, body := get(t, c, plain.srv.URL+"/a"); status != http.StatusOK || body != "plain /a" {
			t.Fatalf("direct plain GET = %d %q", status, body)
		}
		if status, body := get(t, c, secure.srv.URL+"/b"); status != http.StatusOK || body != "secure /b" {
			t.Fatalf("direct HTTPS GET = %d %q", status, body)
		}
	})
}

// TestGuardAppliesToUpstream: with an upstream the guard judges the
// upstream's address, for tunnels and for plain requests alike.
func TestGuardAppliesToUpstream(t *testing.T) {
	for _, typ := range []string{"http", "https"} {
		t.Run(typ, func(t *testing.T) {
			plain := startTarget(t, false, "plain")
			up, roots := startHTTPUpstream(t, typ == "https", routes{"plain.test:80": plain.addr()})
			f, _ := start(t, Options{Upstream: up.proxyTarget(typ, user, pass), Guard: netguard.DialControl, RootCAs: roots})
			resp, body, _, _ := rawConnect(t, f, "secure.test:443")
			if resp.StatusCode != http.StatusBadGateway || body != "the upstream proxy is not reachable or not allowed\n" {
				t.Fatalf("CONNECT through an upstream on loopback past the guard = %d %q", resp.StatusCode, body)
			}
			status, body := get(t, client(t, f, nil), "http://plain.test/")
			if status != http.StatusBadGateway || body != "the upstream proxy is not reachable or not allowed\n" {
				t.Fatalf("plain GET through an upstream on loopback past the guard = %d %q", status, body)
			}
			if n := up.conns.Load(); n != 0 {
				t.Fatalf("the refused upstream was connected to %d times", n)
			}
			if n := plain.hits.Load(); n != 0 {
				t.Fatalf("the target was reached %d times", n)
			}
		})
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	echo := startEcho(t)
	for _, typ := range []string{"direct", "http", "socks5"} {
		t.Run(typ, func(t *testing.T) {
			var opts Options
			// The upstreams tunnel to port 443 only, as Squid does.
			via := routes{"echo.test:443": echo}
			target := "echo.test:443"
			switch typ {
			case "direct":
				target = echo
			case "http":
				up, _ := startHTTPUpstream(t, false, via)
				opts.Upstream = up.proxyTarget("http", user, pass)
			case "socks5":
				opts.Upstream = startSOCKS5Upstream(t, via).proxyTarget("socks5", user, pass)
			}
			f, err := Start(opts)
			if err != nil {
				t.Fatal(err)
			}
			resp, _, conn, br := rawConnect(t, f, target)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("CONNECT = %d", resp.StatusCode)
			}
			if _, err := io.WriteString(conn, "ping\n"); err != nil {
				t.Fatal(err)
			}
			if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
				t.Fatalf("echo through the tunnel = %q, %v", line, err)
			}
			// An idle connection that has not asked anything yet.
			before := tracked(f)
			idle, err := net.Dial("tcp", f.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = idle.Close() }()
			// Accepted first: one still in the listener's backlog when Close
			// shuts the listener is reset by the kernel, not ended.
			poll.Until(t, "the idle connection to be accepted", func() bool { return tracked(f) > before })

			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			waitNoForwarderGoroutines(t)
			for name, r := range map[string]io.Reader{"tunnel": br, "idle connection": idle} {
				if c, ok := r.(net.Conn); ok {
					_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				}
				if n, err := r.Read(make([]byte, 1)); err != io.EOF {
					t.Fatalf("%s after Close: read %d bytes, %v; want EOF", name, n, err)
				}
			}
			if _, err := net.Dial("tcp", f.Addr()); err == nil {
				t.Fatal("the forwarder still accepts after Close")
			}
			if err := f.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
		})
	}
}

func TestStartRefusesBadUpstream(t *testing.T) {
	for _, up := range []ports.ProxyTarget{
		{Type: "ftp", Host: "127.0.0.1", Port: 21},
		{Type: "http", Host: "127.0.0.1", Port: 0},
		{Type: "socks5", Port: 1080},
	} {
		if f, err := Start(Options{Upstream: &up}); err == nil {
			_ = f.Close()
			t.Fatalf("Start with upstream %+v: no error", up)
		}
	}
}

func TestRefusesNonProxyRequest(t *testing.T) {
	f, _ := start(t, Options{})
	conn, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET /relative HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("origin-form request = %d, want 400", resp.StatusCode)
	}
}

func TestEarlyDataAfterConnect(t *testing.T) {
	echo := startEcho(t)
	f, _ := start(t, Options{})
	conn, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	// The bytes for the tunnel come in the same write as the CONNECT, as a
	// client that does not wait for the answer sends them.
	if _, err := fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nearly\n", echo, echo); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT = %v, %v", resp, err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "early\n" {
		t.Fatalf("echo of the early bytes = %q, %v", line, err)
	}
}

// TestServerClosedKeptAliveConnection: an origin that closes its
// connection after each answer without saying so. The forwarder's second
// request on its kept connection fails unanswered, which the client
// retries on a new connection, instead of a 502.
func TestServerClosedKeptAliveConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer func() { _ = c.Close() }()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(req.URL.Path), req.URL.Path)
			}()
		}
	}()
	f, _ := start(t, Options{})
	c := client(t, f, nil)
	for _, path := range []string{"/one", "/two"} {
		if status, body := get(t, c, "http://"+l.Addr().String()+path); status != http.StatusOK || body != path {
			t.Fatalf("GET %s = %d %q", path, status, body)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("origin saw %d connections, want 2", n)
	}
}

// startEcho runs a TCP echo server on loopback: a tunnel to it stays open
// until someone cuts it.
func startEcho(t *testing.T) string {
	t.Helper()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return echo.Addr().String()
}
