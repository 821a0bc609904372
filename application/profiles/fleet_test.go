package profiles_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// fleetTimeout is how long the test fleet waits for a beat.
const fleetTimeout = 30 * time.Second

// instance is one instance of a test fleet: a service over the fixture's
// store, with a runtime and metrics of its own.
type instance struct {
	// pl is the fleet's placer, which reaches every instance.
	pl      *placer
	node    string
	svc     *profiles.Service
	rt      *fakeRuntime
	counted *sessionCounts
}

// placer hands placed launches to the instances of the fleet in-process;
// a node without an instance is one that cannot be reached.
type placer struct {
	mu    sync.Mutex
	nodes map[string]*profiles.Service
	calls []string
}

func (p *placer) LaunchOn(ctx context.Context, node string, l ports.PlacedLaunch) (ports.PlacedSession, error) {
	p.mu.Lock()
	svc := p.nodes[node]
	p.calls = append(p.calls, node)
	p.mu.Unlock()
	if svc == nil {
		return ports.PlacedSession{}, domain.Unavailable("no answer")
	}
	return svc.LaunchPlaced(ctx, l)
}

func (p *placer) ReleaseOn(ctx context.Context, node string, r ports.PlacedRelease) error {
	p.mu.Lock()
	svc := p.nodes[node]
	p.mu.Unlock()
	if svc == nil {
		return domain.Unavailable("no answer")
	}
	return svc.ReleasePlaced(ctx, r)
}

// fleetOf makes n instances sharing f's store, clock and ids, each running
// at most max browsers, and has each beat once.
func fleetOf(t *testing.T, f *fixture, n, max int) []*instance {
	t.Helper()
	pl := &placer{nodes: map[string]*profiles.Service{}}
	var out []*instance
	for i := range n {
		in := &instance{pl: pl, node: fmt.Sprintf("http://node-%d.test", i+1), rt: &fakeRuntime{cdp: true}, counted: &sessionCounts{}}
		d := f.deps
		// The fixture's ids: every instance makes ids of one sequence.
		d.Runtime, d.Metrics = in.rt, in.counted
		d.Policy.BrowsersMax = max
		d.Policy.NodeURL = func() string { return in.node }
		d.Fleet = profiles.Fleet{Instances: f.store.Instances(), Peers: pl, InstanceID: fmt.Sprintf("ins_%d", i+1), Version: "v-test", Timeout: fleetTimeout}
		in.svc = profiles.New(d)
		pl.nodes[in.node] = in.svc
		out = append(out, in)
	}
	for _, in := range out {
		if err := in.svc.Beat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// starts counts the browsers the instance's runtime started, stops those
// it was asked to stop.
func (in *instance) starts() int { return in.runtimeCalls("start ") }

func (in *instance) stops() int { return in.runtimeCalls("stop ") }

func (in *instance) runtimeCalls(prefix string) int {
	n := 0
	for _, c := range in.rt.Calls() {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func (in *instance) counts(what string) int {
	n := 0
	for _, c := range in.counted.all() {
		if c == what {
			n++
		}
	}
	return n
}

func TestALaunchGoesWhereThereIsRoomAndIs503OnlyWhenTheFleetIsFull(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 3, 2)
	a := fleet[0]
	ctx := context.Background()
	for i := range 6 {
		p := f.create(t, fmt.Sprintf("p%d", i))
		got, err := a.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{})
		if err != nil {
			t.Fatalf("launch %d through the first instance: %v", i+1, err)
		}
		// The answer carries the token of the session that is stored,
		// whichever instance runs it.
		stored := f.stored(t, p.ID).Session
		if stored == nil || got.Session == nil || got.Session.ID != stored.ID {
			t.Fatalf("launch %d answered session %+v, stored %+v", i+1, got.Session, stored)
		}
		url, token, ok := strings.Cut(got.Session.CDPURL, "?token=")
		sum := sha256.Sum256([]byte(token))
		if !ok || url != "ws://localhost/api/v1/sessions/"+stored.ID+"/cdp" || hex.EncodeToString(sum[:]) != stored.CDPTokenHash {
			t.Fatalf("launch %d: cdpUrl %q does not carry the stored session's token", i+1, got.Session.CDPURL)
		}
		if i < 2 && stored.Node != a.node {
			t.Fatalf("launch %d ran on %s while the receiving instance had room", i+1, stored.Node)
		}
	}
	for _, in := range fleet {
		if in.starts() != 2 || in.svc.BrowsersRunning() != 2 {
			t.Errorf("%s started %d browsers and runs %d; want 2 and 2", in.node, in.starts(), in.svc.BrowsersRunning())
		}
	}
	p := f.create(t, "seventh")
	_, err := a.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{})
	if !domain.IsKind(err, domain.KindUnavailable) || !strings.Contains(err.Error(), "the fleet is full") {
		t.Fatalf("the 7th launch: %v; want unavailable, the fleet is full", err)
	}
	f.wantSession(t, p.ID, "")
	if a.counts("placed elsewhere") != 4 || a.counts("fleet full") != 1 {
		t.Errorf("the first instance counted %v; want 4 placed elsewhere and 1 fleet full", a.counted.all())
	}
}

func TestPlacementSpreadsTiesAtRandom(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 3, 100)
	a := fleet[0]
	// The receiving instance is full: a fleet of one browser place.
	full := f.create(t, "full")
	for range 100 {
		if _, err := a.svc.Launch(context.Background(), alice, full.ID, profiles.LaunchInput{}); err != nil {
			break
		}
		full = f.create(t, "full")
	}
	for i := range 40 {
		p := f.create(t, fmt.Sprintf("p%d", i))
		if _, err := a.svc.Launch(context.Background(), alice, p.ID, profiles.LaunchInput{}); err != nil {
			t.Fatal(err)
		}
	}
	// The registry still shows both others with 100 places: each launch
	// is a fair draw between them, and 40 draws give each at least 6
	// but for a chance of about 1 in 10^6.
	b, c := fleet[1].starts(), fleet[2].starts()
	if b+c != 40 || b < 6 || c < 6 {
		t.Fatalf("40 launches went %d and %d to two instances of equal room", b, c)
	}
}

