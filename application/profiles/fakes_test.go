package profiles_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/application/apptest"
	appbrowserdata "github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// The team's members, one per role; alice and bob are plain members.
var (
	alice  = team.Actor{UserID: "usr_alice", TeamID: "team_1", MemberID: "mem_alice", Role: team.RoleMember}
	bob    = team.Actor{UserID: "usr_bob", TeamID: "team_1", MemberID: "mem_bob", Role: team.RoleMember}
	admin  = team.Actor{UserID: "usr_admin", TeamID: "team_1", MemberID: "mem_admin", Role: team.RoleAdmin}
	viewer = team.Actor{UserID: "usr_viewer", TeamID: "team_1", MemberID: "mem_viewer", Role: team.RoleViewer}
	// outsider acts in another team, where team_1's profiles do not exist.
	outsider = team.Actor{UserID: "usr_out", TeamID: "team_2", MemberID: "mem_out", Role: team.RoleOwner}
)

// fakeRuntime records every Start and Stop. startErr and stopErr make them
// fail; cdp is what Start reports, and a session it started with cdp runs
// (Connect opens connections to it) until it is stopped or crash ends it;
// onStart runs inside Start, before it answers, where a concurrent request
// can slip in. cookies are what the browser of a session holds
// (setCookies); a session without an entry is one the runtime does not run.
type fakeRuntime struct {
	mu       sync.Mutex
	calls    []string
	startErr error
	stopErr  error
	cdp      bool
	running  map[string]bool // by session id
	onStart  func(spec ports.LaunchSpec)
	cookies  map[string][]browserdata.Cookie
}

func (r *fakeRuntime) Start(_ context.Context, spec ports.LaunchSpec) (ports.RunningBrowser, error) {
	r.mu.Lock()
	r.calls = append(r.calls, "start "+spec.Profile.ID+" "+spec.SessionID)
	hook, err, cdp := r.onStart, r.startErr, r.cdp
	r.mu.Unlock()
	if hook != nil {
		hook(spec)
	}
	if err != nil {
		return ports.RunningBrowser{}, err
	}
	if cdp {
		r.mu.Lock()
		if r.running == nil {
			r.running = map[string]bool{}
		}
		r.running[spec.SessionID] = true
		r.mu.Unlock()
	}
	return ports.RunningBrowser{CDP: cdp}, nil
}

func (r *fakeRuntime) Stop(_ context.Context, profileID, sessionID string) (*ports.BrowserState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "stop "+profileID+" "+sessionID)
	delete(r.running, sessionID)
	return nil, r.stopErr
}

// crash ends the browser of sessionID without a Stop, as one that died.
func (r *fakeRuntime) crash(sessionID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.running, sessionID)
}

func (r *fakeRuntime) Cookies(_ context.Context, sessionID string) ([]browserdata.Cookie, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs, ok := r.cookies[sessionID]
	if !ok {
		return nil, domain.NotFound("browser")
	}
	return append([]browserdata.Cookie(nil), cs...), nil
}

// setCookies makes the browser of sessionID hold cs.
func (r *fakeRuntime) setCookies(sessionID string, cs ...browserdata.Cookie) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cookies == nil {
		r.cookies = map[string][]browserdata.Cookie{}
	}
	r.cookies[sessionID] = cs
}

func (r *fakeRuntime) Connect(_ context.Context, sessionID string) (ports.CDPConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running[sessionID] {
		return nil, domain.NotFound("browser")
	}
	return &fakeCDPConn{sessionID: sessionID}, nil
}

func (r *fakeRuntime) Exits() <-chan ports.BrowserExit { return nil }

// fakeCDPConn is a connection to the browser of sessionID; the service only
// hands it on, so it carries nothing.
type fakeCDPConn struct{ sessionID string }

func (c *fakeCDPConn) Send(context.Context, []byte) error { return nil }

func (c *fakeCDPConn) Receive(ctx context.Context) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (c *fakeCDPConn) Close() error { return nil }

func (r *fakeRuntime) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// swapHook stands in for SwapSession: fn gets the call's number (from 1)
// and the real repository, so it can fail, change the row first, or pass
// the call on.
type swapHook struct {
	profilestore.Profiles
	calls atomic.Int32
	fn    func(ctx context.Context, n int, teamID, id string, s profilestore.SessionSwap) (bool, error)
}

