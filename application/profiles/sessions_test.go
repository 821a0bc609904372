package profiles_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

var ctx = context.Background()

func wantCalls(t *testing.T, rt *fakeRuntime, want ...string) {
	t.Helper()
	if got := rt.Calls(); !slices.Equal(got, want) {
		t.Fatalf("runtime calls %q, want %q", got, want)
	}
}

func wantLines(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("logs\n got %q\nwant %q", got, want)
	}
}

func wantEvents(t *testing.T, got []outboxEvent, want ...outboxEvent) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("events\n got %+v\nwant %+v", got, want)
	}
}

func TestLaunchWhenTheRuntimeFailsToStartEndsTheLease(t *testing.T) {
	f, p := newShop(t)
	boom := errors.New("chromium: executable not found")
	f.rt.startErr = boom

	_, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "start browser of profile prf_001") {
		t.Fatalf("launch error %v", err)
	}
	// The lease of a browser that never started ends.
	f.wantSession(t, p.ID, "")
	wantEvents(t, f.events(t),
		outboxEvent{Type: event.ProfileCreated, Profile: "prf_001"},
		outboxEvent{Type: event.ProfileLaunched, Profile: "prf_001", Session: "ses_001", By: "usr_alice"},
		outboxEvent{Type: event.ProfileStopped, Profile: "prf_001", Reason: "failed", Session: "ses_001", By: "usr_alice"},
	)
	wantCalls(t, f.rt, "start prf_001 ses_001")

	// The profile is free at once, not when the lease would have run out.
	f.rt.startErr = nil
	if got := f.launch(t, bob, p.ID); got.Session.ID != "ses_002" || got.Session.LaunchedBy != "usr_bob" {
		t.Fatalf("relaunch after a failed start: %+v", got.Session)
	}
}

func TestLaunchWhenTheRuntimeFailsAndTheLeaseCannotBeEnded(t *testing.T) {
	f, p := newShop(t)
	f.failSwap(2, errors.New("database is gone"))
	boom := errors.New("chromium crashed")
	f.rt.startErr = boom

	if _, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); !errors.Is(err, boom) {
		t.Fatalf("launch error %v, want the start failure", err)
	}
	logs := f.logs.Lines()
	if len(logs) != 2 || logs[0] != "INFO profile launched team_id=team_1 profile_id=prf_001 session_id=ses_001 launched_by=usr_alice" ||
		logs[1] != "ERROR end session of a failed launch profile_id=prf_001 session_id=ses_001 error=database is gone" {
		t.Fatalf("logs %q", logs)
	}
	// The lease stays until it runs out.
	f.wantLeaseKept(t, p.ID, "ses_001")
}

func TestLaunchLosesTheLeaseRaceToAnotherLaunch(t *testing.T) {
	f, p := newShop(t)
	// Bob's launch commits between Alice's read and her swap.
	rival := &profile.Session{ID: "ses_rival", StartedAt: t0, ExpiresAt: t0.Add(30 * time.Minute), LaunchedBy: "usr_bob"}
	f.rivalSwapsFirst(t, "rival launch", profilestore.SessionSwap{Next: rival})

	_, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{})
	apptest.WantKind(t, err, domain.KindConflict)
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %T", err)
	}
	if de.Message != "profile is running: session ses_rival launched by bob@example.com (usr_bob), lease until 2030-01-01T12:30:00Z" {
		t.Fatalf("message %q", de.Message)
	}
	if len(de.Fields) != 1 || de.Fields[0].Field != "session" || de.Fields[0].Issue != "held by bob@example.com (usr_bob) in session ses_rival until 2030-01-01T12:30:00Z" {
		t.Fatalf("fields %+v", de.Fields)
	}
	wantCalls(t, f.rt)
	wantEvents(t, f.eventsOf(t, event.ProfileLaunched))
}

func TestLaunchFindsTheProfileChangedWhileLaunching(t *testing.T) {
	f, p := launchedShop(t)
	f.clock.Advance(11 * time.Minute)
	// The reaper ends the expired lease first: the takeover's swap expects
	// a session that is gone, and the profile is idle.
	f.rivalSwapsFirst(t, "reaper", profilestore.SessionSwap{ExpectSessionID: "ses_001"})

	_, err := f.svc.Launch(ctx, bob, p.ID, profiles.LaunchInput{})
	apptest.WantKind(t, err, domain.KindConflict)
	if err.Error() != "profile changed while launching; try again" {
		t.Fatalf("error %q", err)
	}
	wantCalls(t, f.rt, "start prf_001 ses_001")
}