func TestAPlacedLaunchHoldsTheLeaseAcrossInstances(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 3, 1)
	p := f.create(t, "Shop")
	// Every instance but the third is full, so both launches below go to
	// it: one wins, and the other is the conflict naming the holder.
	for i, in := range fleet[:2] {
		q := f.create(t, fmt.Sprintf("filler %d", i))
		if _, err := in.svc.Launch(context.Background(), alice, q.ID, profiles.LaunchInput{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, in := range fleet[:2] {
		wg.Go(func() {
			_, errs[i] = in.svc.Launch(context.Background(), []team.Actor{alice, bob}[i], p.ID, profiles.LaunchInput{})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case domain.IsKind(err, domain.KindConflict), domain.IsKind(err, domain.KindUnavailable):
		default:
			t.Fatalf("a losing launch failed with %v", err)
		}
	}
	if won != 1 || fleet[2].starts() != 1 {
		t.Fatalf("%d launches won and the third instance started %d browsers; want 1 and 1 (errors %v)", won, fleet[2].starts(), errs)
	}
}

func TestADrainingInstanceTakesNoLaunchAndEndsItsSessionsAtTheTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 3, 2)
	a, b, c := fleet[0], fleet[1], fleet[2]
	ctx := context.Background()
	running := f.create(t, "running on b")
	if _, err := b.svc.Launch(ctx, alice, running.ID, profiles.LaunchInput{}); err != nil {
		t.Fatal(err)
	}
	drainCtx, timeout := context.WithCancel(ctx)
	drained := make(chan error, 1)
	go func() { drained <- b.svc.Drain(drainCtx) }()
	poll.Within(t, 10*time.Second, "b to tell the fleet that it drains", func() bool {
		view, err := a.svc.Fleet(ctx, admin)
		return err == nil && len(view.Instances) == 3 && view.Instances[1].Draining
	})
	// b refuses a launch of its own and one placed on it; a, full, places
	// its launches on c only.
	if _, err := b.svc.LaunchPlaced(ctx, ports.PlacedLaunch{Actor: alice, ProfileID: f.create(t, "direct").ID}); !domain.IsKind(err, domain.KindUnavailable) {
		t.Fatalf("a launch placed on a draining instance: %v; want unavailable", err)
	}
	for i := range 4 {
		p := f.create(t, fmt.Sprintf("p%d", i))
		if _, err := a.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); err != nil {
			t.Fatalf("launch %d while b drains: %v", i+1, err)
		}
	}
	if b.starts() != 1 || c.starts() != 2 || a.starts() != 2 {
		t.Fatalf("browsers started: a %d, b %d, c %d; want 2, 1 (before the drain), 2", a.starts(), b.starts(), c.starts())
	}
	select {
	case err := <-drained:
		t.Fatalf("the drain ended (%v) while its session ran and before its timeout", err)
	default:
	}
	timeout()
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	f.wantSession(t, running.ID, "")
	stops := f.eventsOf(t, event.ProfileStopped)
	if len(stops) != 1 || stops[0].Profile != running.ID || stops[0].Reason != "shutdown" {
		t.Fatalf("profile.stopped events %+v; want one, reason shutdown, of %s", stops, running.ID)
	}
}

func TestADrainEndsOnceItsLastSessionEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 1, 2)
	a := fleet[0]
	ctx := context.Background()
	p := f.create(t, "Shop")
	if _, err := a.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- a.svc.Drain(ctx) }()
	poll.Within(t, 10*time.Second, "the instance to drain", a.svc.Draining)
	if _, err := a.svc.Release(ctx, alice, p.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-drained:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not end when its last session was released")
	}
	stops := f.eventsOf(t, event.ProfileStopped)
	if len(stops) != 1 || stops[0].Reason != "released" {
		t.Fatalf("profile.stopped events %+v; want one, released", stops)
	}
}

func TestTheSessionsOfAnInstanceGoneEndAsCrashedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 3, 2)
	a, b, c := fleet[0], fleet[1], fleet[2]
	ctx := context.Background()
	var onB []string
	for i := range 2 {
		p := f.create(t, fmt.Sprintf("on b %d", i))
		if _, err := b.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); err != nil {
			t.Fatal(err)
		}
		onB = append(onB, p.ID)
	}
	// a and c beat on; b stops.
	f.clock.Advance(fleetTimeout - time.Second)
	for _, in := range []*instance{a, c} {
		if err := in.svc.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := a.svc.EndGoneInstances(ctx); n != 0 || err != nil {
		t.Fatalf("before the timeout: ended %d, %v; want 0", n, err)
	}
	f.clock.Advance(2 * time.Second)
	var wg sync.WaitGroup
	ended := make([]int, 2)
	for i, in := range []*instance{a, c} {
		wg.Go(func() {
			n, err := in.svc.EndGoneInstances(ctx)
			if err != nil {
				t.Error(err)
			}
			ended[i] = n
		})
	}
	wg.Wait()
	if ended[0]+ended[1] != 2 {
		t.Fatalf("the two instances ended %v sessions of b; want 2 in all", ended)
	}
	stops := f.eventsOf(t, event.ProfileStopped)
	if len(stops) != 2 || stops[0].Reason != "crashed" || stops[1].Reason != "crashed" {
		t.Fatalf("profile.stopped events %+v; want one for each of b's sessions, crashed", stops)
	}
	for _, id := range onB {
		f.wantSession(t, id, "")
	}
	all, err := f.store.Instances().List(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("the registry holds %+v (%v); want a and c only", all, err)
	}
	// Launched again, through a, each runs elsewhere.
	for _, id := range onB {
		p, err := a.svc.Launch(ctx, alice, id, profiles.LaunchInput{})
		if err != nil || f.stored(t, id).Session.Node == b.node {
			t.Fatalf("relaunch of %s: %+v, %v", id, p.Session, err)
		}
	}
	// b was only slow: at its next beat it learns that its sessions are
	// over and closes their browsers, ending nothing a second time.
	if err := b.svc.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := b.stops()
	if b.svc.BrowsersRunning() != 0 || stopped != 2 {
		t.Fatalf("after b learnt it was gone it runs %d browsers and stopped %d; want 0 and 2", b.svc.BrowsersRunning(), stopped)
	}
	if got := len(f.eventsOf(t, event.ProfileStopped)); got != 2 {
		t.Fatalf("%d profile.stopped events after b came back; want still 2", got)
	}
}

