package netguard_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/adapters/netguard/netguardtest"
)

func TestCheckHostRefusesInternalAddressesAndNames(t *testing.T) {
	resolver := netguardtest.FakeResolver(t, map[string][]netip.Addr{
		"loopback.example":  {netip.MustParseAddr("127.0.0.1")},
		"metadata.example":  {netip.MustParseAddr("169.254.169.254")},
		"mixed.example":     {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1")},
		"public.example":    {netip.MustParseAddr("93.184.216.34")},
		"public-v6.example": {netip.MustParseAddr("2606:4700::1")},
	})
	ctx := context.Background()
	for _, host := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "100.64.0.1", "fd00:ec2::254",
		"loopback.example", "metadata.example", "mixed.example"} {
		err := netguard.CheckHost(ctx, resolver, host, false)
		var refused *netguard.HostError
		if !errors.As(err, &refused) || refused.Host != host || !errors.Is(err, netguard.ErrRefused) {
			t.Errorf("CheckHost(%s) = %v, want a refusal naming the host", host, err)
		}
		if err != nil && err.Error() != "host "+host+" is not reachable or not allowed" {
			t.Errorf("CheckHost(%s) says %q", host, err)
		}
	}
	for _, host := range []string{"93.184.216.34", "public.example", "public-v6.example"} {
		if err := netguard.CheckHost(ctx, resolver, host, false); err != nil {
			t.Errorf("CheckHost(%s) = %v, want nil", host, err)
		}
	}
}

// TestCheckHostSaysTheSameForEveryRefusal: a name that does not resolve and
// one that resolves to an internal address read alike, or the check would
// tell a client which internal names exist. The cause stays in the chain
// for the service's logs.
func TestCheckHostSaysTheSameForEveryRefusal(t *testing.T) {
	// The same name, unknown to one resolver and loopback to the other.
	const host = "internal.test"
	missing := netguardtest.FakeResolver(t, nil)
	internal := netguardtest.FakeResolver(t, map[string][]netip.Addr{host: {netip.MustParseAddr("127.0.0.1")}})
	ctx := context.Background()
	notFound := netguard.CheckHost(ctx, missing, host, false)
	refused := netguard.CheckHost(ctx, internal, host, false)
	if notFound == nil || refused == nil {
		t.Fatalf("CheckHost = %v and %v, want two refusals", notFound, refused)
	}
	const want = "host internal.test is not reachable or not allowed"
	if notFound.Error() != want || refused.Error() != want {
		t.Fatalf("CheckHost says %q and %q, want %q for both", notFound, refused, want)
	}
	if errors.Is(notFound, netguard.ErrRefused) || !errors.Is(refused, netguard.ErrRefused) {
		t.Errorf("the causes are lost: %v / %v", errors.Unwrap(notFound), errors.Unwrap(refused))
	}
	var dnsErr *net.DNSError
	if !errors.As(notFound, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("the lookup's failure is not kept: %#v", errors.Unwrap(notFound))
	}
	// A log line carries the cause, and nothing the name resolved to.
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("refused", "err", refused)
	if line := logs.String(); !strings.Contains(line, "err.host=internal.test") || !strings.Contains(line, "err.cause=") || strings.Contains(line, "127.0.0.1") {
		t.Errorf("log line %q", line)
	}
}

func TestCheckHostAllowPrivate(t *testing.T) {
	resolver := netguardtest.FakeResolver(t, map[string][]netip.Addr{
		"loopback.example": {netip.MustParseAddr("127.0.0.1")},
	})
	for _, host := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "loopback.example"} {
		if err := netguard.CheckHost(context.Background(), resolver, host, true); err != nil {
			t.Errorf("CheckHost(%s) with private targets allowed = %v", host, err)
		}
	}
	err := netguard.CheckHost(context.Background(), resolver, "nowhere.example", true)
	if err == nil || err.Error() != "host nowhere.example is not reachable or not allowed" {
		t.Errorf("CheckHost(unknown name) with private targets allowed = %v", err)
	}
}

func TestDialControlJudgesTheDialledAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080":       false,
		"10.0.0.1:3128":        false,
		"169.254.169.254:80":   false,
		"[::1]:1080":           false,
		"[::ffff:10.0.0.1]:80": false,
		"not an address":       false,
		"93.184.216.34:3128":   true,
		"[2606:4700::1]:1080":  true,
	} {
		err := netguard.DialControl("tcp", addr, nil)
		if (err == nil) != want {
			t.Errorf("DialControl(%s) = %v, want allowed=%v", addr, err, want)
		}
		if err != nil && !errors.Is(err, netguard.ErrRefused) {
			t.Errorf("DialControl(%s) = %v, want ErrRefused", addr, err)
		}
	}
}
