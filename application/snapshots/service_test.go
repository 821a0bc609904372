package snapshots_test

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/snapshots"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// Restore puts back the snapshot's settings and data, and keeps what it
// replaced as an automatic snapshot; it is refused to a viewer, for a
// running profile and for a snapshot that does not exist.
func TestRestorePutsBackTheSnapshotAndKeepsWhatItReplaced(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	first := testenv.TarGz(t, map[string]string{"Default/Preferences": `{"first":true}`})
	firstData, err := f.data.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(first)})
	if err != nil {
		t.Fatal(err)
	}
	sn, err := f.svc.Create(ctx, alice, p.ID, "before the change")
	if err != nil {
		t.Fatal(err)
	}
	renamed := "Changed"
	if _, err := f.profiles.Update(ctx, alice, p.ID, profile.Patch{Name: &renamed}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.data.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{"Default/Preferences": `{"second":true}`}))}); err != nil {
		t.Fatal(err)
	}

	if _, err := f.svc.Restore(ctx, viewer, p.ID, sn.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer restores: %v, want forbidden", err)
	}
	if _, err := f.svc.Restore(ctx, alice, p.ID, "snap_none"); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("restore of no snapshot: %v, want not found", err)
	}
	updatesBefore := f.eventsOf(t, event.ProfileUpdated)
	restored, err := f.svc.Restore(ctx, alice, p.ID, sn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Name != "Shop" || restored.Data == nil || restored.Data.SHA256 != firstData.SHA256 || restored.Version != 5 {
		t.Fatalf("restored %q version %d with data %+v, want Shop version 5 with the first archive (%s)", restored.Name, restored.Version, restored.Data, firstData.SHA256)
	}
	if got := f.stored(t, p.ID); got.Name != "Shop" || got.Version != 5 {
		t.Fatalf("stored after the restore: %q version %d, want Shop version 5", got.Name, got.Version)
	}
	if n := f.eventsOf(t, event.ProfileUpdated); n != updatesBefore+1 {
		t.Fatalf("%d profile.updated events after the restore, want %d", n, updatesBefore+1)
	}
	page, err := f.svc.List(ctx, viewer, p.ID, snapshots.ListInput{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[0].Kind != snapshot.KindAuto || page.Items[0].Label != "before restoring "+sn.ID ||
		page.Items[0].Settings.Name != renamed {
		t.Fatalf("snapshots after the restore: %+v, want the automatic one of %q first", page.Items, renamed)
	}

	f.run(t, p.ID)
	if _, err := f.svc.Restore(ctx, alice, p.ID, sn.ID); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("restore of a running profile: %v, want a conflict", err)
	}
}

// Snapshots are read by every member of the profile's team, taken and
// restored by members, deleted by admins.
func TestRolesAndTeams(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	if _, err := f.svc.Create(ctx, viewer, p.ID, ""); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer takes a snapshot: %v, want forbidden", err)
	}
	if _, err := f.svc.Create(ctx, outsider, p.ID, ""); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("snapshot of another team's profile: %v, want not found", err)
	}
	sn, err := f.svc.Create(ctx, bob, p.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.svc.Get(ctx, viewer, p.ID, sn.ID); err != nil || got.ID != sn.ID || got.CreatedBy != "usr_bob" {
		t.Fatalf("viewer reads the snapshot: %+v, %v", got, err)
	}
	if _, err := f.svc.Get(ctx, outsider, p.ID, sn.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("snapshot from another team: %v, want not found", err)
	}
	if _, err := f.svc.List(ctx, outsider, p.ID, snapshots.ListInput{Limit: 10}); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("list of another team's profile: %v, want not found", err)
	}
	if err := f.svc.Delete(ctx, bob, p.ID, sn.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("member deletes a snapshot: %v, want forbidden", err)
	}
	if _, err := f.svc.Restore(ctx, outsider, p.ID, sn.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("restore from another team: %v, want not found", err)
	}
	if err := f.svc.Delete(ctx, admin, p.ID, sn.ID); err != nil {
		t.Fatalf("admin deletes a snapshot: %v", err)
	}
	if err := f.svc.Delete(ctx, admin, p.ID, sn.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("delete again: %v, want not found", err)
	}
	if _, err := f.svc.Get(ctx, viewer, p.ID, sn.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("read after the delete: %v, want not found", err)
	}
}

func labels(ss []snapshot.Snapshot) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Label)
	}
	return strings.Join(out, ",")
}

