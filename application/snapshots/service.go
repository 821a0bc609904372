// Package snapshots owns the time machine: snapshots of a profile's
// settings, cookies and data (by reference: no content is copied), their
// pruning, and the restore of one. A restore is a change of the profile
// under the same rules as any other (idle only, version raised,
// profile.updated emitted), made through the profiles module.
package snapshots

import (
	"context"
	"fmt"
	"time"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/snapshotstore"
)

// Profiles is what this module uses of the profiles module
// (profiles.Service has it).
type Profiles interface {
	// Stored returns the team's profile as stored now, its proxy shown.
	Stored(ctx context.Context, teamID, id string) (profile.Profile, error)
	// ChangeIdle applies change to the idle profile in one unit of work,
	// under the rules of every change of a profile; change runs in that
	// unit. during ends the conflict of a profile that kept changing under
	// every attempt.
	ChangeIdle(ctx context.Context, actor team.Actor, id, during string, change func(ctx context.Context, cur profile.Profile, now time.Time) (profile.Profile, error)) (profile.Profile, error)
}

// TeamLock takes a team's lock for the rest of the unit of work
// (teamstore.Teams has it): a restore that puts a proxy back is ordered
// with the proxy's deletion, as any assignment.
type TeamLock interface {
	Lock(ctx context.Context, teamID string) error
}

// Proxies reads the team's stored proxies (application/proxies has it).
type Proxies interface {
	// Lookup returns a proxy of the team; another team's is not found.
	Lookup(ctx context.Context, teamID, id string) (proxy.Proxy, error)
}

// Deps are the ports the service needs.
type Deps struct {
	Tx        ports.UnitOfWork
	Profiles  Profiles
	Snapshots snapshotstore.Snapshots
	// BlobRefs is told of the content pruned and deleted snapshots
	// referred to.
	BlobRefs snapshotstore.BlobRefs
	Teams    TeamLock
	// Proxies is the team's proxy pool; nil restores no proxy.
	Proxies Proxies
	Clock   ports.Clock
	IDs     ports.IDs
	// PerProfile is how many snapshots a profile keeps.
	PerProfile int
}

// Service runs the time machine's use cases.
type Service struct {
	d Deps
}

// New returns the service.
func New(d Deps) *Service {
	if d.PerProfile <= 0 {
		d.PerProfile = 20
	}
	return &Service{d: d}
}

// Create keeps the profile's current settings, cookies and data (by
// reference: no content is copied). Allowed while the profile runs: it
// keeps the data last saved. The oldest snapshots beyond the policy's
// number are pruned.
func (s *Service) Create(ctx context.Context, actor team.Actor, profileID, label string) (snapshot.Snapshot, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return snapshot.Snapshot{}, err
	}
	var out snapshot.Snapshot
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		p, err := s.d.Profiles.Stored(ctx, actor.TeamID, profileID)
		if err != nil {
			return err
		}
		out, err = s.keep(ctx, actor.UserID, p, label, snapshot.KindManual)
		return err
	})
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	return out, nil
}

// keep stores a snapshot of p in ctx's unit and prunes the oldest beyond
// the policy, releasing the blobs the pruned ones referred to.
func (s *Service) keep(ctx context.Context, userID string, p profile.Profile, label string, kind snapshot.Kind) (snapshot.Snapshot, error) {
	now := s.d.Clock.Now()
	sn, err := snapshot.Take(s.d.IDs.New("snap"), userID, p, label, kind, now)
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	if err := s.d.Snapshots.Create(ctx, sn); err != nil {
		return snapshot.Snapshot{}, err
	}
	pruned, err := s.d.Snapshots.Prune(ctx, p.TeamID, p.ID, s.d.PerProfile)
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	var blobs []string
	for _, old := range pruned {
		blobs = append(blobs, old.Blobs()...)
	}
	if err := s.d.BlobRefs.Release(ctx, now, blobs...); err != nil {
		return snapshot.Snapshot{}, err
	}
	return sn, nil
}