func (h *swapHook) SwapSession(ctx context.Context, teamID, id string, s profilestore.SessionSwap) (bool, error) {
	return h.fn(ctx, int(h.calls.Add(1)), teamID, id, s)
}

// useProfiles makes the service read and write profiles through repo.
func (f *fixture) useProfiles(repo profilestore.Profiles) {
	f.deps.Profiles = repo
	f.build()
}

// failSwap makes SwapSession call n (from 1) fail with err, or every call
// when n is 0; the other calls pass on to the repository.
func (f *fixture) failSwap(n int, err error) {
	inner := f.deps.Profiles
	f.useProfiles(&swapHook{Profiles: inner, fn: func(ctx context.Context, call int, teamID, id string, s profilestore.SessionSwap) (bool, error) {
		if n == 0 || call == n {
			return false, err
		}
		return inner.SwapSession(ctx, teamID, id, s)
	}})
}

// rivalSwapsFirst commits a rival's swap just before the service's first
// SwapSession, which then expects a session that has changed: another
// request (what, in the failure message) won the race between the
// service's read and its swap.
func (f *fixture) rivalSwapsFirst(t *testing.T, what string, rival profilestore.SessionSwap) {
	inner := f.deps.Profiles
	f.useProfiles(&swapHook{Profiles: inner, fn: func(ctx context.Context, n int, teamID, id string, s profilestore.SessionSwap) (bool, error) {
		if n == 1 {
			if ok, err := inner.SwapSession(ctx, teamID, id, rival); !ok || err != nil {
				t.Errorf("%s: %v %v", what, ok, err)
			}
		}
		return inner.SwapSession(ctx, teamID, id, s)
	}})
}

// byIDHook stands in for ByID the same way.
type byIDHook struct {
	profilestore.Profiles
	calls atomic.Int32
	fn    func(ctx context.Context, n int, teamID, id string) (profile.Profile, error)
}

func (h *byIDHook) ByID(ctx context.Context, teamID, id string) (profile.Profile, error) {
	return h.fn(ctx, int(h.calls.Add(1)), teamID, id)
}

// expiredHook stands in for ListExpiredSessions.
type expiredHook struct {
	profilestore.Profiles
	fn func(ctx context.Context, now time.Time, limit int) ([]profile.Profile, error)
}

func (h *expiredHook) ListExpiredSessions(ctx context.Context, now time.Time, limit int) ([]profile.Profile, error) {
	return h.fn(ctx, now, limit)
}

// fixture is a profile service over the memory store with a fake clock,
// runtime and ids; tests swap single ports of deps before calling build.
type fixture struct {
	store *memory.Store
	clock *clock.Fake
	rt    *fakeRuntime
	logs  *apptest.Logs
	// counted is what the service counted of sessions, in order.
	counted *sessionCounts
	deps    profiles.Deps
	svc     *profiles.Service
	// blobs keep browser data and cookies; data runs their use cases over
	// svc.
	blobs *appbrowserdata.Blobs
	data  *appbrowserdata.Service
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := memory.New()
	apptest.Seed(t, st.Users(), st.Teams(), t0,
		account.User{ID: "usr_alice", Email: "alice@example.com", Name: "Alice"},
		account.User{ID: "usr_bob", Email: "bob@example.com", Name: "Bob"},
		account.User{ID: "usr_admin", Email: "admin@example.com", Name: "Admin"})
	f := &fixture{store: st, clock: clock.NewFake(t0), rt: &fakeRuntime{}, logs: &apptest.Logs{}, counted: &sessionCounts{}}
	blobs, err := files.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.blobs = appbrowserdata.NewBlobs(appbrowserdata.BlobsDeps{
		Tx: unit.New(st, nil), Blobs: blobs, BlobRefs: st.BlobRefs(), Clock: f.clock, IDs: apptest.NewPrefixIDs(), Log: f.logs.Logger(),
	})
	f.deps = profiles.Deps{
		Tx: unit.New(st, nil), Teams: st.Teams(), Profiles: st.Profiles(), Users: st.Users(), Outbox: st.Outbox(),
		Snapshots: st.Snapshots(), BlobRefs: st.BlobRefs(), Blobs: blobs, Data: f.blobs,
		Runtime: f.rt, Clock: f.clock, IDs: apptest.NewPrefixIDs(), Log: f.logs.Logger(), Metrics: f.counted,
		Policy: profiles.Policy{SessionTTLDefault: 10 * time.Minute, SessionTTLMax: time.Hour},
	}
	f.build()
	return f
}

