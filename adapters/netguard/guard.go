// Package netguard keeps the service's outbound connections to addresses
// that customers choose (webhook receivers, proxy hosts) away from the
// service's own network (SSRF). Every adapter that dials such an address
// uses this one guard, so the rule is written and maintained once.
package netguard

import (
	"context"
	"errors"
	"fmt"
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

// ErrRefused is the one answer of the guard. It does not say which address
// was refused nor why: for a name, that would tell a client what the name
// resolves to inside the service's network, which makes the check a
// scanner of that network.
var ErrRefused = errors.New("refused: the address is not allowed")

// RefusedHostError is a name that resolves to at least one refused
// address. It names the host the client gave, and nothing it resolved to.
type RefusedHostError struct{ Host string }

func (e *RefusedHostError) Error() string {
	return "refused: " + e.Host + " resolves to an address that is not allowed"
}

func (e *RefusedHostError) Unwrap() error { return ErrRefused }

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
// allowed (ErrRefused), a name that does not resolve, or one with any
// refused address among those it resolves to (*RefusedHostError: an
// attacker controls which one a later dial picks). With allowPrivate only
// the resolution is checked.
func CheckHost(ctx context.Context, resolver *net.Resolver, host string, allowPrivate bool) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !allowPrivate && !AllowedAddr(ip) {
			return ErrRefused
		}
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		if ctx.Err() != nil {
			return fmt.Errorf("cannot resolve host %s: %w", host, ctx.Err())
		}
		return fmt.Errorf("cannot resolve host %s", host)
	}
	if allowPrivate {
		return nil
	}
	for _, ip := range addrs {
		if !AllowedAddr(ip) {
			return &RefusedHostError{Host: host}
		}
	}
	return nil
}