func TestLaunchLostRaceWhenTheProfileCannotBeReadAgain(t *testing.T) {
	f, p := newShop(t)
	inner := f.deps.Profiles
	reads := &byIDHook{Profiles: inner, fn: func(ctx context.Context, n int, teamID, id string) (profile.Profile, error) {
		if n == 2 {
			return profile.Profile{}, errors.New("read timed out")
		}
		return inner.ByID(ctx, teamID, id)
	}}
	f.useProfiles(&swapHook{Profiles: reads, fn: func(context.Context, int, string, string, profilestore.SessionSwap) (bool, error) {
		return false, nil
	}})

	if _, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); err == nil || err.Error() != "read timed out" {
		t.Fatalf("launch error %v", err)
	}
}

func TestLaunchTakesOverAnExpiredLease(t *testing.T) {
	f, p := launchedShop(t)
	// At ExpiresAt exactly the lease has run out, though no reaper ran.
	f.clock.Advance(10 * time.Minute)
	f.rt.stopErr = errors.New("no such process")

	got := f.launch(t, bob, p.ID)
	if got.Session.ID != "ses_002" || got.Session.LaunchedBy != "usr_bob" || !got.Session.ExpiresAt.Equal(t0.Add(20*time.Minute)) {
		t.Fatalf("session %+v", got.Session)
	}
	f.wantSession(t, p.ID, "ses_002")
	wantEvents(t, f.events(t)[1:],
		outboxEvent{Type: event.ProfileLaunched, Profile: "prf_001", Session: "ses_001", By: "usr_alice"},
		outboxEvent{Type: event.ProfileStopped, Profile: "prf_001", Reason: "expired", Session: "ses_001", By: "usr_alice"},
		outboxEvent{Type: event.ProfileLaunched, Profile: "prf_001", Session: "ses_002", By: "usr_bob"},
	)
	// The old browser is stopped before the new one starts; a stop that
	// fails is logged and does not hold up the takeover.
	wantCalls(t, f.rt, "start prf_001 ses_001", "stop prf_001 ses_001", "start prf_001 ses_002")
	wantLines(t, f.logs.Lines(),
		"INFO profile launched team_id=team_1 profile_id=prf_001 session_id=ses_001 launched_by=usr_alice",
		"INFO profile stopped team_id=team_1 profile_id=prf_001 session_id=ses_001 launched_by=usr_alice reason=expired",
		"INFO profile launched team_id=team_1 profile_id=prf_001 session_id=ses_002 launched_by=usr_bob",
		"ERROR stop browser profile_id=prf_001 session_id=ses_001 error=no such process")
}

func TestLaunchOfARunningProfileNamesTheHolder(t *testing.T) {
	f, p := launchedShop(t)
	f.clock.Advance(time.Minute)

	_, err := f.svc.Launch(ctx, bob, p.ID, profiles.LaunchInput{})
	apptest.WantKind(t, err, domain.KindConflict)
	if !strings.HasPrefix(err.Error(), "profile is running: session ses_001 launched by alice@example.com (usr_alice), lease until 2030-01-01T12:10:00Z") {
		t.Fatalf("error %q", err)
	}
}

