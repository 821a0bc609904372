package snapshots_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/application/snapshots"
	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
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

// pool is a team's proxy pool the test changes: a proxy removed from it
// is one deleted since.
type pool struct {
	mu sync.Mutex
	px map[string]proxy.Proxy
}

func (p *pool) Lookup(_ context.Context, teamID, id string) (proxy.Proxy, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	px, ok := p.px[id]
	if !ok || px.TeamID != teamID {
		return proxy.Proxy{}, domain.NotFound("proxy")
	}
	return px, nil
}

func (p *pool) Prepare(context.Context, team.Actor, proxy.Input) (proxy.Proxy, error) {
	return proxy.Proxy{}, domain.Invalid("proxy", "not in this test")
}

func (p *pool) Store(context.Context, proxy.Proxy) error { return nil }

func (p *pool) Target(ctx context.Context, teamID, id string) (proxy.Proxy, ports.ProxyTarget, error) {
	px, err := p.Lookup(ctx, teamID, id)
	return px, ports.ProxyTarget{}, err
}

func (p *pool) remove(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.px, id)
}

// fixture is the time machine over the profiles module, the memory store,
// blobs in files and a fake clock; tests change deps (and profileRepo)
// before calling build.
type fixture struct {
	store       *memory.Store
	clock       *clock.Fake
	ids         *apptest.IDs
	pool        *pool
	profileRepo profilestore.Profiles
	deps        snapshots.Deps
	profiles    *profiles.Service
	data        *browserdata.Service
	svc         *snapshots.Service
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := memory.New()
	apptest.Seed(t, st.Users(), st.Teams(), t0, account.User{ID: "usr_alice", Email: "alice@example.com", Name: "Alice"})
	f := &fixture{store: st, clock: clock.NewFake(t0), ids: apptest.NewPrefixIDs(), profileRepo: st.Profiles(), pool: &pool{px: map[string]proxy.Proxy{
		"prx_1": {ID: "prx_1", TeamID: "team_1", Type: proxy.TypeSOCKS5, Host: "one.example.test", Port: 1080},
		"prx_2": {ID: "prx_2", TeamID: "team_1", Type: proxy.TypeHTTP, Host: "two.example.test", Port: 8080},
	}}}
	f.deps = snapshots.Deps{
		Tx: unit.New(st, nil), Snapshots: st.Snapshots(), BlobRefs: st.BlobRefs(), Teams: st.Teams(), Proxies: f.pool,
		Clock: f.clock, IDs: f.ids,
	}
	f.build(t)
	return f
}

// build makes the services again, after a test changed deps.
func (f *fixture) build(t *testing.T) {
	t.Helper()
	blobStore, err := files.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	log := (&apptest.Logs{}).Logger()
	blobs := browserdata.NewBlobs(browserdata.BlobsDeps{Tx: unit.New(f.store, nil), Blobs: blobStore, BlobRefs: f.store.BlobRefs(), Clock: f.clock, IDs: f.ids, Log: log})
	f.profiles = profiles.New(profiles.Deps{
		Tx: unit.New(f.store, nil), Teams: f.store.Teams(), Profiles: f.profileRepo, Users: f.store.Users(), Outbox: f.store.Outbox(),
		Proxies: f.pool, Snapshots: f.store.Snapshots(), BlobRefs: f.store.BlobRefs(), Blobs: blobStore, Data: blobs,
		Clock: f.clock, IDs: f.ids, Log: log,
	})
	f.data = browserdata.New(f.profiles, blobs)
	f.deps.Profiles = f.profiles
	f.svc = snapshots.New(f.deps)
}

// newShop returns a new fixture and alice's profile "Shop" there, prf_001.
func newShop(t *testing.T) (*fixture, profile.Profile) {
	t.Helper()
	f := newFixture(t)
	return f, f.create(t, profile.Settings{Name: "Shop", TemplateID: "tpl_chrome_win_us"})
}

func (f *fixture) create(t *testing.T, in profile.Settings) profile.Profile {
	t.Helper()
	p, err := f.profiles.Create(context.Background(), alice, in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run gives the profile a session launched by alice, as a launch does.
func (f *fixture) run(t *testing.T, id string) {
	t.Helper()
	sess := &profile.Session{ID: "ses_1", StartedAt: t0, ExpiresAt: t0.Add(10 * time.Minute), LaunchedBy: "usr_alice"}
	if ok, err := f.store.Profiles().SwapSession(context.Background(), "team_1", id, profilestore.SessionSwap{Next: sess}); err != nil || !ok {
		t.Fatalf("run %s: %v %v", id, ok, err)
	}
}

// stored reads a profile of team_1 straight from the store.
func (f *fixture) stored(t *testing.T, id string) profile.Profile {
	t.Helper()
	p, err := f.store.Profiles().ByID(context.Background(), "team_1", id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// eventsOf counts the events of type typ in the outbox.
func (f *fixture) eventsOf(t *testing.T, typ event.Type) int {
	t.Helper()
	evs, err := f.store.Outbox().ListAfter(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}
