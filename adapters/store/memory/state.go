package memory

import (
	"slices"
	"time"

	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// state is every table of the store. Stored values are never changed in
// place: a write stores a new value, so the undo log can keep the old one as
// it was.
type state struct {
	users       table[account.User]
	teams       table[team.Team]
	members     table[team.Member]
	invitations table[team.Invitation]
	apiKeys     table[account.APIKey]
	refresh     table[account.RefreshToken]
	resets      table[account.ResetToken]
	profiles    table[profile.Profile]
	proxies     table[proxy.Proxy]
	snapshots   table[snapshot.Snapshot]
	uploads     table[uploadRow]
	garbage     table[garbageRow]
	endpoints   table[webhook.Endpoint]
	deliveries  table[deliveryRow]
	outbox      table[event.Event]
	idempotency table[ports.IdempotencyRecord]
	instances   table[profilestore.Instance]
}

// deliveryRow is a delivery with the lease a dispatcher holds on it, which
// the domain value does not carry.
type deliveryRow struct {
	d          webhook.Delivery
	leased     bool
	leaseOwner string
	leaseUntil time.Time
}

func pending(row *deliveryRow) bool { return row.d.Status == webhook.StatusPending }

func newState() state {
	return state{
		users:       newTable("user", func(u *account.User) rowKey { return rowKey{id: u.ID} }, cloneUser),
		teams:       newTable("team", func(t *team.Team) rowKey { return rowKey{id: t.ID} }, cloneTeam),
		members:     newTable("membership", func(m *team.Member) rowKey { return rowKey{m.ID, m.TeamID} }, cloneMember),
		invitations: newTable("invitation", func(inv *team.Invitation) rowKey { return rowKey{inv.ID, inv.TeamID} }, cloneInvitation),
		apiKeys:     newTable("API key", func(k *account.APIKey) rowKey { return rowKey{k.ID, k.TeamID} }, cloneAPIKey),
		refresh:     newTable("refresh token", func(t *account.RefreshToken) rowKey { return rowKey{id: t.ID} }, cloneRefreshToken),
		resets:      newTable("reset token", func(t *account.ResetToken) rowKey { return rowKey{id: t.ID} }, cloneResetToken),
		profiles:    newTable("profile", func(p *profile.Profile) rowKey { return rowKey{p.ID, p.TeamID} }, cloneProfile),
		proxies:     newTable("proxy", func(p *proxy.Proxy) rowKey { return rowKey{p.ID, p.TeamID} }, cloneProxy),
		snapshots:   newTable("snapshot", func(s *snapshot.Snapshot) rowKey { return rowKey{s.ID, s.TeamID} }, cloneSnapshot),
		uploads:     newTable("upload", func(u *uploadRow) rowKey { return rowKey{id: u.id} }, cloneUploadRow),
		garbage:     newTable("blob candidate", func(g *garbageRow) rowKey { return rowKey{id: g.sha256} }, cloneGarbageRow),
		endpoints:   newTable("webhook endpoint", func(e *webhook.Endpoint) rowKey { return rowKey{e.ID, e.TeamID} }, cloneEndpoint),
		deliveries:  newTable("delivery", func(r *deliveryRow) rowKey { return rowKey{r.d.ID, r.d.TeamID} }, cloneDeliveryRow).withBacklog(pending),
		outbox:      newTable("event", func(e *event.Event) rowKey { return rowKey{e.ID, e.TeamID} }, cloneEvent),
		idempotency: newTable("idempotency record", idempotencyRowKey, cloneIdempotencyRecord),
		instances:   newTable("instance", instanceRowKey, cloneInstance),
	}
}

// The clone functions copy everything a caller could change through a value:
// byte slices, tag slices, time and session pointers. Times are stored in UTC
// without a monotonic reading, as a database would return them.

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func cloneUser(u account.User) account.User {
	u.CreatedAt, u.UpdatedAt = u.CreatedAt.UTC(), u.UpdatedAt.UTC()
	return u
}

func cloneTeam(t team.Team) team.Team {
	t.CreatedAt = t.CreatedAt.UTC()
	return t
}

func cloneMember(m team.Member) team.Member {
	m.InvitedAt = m.InvitedAt.UTC()
	m.JoinedAt = utcPtr(m.JoinedAt)
	return m
}

func cloneInvitation(inv team.Invitation) team.Invitation {
	inv.Hash = slices.Clone(inv.Hash)
	inv.CreatedAt, inv.ExpiresAt = inv.CreatedAt.UTC(), inv.ExpiresAt.UTC()
	inv.UsedAt = utcPtr(inv.UsedAt)
	return inv
}

func cloneAPIKey(k account.APIKey) account.APIKey {
	k.Hash = slices.Clone(k.Hash)
	k.CreatedAt = k.CreatedAt.UTC()
	k.LastUsedAt = utcPtr(k.LastUsedAt)
	return k
}

func cloneRefreshToken(t account.RefreshToken) account.RefreshToken {
	t.Hash = slices.Clone(t.Hash)
	t.IssuedAt, t.ExpiresAt = t.IssuedAt.UTC(), t.ExpiresAt.UTC()
	t.UsedAt, t.RevokedAt = utcPtr(t.UsedAt), utcPtr(t.RevokedAt)
	return t
}

func cloneResetToken(t account.ResetToken) account.ResetToken {
	t.Hash = slices.Clone(t.Hash)
	t.CreatedAt, t.ExpiresAt = t.CreatedAt.UTC(), t.ExpiresAt.UTC()
	t.UsedAt = utcPtr(t.UsedAt)
	return t
}

func cloneEvent(e event.Event) event.Event {
	e.Data = slices.Clone(e.Data)
	e.OccurredAt = e.OccurredAt.UTC()
	return e
}

func cloneProfile(p profile.Profile) profile.Profile {
	p.Fingerprint = p.Fingerprint.Clone()
	p.Tags = slices.Clone(p.Tags)
	if p.Tags == nil {
		p.Tags = []string{}
	}
	p.Session = cloneSession(p.Session)
	if p.Data != nil {
		d := *p.Data
		d.UpdatedAt = d.UpdatedAt.UTC()
		p.Data = &d
	}
	p.Cookies = cloneContent(p.Cookies)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p
}

func cloneContent(c *profile.Content) *profile.Content {
	if c == nil {
		return nil
	}
	out := *c
	return &out
}

func cloneSession(s *profile.Session) *profile.Session {
	if s == nil {
		return nil
	}
	c := *s
	c.StartedAt, c.ExpiresAt = c.StartedAt.UTC(), c.ExpiresAt.UTC()
	return &c
}

func cloneEndpoint(e webhook.Endpoint) webhook.Endpoint {
	e.Events = slices.Clone(e.Events)
	if e.Events == nil {
		e.Events = []string{}
	}
	e.SecretSealed = slices.Clone(e.SecretSealed)
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	return e
}

func cloneDelivery(d webhook.Delivery) webhook.Delivery {
	d.Payload = slices.Clone(d.Payload)
	attempts := make([]webhook.Attempt, len(d.Attempts))
	for i, a := range d.Attempts {
		a.At = a.At.UTC()
		attempts[i] = a
	}
	d.Attempts = attempts
	d.NextAttemptAt = d.NextAttemptAt.UTC()
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d
}

func cloneDeliveryRow(r deliveryRow) deliveryRow {
	r.d = cloneDelivery(r.d)
	r.leaseUntil = r.leaseUntil.UTC()
	return r
}
