package proxydial_test

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/proxydial"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

const user, pass = "carol", "tunn3l-Secret"

func dialer(typ, host string, port int, username, password string) *proxydial.Dialer {
	return &proxydial.Dialer{
		Proxy:     ports.ProxyTarget{Type: typ, Host: host, Port: port, Username: username, Password: password},
		DialProxy: (&net.Dialer{}).DialContext,
	}
}

func dial(t *testing.T, d *proxydial.Dialer, addr string) (net.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, addr)
	if err == nil {
		t.Cleanup(func() { _ = conn.Close() })
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	return conn, err
}

// scriptedProxy is a proxy on loopback that passes each CONNECT it reads
// to the test and lets answer write what it likes; when answer returns
// true, it then echoes what comes through the tunnel.
func scriptedProxy(t *testing.T, answer func(c net.Conn) bool) (int, <-chan *http.Request) {
	t.Helper()
	reqs := make(chan *http.Request, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs <- r.Clone(context.Background())
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		if answer(c) {
			_, _ = io.Copy(c, rw)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, reqs
}

func answerWith(s string) func(net.Conn) bool {
	return func(c net.Conn) bool {
		_, err := io.WriteString(c, s)
		return err == nil && strings.HasPrefix(s, "HTTP/1.1 200")
	}
}

func expectEcho(t *testing.T, conn net.Conn) {
	t.Helper()
	if _, err := io.WriteString(conn, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("echo through the tunnel = %q, %v", line, err)
	}
}

func TestConnectCredentials(t *testing.T) {
	for _, c := range []struct {
		name, username, password, want string
	}{
		{"with", user, pass, "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))},
		{"password only", "", pass, "Basic " + base64.StdEncoding.EncodeToString([]byte(":"+pass))},
		{"without", "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			port, reqs := scriptedProxy(t, answerWith("HTTP/1.1 200 Connection established\r\n\r\n"))
			const target = "target.example:443"
			conn, err := dial(t, dialer("http", "127.0.0.1", port, c.username, c.password), target)
			if err != nil {
				t.Fatal(err)
			}
			req := <-reqs
			if req.Method != http.MethodConnect || req.RequestURI != target || req.Host != target {
				t.Fatalf("the proxy was asked %s %s (Host %s), want CONNECT %s", req.Method, req.RequestURI, req.Host, target)
			}
			if got := req.Header.Get("Proxy-Authorization"); got != c.want {
				t.Fatalf("Proxy-Authorization = %q, want %q", got, c.want)
			}
			if _, sent := req.Header["Proxy-Authorization"]; sent != (c.want != "") {
				t.Fatalf("Proxy-Authorization sent: %v", sent)
			}
			expectEcho(t, conn)
		})
	}
}

// TestBytesAfterTheAnswer: what the proxy sends in the same write as its
// answer belongs to the tunnel.
func TestBytesAfterTheAnswer(t *testing.T) {
	port, _ := scriptedProxy(t, answerWith("HTTP/1.1 200 OK\r\n\r\nhello\n"))
	conn, err := dial(t, dialer("http", "127.0.0.1", port, user, pass), "target.example:443")
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("first read through the tunnel = %q, %v", line, err)
	}
}

func TestLongAnswerWithinTheBound(t *testing.T) {
	padding := "X-Padding: " + strings.Repeat("a", proxydial.MaxAnswer/2) + "\r\n"
	port, _ := scriptedProxy(t, answerWith("HTTP/1.1 200 Connection established\r\n"+padding+"\r\n"))
	conn, err := dial(t, dialer("http", "127.0.0.1", port, user, pass), "target.example:443")
	if err != nil {
		t.Fatal(err)
	}
	expectEcho(t, conn)
}

func TestConnectRefusals(t *testing.T) {
	// An answer that would go on past the bound is cut off there.
	padding := "X-Padding: " + strings.Repeat("a", proxydial.MaxAnswer) + "\r\n"
	for _, c := range []struct {
		name   string
		answer func(net.Conn) bool
		check  func(error) bool
	}{
		{"407", answerWith("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\nContent-Length: 0\r\n\r\n"),
			func(err error) bool { return errors.Is(err, proxydial.ErrAuth) }},
		{"502", answerWith("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"), func(err error) bool {
			var refused *proxydial.RefusedError
			return errors.As(err, &refused) && refused.Status == http.StatusBadGateway
		}},
		{"too long", answerWith("HTTP/1.1 200 Connection established\r\n" + padding + "\r\n"), func(err error) bool {
			var answer *proxydial.AnswerError
			return errors.As(err, &answer) && answer.TooLong
		}},
		{"closed without answer", func(net.Conn) bool { return false }, func(err error) bool {
			var answer *proxydial.AnswerError
			return errors.As(err, &answer) && !answer.TooLong && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))
		}},
		{"not HTTP", answerWith("SSH-2.0-OpenSSH_9.6\r\n\r\n"), func(err error) bool {
			var answer *proxydial.AnswerError
			return errors.As(err, &answer) && !answer.TooLong
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			port, _ := scriptedProxy(t, c.answer)
			conn, err := dial(t, dialer("http", "127.0.0.1", port, user, pass), "target.example:443")
			if err == nil {
				t.Fatalf("a tunnel %v", conn.RemoteAddr())
			}
			if !c.check(err) {
				t.Fatalf("error %T %v", err, err)
			}
			if strings.Contains(err.Error(), pass) {
				t.Fatalf("the error names the password: %v", err)
			}
		})
	}
}

