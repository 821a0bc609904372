package wiring

import (
	"context"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/config"
)

func TestProxyProberFollowsTheConfiguration(t *testing.T) {
	t.Parallel()
	cfg := config.Config{ProxyCheckURL: "https://ipinfo.io/json", ProxyCheckTimeout: time.Second}
	guarded, err := newProxyProber(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254"} {
		if err := guarded.CheckHost(context.Background(), host); err == nil {
			t.Errorf("CheckHost(%s) = nil without ALLOW_PRIVATE_TARGETS", host)
		}
	}
	cfg.AllowPrivateTargets = true
	open, err := newProxyProber(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := open.CheckHost(context.Background(), "127.0.0.1"); err != nil {
		t.Errorf("CheckHost(127.0.0.1) with ALLOW_PRIVATE_TARGETS = %v", err)
	}
	cfg.ProxyCheckURL = "ipinfo.io/json"
	if _, err := newProxyProber(cfg); err == nil {
		t.Error("a check URL without a scheme was accepted")
	}
}
