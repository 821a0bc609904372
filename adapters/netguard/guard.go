// Package netguard keeps the service's outbound connections to addresses
// that customers choose (webhook receivers, proxy hosts) away from the
// service's own network (SSRF). Every adapter that dials such an address
// uses this one guard, so the rule is written and maintained once.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"syscall"

	"code.dny.dev/ssrf"
)

// guardian refuses every address in the IANA special-purpose registries
// (IPv4 and IPv6), every IPv6 address outside global unicast (which covers
// IPv4-mapped and IPv4-compatible forms, NAT64 64:ff9b::/96, unique local
// and link-local ranges, the AWS metadata address fd00:ec2::254) and 6to4
// 2002::/16, whose addresses embed an IPv4 one. The registries are
// maintained upstream, generated from IANA's own files, rather than copied
// here by hand. Receivers and proxies may listen on any port.
var guardian = ssrf.New(ssrf.WithAnyPort())

// ErrRefused is what DialControl answers for every address it refuses. It
// does not say which address was refused nor why: for a name, that would
// tell a client what the name resolves to inside the service's network,
// which makes the check a scanner of that network.
var ErrRefused = errors.New("refused: the address is not allowed")

// errNoAddress is a name that resolved to no address at all.
var errNoAddress = errors.New("no address")

// HostError is a host the service will not reach: an address literal that
// is refused, a name that does not resolve, or one with a refused address
// among those it resolves to. Its message, the only part a client is
// shown, is the same for all three: if a name that does not exist read
// differently from one that resolves to an internal address, the check
// would tell a client which internal names exist. Cause keeps the reason
// for the service's own logs.
type HostError struct {
	// Host is the name or address the client gave.
	Host string
	// Cause is why the host was refused: ErrRefused, or the failed
	// lookup. Never shown to a client.
	Cause error
}

func (e *HostError) Error() string { return RefusedHostMessage(e.Host) }

func (e *HostError) Unwrap() error { return e.Cause }

// LogValue gives a log line the cause that the message leaves out; it
// names no address a name resolved to, so the log repeats nothing the
// lookup did not.
func (e *HostError) LogValue() slog.Value {
	return slog.GroupValue(slog.String("host", e.Host), slog.String("cause", e.Cause.Error()))
}

// RefusedHostMessage is the one message a client reads for a host the
// service will not reach, whatever the reason; adapters that word their
// own failures (the webhook sender's attempt log) use it too.
func RefusedHostMessage(host string) string {
	return "host " + host + " is not reachable or not allowed"
}

// AllowedAddr reports whether the service may connect to ip.
func AllowedAddr(ip netip.Addr) bool {
	return ip.IsValid() && guardian.SafeAddr(ip.WithZone("")) == nil
}

// DialControl runs, as a net.Dialer's Control, on every socket about to
// connect, with the address actually dialled after DNS resolution.
// Checking here rather than only when the host is saved means a name that
// resolves to a public address when it is saved and to 127.0.0.1 when it
// is dialled (DNS rebinding) is refused all the same.
func DialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !AllowedAddr(ap.Addr()) {
		return ErrRefused
	}
	return nil
}

// CheckHost refuses a host (a name or an address literal) that a guarded
// dial would refuse, without connecting: an address literal that is not
// allowed, a name that does not resolve, or one with any refused address
// among those it resolves to (an attacker controls which one a later dial
// picks). Every refusal is a *HostError, with one message whatever the
// reason. With allowPrivate only the resolution is checked.
func CheckHost(ctx context.Context, resolver *net.Resolver, host string, allowPrivate bool) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !allowPrivate && !AllowedAddr(ip) {
			return &HostError{Host: host, Cause: ErrRefused}
		}
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) == 0 {
		err = errNoAddress
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", err, ctx.Err())
		}
		return &HostError{Host: host, Cause: fmt.Errorf("lookup: %w", err)}
	}
	if allowPrivate {
		return nil
	}
	for _, ip := range addrs {
		if !AllowedAddr(ip) {
			return &HostError{Host: host, Cause: fmt.Errorf("%w: a resolved address is refused", ErrRefused)}
		}
	}
	return nil
}
