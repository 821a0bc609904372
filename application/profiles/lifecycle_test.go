package profiles_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/ports"
)

// Restore puts back the snapshot's settings and data, and keeps what it
// replaced as an automatic snapshot; it is refused to a viewer, for a
// running profile and for a snapshot of another team.
func TestRestorePutsBackTheSnapshotAndKeepsWhatItReplaced(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	first := tarGz(t, "Default/Preferences", `{"first":true}`)
	if _, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(first)}); err != nil {
		t.Fatal(err)
	}
	sn, err := f.svc.CreateSnapshot(ctx, alice, p.ID, "before the change")
	if err != nil {
		t.Fatal(err)
	}
	renamed := "Changed"
	if _, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{Name: &renamed}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(tarGz(t, "Default/Preferences", `{"second":true}`))}); err != nil {
		t.Fatal(err)
	}

	if _, err := f.svc.Restore(ctx, viewer, p.ID, sn.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer restores: %v, want forbidden", err)
	}
	if _, err := f.svc.Restore(ctx, alice, p.ID, "snp_none"); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("restore of no snapshot: %v, want not found", err)
	}
	updatesBefore := len(f.eventsOf(t, event.ProfileUpdated))
	restored, err := f.svc.Restore(ctx, alice, p.ID, sn.ID)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(first)
	if restored.Name != "Shop" || restored.Data == nil || restored.Data.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("restored %q with data %+v, want Shop with the first archive (%x)", restored.Name, restored.Data, sum)
	}
	if got := f.stored(t, p.ID); got.Name != "Shop" || got.Version != restored.Version {
		t.Fatalf("stored after the restore: %q version %d, want Shop version %d", got.Name, got.Version, restored.Version)
	}
	if n := len(f.eventsOf(t, event.ProfileUpdated)); n != updatesBefore+1 {
		t.Fatalf("%d profile.updated events after the restore, want %d", n, updatesBefore+1)
	}
	page, err := f.svc.Snapshots(ctx, viewer, p.ID, profiles.SnapshotListInput{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[0].Kind != snapshot.KindAuto || page.Items[0].Label != "before restoring "+sn.ID ||
		page.Items[0].Settings.Name != renamed {
		t.Fatalf("snapshots after the restore: %+v, want the automatic one of %q first", page.Items, renamed)
	}

	f.launch(t, alice, p.ID)
	if _, err := f.svc.Restore(ctx, alice, p.ID, sn.ID); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("restore of a running profile: %v, want a conflict", err)
	}
}

// Deleting a profile's data leaves it without an archive; a viewer may
// not, and a running profile's data are its browser's.
func TestDeleteDataForgetsTheArchive(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	if _, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(tarGz(t, "Default/Cookies", "c"))}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.DeleteData(ctx, viewer, p.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer deletes data: %v, want forbidden", err)
	}
	if err := f.svc.DeleteData(ctx, outsider, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("another team deletes data: %v, want not found", err)
	}
	f.launch(t, alice, p.ID)
	if err := f.svc.DeleteData(ctx, alice, p.ID); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("delete the data of a running profile: %v, want a conflict", err)
	}
	if _, err := f.svc.Release(ctx, alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.DeleteData(ctx, alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t, p.ID); got.Data != nil {
		t.Fatalf("data after the delete: %+v, want none", got.Data)
	}
	if _, err := f.svc.Data(ctx, alice, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("download after the delete: %v, want not found", err)
	}
}

// A browser that ends by itself ends its session with the reason the
// runtime gives, and a shutdown ends every session this instance runs
// with reason shutdown; an exit of a session the instance does not run
// changes nothing.
func TestBrowserExitsAndShutdownEndSessionsWithTheirReason(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	f.rt.cdp = true
	f.launch(t, alice, p.ID)
	q := f.create(t, "Blog")
	f.launch(t, alice, q.ID)
	if f.svc.BrowsersRunning() != 2 {
		t.Fatalf("%d browsers running, want 2", f.svc.BrowsersRunning())
	}
	sess := f.stored(t, p.ID).Session
	if err := f.svc.BrowserExited(ctx, ports.BrowserExit{ProfileID: p.ID, SessionID: "ses_unknown", Reason: profile.StopCrashed}); err != nil {
		t.Fatal(err)
	}
	if f.stored(t, p.ID).Session == nil {
		t.Fatal("an exit of a session this instance does not run ended the profile's")
	}
	if err := f.svc.BrowserExited(ctx, ports.BrowserExit{ProfileID: p.ID, SessionID: sess.ID, Reason: profile.StopCrashed}); err != nil {
		t.Fatal(err)
	}
	if f.stored(t, p.ID).Session != nil {
		t.Fatal("the profile still holds the session of its crashed browser")
	}
	if err := f.svc.StopBrowsers(ctx); err != nil {
		t.Fatal(err)
	}
	if f.stored(t, q.ID).Session != nil || f.svc.BrowsersRunning() != 0 {
		t.Fatalf("after the shutdown: %v, %d browsers running; want no session and none", f.stored(t, q.ID).Session, f.svc.BrowsersRunning())
	}
	reasons := map[string]string{}
	for _, e := range f.eventsOf(t, event.ProfileStopped) {
		reasons[e.Profile] = e.Reason
	}
	if len(reasons) != 2 || reasons[p.ID] != "crashed" || reasons[q.ID] != "shutdown" {
		t.Fatalf("profile.stopped reasons %v, want %s crashed and %s shutdown", reasons, p.ID, q.ID)
	}
}
