package profiles

import (
	"context"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
)

// Pages of the list are kept as their caller rendered them, tagged with
// the version of the team's list read before the page was. With the
// profile cache set, the version is the cache's (Cache.ListVersion, sent
// with concurrent readers' cache GETs): every write of a profile replaces
// it once its unit of work has ended (cache.go), as does a change of a
// proxy that profiles show (application/proxies). Without a cache, or
// while it does not answer, it is the store's (Profiles.ListVersion),
// which the write's own transaction moves. Either way a page read after
// the write returned is never served from a copy made before it. A page
// of 50 is some 25 KB of JSON that took a database read of 50 rows and
// ~30 us to encode; a copy costs the version's lookup.

// maxPageBytes bounds the copies this instance keeps.
const maxPageBytes = 32 << 20

// pageKey names one page of one team's list.
type pageKey struct {
	teamID string
	in     ListInput
}

type pageCopy struct {
	version string
	body    []byte
	expires time.Time
}

// pageCopies are the rendered pages of this instance.
type pageCopies struct {
	mu     sync.Mutex
	copies map[pageKey]pageCopy
	bytes  int
}

func (c *pageCopies) get(k pageKey, version string, now time.Time) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.copies[k]
	if !ok || e.version != version || !now.Before(e.expires) {
		return nil, false
	}
	return e.body, true
}

func (c *pageCopies) put(k pageKey, e pageCopy, now time.Time) {
	if len(e.body) > maxPageBytes/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.copies == nil {
		c.copies = map[pageKey]pageCopy{}
	}
	if old, ok := c.copies[k]; ok {
		c.bytes -= len(old.body)
	}
	c.copies[k] = e
	c.bytes += len(e.body)
	if c.bytes <= maxPageBytes {
		return
	}
	// Expired copies go first, then any others (map order) down to three
	// quarters of the bound, so a full memo costs one sweep now and then.
	for k, old := range c.copies {
		if !now.Before(old.expires) {
			delete(c.copies, k)
			c.bytes -= len(old.body)
		}
	}
	for k, old := range c.copies {
		if c.bytes <= maxPageBytes/4*3 {
			break
		}
		delete(c.copies, k)
		c.bytes -= len(old.body)
	}
}

// ListRendered is List rendered by render, served from this instance's
// copy while the team's list is unchanged. render must return bytes it
// does not change afterwards; the returned bytes must not be changed.
func (s *Service) ListRendered(ctx context.Context, actor team.Actor, in ListInput, render func(paging.Page[profile.Profile]) []byte) ([]byte, error) {
	if err := actor.Require(team.ActRead); err != nil {
		return nil, err
	}
	version := s.listVersion(ctx, actor.TeamID)
	k := pageKey{teamID: actor.TeamID, in: in}
	if version != "" {
		if body, ok := s.pages.get(k, version, s.d.Clock.Now()); ok {
			return body, nil
		}
	}
	page, err := s.List(ctx, actor, in)
	if err != nil {
		return nil, err
	}
	body := render(page)
	if version != "" {
		now := s.d.Clock.Now()
		s.pages.put(k, pageCopy{version: version, body: body, expires: now.Add(s.d.Policy.PagesTTL)}, now)
	}
	return body, nil
}

// listVersion is the version of the team's list, "" when neither the cache
// nor the store tells it (the page's own read then says what is wrong).
// The two kinds are told apart, a copy being valid only against its own.
func (s *Service) listVersion(ctx context.Context, teamID string) string {
	if s.d.Cache != nil {
		if v := s.d.Cache.ListVersion(ctx, teamID); v != "" {
			return "cache " + v
		}
	}
	v, err := s.d.Profiles.ListVersion(ctx, teamID)
	if err != nil {
		return ""
	}
	return "store " + v
}