func TestTheFleetIsShownToOwnersAndAdminsOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 3, 2)
	ctx := context.Background()
	if _, err := fleet[0].svc.Launch(ctx, alice, f.create(t, "Shop").ID, profiles.LaunchInput{}); err != nil {
		t.Fatal(err)
	}
	for _, in := range fleet {
		if err := in.svc.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, actor := range []team.Actor{alice, viewer} {
		if _, err := fleet[0].svc.Fleet(ctx, actor); !domain.IsKind(err, domain.KindForbidden) {
			t.Fatalf("the fleet shown to a %s: %v; want forbidden", actor.Role, err)
		}
	}
	// An instance that left is not shown; one not heard from for the
	// timeout neither.
	if err := fleet[2].svc.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	view, err := fleet[1].svc.Fleet(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if view.Capacity != 4 || view.Running != 1 || view.Free != 3 || len(view.Instances) != 2 ||
		view.Instances[0].ID != "ins_1" || view.Instances[0].Running != 1 || view.Instances[0].Version != "v-test" {
		t.Fatalf("the fleet shows %+v; want 2 instances, 4 places, 1 running, 3 free", view)
	}
	f.clock.Advance(fleetTimeout + time.Second)
	if view, err := fleet[1].svc.Fleet(ctx, admin); err != nil || len(view.Instances) != 0 {
		t.Fatalf("after the timeout the fleet shows %+v, %v; want none", view, err)
	}
}

func TestAnUnreachableInstanceHandsTheLaunchToTheNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 2, 1)
	ctx := context.Background()
	// A third instance recorded itself with the most room and is gone
	// without a word: the placer reaches nothing there.
	lost := profilestore.Instance{Node: "http://lost.test", ID: "ins_lost", Capacity: 50, StartedAt: f.clock.Now(), SeenAt: f.clock.Now()}
	if _, err := f.store.Instances().Beat(ctx, lost); err != nil {
		t.Fatal(err)
	}
	if _, err := fleet[0].svc.Launch(ctx, alice, f.create(t, "here").ID, profiles.LaunchInput{}); err != nil {
		t.Fatal(err)
	}
	p := f.create(t, "elsewhere")
	if _, err := fleet[0].svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); err != nil {
		t.Fatalf("a launch with one instance unreachable and one with room: %v", err)
	}
	if fleet[1].starts() != 1 || f.stored(t, p.ID).Session.Node != fleet[1].node {
		t.Fatal("the launch did not go to the instance with room")
	}
}

func TestAReleaseReachesTheInstanceThatRunsTheBrowser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 2, 1)
	a, b := fleet[0], fleet[1]
	ctx := context.Background()
	if _, err := a.svc.Launch(ctx, alice, f.create(t, "on a").ID, profiles.LaunchInput{}); err != nil {
		t.Fatal(err)
	}
	p := f.create(t, "on b")
	if _, err := a.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); err != nil || f.stored(t, p.ID).Session.Node != b.node {
		t.Fatalf("launch placed on b: %v", err)
	}
	// Through a, which does not run the browser: b closes it and stores
	// its data, then the lease ends.
	got, err := a.svc.Release(ctx, alice, p.ID)
	if err != nil || got.Session != nil {
		t.Fatalf("release through a: %+v, %v", got.Session, err)
	}
	if b.stops() != 1 || a.stops() != 0 || b.svc.BrowsersRunning() != 0 {
		t.Fatalf("b stopped %d browsers, a %d; b runs %d; want 1, 0, 0", b.stops(), a.stops(), b.svc.BrowsersRunning())
	}
	if stops := f.eventsOf(t, event.ProfileStopped); len(stops) != 1 || stops[0].Reason != "released" {
		t.Fatalf("profile.stopped events %+v; want one, released", stops)
	}
	// A second release is the conflict of an idle profile, as on one
	// instance.
	if _, err := a.svc.Release(ctx, alice, p.ID); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("a second release: %v; want conflict", err)
	}
	// A release placed by someone who may not act on the session is
	// refused where it runs too.
	q := f.create(t, "bob's")
	if _, err := b.svc.Launch(ctx, bob, q.ID, profiles.LaunchInput{}); err != nil {
		t.Fatal(err)
	}
	err = b.svc.ReleasePlaced(ctx, ports.PlacedRelease{Actor: alice, ProfileID: q.ID, SessionID: f.stored(t, q.ID).Session.ID})
	if !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("alice's release of bob's session, placed on b: %v; want forbidden", err)
	}
}

