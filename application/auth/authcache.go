package auth

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// authTopic is the notices topic on which every instance hears what
// changed the actor a credential resolves to. A payload is tags, one per
// line (see the tag functions below).
const authTopic = "auth"

// authContext is everything a request's credential resolves to apart from
// the team it asks for: for an API key its record (never the secret) and
// the key's membership, for a bearer the user's session version and their
// membership in the team. Only active memberships are kept: a refusal is
// never cached, so a membership that becomes active needs no invalidation.
type authContext struct {
	KeyID          string
	KeyHash        []byte
	UserID         string
	TeamID         string
	SessionVersion int
	MemberID       string
	Role           team.Role
}

// Entries are found by credential; tags say which changes invalidate them.
func keyEntry(keyID string) string             { return "k:" + keyID }
func bearerEntry(userID, teamID string) string { return "b:" + userID + ":" + teamID }
func keyTag(keyID string) string               { return "k:" + keyID }
func userTag(userID string) string             { return "u:" + userID }
func memberTag(teamID, userID string) string   { return "m:" + teamID + ":" + userID }
func contextTags(c authContext) []string {
	tags := []string{userTag(c.UserID), memberTag(c.TeamID, c.UserID)}
	if c.KeyID != "" {
		tags = append(tags, keyTag(c.KeyID))
	}
	return tags
}

// nearCache keeps auth contexts in this process, so that a warm request
// authenticates with one map lookup: no store, no Redis. It is only as
// good as what it hears: it serves nothing while the notices it is fed by
// are deaf, and empties itself when they are heard again, since notices
// published in between may be lost. Entries expire after ttl all the same,
// which bounds the harm of an instance whose publish did not go out.
type nearCache struct {
	ttl      time.Duration
	capacity int
	now      func() time.Time

	mu      sync.RWMutex
	live    bool
	gen     uint64
	entries map[string]nearEntry
	tagged  map[string]map[string]struct{}

	// hits and misses count lookups, for tests and operators.
	hits, misses atomic.Int64
}

type nearEntry struct {
	ctx     authContext
	tags    []string
	expires time.Time
}

// nearCapacity bounds the cache so that a flood of distinct credentials
// cannot exhaust memory; past it, expired entries and then arbitrary ones
// go, which only costs later misses.
const nearCapacity = 100_000

func newNearCache(ttl time.Duration, capacity int, now func() time.Time) *nearCache {
	return &nearCache{ttl: ttl, capacity: max(capacity, 1), now: now,
		entries: map[string]nearEntry{}, tagged: map[string]map[string]struct{}{}}
}

// get returns the live entry of key.
func (c *nearCache) get(key string) (authContext, bool) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[key]
	c.mu.RUnlock()
	if !ok || !now.Before(e.expires) {
		c.misses.Add(1)
		return authContext{}, false
	}
	c.hits.Add(1)
	return e.ctx, true
}

// generation is taken before a miss reads the store, and given back to
// put: an invalidation in between (a change the read may predate) makes
// put drop the value instead of caching what may already be stale.
func (c *nearCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

func (c *nearCache) put(gen uint64, key string, v authContext) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || gen != c.gen || c.ttl <= 0 {
		return
	}
	if _, exists := c.entries[key]; !exists && len(c.entries) >= c.capacity {
		c.makeRoom(now)
	}
	c.removeLocked(key)
	tags := contextTags(v)
	c.entries[key] = nearEntry{ctx: v, tags: tags, expires: now.Add(c.ttl)}
	for _, t := range tags {
		if c.tagged[t] == nil {
			c.tagged[t] = map[string]struct{}{}
		}
		c.tagged[t][key] = struct{}{}
	}
}

// invalidate drops every entry carrying one of tags.
func (c *nearCache) invalidate(tags ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, t := range tags {
		for key := range c.tagged[t] {
			c.removeLocked(key)
		}
	}
}

// setLive drops everything, and keeps nothing until live again: the
// notices went deaf, or came back after a gap.
func (c *nearCache) setLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.live = live
	c.entries = map[string]nearEntry{}
	c.tagged = map[string]map[string]struct{}{}
}

func (c *nearCache) removeLocked(key string) {
	e, ok := c.entries[key]
	if !ok {
		return
	}
	delete(c.entries, key)
	for _, t := range e.tags {
		delete(c.tagged[t], key)
		if len(c.tagged[t]) == 0 {
			delete(c.tagged, t)
		}
	}
}

// makeRoom drops expired entries, and then about 1% of the capacity at
// random, so that a full cache does not scan itself on every put.
func (c *nearCache) makeRoom(now time.Time) {
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			c.removeLocked(k)
		}
	}
	if len(c.entries) < c.capacity {
		return
	}
	excess := len(c.entries) - c.capacity + 1 + c.capacity/100
	for k := range c.entries {
		if excess <= 0 {
			break
		}
		c.removeLocked(k)
		excess--
	}
}

// hear is the subscription to authTopic.
func (c *nearCache) hear(n ports.Notice) {
	switch n.Kind {
	case ports.NoticeMessage:
		c.invalidate(strings.Split(n.Payload, "\n")...)
	case ports.NoticeListening:
		c.setLive(true)
	case ports.NoticeDeaf:
		c.setLive(false)
	}
}

// changed is called once a change to what credentials resolve to has
// committed: this instance forgets at once (a client's next request sees
// its own change), and every other instance hears it. A failed publish is
// logged: the others then trust their copies until those expire.
func (s *Service) changed(ctx context.Context, tags ...string) {
	if len(tags) == 0 {
		return
	}
	s.near.invalidate(tags...)
	if err := s.d.Notices.Publish(ctx, authTopic, strings.Join(tags, "\n")); err != nil {
		s.d.Log.WarnContext(ctx, "publishing an auth invalidation failed; other instances may trust the old value until it expires",
			"error", err.Error())
	}
}

// MembershipChanged tells every instance that the user's membership of the
// team changed (role, removal, acceptance), once the change has committed.
// The user's API keys in the team go with it.
func (s *Service) MembershipChanged(ctx context.Context, teamID, userID string) {
	s.changed(ctx, memberTag(teamID, userID))
}

// Close stops listening for invalidations; the cache then serves nothing.
func (s *Service) Close() {
	s.unsubscribe()
	s.near.setLive(false)
}
