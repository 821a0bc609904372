package webhook

import (
	"context"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/adapters/netguard/netguardtest"
)

// refusedPrefixes are, written out independently of the guard, ranges no
// webhook may reach: those the issue listed and the classic ones.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("::/96"),          // IPv4-compatible, [::127.0.0.1]
	netip.MustParsePrefix("::ffff:0:0/96"),  // IPv4-mapped
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64
	netip.MustParsePrefix("2002::/16"),      // 6to4
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),   // TEST-NET-1
	netip.MustParsePrefix("100.64.0.0/10"),  // CGNAT
	netip.MustParsePrefix("0.0.0.0/8"),      // this network
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, broadcast
	netip.MustParsePrefix("fd00:ec2::/32"),  // AWS metadata over IPv6
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, metadata
}

func refusedIndependently(ip netip.Addr) bool {
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsMulticast() ||
		ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() || ip.IsLinkLocalMulticast() {
		return true
	}
	for _, p := range refusedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// FuzzGuard checks the address guard on any 4- or 16-byte address: what it
// allows is none of the ranges above, and the dial-time check agrees with
// the URL check and never names the address.
func FuzzGuard(f *testing.F) {
	for _, a := range specialPurpose {
		f.Add(netip.MustParseAddr(a).AsSlice())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		allowed := netguard.AllowedAddr(ip)
		if allowed && refusedIndependently(ip) {
			t.Fatalf("guard allows %s", ip)
		}
		err := netguard.DialControl("tcp6", netip.AddrPortFrom(ip, 443).String(), nil)
		if ip.Is4() {
			err = netguard.DialControl("tcp4", netip.AddrPortFrom(ip, 443).String(), nil)
		}
		if (err == nil) != allowed {
			t.Fatalf("netguard.DialControl(%s) = %v, allowedAddr = %v", ip, err, allowed)
		}
		if err != nil && err.Error() != "refused: the address is not allowed" {
			t.Fatalf("netguard.DialControl(%s) = %q", ip, err)
		}
	})
}

// fuzzRecords make a few names resolve, to loopback and special-purpose
// addresses only: the fuzzer must never make the sender look up or reach
// anything real.
var fuzzRecords = map[string][]netip.Addr{
	"rebind.example": {netip.MustParseAddr("127.0.0.1")},
	"nat64.example":  {netip.MustParseAddr("64:ff9b::a00:1")},
	"bench.example":  {netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("::1")},
}

// FuzzCheckTarget checks the webhook URL check: an accepted URL is an
// absolute https URL with a host, whose literal address the guard allows,
// and no refusal reveals an address a name resolved to.
func FuzzCheckTarget(f *testing.F) {
	for _, seed := range []string{
		"https://rebind.example/hook", "https://nat64.example", "https://bench.example:8443/x?y=z",
		"https://[::127.0.0.1]/", "https://[64:ff9b::7f00:1]/", "https://198.18.0.1", "https://192.0.2.1",
		"https://[2002:7f00:1::1]/", "http://rebind.example/", "https://8.8.8.8/hook", "https://user@8.8.8.8/",
		"https://[fe80::1%25eth0]/", "https://nowhere.example/", "%zz", "https://", "https://8.8.8.8:99999/",
	} {
		f.Add(seed)
	}
	s := NewSender(Options{Resolver: netguardtest.FakeResolver(f, fuzzRecords)})
	f.Fuzz(func(t *testing.T, raw string) {
		err := s.CheckTarget(context.Background(), raw)
		if err != nil {
			for _, addrs := range fuzzRecords {
				for _, a := range addrs {
					if strings.Contains(err.Error(), a.String()) && !strings.Contains(raw, a.String()) {
						t.Fatalf("CheckTarget(%q) = %q reveals %s", raw, err, a)
					}
				}
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || u.Scheme != "https" || u.Hostname() == "" {
			t.Fatalf("CheckTarget accepted %q", raw)
		}
		if ip, perr := netip.ParseAddr(u.Hostname()); perr == nil && refusedIndependently(ip.WithZone("")) {
			t.Fatalf("CheckTarget accepted %q, whose address is refused", raw)
		}
		if _, known := fuzzRecords[strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")]; known {
			t.Fatalf("CheckTarget accepted %q, which resolves to a refused address", raw)
		}
	})
}
