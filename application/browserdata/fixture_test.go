package browserdata_test

import (
	"context"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// The team's members, one per role; alice and bob are plain members.
var (
	alice  = team.Actor{UserID: "usr_alice", TeamID: "team_1", MemberID: "mem_alice", Role: team.RoleMember}
	viewer = team.Actor{UserID: "usr_viewer", TeamID: "team_1", MemberID: "mem_viewer", Role: team.RoleViewer}
	// outsider acts in another team, where team_1's profiles do not exist.
	outsider = team.Actor{UserID: "usr_out", TeamID: "team_2", MemberID: "mem_out", Role: team.RoleOwner}
)

// fixture is the browser data service over the profiles module, the
// memory store, blobs in files and a fake clock; tests change blobDeps
// before calling build.
type fixture struct {
	store    *memory.Store
	clock    *clock.Fake
	logs     *apptest.Logs
	ids      *apptest.IDs
	blobDeps browserdata.BlobsDeps
	blobs    *browserdata.Blobs
	profiles *profiles.Service
	svc      *browserdata.Service
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := memory.New()
	apptest.Seed(t, st.Users(), st.Teams(), t0, account.User{ID: "usr_alice", Email: "alice@example.com", Name: "Alice"})
	blobs, err := files.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: st, clock: clock.NewFake(t0), logs: &apptest.Logs{}, ids: apptest.NewPrefixIDs()}
	f.blobDeps = browserdata.BlobsDeps{
		Tx: unit.New(st, nil), Blobs: blobs, BlobRefs: st.BlobRefs(), Clock: f.clock, IDs: f.ids, Log: f.logs.Logger(),
	}
	f.build()
	return f
}

// build makes the services from blobDeps again, after a test changed them.
func (f *fixture) build() {
	f.blobs = browserdata.NewBlobs(f.blobDeps)
	f.profiles = profiles.New(profiles.Deps{
		Tx: unit.New(f.store, nil), Teams: f.store.Teams(), Profiles: f.store.Profiles(), Users: f.store.Users(), Outbox: f.store.Outbox(),
		Snapshots: f.store.Snapshots(), BlobRefs: f.store.BlobRefs(), Blobs: f.blobDeps.Blobs, Data: f.blobs,
		Clock: f.clock, IDs: f.ids, Log: f.logs.Logger(),
	})
	f.svc = browserdata.New(f.profiles, f.blobs)
}

// newShop returns a new fixture and alice's profile "Shop" there, prf_001.
func newShop(t *testing.T) (*fixture, profile.Profile) {
	t.Helper()
	f := newFixture(t)
	p, err := f.profiles.Create(context.Background(), alice, profile.Settings{Name: "Shop", TemplateID: "tpl_chrome_win_us"})
	if err != nil {
		t.Fatal(err)
	}
	return f, p
}

// run gives the profile a session launched by alice, as a launch does.
func (f *fixture) run(t *testing.T, id string) {
	t.Helper()
	sess := &profile.Session{ID: "ses_1", StartedAt: t0, ExpiresAt: t0.Add(10 * time.Minute), LaunchedBy: "usr_alice"}
	if ok, err := f.store.Profiles().SwapSession(context.Background(), "team_1", id, profilestore.SessionSwap{Next: sess}); err != nil || !ok {
		t.Fatalf("run %s: %v %v", id, ok, err)
	}
}

// stop ends the session run gave.
func (f *fixture) stop(t *testing.T, id string) {
	t.Helper()
	if ok, err := f.store.Profiles().SwapSession(context.Background(), "team_1", id, profilestore.SessionSwap{ExpectSessionID: "ses_1"}); err != nil || !ok {
		t.Fatalf("stop %s: %v %v", id, ok, err)
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

// updates counts the profile.updated events in the outbox.
func (f *fixture) updates(t *testing.T) int {
	t.Helper()
	evs, err := f.store.Outbox().ListAfter(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Type == event.ProfileUpdated {
			n++
		}
	}
	return n
}
