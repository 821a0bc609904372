package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/ports/snapshotstore"
)

// storeSHA returns a sha256 in lowercase hex that no other call returns.
func storeSHA() string {
	sum := sha256.Sum256([]byte(storeID("blob")))
	return hex.EncodeToString(sum[:])
}

// content returns a blob reference of the given size.
func (f storeFixture) content(size int64) *profile.Content {
	return &profile.Content{SHA256: storeSHA(), Size: size}
}

// snapshot returns a manual snapshot of the profile with every field set:
// a proxy as it looked, ordered tags, data and cookies.
func (f storeFixture) snapshot(teamID, profileID string) snapshot.Snapshot {
	return snapshot.Snapshot{
		ID: storeID("snp"), TeamID: teamID, ProfileID: profileID,
		Label: "before the checkout \u00e9\u4e16 \"quoted\"", Kind: snapshot.KindManual,
		Settings: snapshot.Settings{
			Name: "Shop", TemplateID: "tpl_chrome_win_us", Browser: profile.BrowserChromium,
			Fingerprint: windowsDevice(),
			ProxyID:     storeID("prx"),
			Tags:        []string{"zeta", "alpha", "mid"},
			Notes:       "line one\nline two",
		},
		Data:      f.content(5 << 30),
		Cookies:   f.content(4096),
		CreatedBy: storeID("usr"),
		CreatedAt: storeAt(time.Hour).In(storeZone),
	}
}

func (f storeFixture) createSnapshots(ss ...snapshot.Snapshot) {
	f.t.Helper()
	for _, s := range ss {
		f.must("create snapshot "+s.ID, f.s.Snapshots().Create(f.ctx, s))
	}
}

func (f storeFixture) expectSnapshot(ctx context.Context, want snapshot.Snapshot) {
	f.t.Helper()
	got, err := f.s.Snapshots().ByID(ctx, want.TeamID, want.ProfileID, want.ID)
	if err != nil {
		f.t.Fatalf("snapshot %s: %v", want.ID, err)
	}
	checkEqual(f.t, "snapshot", got, want)
}

func (f storeFixture) listSnapshots(teamID, profileID string, flt snapshotstore.Filter) []snapshot.Snapshot {
	f.t.Helper()
	got, err := f.s.Snapshots().List(f.ctx, teamID, profileID, flt)
	f.must("List snapshots", err)
	return got
}

func snapshotIDs(ss []snapshot.Snapshot) []string {
	return ids(ss, func(s snapshot.Snapshot) string { return s.ID })
}

