// Package forwarder owns the local proxy a browser session points its
// browser at. Chromium cannot send credentials to a proxy by itself and
// cannot authenticate to a SOCKS5 proxy at all, so the forwarder accepts
// unauthenticated proxy requests on loopback and carries each one through
// the profile's upstream proxy, authenticating there: through an HTTP
// proxy (over TLS for https proxies) a CONNECT becomes a CONNECT and a
// plain http:// request is sent as it came, in absolute form, as a browser
// would send it; through a SOCKS5 proxy both become tunnels. Without an
// upstream it dials targets itself, through a guard.
package forwarder

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/profilesvc/profilesvc/adapters/proxydial"
	"github.com/profilesvc/profilesvc/ports"
)

const (
	// DefaultDialTimeout bounds opening a tunnel when Options.DialTimeout
	// is not set.
	DefaultDialTimeout = 15 * time.Second
	// maxAcceptDelay caps the pause after a failed Accept (out of file
	// descriptors), so the loop neither spins nor stalls for long.
	maxAcceptDelay = time.Second
)

// Options configure a Forwarder.
type Options struct {
	// Upstream is the proxy to go through, with its credentials; nil dials
	// targets directly.
	Upstream *ports.ProxyTarget
	// Guard runs, as a net.Dialer's Control, on every socket the forwarder
	// connects itself, with the address actually dialled after DNS
	// resolution: the upstream proxy, or each target when there is no
	// upstream. netguard.DialControl keeps the browser off the service's
	// own network; nil allows every address. A refused address is
	// answered 502 in the same words as a name that does not resolve.
	Guard func(network, address string, c syscall.RawConn) error
	// Resolver resolves the names the forwarder dials itself; nil is the
	// system's.
	Resolver *net.Resolver
	// DialTimeout bounds opening one tunnel, the upstream's handshake
	// included. Zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// RootCAs verifies an https upstream; nil is the system's roots.
	RootCAs *x509.CertPool
	// Log receives one line per tunnel that could not be opened; nil logs
	// nothing.
	Log *slog.Logger
	// Listener is where the browser's connections come from: a listener
	// inside the browser's sandbox, which no other process can reach. Nil
	// listens on a loopback port of the system's choice. The forwarder
	// closes it.
	Listener net.Listener
}

