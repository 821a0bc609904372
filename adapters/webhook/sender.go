// Package webhook owns the outbound side of webhook delivery: the HTTP
// client that POSTs deliveries to customers' servers, kept (with the URLs
// customers register) away from the service's own network by the shared
// guard of adapters/netguard, and the delivery pipeline's Prometheus metrics.
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.WebhookSender = (*Sender)(nil)

const (
	// DefaultTimeout bounds an attempt when Options.Timeout is not set.
	DefaultTimeout = 5 * time.Second
	// drainLimit is how much of a response body is read: enough for the
	// usual short answer, so the connection goes back to the pool, and
	// small enough that a receiver streaming gigabytes costs nothing.
	drainLimit = 64 << 10
	// answerHead is what is read of an answer for its excerpt: enough for
	// webhook.MaxAnswerRunes characters of any UTF-8.
	answerHead = 4 * webhook.MaxAnswerRunes
	// minIdlePerHost keeps connections to a busy receiver open between
	// attempts; net/http's default of 2 halves throughput.
	minIdlePerHost = 32
	// maxErrorLen keeps an error from a misbehaving receiver short enough
	// for the attempt log.
	maxErrorLen = 200
)

// Options configure a Sender.
type Options struct {
	// Timeout is how long a receiver has to answer, from dialling to the
	// end of the (drained) body. Zero means DefaultTimeout.
	Timeout time.Duration
	// AllowPrivate lets deliveries reach loopback, private, link-local and
	// metadata addresses, and plain http: for development and tests only.
	AllowPrivate bool
	// Resolver resolves receivers' host names; nil is net.DefaultResolver.
	Resolver *net.Resolver
	// MaxConnsPerHost bounds the connections to one receiver; 0 is no bound.
	MaxConnsPerHost int
}

// Sender POSTs webhook deliveries over HTTP. It is safe for concurrent use
// and keeps connections to receivers alive between attempts.
type Sender struct {
	client       *http.Client
	transport    *http.Transport
	resolver     *net.Resolver
	timeout      time.Duration
	allowPrivate bool
}

// NewSender returns a Sender with its own connection pool.
func NewSender(opts Options) *Sender {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	resolver := opts.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	dialer := &net.Dialer{
		Timeout:   opts.Timeout,
		KeepAlive: 30 * time.Second,
		Resolver:  resolver,
	}
	if !opts.AllowPrivate {
		dialer.Control = netguard.DialControl
	}
	transport := &http.Transport{
		// No proxy from HTTP(S)_PROXY: the guard checks the address dialled,
		// which would be the proxy's, not the receiver's.
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: opts.Timeout,
		MaxIdleConnsPerHost: max(minIdlePerHost, opts.MaxConnsPerHost),
		MaxConnsPerHost:     opts.MaxConnsPerHost,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Sender{
		client: &http.Client{
			Transport: transport,
			Timeout:   opts.Timeout,
			// A redirect's status is the receiver's answer: following it
			// could lead anywhere, and the payload was meant for this URL.
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		transport:    transport,
		resolver:     resolver,
		timeout:      opts.Timeout,
		allowPrivate: opts.AllowPrivate,
	}
}

// CloseIdleConnections closes the pooled connections, for shutdown.
func (s *Sender) CloseIdleConnections() { s.transport.CloseIdleConnections() }

// Send POSTs r.Body to r.URL once with r.Headers (Content-Type defaults to
// application/json). Latency runs until the body was read (up to 64 KiB).
// Errors are short, name no header or body, and fit the attempt log.
func (s *Sender) Send(ctx context.Context, r ports.WebhookRequest) (ports.WebhookResponse, error) {
	u, err := s.parseURL(r.URL)
	if err != nil {
		return ports.WebhookResponse{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(r.Body))
	if err != nil {
		return ports.WebhookResponse{}, errors.New("invalid request")
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}

	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return ports.WebhookResponse{}, s.describe(ctx, u.Hostname(), err)
	}
	// The status is the answer; a body cut short (time-out, reset) does
	// not change it, so a read error is not an attempt error. Its start is
	// kept for the attempt log, the rest drained.
	head := make([]byte, answerHead)
	n, _ := io.ReadFull(resp.Body, head)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit-int64(n)))
	_ = resp.Body.Close()
	return ports.WebhookResponse{StatusCode: resp.StatusCode, Latency: time.Since(start), Answer: webhook.Excerpt(head[:n])}, nil
}

// CheckTarget refuses a URL the sender would not deliver to: not https
// (http too when private targets are allowed), no host, a bad port, a host
// that does not resolve, or one with any forbidden address among those it
// resolves to (an attacker controls which one a later dial picks).
func (s *Sender) CheckTarget(ctx context.Context, rawURL string) error {
	u, err := s.parseURL(rawURL)
	if err != nil {
		return err
	}
	return netguard.CheckHost(ctx, s.resolver, u.Hostname(), s.allowPrivate)
}

// parseURL accepts an absolute https URL with a host (or http when private
// targets are allowed) and an optional valid port.
func (s *Sender) parseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("not a valid URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && s.allowPrivate:
	default:
		return nil, errors.New("scheme must be https")
	}
	if u.Hostname() == "" {
		return nil, errors.New("URL has no host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("URL has an invalid port")
		}
	}
	return u, nil
}

// describe turns a client error for a receiver at host into a short
// message for the attempt log. It never uses the url.Error text, which
// repeats the URL (and its query, which may carry a token); net/http's own
// errors name neither header values nor the body. A refused address and a
// failed lookup read alike, as in CheckTarget: the attempt log is the
// client's, and a difference would tell it which internal names exist.
func (s *Sender) describe(ctx context.Context, host string, err error) error {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.Is(err, netguard.ErrRefused):
		return &netguard.HostError{Host: host, Cause: netguard.ErrRefused}
	case ctx.Err() != nil:
		// The caller gave up (shutdown, its own deadline): not the
		// receiver's fault, and errors.Is still tells the caller why.
		return fmt.Errorf("aborted: %w", ctx.Err())
	case errors.As(err, &dnsErr):
		return &netguard.HostError{Host: host, Cause: dnsErr}
	case isTimeout(err):
		return fmt.Errorf("timeout after %s", s.timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("connection refused")
	case errors.Is(err, syscall.ECONNRESET):
		return errors.New("connection reset")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return errors.New("host unreachable")
	case errors.As(err, &certErr):
		return fmt.Errorf("tls: certificate not valid: %s", truncate(certErr.Err.Error()))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("connection closed before a response")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return errors.New(truncate(err.Error()))
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

func truncate(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	cut := maxErrorLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