// ListInput selects a page of a profile's snapshots.
type ListInput struct {
	Cursor string
	Limit  int
}

// List lists the profile's snapshots, newest first.
func (s *Service) List(ctx context.Context, actor team.Actor, profileID string, in ListInput) (paging.Page[snapshot.Snapshot], error) {
	if err := actor.Require(team.ActRead); err != nil {
		return paging.Page[snapshot.Snapshot]{}, err
	}
	if err := paging.CheckCursor(in.Cursor, "snap_"); err != nil {
		return paging.Page[snapshot.Snapshot]{}, err
	}
	if _, err := s.d.Profiles.Stored(ctx, actor.TeamID, profileID); err != nil {
		return paging.Page[snapshot.Snapshot]{}, err
	}
	items, err := s.d.Snapshots.List(ctx, actor.TeamID, profileID, snapshotstore.Filter{BeforeID: in.Cursor, Limit: in.Limit + 1})
	if err != nil {
		return paging.Page[snapshot.Snapshot]{}, err
	}
	return paging.Cut(items, in.Limit, func(sn snapshot.Snapshot) string { return sn.ID }), nil
}

// Get returns one snapshot of the profile.
func (s *Service) Get(ctx context.Context, actor team.Actor, profileID, id string) (snapshot.Snapshot, error) {
	if err := actor.Require(team.ActRead); err != nil {
		return snapshot.Snapshot{}, err
	}
	return s.d.Snapshots.ByID(ctx, actor.TeamID, profileID, id)
}

// Delete removes a snapshot (admins and owners); content that nothing
// else refers to is then collected.
func (s *Service) Delete(ctx context.Context, actor team.Actor, profileID, id string) error {
	if err := actor.Require(team.ActDelete); err != nil {
		return err
	}
	return s.d.Tx.Do(ctx, func(ctx context.Context) error {
		sn, err := s.d.Snapshots.Delete(ctx, actor.TeamID, profileID, id)
		if err != nil {
			return err
		}
		return s.d.BlobRefs.Release(ctx, s.d.Clock.Now(), sn.Blobs()...)
	})
}

// Restore puts back the snapshot's settings, cookies and data, after
// keeping the profile's current state as an automatic snapshot, in the
// same unit, so that the restore can itself be undone. Refused while the
// profile runs. A proxy deleted since the snapshot is left out; the
// restored profile has none.
func (s *Service) Restore(ctx context.Context, actor team.Actor, profileID, snapshotID string) (profile.Profile, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return profile.Profile{}, err
	}
	return s.d.Profiles.ChangeIdle(ctx, actor, profileID, "it was restored", func(ctx context.Context, cur profile.Profile, now time.Time) (profile.Profile, error) {
		sn, err := s.d.Snapshots.ByID(ctx, actor.TeamID, profileID, snapshotID)
		if err != nil {
			return profile.Profile{}, err
		}
		if _, err := s.keep(ctx, actor.UserID, cur, fmt.Sprintf("before restoring %s", sn.ID), snapshot.KindAuto); err != nil {
			return profile.Profile{}, err
		}
		exists, err := s.proxyExists(ctx, actor.TeamID, sn.Settings.ProxyID)
		if err != nil {
			return profile.Profile{}, err
		}
		return sn.RestoreOnto(cur, exists, now), nil
	})
}

// proxyExists reports whether the team still has the proxy id (never for
// an empty id). The team's lock orders this with a delete of the proxy,
// as for any assignment.
func (s *Service) proxyExists(ctx context.Context, teamID, id string) (bool, error) {
	if id == "" || s.d.Proxies == nil {
		return false, nil
	}
	if err := s.d.Teams.Lock(ctx, teamID); err != nil {
		return false, err
	}
	_, err := s.d.Proxies.Lookup(ctx, teamID, id)
	if domain.IsKind(err, domain.KindNotFound) {
		return false, nil
	}
	return err == nil, err
}
