package webhook

import (
	"errors"
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
// here by hand. Webhook receivers may listen on any port.
var guardian = ssrf.New(ssrf.WithAnyPort())

// errRefused is the one answer of the guard. It does not say which address
// was refused nor why: for a name, that would tell a client what the name
// resolves to inside the service's network, which makes the check a
// scanner of that network.
var errRefused = errors.New("refused: the address is not allowed")

// refusedHostError is a name that resolves to at least one refused
// address. It names the host the client gave, and nothing it resolved to.
type refusedHostError struct{ host string }

func (e *refusedHostError) Error() string {
	return "refused: " + e.host + " resolves to an address that is not allowed"
}

func (e *refusedHostError) Unwrap() error { return errRefused }

// allowedAddr reports whether a webhook may connect to ip.
func allowedAddr(ip netip.Addr) bool {
	return ip.IsValid() && guardian.SafeAddr(ip.WithZone("")) == nil
}

// dialControl runs on every socket the sender is about to connect, with
// the address actually dialled after DNS resolution. Checking here rather
// than only on the URL means a name that resolves to a public address when
// the endpoint is saved and to 127.0.0.1 when the delivery is sent (DNS
// rebinding) is refused all the same.
func dialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !allowedAddr(ap.Addr()) {
		return errRefused
	}
	return nil
}
