package profilecache

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

var _ profilestore.Cache = (*Local)(nil)

// Local is the read-through cache of profiles in this process
// (PROFILE_CACHE=local), for a store only one instance uses (SQLite): every
// write goes through this instance, which drops the entry, so no other
// process can hold a stale copy. Leases work as in Redis: a reader's fill
// lands only if no drop came between its miss and its fill.
type Local struct {
	ttl time.Duration
	now func() time.Time
	max int

	mu      sync.Mutex
	entries map[string]localEntry
}

type localEntry struct {
	p       profile.Profile
	lease   string // set while a reader that missed reads the database
	expires time.Time
}

// NewLocal returns a cache of at most max profiles, each kept for ttl, on
// now's time.
func NewLocal(ttl time.Duration, max int, now func() time.Time) *Local {
	return &Local{ttl: ttl, now: now, max: max, entries: map[string]localEntry{}}
}

func localKey(teamID, id string) string { return teamID + "/" + id }

// Get returns a live entry, or leases the missing one to the caller.
func (l *Local) Get(_ context.Context, teamID, id string) (profile.Profile, bool, string) {
	k := localKey(teamID, id)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[k]
	if ok && now.Before(e.expires) {
		if e.lease == "" {
			return clone(e.p), true, ""
		}
		return profile.Profile{}, false, "" // another reader is filling it
	}
	if len(l.entries) >= l.max {
		l.evict(now)
	}
	lease, err := newToken()
	if err != nil {
		return profile.Profile{}, false, ""
	}
	l.entries[k] = localEntry{lease: lease, expires: now.Add(leaseTTL)}
	return profile.Profile{}, false, lease
}

// Fill stores p if the caller's lease still holds the entry.
func (l *Local) Fill(_ context.Context, teamID, id, lease string, p profile.Profile) {
	if lease == "" {
		return
	}
	k := localKey(teamID, id)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.entries[k]; ok && e.lease == lease {
		l.entries[k] = localEntry{p: clone(p), expires: l.now().Add(l.ttl)}
	}
}

// Drop removes the entry and any lease; it never fails.
func (l *Local) Drop(_ context.Context, teamID, id string) error {
	l.mu.Lock()
	delete(l.entries, localKey(teamID, id))
	l.mu.Unlock()
	return nil
}

// Len is how many entries (profiles and leases) the cache holds.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// evict makes room: expired entries first, else any tenth of them (map
// order), so a full cache costs one sweep per tenth of its size.
func (l *Local) evict(now time.Time) {
	for k, e := range l.entries {
		if !now.Before(e.expires) {
			delete(l.entries, k)
		}
	}
	for k := range l.entries {
		if len(l.entries) < l.max-l.max/10 {
			return
		}
		delete(l.entries, k)
	}
}

// clone copies what a caller could change in place, so the entry stays as
// it was stored.
func clone(p profile.Profile) profile.Profile {
	p.Tags = slices.Clone(p.Tags)
	p.Fingerprint = p.Fingerprint.Clone()
	if p.Proxy != nil {
		px := *p.Proxy
		p.Proxy = &px
	}
	if p.Session != nil {
		s := *p.Session
		p.Session = &s
	}
	if p.Data != nil {
		d := *p.Data
		p.Data = &d
	}
	if p.Cookies != nil {
		c := *p.Cookies
		p.Cookies = &c
	}
	return p
}
