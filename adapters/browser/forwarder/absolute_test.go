package forwarder

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

// rawExchange writes requests to the forwarder on one connection, as a
// browser that reuses its connection does, and reads an answer after each.
func rawExchange(t *testing.T, f *Forwarder, requests ...string) []*http.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", f.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	var answers []*http.Response
	for _, raw := range requests {
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer to %q: %v", strings.SplitN(raw, "\r\n", 2)[0], err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		answers = append(answers, resp)
	}
	return answers
}

func bodyOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPlainRequestsShareTheProxyConnection: an HTTP proxy takes requests
// for any host on one connection, so the forwarder keeps its connection to
// the upstream from one host to the next, as browsers do with a proxy.
func TestPlainRequestsShareTheProxyConnection(t *testing.T) {
	one := startTarget(t, false, "one")
	two := startTarget(t, false, "two")
	up, _ := startHTTPUpstream(t, false, routes{"one.test:80": one.addr(), "two.test:8080": two.addr()})
	f, _ := start(t, Options{Upstream: up.proxyTarget("http", user, pass)})
	answers := rawExchange(t, f,
		"GET http://one.test/a HTTP/1.1\r\nHost: one.test\r\n\r\n",
		"GET http://two.test:8080/b HTTP/1.1\r\nHost: two.test:8080\r\n\r\n",
		"GET http://one.test/c HTTP/1.1\r\nHost: one.test\r\n\r\n",
	)
	for i, want := range []string{"one /a", "two /b", "one /c"} {
		if got := bodyOf(t, answers[i]); answers[i].StatusCode != http.StatusOK || got != want {
			t.Fatalf("answer %d = %d %q, want 200 %q", i, answers[i].StatusCode, got, want)
		}
	}
	if _, asked := up.seen(); !slices.Equal(asked, []string{"GET http://one.test/a", "GET http://two.test:8080/b", "GET http://one.test/c"}) {
		t.Fatalf("upstream was asked %q", asked)
	}
	if n := up.conns.Load(); n != 1 {
		t.Fatalf("the forwarder opened %d connections to the upstream, want 1", n)
	}
	if last := two.lastRequest(); last.Host != "two.test:8080" || last.RequestURI != "/b" {
		t.Fatalf("target two was asked %q for host %q", last.RequestURI, last.Host)
	}
}

// scriptedUpstream is an HTTP proxy on loopback that reads one request as
// it was sent, hands it to the test, and answers with the bytes given.
func scriptedUpstream(t *testing.T, answer string) (*ports.ProxyTarget, <-chan *http.Request) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	reqs := make(chan *http.Request, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		reqs <- req
		_, _ = io.WriteString(c, answer)
	}()
	host, port := splitHostPort(t, l.Addr().String())
	return &ports.ProxyTarget{Type: "http", Host: host, Port: port, Username: user, Password: pass}, reqs
}

// TestHopByHopFieldsStayOnTheirHop: fields that concern one connection
// (RFC 9110, section 7.6.1) go no further in either direction; the
// browser's Proxy-Authorization was meant for the forwarder, which sends
// the upstream's own; end-to-end fields pass.
func TestHopByHopFieldsStayOnTheirHop(t *testing.T) {
	const body = "hello"
	up, reqs := scriptedUpstream(t, "HTTP/1.1 200 OK\r\n"+
		"Connection: keep-alive, X-Resp-Hop\r\n"+
		"X-Resp-Hop: for-the-forwarder\r\n"+
		"Keep-Alive: timeout=9\r\n"+
		"Proxy-Authenticate: Basic realm=\"upstream\"\r\n"+
		"X-Resp-End: for-the-browser\r\n"+
		fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
	f, _ := start(t, Options{Upstream: up})
	answers := rawExchange(t, f, "GET http://hop.test/page HTTP/1.1\r\n"+
		"Host: hop.test\r\n"+
		"Proxy-Authorization: "+browserAuth+"\r\n"+
		"Proxy-Connection: keep-alive\r\n"+
		"Connection: keep-alive, X-Hop\r\n"+
		"X-Hop: for-the-forwarder\r\n"+
		"Keep-Alive: timeout=5\r\n"+
		"TE: trailers\r\n"+
		"Upgrade: h2c\r\n"+
		"X-End: for-the-origin\r\n\r\n")

	req := <-reqs
	if req.Method != http.MethodGet || req.RequestURI != "http://hop.test/page" || req.Host != "hop.test" {
		t.Fatalf("upstream was asked %s %s (Host %s), want GET http://hop.test/page in absolute form", req.Method, req.RequestURI, req.Host)
	}
	if got := req.Header.Values("Proxy-Authorization"); len(got) != 1 || got[0] != basic(user, pass) {
		t.Fatalf("upstream got Proxy-Authorization %q, want only the upstream's own", got)
	}
	for _, name := range []string{"Proxy-Connection", "Connection", "X-Hop", "Keep-Alive", "Te", "Upgrade"} {
		if v, ok := req.Header[name]; ok {
			t.Errorf("upstream got %s: %q", name, v)
		}
	}
	if v := req.Header.Get("X-End"); v != "for-the-origin" {
		t.Errorf("upstream got X-End %q, want it passed on", v)
	}

	resp := answers[0]
	if got := bodyOf(t, resp); resp.StatusCode != http.StatusOK || got != body {
		t.Fatalf("browser got %d %q", resp.StatusCode, got)
	}
	for _, name := range []string{"X-Resp-Hop", "Keep-Alive", "Proxy-Authenticate"} {
		if v, ok := resp.Header[name]; ok {
			t.Errorf("browser got %s: %q", name, v)
		}
	}
	if v := resp.Header.Get("X-Resp-End"); v != "for-the-browser" {
		t.Errorf("browser got X-Resp-End %q, want it passed on", v)
	}
}