// Forwarder is one running local proxy. It is safe for concurrent use.
type Forwarder struct {
	ln net.Listener
	// upstream opens the tunnels when there is an upstream proxy; nil
	// dials targets directly.
	upstream *proxydial.Dialer
	// proxyAuth is the Proxy-Authorization sent with plain requests to an
	// upstream HTTP proxy; empty without credentials.
	proxyAuth string
	rootCAs   *x509.CertPool
	dialer    *net.Dialer
	timeout   time.Duration
	log       *slog.Logger

	// ctx ends with Close, and with it every dial and handshake under way.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

// Start listens on 127.0.0.1:0 and serves until Close. It refuses an
// upstream it could never dial.
func Start(opts Options) (*Forwarder, error) {
	if up := opts.Upstream; up != nil {
		switch {
		case up.Type != "http" && up.Type != "https" && up.Type != "socks5":
			return nil, fmt.Errorf("unsupported proxy type %q", up.Type)
		case up.Port < 1 || up.Port > 65535:
			return nil, fmt.Errorf("invalid proxy port %d", up.Port)
		case up.Host == "":
			return nil, errors.New("the proxy has no host")
		}
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	dialer := &net.Dialer{Resolver: opts.Resolver}
	if guard := opts.Guard; guard != nil {
		dialer.Control = func(network, address string, c syscall.RawConn) error {
			if err := guard(network, address, c); err != nil {
				return &refusedError{err: err}
			}
			return nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Forwarder{
		ln:      ln,
		rootCAs: opts.RootCAs,
		dialer:  dialer,
		timeout: opts.DialTimeout,
		log:     opts.Log,
		ctx:     ctx,
		cancel:  cancel,
		conns:   map[net.Conn]struct{}{},
	}
	if up := opts.Upstream; up != nil {
		f.upstream = &proxydial.Dialer{Proxy: *up, DialProxy: f.dialProxy, RootCAs: opts.RootCAs}
		if up.Username != "" || up.Password != "" {
			f.proxyAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte(up.Username+":"+up.Password))
		}
	}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// Addr is the address the browser is pointed at: "127.0.0.1:PORT".
func (f *Forwarder) Addr() string { return f.ln.Addr().String() }

// Close stops accepting, cuts every open connection and tunnel, and
// returns once every goroutine of the forwarder has ended.
func (f *Forwarder) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	err := f.ln.Close()
	f.cancel()
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return err
}

// track registers c to be cut by Close; false (and c closed) when Close
// has already run.
func (f *Forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

// release closes c and forgets it.
func (f *Forwarder) release(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	_ = c.Close()
}

func (f *Forwarder) serve() {
	defer f.wg.Done()
	delay := time.Duration(0)
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			if f.ctx.Err() != nil {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), maxAcceptDelay)
			f.log.Warn("forwarder: accept failed", "err", err)
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		if !f.track(conn) {
			continue
		}
		f.wg.Add(1)
		go f.handle(conn)
	}
}

// handle serves one browser connection: a CONNECT becomes a tunnel for
// the rest of the connection; plain-HTTP requests are relayed one after
// the other, reusing the connection to an upstream HTTP proxy for every
// host, and a tunnel while they go to the same host.
func (f *Forwarder) handle(client net.Conn) {
	defer f.wg.Done()
	defer f.release(client)
	br := bufio.NewReader(client)
	var up *upstreamConn
	defer func() {
		if up != nil {
			f.release(up.conn)
		}
	}()
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if req.Method == http.MethodConnect {
			if up != nil {
				f.release(up.conn)
				up = nil
			}
			f.tunnel(client, br, req)
			return
		}
		addr, err := originAddr(req)
		if err != nil {
			_ = req.Body.Close()
			writeError(client, http.StatusBadRequest, err.Error())
			return
		}
		if err := checkName(addr); err != nil {
			_ = req.Body.Close()
			f.refuse(client, addr, err)
			return
		}
		// An HTTP proxy takes requests for any host on one connection.
		key := addr
		if f.viaHTTPProxy() {
			key = ""
		}
		if up != nil && up.addr != key {
			f.release(up.conn)
			up = nil
		}
		if up == nil {
			conn, err := f.open(addr)
			if err != nil {
				_ = req.Body.Close()
				f.refuse(client, addr, err)
				return
			}
			if !f.track(conn) {
				_ = req.Body.Close()
				return
			}
			up = &upstreamConn{addr: key, conn: conn, r: bufio.NewReader(conn)}
		}
		if !f.relay(client, up, req, addr) {
			return
		}
	}
}

// upstreamConn is an open connection that plain-HTTP requests reuse: a
// tunnel to addr, or, with addr empty, the upstream HTTP proxy itself.
type upstreamConn struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
	// used is set once a request went through the connection.
	used bool
}

// relay sends req for target through up and the answer back to the
// browser: in origin form through a tunnel, in absolute form with the
// upstream's credentials to an HTTP proxy. It reports whether both
// connections may carry another request.
func (f *Forwarder) relay(client net.Conn, up *upstreamConn, req *http.Request, target string) bool {
	// The browser's own Proxy-Authorization goes with the other hop-by-hop
	// fields: it was meant for the forwarder.
	removeHopHeaders(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		// Present and empty, so Write adds no Go User-Agent of its own.
		req.Header["User-Agent"] = []string{""}
	}
	// The target URI's authority, not a Host field sent beside it, names
	// the host of a request in absolute form (RFC 9112, section 3.2.2).
	req.Host = req.URL.Host
	req.RequestURI = ""
	// No Via is added (RFC 9110, section 7.6.3, asks a proxy for one): the
	// forwarder is the browser's own, and a Via would tell every site that
	// the browser is proxied.
	write, peer := req.Write, target
	if up.addr == "" {
		write, peer = req.WriteProxy, "the upstream proxy"
		if f.proxyAuth != "" {
			req.Header.Set("Proxy-Authorization", f.proxyAuth)
		}
	}
	// A kept-alive connection that the server closed meanwhile fails
	// without an answer, which is what browsers retry on a new connection;
	// on a new connection it is the server's failure.
	reused := up.used
	up.used = true
	if err := write(up.conn); err != nil {
		_ = req.Body.Close()
		if !reused {
			writeError(client, http.StatusBadGateway, "the connection to "+peer+" failed")
		}
		return false
	}
	resp, err := http.ReadResponse(up.r, req)
	if err != nil {
		if !reused {
			writeError(client, http.StatusBadGateway, "no answer from "+peer)
		}
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	if up.addr == "" && resp.StatusCode == http.StatusProxyAuthRequired {
		// The upstream's challenge is the forwarder's to answer, not the
		// browser's: relayed, it would ask the user for credentials the
		// forwarder holds.
		f.refuse(client, target, errAuth)
		return false
	}
	// An answer whose end is the end of the connection cannot share it.
	keep := !req.Close && !resp.Close && (resp.ContentLength >= 0 || isChunked(resp.TransferEncoding) ||
		!bodyAllowed(req.Method, resp.StatusCode))
	removeHopHeaders(resp.Header)
	resp.Close = !keep
	if err := resp.Write(client); err != nil {
		return false
	}
	return keep
}

// tunnel answers a CONNECT: it opens the tunnel, says so, then copies both
// ways until either side ends or Close cuts it.
func (f *Forwarder) tunnel(client net.Conn, br *bufio.Reader, req *http.Request) {
	_ = req.Body.Close()
	addr := req.Host
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "443")
	}
	if err := checkName(addr); err != nil {
		f.refuse(client, addr, err)
		return
	}
	conn, err := f.dial(addr)
	if err != nil {
		f.refuse(client, addr, err)
		return
	}
	if !f.track(conn) {
		return
	}
	defer f.release(conn)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	f.wg.Add(1)
	go f.copyUp(conn, client, br)
	_, _ = io.Copy(client, conn)
	_ = client.Close()
}