// startTarget is an HTTP server on loopback that answers "hello".
func startTarget(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello")
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// expectHello makes one GET through the tunnel to a startTarget server.
func expectHello(t *testing.T, conn net.Conn) {
	t.Helper()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: target\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != "hello" {
		t.Fatalf("GET through the tunnel = %d %q, %v", resp.StatusCode, body, err)
	}
}

func TestHTTPSProxy(t *testing.T) {
	target := startTarget(t)
	tp := &conformance.TestProxy{}
	srv := httptest.NewUnstartedServer(conformance.ConnectHandler(tp, user, pass))
	// The untrusting client's failed handshake is expected, not news.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	d := dialer("https", "127.0.0.1", port, user, pass)
	d.RootCAs = roots
	conn, err := dial(t, d, target)
	if err != nil {
		t.Fatal(err)
	}
	expectHello(t, conn)

	// A proxy whose certificate is not trusted is sent nothing.
	_, err = dial(t, dialer("https", "127.0.0.1", port, user, pass), target)
	var tlsErr *proxydial.TLSError
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &tlsErr) || !errors.As(err, &unknown) {
		t.Fatalf("dial through an untrusted proxy: %T %v", err, err)
	}
	if tp.Tunnels() != 1 {
		t.Fatalf("the proxy opened %d tunnels, want 1", tp.Tunnels())
	}
}

func TestSOCKS5(t *testing.T) {
	target := startTarget(t)
	proxy := conformance.StartSOCKS5Proxy(t, user, pass)
	conn, err := dial(t, dialer("socks5", proxy.Host, proxy.Port, user, pass), target)
	if err != nil {
		t.Fatal(err)
	}
	expectHello(t, conn)

	if _, err := dial(t, dialer("socks5", proxy.Host, proxy.Port, user, "wrong"), target); !errors.Is(err, proxydial.ErrAuth) {
		t.Fatalf("dial with a wrong password: %v, want ErrAuth", err)
	}
	if _, err := dial(t, dialer("socks5", proxy.Host, proxy.Port, "", ""), target); !errors.Is(err, proxydial.ErrAuth) {
		t.Fatalf("dial without credentials: %v, want ErrAuth", err)
	}
	closed := conformance.ClosedPort(t)
	_, err = dial(t, dialer("socks5", proxy.Host, proxy.Port, user, pass), net.JoinHostPort(closed.Host, strconv.Itoa(closed.Port)))
	var refused *proxydial.RefusedError
	if !errors.As(err, &refused) || refused.Status != 0 {
		t.Fatalf("dial to a closed port: %T %v, want a RefusedError", err, err)
	}
	if proxy.Tunnels() != 1 {
		t.Fatalf("the proxy opened %d tunnels, want 1", proxy.Tunnels())
	}
}

// TestDialProxyErrorsComeBack: the caller's dial to the proxy, where its
// guard lives, is used for every type and its error is not hidden.
func TestDialProxyErrorsComeBack(t *testing.T) {
	errGuard := errors.New("refused by the test's guard")
	for _, typ := range []string{"http", "https", "socks5"} {
		var asked string
		d := &proxydial.Dialer{
			Proxy: ports.ProxyTarget{Type: typ, Host: "proxy.example", Port: 3128},
			DialProxy: func(_ context.Context, _, addr string) (net.Conn, error) {
				asked = addr
				return nil, errGuard
			},
		}
		if _, err := dial(t, d, "target.example:443"); !errors.Is(err, errGuard) {
			t.Errorf("%s: %v, want the dial's error", typ, err)
		}
		if asked != "proxy.example:3128" {
			t.Errorf("%s: dialled %q, want the proxy", typ, asked)
		}
	}
}

func TestContextEndsTheHandshake(t *testing.T) {
	stall := conformance.StartStallingProxy(t)
	for _, typ := range []string{"http", "https", "socks5"} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := dialer(typ, stall.Host, stall.Port, user, pass).DialContext(ctx, "target.example:443")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want the context's deadline", typ, err)
		}
	}
}

func TestUnsupportedType(t *testing.T) {
	d := dialer("ftp", "127.0.0.1", 21, "", "")
	d.DialProxy = func(context.Context, string, string) (net.Conn, error) {
		t.Fatal("an ftp proxy was dialled")
		return nil, nil
	}
	if _, err := dial(t, d, "target.example:443"); err == nil {
		t.Fatal("no error for an ftp proxy")
	}
}
