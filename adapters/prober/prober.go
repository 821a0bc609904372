// Package prober tests a proxy through the network: it connects through
// the proxy (HTTP CONNECT, over TLS for https proxies, or SOCKS5) to the
// configured check service, an IP echo, and reports the exit address and
// location it saw. The proxy host is dialled through the shared SSRF
// guard; the check URL is the operator's configuration and is trusted.
package prober

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/adapters/proxydial"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.ProxyProber = (*Prober)(nil)

const (
	// DefaultTimeout bounds a probe when Options.Timeout is not set.
	DefaultTimeout = 10 * time.Second
	// answerLimit is how much of the check service's answer is read: an
	// IP echo answers in a few hundred bytes.
	answerLimit = 64 << 10
	// maxErrorLen keeps an unexpected error short enough for a person.
	maxErrorLen = 160
)

// Options configure a Prober.
type Options struct {
	// CheckURL is the IP echo service reached through the proxy.
	CheckURL string
	// Timeout bounds a whole probe, from dialling the proxy to the end of
	// the check service's answer. Zero means DefaultTimeout.
	Timeout time.Duration
	// AllowPrivate lets probes reach proxies on loopback, private,
	// link-local and metadata addresses: for development and tests only.
	AllowPrivate bool
	// Resolver resolves proxy host names; nil is net.DefaultResolver.
	Resolver *net.Resolver
	// RootCAs verifies https proxies and an https check URL; nil is the
	// system's roots.
	RootCAs *x509.CertPool
}

// Prober implements ports.ProxyProber. It keeps no connection between
// probes and is safe for concurrent use.
type Prober struct {
	checkURL     *url.URL
	checkAddr    string
	timeout      time.Duration
	allowPrivate bool
	resolver     *net.Resolver
	rootCAs      *x509.CertPool
}

// New returns a Prober, or an error when the check URL is not an absolute
// http or https URL.
func New(opts Options) (*Prober, error) {
	u, err := url.Parse(opts.CheckURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, fmt.Errorf("proxy check URL %q is not an absolute http or https URL", opts.CheckURL)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	return &Prober{
		checkURL:     u,
		checkAddr:    net.JoinHostPort(u.Hostname(), port),
		timeout:      opts.Timeout,
		allowPrivate: opts.AllowPrivate,
		resolver:     opts.Resolver,
		rootCAs:      opts.RootCAs,
	}, nil
}

// CheckHost refuses a proxy host the prober would not dial, by the same
// rule as at dial time, without connecting.
func (p *Prober) CheckHost(ctx context.Context, host string) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	return netguard.CheckHost(ctx, p.resolver, host, p.allowPrivate)
}

// Probe makes one GET of the check URL through the proxy. Every failure is
// a result with OK false and an Error that names the cause and never the
// password.
func (p *Prober) Probe(ctx context.Context, target ports.ProxyTarget) ports.ProbeResult {
	start := time.Now()
	budget := p.timeout
	if deadline, ok := ctx.Deadline(); ok && deadline.Sub(start) < budget {
		budget = roughly(deadline.Sub(start))
	}
	pctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	res, err := p.probe(pctx, target)
	if err != nil {
		res = ports.ProbeResult{Error: describe(ctx, pctx, err, budget, target.Password, !p.allowPrivate)}
	}
	res.Latency = time.Since(start)
	return res
}

// roughly rounds a caller's remaining time to what it was most likely set
// to: 200ms rather than 199.93ms.
func roughly(d time.Duration) time.Duration {
	if d >= 10*time.Millisecond {
		return d.Round(10 * time.Millisecond)
	}
	return max(d.Round(time.Millisecond), 0)
}

// failure is an error whose text is already meant for a person.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

func fail(format string, args ...any) error { return &failure{msg: fmt.Sprintf(format, args...)} }

var errAuth = fail("proxy authentication failed")