func TestLaunchStoresTheCDPURL(t *testing.T) {
	f, p := newShop(t)
	f.rt.cdp = true
	ttl := 90

	got, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{Headless: true, TTLSeconds: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	// The client gets the relay's address with the session's token; the
	// store keeps the address without it and the token's hash.
	relay := "ws://localhost/api/v1/sessions/ses_001/cdp"
	token, ok := strings.CutPrefix(got.Session.CDPURL, relay+"?token=")
	if !ok || len(token) < 40 || !got.Session.Headless || !got.Session.ExpiresAt.Equal(t0.Add(90*time.Second)) {
		t.Fatalf("session %+v", got.Session)
	}
	sum := sha256.Sum256([]byte(token))
	if s := f.stored(t, p.ID).Session; s.CDPURL != relay || s.CDPTokenHash != hex.EncodeToString(sum[:]) || s.Node != "http://localhost" {
		t.Fatalf("stored session %+v", s)
	}
	// This instance runs the browser: the relay connects to it here.
	target, err := f.svc.CDPTarget(ctx, "ses_001", token)
	if err != nil || target.Connect == nil || target.Node != "" {
		t.Fatalf("CDPTarget with the token: %+v, %v", target, err)
	}
	conn, err := target.Connect(ctx)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if c, ok := conn.(*fakeCDPConn); !ok || c.sessionID != "ses_001" {
		t.Fatalf("Connect opened %#v, want a connection to ses_001", conn)
	}
	_, err = f.svc.CDPTarget(ctx, "ses_001", token+"x")
	apptest.WantKind(t, err, domain.KindUnauthorized)

	// A browser that ended between the check and the connection is an
	// ended session to the client, not a missing resource.
	f.rt.crash("ses_001")
	conn, err = target.Connect(ctx)
	apptest.WantKind(t, err, domain.KindUnauthorized)
	if conn != nil {
		t.Fatalf("Connect to an ended browser opened %#v", conn)
	}
}

func TestCDPTargetOfABrowserRunElsewhere(t *testing.T) {
	f, p := newShop(t)
	f.rt.cdp = true
	got := f.launch(t, alice, p.ID)
	token, ok := strings.CutPrefix(got.Session.CDPURL, "ws://localhost/api/v1/sessions/ses_001/cdp?token=")
	if !ok {
		t.Fatalf("cdpUrl %q", got.Session.CDPURL)
	}

	// Another instance over the same store relays to the one that runs
	// the browser, at the address that one stored.
	other := f.deps
	other.Policy.NodeURL = func() string { return "http://10.0.0.2:8080" }
	target, err := profiles.New(other).CDPTarget(ctx, "ses_001", token)
	if err != nil || target.Connect != nil || target.Node != "http://localhost" {
		t.Fatalf("CDPTarget on another instance: %+v, %v", target, err)
	}
	_, err = profiles.New(other).CDPTarget(ctx, "ses_001", token+"x")
	apptest.WantKind(t, err, domain.KindUnauthorized)

	// The instance the session names, restarted, runs no browser for it:
	// the session is over as far as a client can tell.
	_, err = profiles.New(f.deps).CDPTarget(ctx, "ses_001", token)
	apptest.WantKind(t, err, domain.KindUnauthorized)
}

func TestLaunchCDPURLSwapLosesToARelease(t *testing.T) {
	f, p := newShop(t)
	f.rt.cdp = true
	f.rt.onStart = func(spec ports.LaunchSpec) {
		// An admin releases the session while its browser starts.
		if _, err := f.svc.Release(ctx, admin, spec.Profile.ID); err != nil {
			t.Errorf("release during start: %v", err)
		}
	}

	_, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{})
	apptest.WantKind(t, err, domain.KindConflict)
	if err.Error() != "the session was released while its browser was starting" {
		t.Fatalf("error %q", err)
	}
	// Release stopped it once; the launch stops the browser it started too.
	wantCalls(t, f.rt, "start prf_001 ses_001", "stop prf_001 ses_001", "stop prf_001 ses_001")
	f.wantSession(t, p.ID, "")
	wantEvents(t, f.eventsOf(t, event.ProfileStopped),
		outboxEvent{Type: event.ProfileStopped, Profile: "prf_001", Reason: "released", Session: "ses_001", By: "usr_alice"})
}

func TestLaunchCDPURLSwapFails(t *testing.T) {
	f, p := newShop(t)
	f.failSwap(2, errors.New("connection refused"))
	f.rt.cdp = true

	if _, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); err == nil || err.Error() != "connection refused" {
		t.Fatalf("launch error %v", err)
	}
	wantCalls(t, f.rt, "start prf_001 ses_001", "stop prf_001 ses_001")
}

