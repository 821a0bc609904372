package profiles

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/team"
)

// The modules that act on a profile without owning it (its browser data,
// the time machine) read it and change it here, so that every change of a
// profile follows the same rules: idle only, version raised, the cache
// dropped, the content it no longer refers to released, profile.updated
// emitted. They check the actor's role themselves, before.

// Stored returns the team's profile as stored now (not through the
// cache), its proxy shown.
func (s *Service) Stored(ctx context.Context, teamID, id string) (profile.Profile, error) {
	p, err := s.d.Profiles.ByID(ctx, teamID, id)
	if err != nil {
		return profile.Profile{}, err
	}
	return s.withProxy(ctx, p), nil
}

// Idle is Stored for a profile that must not run: a running one is the
// conflict that names who holds it.
func (s *Service) Idle(ctx context.Context, teamID, id string) (profile.Profile, error) {
	p, err := s.Stored(ctx, teamID, id)
	if err != nil {
		return profile.Profile{}, err
	}
	if p.Session != nil {
		return profile.Profile{}, s.running(ctx, p)
	}
	return p, nil
}

// errVersionRace is a unit that lost a race with another writer of the
// profile and may run again.
var errVersionRace = errors.New("the profile changed during the unit")

// ChangeIdle applies change to the idle profile in one unit of work and
// returns the profile as it is then. change runs in that unit (what it
// writes commits with the profile) and gets the profile as stored, its
// proxy shown; it returns the next state with the version raised, or cur
// as it is for no change, which writes nothing. A new proxy must be one of
// the team's (proxy.assigned is emitted). A concurrent writer that wins
// the race is not overwritten: the unit runs again, up to the policy's
// attempts, and then the profile is a conflict that kept changing while
// during ("it was restored").
func (s *Service) ChangeIdle(ctx context.Context, actor team.Actor, id, during string, change func(ctx context.Context, cur profile.Profile, now time.Time) (profile.Profile, error)) (profile.Profile, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return profile.Profile{}, err
	}
	var out profile.Profile
	var err error
	for range s.d.Policy.UpdateAttempts {
		err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
			out, err = s.changeIdle(ctx, actor.TeamID, id, change)
			return err
		})
		if !errors.Is(err, errVersionRace) {
			break
		}
	}
	if errors.Is(err, errVersionRace) {
		return profile.Profile{}, domain.Conflict(fmt.Sprintf("the profile kept changing while %s; try again", during))
	}
	return out, err
}

func (s *Service) changeIdle(ctx context.Context, teamID, id string, change func(ctx context.Context, cur profile.Profile, now time.Time) (profile.Profile, error)) (profile.Profile, error) {
	cur, err := s.Idle(ctx, teamID, id)
	if err != nil {
		return profile.Profile{}, err
	}
	next, err := change(ctx, cur, s.d.Clock.Now())
	if err != nil {
		return profile.Profile{}, err
	}
	if next.Version == cur.Version {
		return cur, nil
	}
	var px *proxy.Proxy
	if next.ProxyID != cur.ProxyID {
		if px, err = s.assignable(ctx, teamID, next.ProxyID, nil); err != nil {
			return profile.Profile{}, err
		}
	}
	s.uncache(ctx, next.TeamID, next.ID)
	switch err := s.d.Profiles.UpdateIdle(ctx, next, cur.Version); {
	case errors.Is(err, profile.ErrRunning):
		return profile.Profile{}, s.stillRunning(ctx, teamID, id)
	case domain.IsKind(err, domain.KindPreconditionFailed):
		return profile.Profile{}, fmt.Errorf("%w: %w", errVersionRace, err)
	case err != nil:
		return profile.Profile{}, err
	}
	if err := s.d.BlobRefs.Release(ctx, s.d.Clock.Now(), cur.Blobs()...); err != nil {
		return profile.Profile{}, err
	}
	if err := s.emit(ctx, next, event.ProfileUpdated, nil); err != nil {
		return profile.Profile{}, err
	}
	if err := s.assigned(ctx, next, px); err != nil {
		return profile.Profile{}, err
	}
	out := next
	if px != nil {
		out.Proxy = proxyRef(px)
	}
	return s.withProxy(ctx, out), nil
}

// stillRunning reports the conflict of a profile launched during a unit
// that found it idle.
func (s *Service) stillRunning(ctx context.Context, teamID, id string) error {
	if p, err := s.d.Profiles.ByID(ctx, teamID, id); err == nil && p.Session != nil {
		return s.running(ctx, p)
	}
	return profile.ErrRunning
}

// sameContent reports whether two states of a profile refer to the same
// data and cookies.
func sameContent(a, b profile.Profile) bool {
	var ad, bd, ac, bc string
	if a.Data != nil {
		ad = a.Data.SHA256
	}
	if b.Data != nil {
		bd = b.Data.SHA256
	}
	if a.Cookies != nil {
		ac = a.Cookies.SHA256
	}
	if b.Cookies != nil {
		bc = b.Cookies.SHA256
	}
	return ad == bd && ac == bc
}