func (p *Prober) probe(ctx context.Context, target ports.ProxyTarget) (ports.ProbeResult, error) {
	switch {
	case target.Type != "http" && target.Type != "https" && target.Type != "socks5":
		return ports.ProbeResult{}, fail("unsupported proxy type %q", target.Type)
	case target.Port < 1 || target.Port > 65535:
		return ports.ProbeResult{}, fail("invalid proxy port %d", target.Port)
	case target.Host == "":
		return ports.ProbeResult{}, fail("the proxy has no host")
	}
	transport := &http.Transport{
		// Every connection is a new tunnel through the proxy: the probe
		// measures the proxy, not a pooled connection.
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return p.tunnel(ctx, target, addr)
		},
		TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.rootCAs},
		DisableKeepAlives: true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.checkURL.String(), nil)
	if err != nil {
		return ports.ProbeResult{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return ports.ProbeResult{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return ports.ProbeResult{}, fail("the check service answered with status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, answerLimit))
	if err != nil {
		return ports.ProbeResult{}, err
	}
	return parseAnswer(body)
}

// parseAnswer reads the answer of the check service in the one form the
// service documents, ipinfo.io's: the exit address in ip, and where the
// service has them country (an ISO 3166-1 alpha-2 code), city and timezone
// (an IANA zone name). Another service is used through a URL that answers
// in this form; a country in another form (a name, say) is left out rather
// than guessed at, so "auto" falls back as it does without one.
func parseAnswer(body []byte) (ports.ProbeResult, error) {
	var answer map[string]any
	if err := json.Unmarshal(body, &answer); err != nil {
		return ports.ProbeResult{}, fail("the check service's answer was not JSON")
	}
	str := func(key string) string {
		s, _ := answer[key].(string)
		return strings.TrimSpace(s)
	}
	ip, err := netip.ParseAddr(str("ip"))
	if err != nil {
		return ports.ProbeResult{}, fail("the check service's answer had no IP address")
	}
	country := str("country")
	if !isCountryCode(country) {
		country = ""
	}
	return ports.ProbeResult{
		OK:       true,
		ExitIP:   ip.String(),
		Country:  country,
		City:     str("city"),
		Timezone: str("timezone"),
	}, nil
}

// isCountryCode reports whether s has the form of an ISO 3166-1 alpha-2
// code: two capital ASCII letters.
func isCountryCode(s string) bool {
	return len(s) == 2 && 'A' <= s[0] && s[0] <= 'Z' && 'A' <= s[1] && s[1] <= 'Z'
}

// tunnel opens a connection to addr through the proxy.
func (p *Prober) tunnel(ctx context.Context, target ports.ProxyTarget, addr string) (net.Conn, error) {
	d := &proxydial.Dialer{Proxy: target, DialProxy: p.dial, RootCAs: p.rootCAs}
	conn, err := d.DialContext(ctx, addr)
	if err != nil {
		return nil, proxyError(err)
	}
	return conn, nil
}

// dial connects to the proxy itself, through the guard unless private
// targets are allowed.
func (p *Prober) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Resolver: p.resolver}
	if !p.allowPrivate {
		d.Control = netguard.DialControl
	}
	return d.DialContext(ctx, network, addr)
}

// proxyError words the proxy's refusals for a person. Other failures keep
// their cause (refused, unreachable, not allowed, timed out) for describe.
func proxyError(err error) error {
	var refused *proxydial.RefusedError
	var answer *proxydial.AnswerError
	switch {
	case errors.Is(err, proxydial.ErrAuth):
		return errAuth
	case errors.As(err, &refused) && refused.Status != 0:
		return fail("the proxy could not connect to the check service (status %d)", refused.Status)
	case errors.As(err, &refused):
		return fail("the proxy could not connect to the check service")
	case errors.As(err, &answer) && answer.TooLong:
		return fail("the proxy's answer to CONNECT was too long")
	case errors.As(err, &answer):
		return answer.Err
	}
	return err
}

// refusedHost is the one answer, while the guard is on, for a proxy host
// the guard refused and for one that did not resolve: the result is the
// client's to read, and a difference would tell it which names exist on
// the service's own network (a stored host whose name now leads there).
const refusedHost = "proxy host not allowed"

// describe turns a probe's error into words a person tells apart. ctx is
// the caller's, pctx the probe's own, and budget the time it had: the
// prober's time-out or the caller's shorter deadline. guarded says the
// guard was on; without it nothing is refused, so a name that does not
// resolve may say so.
func describe(ctx, pctx context.Context, err error, budget time.Duration, password string, guarded bool) string {
	var f *failure
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, netguard.ErrRefused):
		return refusedHost
	case errors.As(err, &f):
		return f.msg
	case errors.Is(ctx.Err(), context.Canceled):
		return "the probe was cancelled"
	case pctx.Err() != nil, isTimeout(err):
		return "timed out after " + budget.String()
	case errors.As(err, &dnsErr) && guarded:
		return refusedHost
	case errors.As(err, &dnsErr):
		return "proxy host not found"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "proxy refused the connection"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "proxy not reachable"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the proxy closed the connection"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "***")
	}
	if len(msg) > maxErrorLen {
		msg = msg[:maxErrorLen]
	}
	return "the connection through the proxy failed: " + strings.ToValidUTF8(msg, "")
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &t) && t.Timeout())
}