// copyUp copies what the browser sends, its bytes already read after the
// CONNECT first, into the tunnel, and cuts the tunnel when the browser
// stops.
func (f *Forwarder) copyUp(conn, client net.Conn, br *bufio.Reader) {
	defer f.wg.Done()
	if n := br.Buffered(); n > 0 {
		buffered, _ := br.Peek(n)
		if _, err := conn.Write(buffered); err != nil {
			_ = conn.Close()
			return
		}
	}
	_, _ = io.Copy(conn, client)
	_ = conn.Close()
}

// errReservedName is a target in the .invalid domain, which RFC 6761
// reserves for names that never resolve: the runtime points the
// browser's own background requests (component updates) there, and they
// end here, with no packet sent to the upstream proxy or anyone.
var errReservedName = errors.New("the name is in the reserved .invalid domain")

// checkName refuses a target in the .invalid domain.
func checkName(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "invalid" || strings.HasSuffix(host, ".invalid") {
		return &refusedError{err: errReservedName}
	}
	return nil
}

// refuse answers the browser that addr could not be reached, in words
// that name neither the upstream's credentials nor its address.
func (f *Forwarder) refuse(client net.Conn, addr string, err error) {
	status, reason := explain(err)
	if f.ctx.Err() != nil {
		// Closed: the browser is going away and the failure is Close's.
		return
	}
	msg := err.Error()
	if f.upstream != nil && f.upstream.Proxy.Password != "" {
		msg = strings.ReplaceAll(msg, f.upstream.Proxy.Password, "***")
	}
	f.log.Info("forwarder: tunnel refused", "target", addr, "status", status, "reason", reason, "err", msg)
	writeError(client, status, reason)
}

// viaHTTPProxy reports whether the upstream is an HTTP proxy, which takes
// plain requests as they are rather than through a tunnel.
func (f *Forwarder) viaHTTPProxy() bool {
	return f.upstream != nil && f.upstream.Proxy.Type != "socks5"
}

// open connects for plain requests to addr: to an upstream HTTP proxy
// itself, since many refuse CONNECT to any port but 443 (Squid's default
// configuration does), or else a tunnel to addr.
func (f *Forwarder) open(addr string) (net.Conn, error) {
	if !f.viaHTTPProxy() {
		return f.dial(addr)
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.timeout)
	defer cancel()
	up := f.upstream.Proxy
	conn, err := f.dialProxy(ctx, "tcp", net.JoinHostPort(up.Host, strconv.Itoa(up.Port)))
	if err != nil || up.Type != "https" {
		return conn, err
	}
	// The TLS proxydial uses for its CONNECT to an https proxy.
	tc := tls.Client(conn, &tls.Config{MinVersion: tls.VersionTLS12, ServerName: up.Host, RootCAs: f.rootCAs})
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &gatewayError{reason: "TLS to the upstream proxy failed", err: err}
	}
	return &tlsConn{Conn: tc, raw: conn}, nil
}

// tlsConn is a TLS connection to the upstream proxy whose Close cuts the
// socket at once: a TLS close alert could wait on a write that Close means
// to end.
type tlsConn struct {
	*tls.Conn
	raw net.Conn
}

func (c *tlsConn) Close() error { return c.raw.Close() }