func TestLaunchFailsWhenTheSwapOrTheOutboxFails(t *testing.T) {
	f, p := launchedShop(t)
	f.clock.Advance(time.Hour)

	f.deps.Outbox = apptest.RefusingOutbox{Err: errors.New("outbox: disk full")}
	f.build()
	if _, err := f.svc.Launch(ctx, bob, p.ID, profiles.LaunchInput{}); err == nil || err.Error() != "outbox: disk full" {
		t.Fatalf("takeover with a failing outbox: %v", err)
	}
	// A takeover that failed to emit did not commit.
	f.wantSession(t, p.ID, "ses_001")

	f.deps.Outbox = f.store.Outbox()
	f.failSwap(0, errors.New("deadlock detected"))
	if _, err := f.svc.Launch(ctx, bob, p.ID, profiles.LaunchInput{}); err == nil || err.Error() != "deadlock detected" {
		t.Fatalf("launch with a failing swap: %v", err)
	}
	wantCalls(t, f.rt, "start prf_001 ses_001")
}

func TestLaunchRefusals(t *testing.T) {
	f, p := newShop(t)
	zero, tooLong := 0, 3601

	_, err := f.svc.Launch(ctx, viewer, p.ID, profiles.LaunchInput{})
	apptest.WantKind(t, err, domain.KindForbidden)
	for _, ttl := range []*int{&zero, &tooLong} {
		_, err = f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{TTLSeconds: ttl})
		apptest.WantKind(t, err, domain.KindValidation)
		if err.Error() != "validation failed; ttlSeconds: must be from 1 to 3600" {
			t.Fatalf("ttl %d: %q", *ttl, err)
		}
	}
	_, err = f.svc.Launch(ctx, outsider, p.ID, profiles.LaunchInput{})
	apptest.WantKind(t, err, domain.KindNotFound)
	wantCalls(t, f.rt)
}

func TestHeartbeatExtendsTheLease(t *testing.T) {
	f, p := launchedShop(t)
	f.clock.Advance(5 * time.Minute)

	got, err := f.svc.Heartbeat(ctx, alice, p.ID, "ses_001", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Session.ExpiresAt.Equal(t0.Add(15*time.Minute)) || !f.stored(t, p.ID).Session.ExpiresAt.Equal(t0.Add(15*time.Minute)) {
		t.Fatalf("session %+v", got.Session)
	}
}

func TestHeartbeatByANonHolder(t *testing.T) {
	f, p := launchedShop(t)
	f.clock.Advance(time.Minute)
	ttl := 120

	_, err := f.svc.Heartbeat(ctx, bob, p.ID, "ses_001", &ttl)
	apptest.WantKind(t, err, domain.KindForbidden)
	if err.Error() != "the session belongs to another member; only an admin or owner may act on it" {
		t.Fatalf("error %q", err)
	}
	if s := f.stored(t, p.ID).Session; !s.ExpiresAt.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("a refused heartbeat moved the lease: %+v", s)
	}

	got, err := f.svc.Heartbeat(ctx, admin, p.ID, "ses_001", &ttl)
	if err != nil {
		t.Fatalf("admin heartbeat: %v", err)
	}
	if !got.Session.ExpiresAt.Equal(t0.Add(3*time.Minute)) || got.Session.LaunchedBy != "usr_alice" {
		t.Fatalf("session %+v", got.Session)
	}
}

