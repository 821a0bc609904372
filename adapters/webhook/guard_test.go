package webhook

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/adapters/netguard/netguardtest"
)

// specialPurpose are addresses of the IANA special-purpose registries that
// a webhook must not reach, one per range the guard once let through, plus
// the ranges it always refused.
var specialPurpose = map[string]string{
	"IPv4-compatible loopback": "::127.0.0.1",
	"NAT64 (RFC 6052)":         "64:ff9b::a00:1",
	"NAT64 of loopback":        "64:ff9b::7f00:1",
	"6to4 (RFC 3056)":          "2002:7f00:1::1",
	"benchmarking":             "198.18.0.1",
	"benchmarking, top":        "198.19.255.254",
	"IETF protocol":            "192.0.0.8",
	"TEST-NET-1":               "192.0.2.1",
	"TEST-NET-2":               "198.51.100.7",
	"TEST-NET-3":               "203.0.113.9",
	"IPv6 documentation":       "2001:db8::1",
	"loopback":                 "127.0.0.1",
	"IPv6 loopback":            "::1",
	"private":                  "10.1.2.3",
	"unique local":             "fd12:3456::1",
	"link-local":               "169.254.1.1",
	"metadata":                 "169.254.169.254",
	"metadata over IPv6":       "fd00:ec2::254",
	"CGNAT":                    "100.64.1.1",
	"mapped private":           "::ffff:10.0.0.1",
	"multicast":                "224.0.0.1",
	"broadcast":                "255.255.255.255",
	"unspecified":              "0.0.0.0",
}

// resolvedTo names, for each special-purpose address, a host the test's own
// resolver makes resolve to it.
func resolvedTo() map[string][]netip.Addr {
	records := map[string][]netip.Addr{}
	for _, a := range specialPurpose {
		addr := netip.MustParseAddr(a)
		records[hostFor(addr)] = []netip.Addr{addr}
	}
	return records
}

func hostFor(a netip.Addr) string {
	return "h" + strings.NewReplacer(":", "-", ".", "-").Replace(a.String()) + ".example"
}

func TestGuardRefusesSpecialPurposeAddressLiterals(t *testing.T) {
	s := NewSender(Options{Resolver: netguardtest.FakeResolver(t, nil)})
	for name, a := range specialPurpose {
		addr := netip.MustParseAddr(a)
		// The URL holds the address as written above: [::127.0.0.1] is
		// parsed, not only its canonical form [::7f00:1].
		u := "https://" + hostPort(a) + "/hook"
		err := s.CheckTarget(context.Background(), u)
		if want := "host " + a + " is not reachable or not allowed"; err == nil || err.Error() != want {
			t.Errorf("%s: CheckTarget(%s) = %v, want %q", name, u, err, want)
		}
		// The dial-time check judges the address dialled after DNS.
		if err := netguard.DialControl("tcp", netip.AddrPortFrom(addr, 443).String(), nil); err == nil || err.Error() != "refused: the address is not allowed" {
			t.Errorf("%s: netguard.DialControl(%s) = %v, want the generic refusal", name, addr, err)
		}
	}
}

func TestGuardRefusesNamesResolvingToSpecialPurposeAddresses(t *testing.T) {
	records := resolvedTo()
	s := NewSender(Options{Resolver: netguardtest.FakeResolver(t, records)})
	for name, a := range specialPurpose {
		addr := netip.MustParseAddr(a)
		host := hostFor(addr)
		err := s.CheckTarget(context.Background(), "https://"+host+"/hook")
		if err == nil {
			t.Errorf("%s: CheckTarget(%s) accepted a name that resolves to %s", name, host, addr)
			continue
		}
		// The refusal names the host the client gave, never what it
		// resolved to: that would turn the check into a DNS oracle for
		// the service's own network.
		if want := "host " + host + " is not reachable or not allowed"; err.Error() != want {
			t.Errorf("%s: CheckTarget(%s) = %q, want %q", name, host, err, want)
		}
		for _, leak := range []string{addr.String(), addr.Unmap().String(), "loopback", "private", "NAT64", "6to4"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s: error %q reveals %q", name, err, leak)
			}
		}
	}
}

func TestGuardAllowPrivateTargetsAdmitsSpecialPurposeAddresses(t *testing.T) {
	records := resolvedTo()
	s := NewSender(Options{AllowPrivate: true, Resolver: netguardtest.FakeResolver(t, records)})
	for name, a := range specialPurpose {
		addr := netip.MustParseAddr(a)
		for _, u := range []string{"https://" + hostPort(a) + "/hook", "http://" + hostFor(addr) + "/hook"} {
			if err := s.CheckTarget(context.Background(), u); err != nil {
				t.Errorf("%s: CheckTarget(%s) = %v with private targets allowed", name, u, err)
			}
		}
	}
}

func hostPort(literal string) string {
	if strings.Contains(literal, ":") {
		return "[" + literal + "]"
	}
	return literal
}
