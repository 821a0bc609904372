package profiles_test

import (
	"context"
	"testing"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
)

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
