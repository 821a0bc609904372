package profiles

import (
	"context"
	"sync"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// The profile cache (Deps.Cache) serves Get. Every write of a profile goes
// through the service's repository and unit of work, which the service
// wraps when a cache is set: a write drops the profile's entry once its
// unit has ended (committed or not), so a read that begins after the write
// returned misses and reads the database. A create drops nothing: no
// entry holds a profile before it exists. Launch, release and the reaper
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

// cacheKey names one profile of one team.
type cacheKey struct{ teamID, id string }

// dropSet collects the profiles a unit of work wrote.
type dropSet struct {
	mu   sync.Mutex
	keys []cacheKey
}

type dropSetKey struct{}

// droppingUnit runs units of work that drop, once they end, the cache
// entries of the profiles written in them.
type droppingUnit struct {
	ports.UnitOfWork
	drops *cacheDrops
}

func (u droppingUnit) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	set := &dropSet{}
	err := u.UnitOfWork.Do(context.WithValue(ctx, dropSetKey{}, set), fn)
	// Dropped whatever the outcome: a commit whose answer was lost may
	// still have happened.
	u.drops.now(ctx, set.keys)
	return err
}

// cacheDrops drops entries, logging a drop that failed.
type cacheDrops struct{ s *Service }

// later drops the entry of id when the unit ctx carries ends, or now when
// ctx carries none (the write committed on its own).
func (d *cacheDrops) later(ctx context.Context, teamID, id string) {
	if set, ok := ctx.Value(dropSetKey{}).(*dropSet); ok {
		set.mu.Lock()
		set.keys = append(set.keys, cacheKey{teamID, id})
		set.mu.Unlock()
		return
	}
	d.now(ctx, []cacheKey{{teamID, id}})
}

// now drops the entries of keys.
func (d *cacheDrops) now(ctx context.Context, keys []cacheKey) {
	ctx = context.WithoutCancel(ctx)
	for _, k := range keys {
		if err := d.s.d.Cache.Drop(ctx, k.teamID, k.id); err != nil {
			d.s.d.Log.ErrorContext(ctx, "drop a cached profile", "profile_id", k.id, "error", err.Error())
		}
	}
}

// droppingProfiles is the repository that marks every profile it changes
// for a drop.
type droppingProfiles struct {
	profilestore.Profiles
	drops *cacheDrops
}

func (r droppingProfiles) Update(ctx context.Context, p profile.Profile, expectVersion int) error {
	defer r.drops.later(ctx, p.TeamID, p.ID)
	return r.Profiles.Update(ctx, p, expectVersion)
}

func (r droppingProfiles) UpdateIdle(ctx context.Context, p profile.Profile, expectVersion int) error {
	defer r.drops.later(ctx, p.TeamID, p.ID)
	return r.Profiles.UpdateIdle(ctx, p, expectVersion)
}

func (r droppingProfiles) Delete(ctx context.Context, teamID, id string) error {
	defer r.drops.later(ctx, teamID, id)
	return r.Profiles.Delete(ctx, teamID, id)
}

func (r droppingProfiles) SwapSession(ctx context.Context, teamID, id string, sw profilestore.SessionSwap) (bool, error) {
	defer r.drops.later(ctx, teamID, id)
	return r.Profiles.SwapSession(ctx, teamID, id, sw)
}