// dial opens a connection to addr: through the upstream when there is one,
// else directly.
func (f *Forwarder) dial(addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(f.ctx, f.timeout)
	defer cancel()
	if f.upstream == nil {
		return f.dialer.DialContext(ctx, "tcp", addr)
	}
	conn, err := f.upstream.DialContext(ctx, addr)
	if err != nil {
		return nil, upstreamError(err)
	}
	return conn, nil
}

// dialProxy connects to the upstream proxy itself, and marks its failures
// as the proxy's.
func (f *Forwarder) dialProxy(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := f.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, &proxyUnreachableError{err: err}
	}
	return conn, nil
}

// upstreamError gives the upstream's refusals the reason the browser is
// answered.
func upstreamError(err error) error {
	var tlsErr *proxydial.TLSError
	var answer *proxydial.AnswerError
	var refused *proxydial.RefusedError
	switch {
	case errors.Is(err, proxydial.ErrAuth):
		return errAuth
	case errors.As(err, &tlsErr):
		return &gatewayError{reason: "TLS to the upstream proxy failed", err: tlsErr.Err}
	case errors.As(err, &answer):
		return &gatewayError{reason: "the upstream proxy gave no valid answer", err: answer.Err}
	case errors.As(err, &refused) && refused.Status != 0:
		return &gatewayError{reason: fmt.Sprintf("the upstream proxy refused the tunnel (status %d)", refused.Status)}
	case errors.As(err, &refused):
		return &gatewayError{reason: "the upstream proxy could not reach the target", err: refused.Err}
	}
	return err
}

// gatewayError is a failure of the upstream with a reason meant for the
// browser's user.
type gatewayError struct {
	reason string
	err    error
}

func (e *gatewayError) Error() string {
	if e.err == nil {
		return e.reason
	}
	return e.reason + ": " + e.err.Error()
}

func (e *gatewayError) Unwrap() error { return e.err }

var errAuth = &gatewayError{reason: "upstream proxy authentication failed"}

// proxyUnreachableError is a failed dial to the upstream proxy itself.
type proxyUnreachableError struct{ err error }

func (e *proxyUnreachableError) Error() string { return "dial upstream proxy: " + e.err.Error() }
func (e *proxyUnreachableError) Unwrap() error { return e.err }

// refusedError is an address the guard refused.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "refused by the guard: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// explain gives the status and reason the browser is answered for a
// failed dial. An address the guard refused and a name that does not
// resolve read alike: whoever drives the browser reads the answer, and a
// difference would tell them which names exist on the service's network.
func explain(err error) (int, string) {
	var refused *refusedError
	var gateway *gatewayError
	var unreachable *proxyUnreachableError
	var dnsErr *net.DNSError
	hidden := errors.As(err, &refused) || errors.As(err, &dnsErr)
	switch {
	case hidden && errors.As(err, &unreachable):
		return http.StatusBadGateway, "the upstream proxy is not reachable or not allowed"
	case hidden:
		return http.StatusBadGateway, "the target is not reachable or not allowed"
	case errors.As(err, &gateway):
		return http.StatusBadGateway, gateway.reason
	case isTimeout(err):
		return http.StatusGatewayTimeout, "timed out"
	case errors.As(err, &unreachable):
		return http.StatusBadGateway, "cannot reach the upstream proxy"
	}
	return http.StatusBadGateway, "cannot reach the target"
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &t) && t.Timeout())
}

// writeError answers the browser with status and a one-line reason, and
// asks it to close the connection.
func writeError(w io.Writer, status int, reason string) {
	body := reason + "\n"
	_, _ = fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// originAddr is the host:port a proxy request in absolute form is for.
func originAddr(req *http.Request) (string, error) {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		return "", errors.New("only CONNECT and absolute http:// requests are proxied")
	}
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port), nil
}

// hopHeaders concern one connection only and are not forwarded (RFC 9110,
// section 7.6.1; Transfer-Encoding and the framing it implies, RFC 9112,
// section 6.1, are the writer's own), nor are Proxy-* fields, which are
// meant for the proxy they were sent to: the browser's credentials for
// the forwarder, the upstream's challenge to the forwarder.
var hopHeaders = []string{"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
	for name := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(name), "Proxy-") {
			delete(h, name)
		}
	}
}

func isChunked(te []string) bool { return len(te) > 0 && te[0] == "chunked" }

// bodyAllowed reports whether an answer to method with status has a body
// at all.
func bodyAllowed(method string, status int) bool {
	return method != http.MethodHead && status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
