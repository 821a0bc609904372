package profiles_test

import (
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
)

// liveOwner is team_1's owner.
var liveOwner = team.Actor{UserID: "usr_owner", TeamID: "team_1", MemberID: "mem_owner", Role: team.RoleOwner}

// liveShop returns a new fixture and alice's profile "Shop", prf_001,
// launched by alice with a browser this instance runs (session ses_001).
func liveShop(t *testing.T) (*fixture, string) {
	t.Helper()
	f, p := newShop(t)
	f.rt.cdp = true
	f.launch(t, alice, p.ID)
	return f, p.ID
}

func TestLiveViewInputFollowsTheRole(t *testing.T) {
	t.Parallel()
	f, id := liveShop(t)
	for _, c := range []struct {
		actor team.Actor
		input bool
	}{
		{viewer, false},
		{bob, true},
		{alice, true},
		{admin, true},
		{liveOwner, true},
	} {
		view, err := f.svc.LiveView(ctx, c.actor, id)
		if err != nil {
			t.Fatalf("%s: %v", c.actor.UserID, err)
		}
		if view.Input != c.input || view.Node != "" || view.Connect == nil {
			t.Fatalf("%s: view %+v, want Input %v, Connect and no Node", c.actor.UserID, view, c.input)
		}
		// Whoever watches, the connection goes to the session's browser.
		conn, err := view.Connect(ctx)
		if err != nil {
			t.Fatalf("%s: Connect: %v", c.actor.UserID, err)
		}
		if fc, ok := conn.(*fakeCDPConn); !ok || fc.sessionID != "ses_001" {
			t.Fatalf("%s: Connect opened %#v, want a connection to ses_001", c.actor.UserID, conn)
		}
	}
}

func TestLiveViewOfAnotherTeamsProfileIsNotFound(t *testing.T) {
	t.Parallel()
	f, id := liveShop(t)
	_, err := f.svc.LiveView(ctx, outsider, id)
	apptest.WantKind(t, err, domain.KindNotFound)
	_, err = f.svc.LiveView(ctx, alice, "prf_999")
	apptest.WantKind(t, err, domain.KindNotFound)
}

func TestLiveViewOfAProfileWithoutABrowserIsAConflict(t *testing.T) {
	t.Parallel()
	// An idle profile.
	f, p := newShop(t)
	_, err := f.svc.LiveView(ctx, alice, p.ID)
	apptest.WantKind(t, err, domain.KindConflict)

	// A session without a browser (a lease only: no cdpUrl).
	f.launch(t, alice, p.ID)
	if s := f.stored(t, p.ID).Session; s == nil || s.CDPURL != "" {
		t.Fatalf("stored session %+v, want one without a cdpUrl", s)
	}
	_, err = f.svc.LiveView(ctx, alice, p.ID)
	apptest.WantKind(t, err, domain.KindConflict)

	// A session whose lease ran out, not yet reaped.
	f2, id := liveShop(t)
	f2.clock.Advance(10*time.Minute + time.Second)
	_, err = f2.svc.LiveView(ctx, alice, id)
	apptest.WantKind(t, err, domain.KindConflict)
}

func TestLiveViewOfABrowserThatEndsBeforeTheConnection(t *testing.T) {
	t.Parallel()
	f, id := liveShop(t)
	view, err := f.svc.LiveView(ctx, alice, id)
	if err != nil {
		t.Fatal(err)
	}
	f.rt.crash("ses_001")
	conn, err := view.Connect(ctx)
	apptest.WantKind(t, err, domain.KindConflict)
	if conn != nil {
		t.Fatalf("Connect to an ended browser opened %#v", conn)
	}
}

func TestLiveViewOfABrowserRunElsewhere(t *testing.T) {
	t.Parallel()
	f, id := liveShop(t)

	// Another instance over the same store sends the viewer to the one
	// that runs the browser, at the address that one stored.
	other := f.deps
	other.Policy.NodeURL = func() string { return "http://10.0.0.2:8080" }
	for _, c := range []struct {
		actor team.Actor
		input bool
	}{{viewer, false}, {alice, true}} {
		view, err := profiles.New(other).LiveView(ctx, c.actor, id)
		if err != nil {
			t.Fatalf("%s on another instance: %v", c.actor.UserID, err)
		}
		if view.Node != "http://localhost" || view.Connect != nil || view.Input != c.input {
			t.Fatalf("%s on another instance: view %+v, want Node http://localhost, no Connect, Input %v", c.actor.UserID, view, c.input)
		}
	}

	// The instance the session names, restarted, runs no browser for it.
	_, err := profiles.New(f.deps).LiveView(ctx, alice, id)
	apptest.WantKind(t, err, domain.KindConflict)
}
