package config_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/config"
)

func TestLoadReadsQuotas(t *testing.T) {
	cfg, err := load(map[string]string{
		"QUOTA_WEBHOOK_ENDPOINTS":          "3",
		"QUOTA_PROFILES":                   "7",
		"QUOTA_INVITATIONS_PER_DAY":        "11",
		"QUOTA_INVITATION_RESENDS_PER_DAY": "2",
		"QUOTA_PROXIES":                    "5",
		"QUOTA_PROXY_CHECKS_PER_MINUTE":    "4",
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := config.Quotas{WebhookEndpoints: 3, Profiles: 7, InvitationsPerDay: 11, InvitationResendsPerDay: 2,
		Proxies: 5, ProxyChecksPerMinute: 4}
	if cfg.Quotas != want {
		t.Fatalf("Quotas = %+v, want %+v", cfg.Quotas, want)
	}
}

func TestLoadRefusesBadQuotas(t *testing.T) {
	for _, c := range []struct{ variable, value string }{
		{"QUOTA_WEBHOOK_ENDPOINTS", "0"},
		{"QUOTA_PROFILES", "-5"},
		{"QUOTA_INVITATIONS_PER_DAY", "many"},
		{"QUOTA_INVITATION_RESENDS_PER_DAY", "1.5"},
	} {
		t.Run(c.variable+"="+c.value, func(t *testing.T) {
			_, err := load(map[string]string{c.variable: c.value})
			wantRefusal(t, err, c.variable, `"`+c.value+`" is not a whole number of at least 1`)
		})
	}
}
