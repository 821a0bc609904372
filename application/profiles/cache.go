package profiles

import (
	"context"

	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain/profile"
)

// The profile cache (Deps.Cache) serves Get. Every write of a profile is
// followed by s.uncache, which drops the profile's entry once the write's
// unit of work has ended (committed or not), so a read that begins after
// the write returned misses and reads the database. A create drops nothing:
// no entry holds a profile before it exists. Launch, release and the reaper
// decide on rows read in their own transactions, never on the cache.

// cachedGet is Get through the cache. A profile with a proxy is not kept:
// its view shows the proxy, which the proxies module changes without
// passing here.
func (s *Service) cachedGet(ctx context.Context, teamID, id string) (profile.Profile, error) {
	p, hit, lease := s.d.Cache.Get(ctx, teamID, id)
	if hit {
		return p, nil
	}
	p, err := s.d.Profiles.ByID(ctx, teamID, id)
	if err != nil {
		return profile.Profile{}, err
	}
	if lease != "" && p.ProxyID == "" {
		s.d.Cache.Fill(ctx, teamID, id, lease, p)
	}
	return p, nil
}

// uncache drops the cached entry of the profile teamID/id when the unit
// ctx carries ends, whatever its outcome (a commit whose answer was lost
// may still have happened), or at once when ctx carries none: call it
// after the write, whatever the write returned.
func (s *Service) uncache(ctx context.Context, teamID, id string) {
	if s.d.Cache == nil {
		return
	}
	unit.OnEnd(ctx, func(ctx context.Context) {
		ctx = context.WithoutCancel(ctx)
		if err := s.d.Cache.Drop(ctx, teamID, id); err != nil {
			s.d.Log.ErrorContext(ctx, "drop a cached profile", "profile_id", id, "error", err.Error())
		}
	})
}