func TestHeartbeatOfAnEndedSession(t *testing.T) {
	f, p := launchedShop(t)

	if _, err := f.svc.Heartbeat(ctx, alice, p.ID, "ses_999", nil); !errors.Is(err, profile.ErrSessionEnded) {
		t.Fatalf("another session id: %v", err)
	}
	f.clock.Advance(10 * time.Minute)
	if _, err := f.svc.Heartbeat(ctx, alice, p.ID, "ses_001", nil); !errors.Is(err, profile.ErrSessionEnded) {
		t.Fatalf("expired session: %v", err)
	}
	if _, err := f.svc.Release(ctx, alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Heartbeat(ctx, alice, p.ID, "ses_001", nil); !errors.Is(err, profile.ErrSessionEnded) {
		t.Fatalf("released session: %v", err)
	}
}

func TestHeartbeatLosesToARelease(t *testing.T) {
	f, p := launchedShop(t)
	// The release commits after the heartbeat has read the session.
	inner := f.deps.Profiles
	f.useProfiles(&byIDHook{Profiles: inner, fn: func(ctx context.Context, n int, teamID, id string) (profile.Profile, error) {
		cur, err := inner.ByID(ctx, teamID, id)
		if ok, err := inner.SwapSession(ctx, teamID, id, profilestore.SessionSwap{ExpectSessionID: "ses_001"}); !ok || err != nil {
			t.Errorf("release: %v %v", ok, err)
		}
		return cur, err
	}})

	if _, err := f.svc.Heartbeat(ctx, alice, p.ID, "ses_001", nil); !errors.Is(err, profile.ErrSessionEnded) {
		t.Fatalf("heartbeat after a concurrent release: %v", err)
	}
	// The heartbeat did not revive the session.
	f.wantSession(t, p.ID, "")
}

func TestHeartbeatRefusals(t *testing.T) {
	f, p := launchedShop(t)
	zero := 0

	_, err := f.svc.Heartbeat(ctx, viewer, p.ID, "ses_001", nil)
	apptest.WantKind(t, err, domain.KindForbidden)
	_, err = f.svc.Heartbeat(ctx, alice, p.ID, "", nil)
	apptest.WantKind(t, err, domain.KindValidation)
	if err.Error() != "validation failed; sessionId: is required" {
		t.Fatalf("error %q", err)
	}
	_, err = f.svc.Heartbeat(ctx, alice, p.ID, "ses_001", &zero)
	apptest.WantKind(t, err, domain.KindValidation)
	_, err = f.svc.Heartbeat(ctx, outsider, p.ID, "ses_001", nil)
	apptest.WantKind(t, err, domain.KindNotFound)

	f.failSwap(0, errors.New("connection reset"))
	if _, err := f.svc.Heartbeat(ctx, alice, p.ID, "ses_001", nil); err == nil || err.Error() != "connection reset" {
		t.Fatalf("heartbeat with a failing swap: %v", err)
	}
}

func TestReleaseWhenTheRuntimeFailsToStopKeepsTheLease(t *testing.T) {
	f, p := launchedShop(t)
	boom := errors.New("browser does not answer")
	f.rt.stopErr = boom

	_, err := f.svc.Release(ctx, alice, p.ID)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "stop browser of profile prf_001") {
		t.Fatalf("release error %v", err)
	}
	// A browser that did not stop keeps its lease.
	f.wantLeaseKept(t, p.ID, "ses_001")
}

