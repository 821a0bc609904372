package profiles

import (
	"context"
	"errors"
	"fmt"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/snapshotstore"
)

// The time machine lives with the profiles: a snapshot is a profile's past
// state, and a restore is a change of the profile under the same rules as
// any other (idle only, version raised, profile.updated emitted).

// CreateSnapshot keeps the profile's current settings, cookies and data
// (by reference: no content is copied). Allowed while the profile runs: it
// keeps the data last saved. The oldest snapshots beyond the policy's
// number are pruned.
func (s *Service) CreateSnapshot(ctx context.Context, actor team.Actor, profileID, label string) (snapshot.Snapshot, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return snapshot.Snapshot{}, err
	}
	var out snapshot.Snapshot
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		p, err := s.d.Profiles.ByID(ctx, actor.TeamID, profileID)
		if err != nil {
			return err
		}
		out, err = s.keepSnapshot(ctx, actor.UserID, s.withProxy(ctx, p), label, snapshot.KindManual)
		return err
	})
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	return out, nil
}

// keepSnapshot stores a snapshot of p in ctx's unit and prunes the oldest
// beyond the policy, releasing the blobs the pruned ones referred to.
func (s *Service) keepSnapshot(ctx context.Context, userID string, p profile.Profile, label string, kind snapshot.Kind) (snapshot.Snapshot, error) {
	now := s.d.Clock.Now()
	sn, err := snapshot.Take(s.d.IDs.New("snap"), userID, p, label, kind, now)
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	if err := s.d.Snapshots.Create(ctx, sn); err != nil {
		return snapshot.Snapshot{}, err
	}
	pruned, err := s.d.Snapshots.Prune(ctx, p.TeamID, p.ID, s.d.Policy.SnapshotsPerProfile)
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

// SnapshotListInput selects a page of a profile's snapshots.
type SnapshotListInput struct {
	Cursor string
	Limit  int
}

// Snapshots lists the profile's snapshots, newest first.
func (s *Service) Snapshots(ctx context.Context, actor team.Actor, profileID string, in SnapshotListInput) (paging.Page[snapshot.Snapshot], error) {
	if err := actor.Require(team.ActRead); err != nil {
		return paging.Page[snapshot.Snapshot]{}, err
	}
	if err := paging.CheckCursor(in.Cursor, "snap_"); err != nil {
		return paging.Page[snapshot.Snapshot]{}, err
	}
	if _, err := s.d.Profiles.ByID(ctx, actor.TeamID, profileID); err != nil {
		return paging.Page[snapshot.Snapshot]{}, err
	}
	items, err := s.d.Snapshots.List(ctx, actor.TeamID, profileID, snapshotstore.Filter{BeforeID: in.Cursor, Limit: in.Limit + 1})
	if err != nil {
		return paging.Page[snapshot.Snapshot]{}, err
	}
	return paging.Cut(items, in.Limit, func(sn snapshot.Snapshot) string { return sn.ID }), nil
}

// Snapshot returns one snapshot of the profile.
func (s *Service) Snapshot(ctx context.Context, actor team.Actor, profileID, id string) (snapshot.Snapshot, error) {
	if err := actor.Require(team.ActRead); err != nil {
		return snapshot.Snapshot{}, err
	}
	return s.d.Snapshots.ByID(ctx, actor.TeamID, profileID, id)
}

// DeleteSnapshot removes a snapshot (admins and owners); content that
// nothing else refers to is then collected.
func (s *Service) DeleteSnapshot(ctx context.Context, actor team.Actor, profileID, id string) error {
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
// keeping the profile's current state as an automatic snapshot so that the
// restore can itself be undone. Refused while the profile runs. A proxy
// deleted since the snapshot is left out; the restored profile has none.
func (s *Service) Restore(ctx context.Context, actor team.Actor, profileID, snapshotID string) (profile.Profile, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return profile.Profile{}, err
	}
	var out profile.Profile
	var err error
	for range s.d.Policy.UpdateAttempts {
		err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
			out, err = s.restore(ctx, actor, profileID, snapshotID)
			return err
		})
		if !errors.Is(err, errVersionRace) {
			break
		}
	}
	if errors.Is(err, errVersionRace) {
		return profile.Profile{}, domain.Conflict("the profile kept changing while it was restored; try again")
	}
	return out, err
}

func (s *Service) restore(ctx context.Context, actor team.Actor, profileID, snapshotID string) (profile.Profile, error) {
	cur, err := s.d.Profiles.ByID(ctx, actor.TeamID, profileID)
	if err != nil {
		return profile.Profile{}, err
	}
	if cur.Session != nil {
		return profile.Profile{}, s.running(ctx, cur)
	}
	sn, err := s.d.Snapshots.ByID(ctx, actor.TeamID, profileID, snapshotID)
	if err != nil {
		return profile.Profile{}, err
	}
	cur = s.withProxy(ctx, cur)
	if _, err := s.keepSnapshot(ctx, actor.UserID, cur, fmt.Sprintf("before restoring %s", sn.ID), snapshot.KindAuto); err != nil {
		return profile.Profile{}, err
	}
	px, err := s.restorableProxy(ctx, actor.TeamID, sn.Settings.ProxyID)
	if err != nil {
		return profile.Profile{}, err
	}
	next := sn.RestoreOnto(cur, px != nil, s.d.Clock.Now())
	s.uncache(ctx, next.TeamID, next.ID)
	switch err := s.d.Profiles.UpdateIdle(ctx, next, cur.Version); {
	case errors.Is(err, profile.ErrRunning):
		return profile.Profile{}, s.stillRunning(ctx, actor.TeamID, profileID)
	case domain.IsKind(err, domain.KindPreconditionFailed):
		return profile.Profile{}, fmt.Errorf("%w: %w", errVersionRace, err)
	case err != nil:
		return profile.Profile{}, err
	}
	// The content the profile referred to is kept by the automatic
	// snapshot, unless pruning took it at once.
	if err := s.d.BlobRefs.Release(ctx, s.d.Clock.Now(), cur.Blobs()...); err != nil {
		return profile.Profile{}, err
	}
	if err := s.emit(ctx, next, event.ProfileUpdated, nil); err != nil {
		return profile.Profile{}, err
	}
	next.Proxy = nil
	if px != nil {
		next.Proxy = proxyRef(px)
		if next.ProxyID != cur.ProxyID {
			if err := s.assigned(ctx, next, px); err != nil {
				return profile.Profile{}, err
			}
		}
	}
	return next, nil
}

// restorableProxy returns the team's proxy id, or nil when it is gone (or
// id is empty). The team's lock orders this with a delete of the proxy, as
// for any assignment.
func (s *Service) restorableProxy(ctx context.Context, teamID, id string) (*proxy.Proxy, error) {
	if id == "" || s.d.Proxies == nil {
		return nil, nil
	}
	if err := s.d.Teams.Lock(ctx, teamID); err != nil {
		return nil, err
	}
	px, err := s.d.Proxies.Lookup(ctx, teamID, id)
	if domain.IsKind(err, domain.KindNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &px, nil
}