// A profile keeps the policy's number of snapshots, the newest; a list
// pages through them newest first.
func TestCreatePrunesAndListPages(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	f.deps.PerProfile = 3
	f.build(t)
	ctx := context.Background()
	for _, l := range []string{"a", "b", "c", "d"} {
		if _, err := f.svc.Create(ctx, alice, p.ID, l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Create(ctx, alice, p.ID, strings.Repeat("x", 201)); !domain.IsKind(err, domain.KindValidation) {
		t.Fatalf("a label of 201 characters: %v, want a validation error", err)
	}
	first, err := f.svc.List(ctx, viewer, p.ID, snapshots.ListInput{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(first.Items); got != "d,c" || first.NextCursor == "" {
		t.Fatalf("first page %q, cursor %q; want d,c and a cursor", got, first.NextCursor)
	}
	rest, err := f.svc.List(ctx, viewer, p.ID, snapshots.ListInput{Cursor: first.NextCursor, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(rest.Items); got != "b" || rest.NextCursor != "" {
		t.Fatalf("second page %q, cursor %q; want b (a was pruned) and no cursor", got, rest.NextCursor)
	}
	if _, err := f.svc.List(ctx, viewer, p.ID, snapshots.ListInput{Cursor: "prf_001", Limit: 2}); !domain.IsKind(err, domain.KindBadRequest) {
		t.Fatalf("a cursor that is no snapshot's: %v, want a bad request", err)
	}
	if _, err := f.svc.List(ctx, outsider, p.ID, snapshots.ListInput{}); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("list of another team: %v, want not found", err)
	}
}

// Without a policy a profile keeps 20 snapshots.
func TestCreateKeepsTwentyByDefault(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	for range 21 {
		if _, err := f.svc.Create(ctx, alice, p.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	page, err := f.svc.List(ctx, alice, p.ID, snapshots.ListInput{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 20 || page.Items[19].ID != "snap_002" {
		t.Fatalf("%d snapshots kept, the oldest %s; want 20 from snap_002", len(page.Items), page.Items[len(page.Items)-1].ID)
	}
}

// A restore puts the snapshot's proxy back when the team still has it
// (proxy.assigned), and leaves it out when it was deleted since.
func TestRestoreOfTheProxy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	p := f.create(t, profile.Settings{Name: "Shop", TemplateID: "tpl_chrome_win_us", ProxyID: "prx_1"})
	withOne, err := f.svc.Create(ctx, alice, p.ID, "with one")
	if err != nil {
		t.Fatal(err)
	}
	two := "prx_2"
	if _, err := f.profiles.Update(ctx, alice, p.ID, profile.Patch{ProxyID: &two}, nil); err != nil {
		t.Fatal(err)
	}
	assigned := f.eventsOf(t, event.ProxyAssigned)
	restored, err := f.svc.Restore(ctx, alice, p.ID, withOne.ID)
	if err != nil {
		t.Fatal(err)
	}
	if restored.ProxyID != "prx_1" || restored.Proxy == nil || restored.Proxy.Host != "one.example.test" {
		t.Fatalf("restored proxy %q shown as %+v, want prx_1 at one.example.test", restored.ProxyID, restored.Proxy)
	}
	if n := f.eventsOf(t, event.ProxyAssigned); n != assigned+1 {
		t.Fatalf("%d proxy.assigned after the restore, want %d", n, assigned+1)
	}

	// prx_1 is deleted: a restore of a snapshot that names it leaves the
	// profile without a proxy.
	f.pool.remove("prx_1")
	restored, err = f.svc.Restore(ctx, alice, p.ID, withOne.ID)
	if err != nil {
		t.Fatal(err)
	}
	if restored.ProxyID != "" || restored.Proxy != nil || f.stored(t, p.ID).ProxyID != "" {
		t.Fatalf("restored proxy %q shown as %+v, want none", restored.ProxyID, restored.Proxy)
	}
	if n := f.eventsOf(t, event.ProxyAssigned); n != assigned+1 {
		t.Fatalf("%d proxy.assigned after restoring no proxy, want %d", n, assigned+1)
	}
}

// racedUpdates loses UpdateIdle's first n calls to another writer (every
// call when n is negative), as a profile changed between the read and the
// write.
type racedUpdates struct {
	profilestore.Profiles
	n     int32
	calls atomic.Int32
}

func (r *racedUpdates) UpdateIdle(ctx context.Context, p profile.Profile, expectVersion int) error {
	if c := r.calls.Add(1); r.n < 0 || c <= r.n {
		return domain.PreconditionFailed("the profile was changed since it was read")
	}
	return r.Profiles.UpdateIdle(ctx, p, expectVersion)
}

// A restore that loses the race runs again, its automatic snapshot with
// it: one is kept when it succeeds, none when it gives up.
func TestRestoreRacesAnotherWriter(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	sn, err := f.svc.Create(ctx, alice, p.ID, "kept")
	if err != nil {
		t.Fatal(err)
	}
	f.profileRepo = &racedUpdates{Profiles: f.store.Profiles(), n: 1}
	f.build(t)
	if _, err := f.svc.Restore(ctx, alice, p.ID, sn.ID); err != nil {
		t.Fatalf("restore that lost one race: %v", err)
	}
	page, err := f.svc.List(ctx, alice, p.ID, snapshots.ListInput{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(page.Items); got != "before restoring "+sn.ID+",kept" {
		t.Fatalf("snapshots after a restore that ran twice: %q, want one automatic one and kept", got)
	}

	f.profileRepo = &racedUpdates{Profiles: f.store.Profiles(), n: -1}
	f.build(t)
	_, err = f.svc.Restore(ctx, alice, p.ID, sn.ID)
	if !domain.IsKind(err, domain.KindConflict) || !strings.Contains(err.Error(), "the profile kept changing while it was restored; try again") {
		t.Fatalf("restore that always loses: %v, want the conflict of a restore", err)
	}
	page, err = f.svc.List(ctx, alice, p.ID, snapshots.ListInput{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 {
		t.Fatalf("snapshots after a restore that gave up: %q, want the two before it", labels(page.Items))
	}
}