func TestAnExpiredSessionIsEndedByTheInstanceThatRunsIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 2, 1)
	a, b := fleet[0], fleet[1]
	ctx := context.Background()
	ttl := 60
	p := f.create(t, "on b")
	if _, err := b.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{TTLSeconds: &ttl}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute)
	for _, in := range fleet {
		if err := in.svc.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := a.svc.ReapExpired(ctx); n != 0 || err != nil {
		t.Fatalf("a reaped %d (%v) of b's sessions; want 0: b ends them with their data", n, err)
	}
	if n, err := b.svc.ReapExpired(ctx); n != 1 || err != nil || b.stops() != 1 {
		t.Fatalf("b reaped %d (%v) and stopped %d browsers; want 1 and 1", n, err, b.stops())
	}
	if stops := f.eventsOf(t, event.ProfileStopped); len(stops) != 1 || stops[0].Reason != "expired" {
		t.Fatalf("profile.stopped events %+v; want one, expired", stops)
	}
}

func TestABrowserWhoseSessionEndedElsewhereIsClosedAtTheNextBeat(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 2, 1)
	a, b := fleet[0], fleet[1]
	ctx := context.Background()
	ttl := 60
	p := f.create(t, "on b")
	if _, err := b.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{TTLSeconds: &ttl}); err != nil {
		t.Fatal(err)
	}
	// The lease runs out and a launch through a takes it over before b's
	// reaper ends it: b's browser has no lease any more.
	f.clock.Advance(2 * time.Minute)
	if _, err := a.svc.Launch(ctx, bob, p.ID, profiles.LaunchInput{}); err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if b.stops() != 1 || b.svc.BrowsersRunning() != 0 || a.svc.BrowsersRunning() != 1 {
		t.Fatalf("b stopped %d and runs %d browsers, a runs %d; want 1, 0, 1", b.stops(), b.svc.BrowsersRunning(), a.svc.BrowsersRunning())
	}
}

func TestAnInstanceThatRunsNoBrowserIsNeverGivenALaunch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fleet := fleetOf(t, f, 2, 1)
	ctx := context.Background()
	// A third instance runs leases only: it records no room.
	leases := f.deps
	leases.Policy.BrowsersMax = 0
	leases.Policy.NodeURL = func() string { return "http://leases.test" }
	leases.Fleet = profiles.Fleet{Instances: f.store.Instances(), InstanceID: "ins_leases", Timeout: fleetTimeout}
	lsvc := profiles.New(leases)
	fleet[0].pl.mu.Lock()
	fleet[0].pl.nodes["http://leases.test"] = lsvc
	fleet[0].pl.mu.Unlock()
	if err := lsvc.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := fleet[0].svc.Launch(ctx, alice, f.create(t, fmt.Sprintf("p%d", i)).ID, profiles.LaunchInput{}); err != nil {
			t.Fatal(err)
		}
	}
	p := f.create(t, "third")
	if _, err := fleet[0].svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); !domain.IsKind(err, domain.KindUnavailable) {
		t.Fatalf("a third launch with two places: %v; want the fleet full", err)
	}
	f.wantSession(t, p.ID, "")
	if _, err := lsvc.LaunchPlaced(ctx, ports.PlacedLaunch{Actor: alice, ProfileID: p.ID}); !domain.IsKind(err, domain.KindUnavailable) {
		t.Fatalf("a launch placed on the instance of leases: %v; want unavailable", err)
	}
	f.wantSession(t, p.ID, "")
}
