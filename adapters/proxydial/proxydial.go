// Package proxydial opens tunnels through an upstream proxy: HTTP CONNECT,
// over TLS for https proxies, or SOCKS5, authenticating with the proxy's
// credentials. It owns the handshake and its limits; the adapters that
// dial through a proxy keep their own words for its failures, told apart
// by the error kinds declared here.
package proxydial

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/proxy"

	"github.com/profilesvc/profilesvc/ports"
)

// MaxAnswer bounds a proxy's answer to CONNECT: a few short lines, so one
// that never ends is cut off instead of filling memory.
const MaxAnswer = 16 << 10

// ErrAuth is a proxy that refused the credentials: a 407 answer to
// CONNECT, or a failed SOCKS5 authentication.
var ErrAuth = errors.New("proxy authentication failed")

// TLSError is a failed TLS handshake with an https proxy.
type TLSError struct{ Err error }

func (e *TLSError) Error() string { return "TLS to the proxy failed: " + e.Err.Error() }
func (e *TLSError) Unwrap() error { return e.Err }

// AnswerError is an answer to CONNECT that could not be read: cut off,
// malformed, or, with TooLong, longer than MaxAnswer.
type AnswerError struct {
	TooLong bool
	Err     error
}

func (e *AnswerError) Error() string {
	if e.TooLong {
		return "the proxy's answer to CONNECT was too long"
	}
	return "reading the proxy's answer to CONNECT: " + e.Err.Error()
}

func (e *AnswerError) Unwrap() error { return e.Err }

// RefusedError is a proxy that answered but would not open the tunnel.
// Status is its answer to CONNECT; zero for SOCKS5, whose reply is in Err.
type RefusedError struct {
	Status int
	Err    error
}

func (e *RefusedError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("the proxy refused the tunnel (status %d)", e.Status)
	}
	return "the proxy refused the tunnel: " + e.Err.Error()
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Dialer opens tunnels through one upstream proxy. It keeps no connection
// between dials and is safe for concurrent use.
type Dialer struct {
	// Proxy is the upstream, of type http, https or socks5, with its
	// credentials; empty ones send none.
	Proxy ports.ProxyTarget
	// DialProxy connects to the proxy itself. The caller's guard and
	// resolver live here, and its errors come back as they are.
	DialProxy func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs verifies an https proxy; nil is the system's roots.
	RootCAs *x509.CertPool
}

// DialContext opens a tunnel to addr. ctx bounds the handshake, not the
// tunnel it returns; when ctx ends first, its error is returned.
func (d *Dialer) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	up := d.Proxy
	proxyAddr := net.JoinHostPort(up.Host, strconv.Itoa(up.Port))
	switch up.Type {
	case "socks5":
		return d.socks5(ctx, proxyAddr, addr)
	case "http", "https":
	default:
		return nil, fmt.Errorf("unsupported proxy type %q", up.Type)
	}
	conn, err := d.DialProxy(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, err
	}
	// Reads and writes to the proxy end with the handshake's time.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	tunnel, err := d.connect(ctx, conn, addr)
	if !stop() || err != nil {
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return tunnel, nil
}

func (d *Dialer) socks5(ctx context.Context, proxyAddr, addr string) (net.Conn, error) {
	var auth *proxy.Auth
	if d.Proxy.Username != "" || d.Proxy.Password != "" {
		auth = &proxy.Auth{User: d.Proxy.Username, Password: d.Proxy.Password}
	}
	s, err := proxy.SOCKS5("tcp", proxyAddr, auth, dialFunc(d.DialProxy))
	if err != nil {
		return nil, err
	}
	conn, err := s.(proxy.ContextDialer).DialContext(ctx, "tcp", addr)
	if err != nil {
		if err := ended(ctx); err != nil {
			return nil, err
		}
		return nil, socksError(err)
	}
	return conn, nil
}

// ended is ctx's error once ctx is done or past its deadline. The SOCKS5
// client sets ctx's deadline on the socket, which can fire, saying only
// "i/o timeout", before ctx's own timer has.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// connect asks an HTTP proxy, over conn, for a tunnel to addr.
func (d *Dialer) connect(ctx context.Context, conn net.Conn, addr string) (net.Conn, error) {
	up := d.Proxy
	raw := conn
	if up.Type == "https" {
		tc := tls.Client(conn, &tls.Config{MinVersion: tls.VersionTLS12, ServerName: up.Host, RootCAs: d.RootCAs})
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, &TLSError{Err: err}
		}
		conn = tc
	}
	req := &http.Request{
		Method: http.MethodConnect,
		URL:    &url.URL{Opaque: addr},
		Host:   addr,
		Header: http.Header{},
	}
	if up.Username != "" || up.Password != "" {
		cred := base64.StdEncoding.EncodeToString([]byte(up.Username + ":" + up.Password))
		req.Header.Set("Proxy-Authorization", "Basic "+cred)
	}
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	limited := &io.LimitedReader{R: conn, N: MaxAnswer}
	br := bufio.NewReader(limited)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, &AnswerError{TooLong: limited.N == 0, Err: err}
	}
	limited.N = math.MaxInt64
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusProxyAuthRequired:
		return nil, ErrAuth
	case resp.StatusCode != http.StatusOK:
		return nil, &RefusedError{Status: resp.StatusCode}
	}
	return &bufferedConn{Conn: conn, r: br, raw: raw}, nil
}

// bufferedConn reads first what the proxy sent after its answer, then the
// rest of the tunnel. Closing it cuts the socket under any TLS at once: a
// TLS close alert could wait on a write that Close means to end.
type bufferedConn struct {
	net.Conn
	r   *bufio.Reader
	raw net.Conn
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *bufferedConn) Close() error { return c.raw.Close() }

// dialFunc hands the SOCKS5 client the caller's dial to the proxy.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (f dialFunc) Dial(network, addr string) (net.Conn, error) {
	return f(context.Background(), network, addr)
}

func (f dialFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}

// socksError gives the SOCKS5 client's failures that are plain strings
// their kind. A failed dial to the proxy itself keeps its cause wrapped.
func socksError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "username/password authentication failed"),
		strings.Contains(msg, "no acceptable authentication methods"):
		return ErrAuth
	case strings.Contains(msg, "unknown error"):
		return &RefusedError{Err: err}
	}
	return err
}