func TestReleaseByAnotherMemberAndByAnAdmin(t *testing.T) {
	f, p := launchedShop(t)

	_, err := f.svc.Release(ctx, bob, p.ID)
	apptest.WantKind(t, err, domain.KindForbidden)
	wantCalls(t, f.rt, "start prf_001 ses_001")

	got, err := f.svc.Release(ctx, admin, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Session != nil || f.stored(t, p.ID).Session != nil {
		t.Fatalf("released profile %+v", got.Session)
	}
	wantCalls(t, f.rt, "start prf_001 ses_001", "stop prf_001 ses_001")
	wantEvents(t, f.eventsOf(t, event.ProfileStopped),
		outboxEvent{Type: event.ProfileStopped, Profile: "prf_001", Reason: "released", Session: "ses_001", By: "usr_alice"})

	if _, err := f.svc.Release(ctx, alice, p.ID); !errors.Is(err, profile.ErrNotRunning) {
		t.Fatalf("release of an idle profile: %v", err)
	}
	_, err = f.svc.Release(ctx, viewer, p.ID)
	apptest.WantKind(t, err, domain.KindForbidden)
	_, err = f.svc.Release(ctx, outsider, p.ID)
	apptest.WantKind(t, err, domain.KindNotFound)
}

func TestReleaseLosesToAConcurrentRelease(t *testing.T) {
	f, p := launchedShop(t)
	f.rivalSwapsFirst(t, "concurrent release", profilestore.SessionSwap{ExpectSessionID: "ses_001"})

	if _, err := f.svc.Release(ctx, alice, p.ID); !errors.Is(err, profile.ErrNotRunning) {
		t.Fatalf("release error %v", err)
	}
	// The loser emitted nothing.
	wantEvents(t, f.eventsOf(t, event.ProfileStopped))
}

// launchAll creates and launches one profile per name, as alice, a minute
// apart, so their leases run out in that order.
func launchAll(t *testing.T, f *fixture, names ...string) {
	t.Helper()
	for _, name := range names {
		f.launch(t, alice, f.create(t, name).ID)
		f.clock.Advance(time.Minute)
	}
}

func TestReapExpiredEndsRunOutLeasesInBatches(t *testing.T) {
	f := newFixture(t)
	f.deps.Policy.ReapBatch = 1
	f.build()
	launchAll(t, f, "A", "B", "C")
	// prf_001 and prf_002 ran out (12:10, 12:11); prf_003 lasts until 12:12.
	f.clock.Set(t0.Add(11 * time.Minute))

	n, err := f.svc.ReapExpired(ctx)
	if err != nil || n != 2 {
		t.Fatalf("reaped %d, %v", n, err)
	}
	wantEvents(t, f.eventsOf(t, event.ProfileStopped),
		outboxEvent{Type: event.ProfileStopped, Profile: "prf_001", Reason: "expired", Session: "ses_001", By: "usr_alice"},
		outboxEvent{Type: event.ProfileStopped, Profile: "prf_002", Reason: "expired", Session: "ses_002", By: "usr_alice"},
	)
	// The live lease is not reaped.
	f.wantSession(t, "prf_003", "ses_003")
	if got := f.rt.Calls()[3:]; !slices.Equal(got, []string{"stop prf_001 ses_001", "stop prf_002 ses_002"}) {
		t.Fatalf("stops %q", got)
	}
}

func TestReapExpiredWhenListingFails(t *testing.T) {
	f := newFixture(t)
	boom := errors.New("replica lagging")
	f.useProfiles(&expiredHook{Profiles: f.store.Profiles(), fn: func(context.Context, time.Time, int) ([]profile.Profile, error) {
		return nil, boom
	}})

	if n, err := f.svc.ReapExpired(ctx); n != 0 || !errors.Is(err, boom) {
		t.Fatalf("reaped %d, %v", n, err)
	}
}

func TestReapExpiredKeepsGoingPastFailuresAndJoinsThem(t *testing.T) {
	f := newFixture(t)
	launchAll(t, f, "A", "B", "C")
	f.clock.Advance(time.Hour)
	inner := f.deps.Profiles
	errA, errC := errors.New("lock timeout on prf_001"), errors.New("lock timeout on prf_003")
	f.useProfiles(&swapHook{Profiles: inner, fn: func(ctx context.Context, _ int, teamID, id string, s profilestore.SessionSwap) (bool, error) {
		switch id {
		case "prf_001":
			return false, errA
		case "prf_003":
			return false, errC
		}
		return inner.SwapSession(ctx, teamID, id, s)
	}})

	n, err := f.svc.ReapExpired(ctx)
	if n != 1 || !errors.Is(err, errA) || !errors.Is(err, errC) {
		t.Fatalf("reaped %d, %v", n, err)
	}
	// Only prf_002's lease ended.
	f.wantSession(t, "prf_001", "ses_001")
	f.wantSession(t, "prf_002", "")
	f.wantSession(t, "prf_003", "ses_003")
	if got := f.rt.Calls()[3:]; !slices.Equal(got, []string{"stop prf_002 ses_002"}) {
		t.Fatalf("stops %q", got)
	}
}

func TestReapExpiredSkipsAProfileDeletedMeanwhile(t *testing.T) {
	f := newFixture(t)
	launchAll(t, f, "A", "B")
	f.clock.Advance(time.Hour)
	inner := f.deps.Profiles
	deleted := false
	f.useProfiles(&expiredHook{Profiles: inner, fn: func(ctx context.Context, now time.Time, limit int) ([]profile.Profile, error) {
		list, err := inner.ListExpiredSessions(ctx, now, limit)
		if !deleted {
			// Another instance ends prf_001's lease and deletes it right
			// after this list was read.
			deleted = true
			if ok, serr := inner.SwapSession(ctx, "team_1", "prf_001", profilestore.SessionSwap{ExpectSessionID: "ses_001"}); !ok || serr != nil {
				t.Errorf("end prf_001: %v %v", ok, serr)
			}
			if derr := inner.Delete(ctx, "team_1", "prf_001"); derr != nil {
				t.Errorf("delete prf_001: %v", derr)
			}
		}
		return list, err
	}})

	n, err := f.svc.ReapExpired(ctx)
	if n != 1 || err != nil {
		t.Fatalf("reaped %d, %v", n, err)
	}
	wantEvents(t, f.eventsOf(t, event.ProfileStopped),
		outboxEvent{Type: event.ProfileStopped, Profile: "prf_002", Reason: "expired", Session: "ses_002", By: "usr_alice"})
	if got := f.rt.Calls()[2:]; !slices.Equal(got, []string{"stop prf_002 ses_002"}) {
		t.Fatalf("stops %q", got)
	}
}

func TestReapExpiredLeavesASessionAHeartbeatJustExtended(t *testing.T) {
	f := newFixture(t)
	launchAll(t, f, "A")
	f.clock.Advance(time.Hour)
	inner := f.deps.Profiles
	f.useProfiles(&swapHook{Profiles: inner, fn: func(ctx context.Context, n int, teamID, id string, s profilestore.SessionSwap) (bool, error) {
		if n == 1 {
			cur, err := inner.ByID(ctx, teamID, id)
			if err != nil {
				t.Fatal(err)
			}
			ext := *cur.Session
			ext.ExpiresAt = t0.Add(2 * time.Hour)
			if ok, err := inner.SwapSession(ctx, teamID, id, profilestore.SessionSwap{ExpectSessionID: ext.ID, Next: &ext}); !ok || err != nil {
				t.Errorf("heartbeat: %v %v", ok, err)
			}
		}
		return inner.SwapSession(ctx, teamID, id, s)
	}})

	if n, err := f.svc.ReapExpired(ctx); n != 0 || err != nil {
		t.Fatalf("reaped %d, %v", n, err)
	}
	if s := f.stored(t, "prf_001").Session; s == nil || !s.ExpiresAt.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("session %+v", s)
	}
	wantCalls(t, f.rt, "start prf_001 ses_001")
}