// build makes the service from deps again, after a test changed them.
func (f *fixture) build() {
	f.svc = profiles.New(f.deps)
	f.data = appbrowserdata.New(f.svc, f.blobs)
}

// create stores a profile of alice's team named name.
func (f *fixture) create(t *testing.T, name string) profile.Profile {
	t.Helper()
	p, err := f.svc.Create(context.Background(), alice, profile.Settings{Name: name, TemplateID: "tpl_chrome_win_us"})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return p
}

// newShop returns a new fixture and alice's profile "Shop" there, prf_001.
func newShop(t *testing.T) (*fixture, profile.Profile) {
	t.Helper()
	f := newFixture(t)
	return f, f.create(t, "Shop")
}

// launchedShop returns a new fixture and alice's profile "Shop" there,
// prf_001, as created and then launched by alice in session ses_001.
func launchedShop(t *testing.T) (*fixture, profile.Profile) {
	t.Helper()
	f, p := newShop(t)
	f.launch(t, alice, p.ID)
	return f, p
}

// launch launches id as actor with the default lease.
func (f *fixture) launch(t *testing.T, actor team.Actor, id string) profile.Profile {
	t.Helper()
	p, err := f.svc.Launch(context.Background(), actor, id, profiles.LaunchInput{})
	if err != nil {
		t.Fatalf("launch %s as %s: %v", id, actor.UserID, err)
	}
	return p
}

// stored reads a profile straight from the store.
func (f *fixture) stored(t *testing.T, id string) profile.Profile {
	t.Helper()
	p, err := f.store.Profiles().ByID(context.Background(), "team_1", id)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return p
}

// wantSession checks the session stored on profile id: sessionID, or none
// when sessionID is "".
func (f *fixture) wantSession(t *testing.T, id, sessionID string) {
	t.Helper()
	s := f.stored(t, id).Session
	switch {
	case sessionID == "" && s != nil:
		t.Fatalf("profile %s holds session %+v, want none", id, s)
	case sessionID != "" && (s == nil || s.ID != sessionID):
		t.Fatalf("profile %s holds session %+v, want %s", id, s, sessionID)
	}
}

// wantLeaseKept checks that profile id still holds session sessionID and
// that no stop of any session was recorded.
func (f *fixture) wantLeaseKept(t *testing.T, id, sessionID string) {
	t.Helper()
	f.wantSession(t, id, sessionID)
	wantEvents(t, f.eventsOf(t, event.ProfileStopped))
}

// outboxEvent is what the tests read of an event in the outbox.
type outboxEvent struct {
	Type    event.Type
	Profile string
	Reason  string
	Session string
	By      string
}

// events returns every event in the outbox, oldest first.
func (f *fixture) events(t *testing.T) []outboxEvent {
	t.Helper()
	evs, err := f.store.Outbox().ListAfter(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]outboxEvent, 0, len(evs))
	for _, e := range evs {
		var data struct {
			Profile struct {
				ID string `json:"id"`
			} `json:"profile"`
			Reason  string `json:"reason"`
			Session struct {
				ID         string `json:"id"`
				LaunchedBy string `json:"launched_by"`
			} `json:"session"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatalf("event %s: %v", e.ID, err)
		}
		out = append(out, outboxEvent{Type: e.Type, Profile: data.Profile.ID, Reason: data.Reason, Session: data.Session.ID, By: data.Session.LaunchedBy})
	}
	return out
}

// eventsOf returns the events of type typ.
func (f *fixture) eventsOf(t *testing.T, typ event.Type) []outboxEvent {
	t.Helper()
	var out []outboxEvent
	for _, e := range f.events(t) {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// sessionCounts are the service's SessionMetrics, as a list.
type sessionCounts struct {
	mu   sync.Mutex
	list []string
}

func (c *sessionCounts) Launched() { c.add("launched") }

func (c *sessionCounts) Stopped(reason string) { c.add("stopped " + reason) }

func (c *sessionCounts) PlacedElsewhere() { c.add("placed elsewhere") }

func (c *sessionCounts) FleetFull() { c.add("fleet full") }

func (c *sessionCounts) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, s)
}

func (c *sessionCounts) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}
