package webhook

import (
	"fmt"
	"net/netip"
	"syscall"
)

// The addresses a webhook must never reach unless private targets are
// allowed: anything that is not a public unicast address could be the
// service's own host, its network or the cloud's metadata endpoint.
var (
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, DigitalOcean, ...
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	}
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	sharedCGNAT = netip.MustParsePrefix("100.64.0.0/10")
	// 240.0.0.0/4 is reserved and never routed on the internet; it
	// includes the limited broadcast address.
	reserved  = netip.MustParsePrefix("240.0.0.0/4")
	broadcast = netip.MustParseAddr("255.255.255.255")
)

// forbidden says why a connection to ip must be refused, as a noun phrase
// for "x is <reason>", or "" when ip is a public unicast address.
func forbidden(ip netip.Addr) string {
	// ::ffff:10.0.0.1 reaches 10.0.0.1: judge IPv4-mapped forms as IPv4.
	ip = ip.Unmap().WithZone("")
	for _, m := range metadataAddrs {
		if ip == m {
			return "a cloud metadata address"
		}
	}
	switch {
	case !ip.IsValid():
		return "an invalid address"
	case ip.IsUnspecified() || thisNetwork.Contains(ip):
		return "an unspecified address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case sharedCGNAT.Contains(ip):
		return "a shared (CGNAT) address"
	case ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsLinkLocalMulticast():
		return "a multicast address"
	case ip == broadcast:
		return "a broadcast address"
	case reserved.Contains(ip):
		return "a reserved address"
	}
	return ""
}

// refusedError is a connection the guard would not make. It names the
// address only, so it is safe to show in the attempt log and to the user.
type refusedError struct {
	host   string // the name that resolved to addr; "" for an IP literal
	addr   netip.Addr
	reason string
}

func (e *refusedError) Error() string {
	if e.host != "" {
		return fmt.Sprintf("refused: %s resolves to %s, %s", e.host, e.addr, e.reason)
	}
	return fmt.Sprintf("refused: %s is %s", e.addr, e.reason)
}

// dialControl runs on every socket the sender is about to connect, with
// the address actually dialled after DNS resolution. Checking here rather
// than only on the URL means a name that resolves to a public address when
// the endpoint is saved and to 127.0.0.1 when the delivery is sent (DNS
// rebinding) is refused all the same.
func dialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused: cannot check address %q", address)
	}
	if reason := forbidden(ap.Addr()); reason != "" {
		return &refusedError{addr: ap.Addr().WithZone(""), reason: reason}
	}
	return nil
}