func TestReleaseWhenEndingTheLeaseFails(t *testing.T) {
	f, p := launchedShop(t)
	f.failSwap(0, errors.New("connection reset"))

	if _, err := f.svc.Release(ctx, alice, p.ID); err == nil || err.Error() != "connection reset" {
		t.Fatalf("release error %v", err)
	}
	// The lease did not end, as its swap failed.
	f.wantLeaseKept(t, p.ID, "ses_001")
}

func TestReapExpiredStopsWhenTheListingRepeatsItself(t *testing.T) {
	f := newFixture(t)
	f.deps.Policy.ReapBatch = 1
	launchAll(t, f, "A")
	f.clock.Advance(time.Hour)
	// A lagging replica keeps listing the session after it has ended.
	lagging, err := f.store.Profiles().ListExpiredSessions(ctx, f.clock.Now(), 1)
	if err != nil || len(lagging) != 1 {
		t.Fatalf("expired %+v %v", lagging, err)
	}
	calls := 0
	f.useProfiles(&expiredHook{Profiles: f.store.Profiles(), fn: func(context.Context, time.Time, int) ([]profile.Profile, error) {
		calls++
		return lagging, nil
	}})

	if n, err := f.svc.ReapExpired(ctx); n != 1 || err != nil {
		t.Fatalf("reaped %d, %v", n, err)
	}
	if calls != 2 {
		t.Fatalf("listed %d times, want 2", calls)
	}
	wantCalls(t, f.rt, "start prf_001 ses_001", "stop prf_001 ses_001")
}

func TestSessionsAreCountedAndLoggedOnceCommitted(t *testing.T) {
	f, p := launchedShop(t)
	// A launch that loses to the running session commits nothing: it is
	// neither counted nor logged.
	if _, err := f.svc.Launch(ctx, bob, p.ID, profiles.LaunchInput{}); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("second launch: %v", err)
	}
	if _, err := f.svc.Release(ctx, alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if got, want := f.counted.all(), []string{"launched", "stopped released"}; !slices.Equal(got, want) {
		t.Fatalf("counted %q, want %q", got, want)
	}
	wantLines(t, f.logs.Lines(),
		"INFO profile launched team_id=team_1 profile_id=prf_001 session_id=ses_001 launched_by=usr_alice",
		"INFO profile stopped team_id=team_1 profile_id=prf_001 session_id=ses_001 launched_by=usr_alice reason=released")
}