// snapshotsNewestFirst returns the ids of ss from the highest to the lowest.
func snapshotsNewestFirst(ss ...snapshot.Snapshot) []string {
	out := snapshotIDs(ss)
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// checkSnapshots compares snapshots a call returned, in whatever order,
// with want.
func checkSnapshots(t *testing.T, what string, got []snapshot.Snapshot, want ...snapshot.Snapshot) {
	t.Helper()
	got = slices.Clone(got)
	want = slices.Clone(want)
	byID := func(a, b snapshot.Snapshot) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	checkIDs(t, what, snapshotIDs(got), snapshotIDs(want))
	if len(got) == len(want) {
		for i := range got {
			checkEqual(t, what, got[i], want[i])
		}
	}
}

func runSnapshotRepository(t *testing.T, newStore NewStore) {
	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, profileID := storeID("tm"), storeID("prf")
		full := f.snapshot(teamID, profileID)
		full.Settings.Proxy = &profile.ProxyRef{ID: full.Settings.ProxyID, Type: "socks5", Host: "proxy.example.com", Port: 1080}
		bare := f.snapshot(teamID, profileID)
		bare.Label, bare.Kind = "", snapshot.KindAuto
		bare.Settings.ProxyID, bare.Settings.Tags, bare.Settings.Notes = "", nil, ""
		bare.Data, bare.Cookies = nil, nil
		bare.CreatedAt = storeAt(2 * time.Hour)
		// A proxy shown as it looked, whose id no longer matches, comes back
		// as written.
		stale := f.snapshot(teamID, profileID)
		stale.Settings.ProxyID = ""
		stale.Settings.Proxy = &profile.ProxyRef{ID: storeID("prx"), Type: "http", Host: "old.example.com", Port: 8080}
		stale.Cookies = nil
		f.createSnapshots(full, bare, stale)
		f.expectSnapshot(f.ctx, full)
		f.expectSnapshot(f.ctx, bare)
		f.expectSnapshot(f.ctx, stale)
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		s := f.snapshot(storeID("tm"), storeID("prf"))
		s.Settings.Proxy = &profile.ProxyRef{ID: s.Settings.ProxyID, Type: "https", Host: "proxy.example.com", Port: 443}
		want := s
		want.Settings.Tags = slices.Clone(s.Settings.Tags)
		ref, data, cookies := *s.Settings.Proxy, *s.Data, *s.Cookies
		want.Settings.Proxy, want.Data, want.Cookies = &ref, &data, &cookies
		f.createSnapshots(s)
		s.Settings.Tags[0] = "changed"
		s.Settings.Proxy.Host = "changed"
		s.Data.Size, s.Cookies.SHA256 = 1, "changed"

		got, err := f.s.Snapshots().ByID(f.ctx, want.TeamID, want.ProfileID, want.ID)
		f.must("ByID", err)
		checkEqual(t, "snapshot", got, want)
		got.Settings.Tags[1] = "changed"
		got.Settings.Proxy.Port = 1
		got.Data.SHA256 = "changed"
		listed := f.listSnapshots(want.TeamID, want.ProfileID, snapshotstore.Filter{Limit: 10})
		listed[0].Settings.Tags[0] = "changed"
		listed[0].Cookies.Size = 1
		f.expectSnapshot(f.ctx, want)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		s := f.snapshot(storeID("tm"), storeID("prf"))
		f.createSnapshots(s)
		again := f.snapshot(storeID("tm"), storeID("prf"))
		again.ID = s.ID
		expectConflict(t, "Create with the same id in another team", f.s.Snapshots().Create(f.ctx, again))
		f.expectSnapshot(f.ctx, s)
	})

	t.Run("another team's or profile's snapshot is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		s := f.snapshot(storeID("tm"), storeID("prf"))
		f.createSnapshots(s)
		otherTeam, otherProfile := storeID("tm"), storeID("prf")
		repo := f.s.Snapshots()
		_, err := repo.ByID(f.ctx, otherTeam, s.ProfileID, s.ID)
		expectNotFound(t, "ByID from another team", err)
		_, err = repo.ByID(f.ctx, s.TeamID, otherProfile, s.ID)
		expectNotFound(t, "ByID through another profile", err)
		_, err = repo.ByID(f.ctx, s.TeamID, s.ProfileID, storeID("snp"))
		expectNotFound(t, "ByID of an unknown id", err)
		_, err = repo.Delete(f.ctx, otherTeam, s.ProfileID, s.ID)
		expectNotFound(t, "Delete from another team", err)
		_, err = repo.Delete(f.ctx, s.TeamID, otherProfile, s.ID)
		expectNotFound(t, "Delete through another profile", err)
		_, err = repo.Delete(f.ctx, s.TeamID, s.ProfileID, storeID("snp"))
		expectNotFound(t, "Delete of an unknown id", err)
		checkIDs(t, "List from another team", snapshotIDs(f.listSnapshots(otherTeam, s.ProfileID, snapshotstore.Filter{Limit: 10})), nil)
		checkIDs(t, "List of another profile", snapshotIDs(f.listSnapshots(s.TeamID, otherProfile, snapshotstore.Filter{Limit: 10})), nil)
		pruned, err := repo.Prune(f.ctx, otherTeam, s.ProfileID, 0)
		f.must("Prune from another team", err)
		checkIDs(t, "Prune from another team", snapshotIDs(pruned), nil)
		removed, err := repo.DeleteAll(f.ctx, otherTeam, s.ProfileID)
		f.must("DeleteAll from another team", err)
		checkIDs(t, "DeleteAll from another team", snapshotIDs(removed), nil)
		f.expectSnapshot(f.ctx, s)
	})

	t.Run("List pages a profile's snapshots newest first", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, profileID := storeID("tm"), storeID("prf")
		ss := make([]snapshot.Snapshot, 5)
		for i := range ss {
			ss[i] = f.snapshot(teamID, profileID)
			ss[i].Settings.Notes = string(rune('a' + i))
		}
		// The same profile id in another team, and another profile of the
		// team, hold snapshots of their own.
		f.createSnapshots(f.snapshot(storeID("tm"), profileID), f.snapshot(teamID, storeID("prf")))
		for _, i := range []int{2, 0, 4, 1, 3} {
			f.createSnapshots(ss[i])
		}
		all := snapshotsNewestFirst(ss...)
		got := f.listSnapshots(teamID, profileID, snapshotstore.Filter{Limit: 10})
		checkIDs(t, "List all", snapshotIDs(got), all)
		for i := range got {
			checkEqual(t, "snapshot", got[i], ss[len(ss)-1-i])
		}
		list := func(flt snapshotstore.Filter) []string { return snapshotIDs(f.listSnapshots(teamID, profileID, flt)) }
		checkIDs(t, "first page", list(snapshotstore.Filter{Limit: 2}), all[:2])
		checkIDs(t, "second page", list(snapshotstore.Filter{BeforeID: all[1], Limit: 2}), all[2:4])
		checkIDs(t, "last page", list(snapshotstore.Filter{BeforeID: all[3], Limit: 2}), all[4:])
		checkIDs(t, "before the oldest", list(snapshotstore.Filter{BeforeID: all[4], Limit: 2}), nil)
		checkIDs(t, "limit 0", list(snapshotstore.Filter{}), nil)
	})

	t.Run("Delete removes one snapshot and returns it", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, profileID := storeID("tm"), storeID("prf")
		doomed, kept := f.snapshot(teamID, profileID), f.snapshot(teamID, profileID)
		f.createSnapshots(doomed, kept)
		got, err := f.s.Snapshots().Delete(f.ctx, teamID, profileID, doomed.ID)
		f.must("Delete", err)
		checkEqual(t, "deleted snapshot", got, doomed)
		_, err = f.s.Snapshots().ByID(f.ctx, teamID, profileID, doomed.ID)
		expectNotFound(t, "ByID after Delete", err)
		_, err = f.s.Snapshots().Delete(f.ctx, teamID, profileID, doomed.ID)
		expectNotFound(t, "second Delete", err)
		checkIDs(t, "List after Delete", snapshotIDs(f.listSnapshots(teamID, profileID, snapshotstore.Filter{Limit: 10})), []string{kept.ID})
	})

	t.Run("Prune keeps the newest and returns the rest", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, profileID := storeID("tm"), storeID("prf")
		ss := make([]snapshot.Snapshot, 5)
		for i := range ss {
			ss[i] = f.snapshot(teamID, profileID)
		}
		neighbour := f.snapshot(teamID, storeID("prf"))
		f.createSnapshots(neighbour)
		for _, i := range []int{3, 1, 4, 0, 2} {
			f.createSnapshots(ss[i])
		}
		repo := f.s.Snapshots()
		removed, err := repo.Prune(f.ctx, teamID, profileID, 5)
		f.must("Prune keeping all", err)
		checkSnapshots(t, "Prune keeping all", removed)
		removed, err = repo.Prune(f.ctx, teamID, profileID, 7)
		f.must("Prune keeping more than there are", err)
		checkSnapshots(t, "Prune keeping more than there are", removed)

		removed, err = repo.Prune(f.ctx, teamID, profileID, 2)
		f.must("Prune keeping 2", err)
		checkSnapshots(t, "Prune keeping 2", removed, ss[:3]...)
		checkIDs(t, "left after Prune", snapshotIDs(f.listSnapshots(teamID, profileID, snapshotstore.Filter{Limit: 10})), snapshotsNewestFirst(ss[3:]...))

		removed, err = repo.Prune(f.ctx, teamID, profileID, 1)
		f.must("Prune keeping 1", err)
		checkSnapshots(t, "Prune keeping 1", removed, ss[3])

		more := f.snapshot(teamID, profileID)
		f.createSnapshots(more)
		removed, err = repo.DeleteAll(f.ctx, teamID, profileID)
		f.must("DeleteAll", err)
		checkSnapshots(t, "DeleteAll", removed, ss[4], more)
		checkIDs(t, "left after DeleteAll", snapshotIDs(f.listSnapshots(teamID, profileID, snapshotstore.Filter{Limit: 10})), nil)
		removed, err = repo.DeleteAll(f.ctx, teamID, profileID)
		f.must("DeleteAll of none", err)
		checkSnapshots(t, "DeleteAll of none", removed)
		f.expectSnapshot(f.ctx, neighbour)
	})

	t.Run("Prune keeping none removes every snapshot", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, profileID := storeID("tm"), storeID("prf")
		a, b := f.snapshot(teamID, profileID), f.snapshot(teamID, profileID)
		f.createSnapshots(a, b)
		removed, err := f.s.Snapshots().Prune(f.ctx, teamID, profileID, 0)
		f.must("Prune keeping none", err)
		checkSnapshots(t, "Prune keeping none", removed, a, b)
	})

	t.Run("writes inside a unit of work commit or roll back with it", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, profileID := storeID("tm"), storeID("prf")
		old := f.snapshot(teamID, profileID)
		f.createSnapshots(old)
		created := f.snapshot(teamID, profileID)
		write := func(ctx context.Context) error {
			if err := f.s.Snapshots().Create(ctx, created); err != nil {
				return err
			}
			_, err := f.s.Snapshots().Delete(ctx, teamID, profileID, old.ID)
			return err
		}
		err := f.s.Do(f.ctx, func(ctx context.Context) error {
			if err := write(ctx); err != nil {
				return err
			}
			f.expectSnapshot(ctx, created)
			got, err := f.s.Snapshots().List(ctx, teamID, profileID, snapshotstore.Filter{Limit: 10})
			if err != nil {
				return err
			}
			checkIDs(t, "snapshots inside the unit", snapshotIDs(got), []string{created.ID})
			return errUnitFailed
		})
		if !errors.Is(err, errUnitFailed) {
			t.Fatalf("Do returned %v, want the error fn returned", err)
		}
		checkIDs(t, "snapshots after the failed unit", snapshotIDs(f.listSnapshots(teamID, profileID, snapshotstore.Filter{Limit: 10})), []string{old.ID})
		f.must("Do", f.s.Do(f.ctx, write))
		checkIDs(t, "snapshots after the unit", snapshotIDs(f.listSnapshots(teamID, profileID, snapshotstore.Filter{Limit: 10})), []string{created.ID})
	})
}
