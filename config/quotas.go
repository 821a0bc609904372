package config

// Quotas bound what one team may hold or do, so that no tenant can take a
// share of the service that hurts the others.
type Quotas struct {
	// WebhookEndpoints bounds a team's webhook endpoints.
	WebhookEndpoints int
	// Profiles bounds a team's profiles.
	Profiles int
	// InvitationsPerDay bounds the invitations a team sends in any 24 hours.
	InvitationsPerDay int
	// InvitationResendsPerDay bounds the invitations sent to one membership
	// in any 24 hours: the first and its re-sends.
	InvitationResendsPerDay int
	// Proxies bounds a team's stored proxies.
	Proxies int
	// ProxyChecksPerMinute bounds a team's proxy tests and checks together,
	// each of which opens a connection through a proxy.
	ProxyChecksPerMinute int
}

func (l *loader) quotas() Quotas {
	return Quotas{
		WebhookEndpoints:        l.atLeastOne("QUOTA_WEBHOOK_ENDPOINTS", 20),
		Profiles:                l.atLeastOne("QUOTA_PROFILES", 1000),
		InvitationsPerDay:       l.atLeastOne("QUOTA_INVITATIONS_PER_DAY", 50),
		InvitationResendsPerDay: l.atLeastOne("QUOTA_INVITATION_RESENDS_PER_DAY", 3),
		Proxies:                 l.atLeastOne("QUOTA_PROXIES", 500),
		ProxyChecksPerMinute:    l.atLeastOne("QUOTA_PROXY_CHECKS_PER_MINUTE", 30),
	}
}
