package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/ports/snapshotstore"
)

type snapshots struct{ s *Store }

func (r snapshots) Create(ctx context.Context, s snapshot.Snapshot) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error { return st.snapshots.insert(undo, s) })
}

func (r snapshots) ByID(ctx context.Context, teamID, profileID, id string) (snapshot.Snapshot, error) {
	return readValue(ctx, r.s, func(st *state) (snapshot.Snapshot, error) { return snapshotOf(st, teamID, profileID, id) })
}

// snapshotOf is the team's snapshot of the profile: another profile's is
// not found, as another team's is.
func snapshotOf(st *state, teamID, profileID, id string) (snapshot.Snapshot, error) {
	s, err := st.snapshots.inTeam(teamID, id)
	if err != nil {
		return snapshot.Snapshot{}, err
	}
	if s.ProfileID != profileID {
		return snapshot.Snapshot{}, domain.NotFound("snapshot")
	}
	return s, nil
}

func (r snapshots) List(ctx context.Context, teamID, profileID string, f snapshotstore.Filter) ([]snapshot.Snapshot, error) {
	return readValue(ctx, r.s, func(st *state) ([]snapshot.Snapshot, error) {
		return st.snapshots.pageDown(teamID, f.BeforeID, f.Limit, ofProfile(profileID)), nil
	})
}

func ofProfile(profileID string) func(*snapshot.Snapshot) bool {
	return func(s *snapshot.Snapshot) bool { return s.ProfileID == profileID }
}

func (r snapshots) Delete(ctx context.Context, teamID, profileID, id string) (snapshot.Snapshot, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (snapshot.Snapshot, error) {
		s, err := snapshotOf(st, teamID, profileID, id)
		if err != nil {
			return snapshot.Snapshot{}, err
		}
		st.snapshots.remove(undo, id)
		return s, nil
	})
}

// Prune keeps the keep snapshots with the highest ids; a keep below zero
// keeps none.
func (r snapshots) Prune(ctx context.Context, teamID, profileID string, keep int) ([]snapshot.Snapshot, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) ([]snapshot.Snapshot, error) {
		all := st.snapshots.pageDown(teamID, "", unlimited, ofProfile(profileID))
		if keep < 0 {
			keep = 0
		}
		if keep >= len(all) {
			return []snapshot.Snapshot{}, nil
		}
		removed := all[keep:]
		for _, s := range removed {
			st.snapshots.remove(undo, s.ID)
		}
		return removed, nil
	})
}

func (r snapshots) DeleteAll(ctx context.Context, teamID, profileID string) ([]snapshot.Snapshot, error) {
	return r.Prune(ctx, teamID, profileID, 0)
}

func cloneSnapshot(s snapshot.Snapshot) snapshot.Snapshot {
	s.Settings.Fingerprint = s.Settings.Fingerprint.Clone()
	s.Settings.Tags = slices.Clone(s.Settings.Tags)
	if s.Settings.Tags == nil {
		s.Settings.Tags = []string{}
	}
	if s.Settings.Proxy != nil {
		ref := *s.Settings.Proxy
		s.Settings.Proxy = &ref
	}
	s.Data, s.Cookies = cloneContent(s.Data), cloneContent(s.Cookies)
	s.CreatedAt = s.CreatedAt.UTC()
	return s
}

// Snapshots returns the snapshot repository.
func (s *Store) Snapshots() snapshotstore.Snapshots { return snapshots{s: s} }

// uploadRow is an upload in progress.
type uploadRow struct {
	id        string
	expiresAt time.Time
}

func cloneUploadRow(u uploadRow) uploadRow {
	u.expiresAt = u.expiresAt.UTC()
	return u
}

// garbageRow is a blob that may have lost its last reference.
type garbageRow struct {
	sha256     string
	releasedAt time.Time
}

func cloneGarbageRow(g garbageRow) garbageRow {
	g.releasedAt = g.releasedAt.UTC()
	return g
}

type blobRefs struct{ s *Store }

// BeginUpload waits, as every write does, for a unit of work in progress:
// so a collector's unit that saw no upload ends before one can begin.
func (r blobRefs) BeginUpload(ctx context.Context, id string, expiresAt time.Time) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		return st.uploads.insert(undo, uploadRow{id: id, expiresAt: expiresAt})
	})
}

func (r blobRefs) EndUpload(ctx context.Context, id string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		st.uploads.remove(undo, id)
		return nil
	})
}

func (r blobRefs) Release(ctx context.Context, at time.Time, sha256s ...string) error {
	if len(sha256s) == 0 {
		return nil
	}
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		for _, sha := range sha256s {
			next := garbageRow{sha256: sha, releasedAt: at}
			if cur, err := st.garbage.get(sha); err == nil && cur.releasedAt.After(at) {
				next.releasedAt = cur.releasedAt
			}
			st.garbage.put(undo, next)
		}
		return nil
	})
}

func (r blobRefs) UploadsInProgress(ctx context.Context, now time.Time) (bool, error) {
	return readValue(ctx, r.s, func(st *state) (bool, error) {
		return st.uploads.exists(func(u *uploadRow) bool { return u.expiresAt.After(now) }), nil
	})
}

// Garbage takes the candidates earliest released first, ties by sha256.
func (r blobRefs) Garbage(ctx context.Context, releasedBy time.Time, limit int) ([]string, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) ([]string, error) {
		referenced := referencedBlobs(st)
		due := st.garbage.scan(func(g *garbageRow) bool { return !g.releasedAt.After(releasedBy) },
			func(a, b *garbageRow) int {
				return cmp.Or(a.releasedAt.Compare(b.releasedAt), cmp.Compare(a.sha256, b.sha256))
			})
		out := []string{}
		for g := range due {
			switch {
			case referenced[g.sha256]:
				st.garbage.remove(undo, g.sha256)
			case len(out) < limit:
				out = append(out, g.sha256)
			}
		}
		return out, nil
	})
}

// referencedBlobs is every blob a profile or a snapshot of any team refers to.
func referencedBlobs(st *state) map[string]bool {
	refs := map[string]bool{}
	for p := range st.profiles.scan(all, nil) {
		for _, sha := range p.Blobs() {
			refs[sha] = true
		}
	}
	for s := range st.snapshots.scan(all, nil) {
		for _, sha := range s.Blobs() {
			refs[sha] = true
		}
	}
	return refs
}

func (r blobRefs) Forget(ctx context.Context, sha256s ...string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		for _, sha := range sha256s {
			st.garbage.remove(undo, sha)
		}
		return nil
	})
}

// BlobRefs returns the blob reference repository.
func (s *Store) BlobRefs() snapshotstore.BlobRefs { return blobRefs{s: s} }
