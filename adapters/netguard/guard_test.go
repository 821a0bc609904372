package netguard_test

import (
	"context"
	"errors"
	"net/netip"
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
	for _, host := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "100.64.0.1", "fd00:ec2::254"} {
		if err := netguard.CheckHost(ctx, resolver, host, false); !errors.Is(err, netguard.ErrRefused) {
			t.Errorf("CheckHost(%s) = %v, want ErrRefused", host, err)
		}
	}
	for _, host := range []string{"loopback.example", "metadata.example", "mixed.example"} {
		err := netguard.CheckHost(ctx, resolver, host, false)
		var refused *netguard.RefusedHostError
		if !errors.As(err, &refused) || refused.Host != host || !errors.Is(err, netguard.ErrRefused) {
			t.Errorf("CheckHost(%s) = %v, want a refusal naming the host", host, err)
		}
		if err != nil && err.Error() != "refused: "+host+" resolves to an address that is not allowed" {
			t.Errorf("CheckHost(%s) says %q", host, err)
		}
	}
	for _, host := range []string{"93.184.216.34", "public.example", "public-v6.example"} {
		if err := netguard.CheckHost(ctx, resolver, host, false); err != nil {
			t.Errorf("CheckHost(%s) = %v, want nil", host, err)
		}
	}
	if err := netguard.CheckHost(ctx, resolver, "nowhere.example", false); err == nil || err.Error() != "cannot resolve host nowhere.example" {
		t.Errorf("CheckHost(unknown name) = %v", err)
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
	if err := netguard.CheckHost(context.Background(), resolver, "nowhere.example", true); err == nil {
		t.Error("CheckHost accepted a name that does not resolve")
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
