package profiles_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appbrowserdata "github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// The node (NODE_URL) of the instance under test, and another one.
const (
	thisNode  = "http://node-a:8080"
	otherNode = "http://node-b:8080"
)

// leftoversRuntime is the fake runtime with the directories a killed
// process left: archive bytes by session, until Discard. leftoversErr
// makes Leftovers fail, discardErr the next Discard. It counts the
// archives it handed out and not yet closed.
type leftoversRuntime struct {
	*fakeRuntime
	mu           sync.Mutex
	left         map[string]leftDir // by session id
	leftoversErr error
	discardErr   error
	discarded    []string
	open         int
}

type leftDir struct {
	profileID string
	archive   []byte
}

func (r *leftoversRuntime) Leftovers(context.Context) ([]ports.LeftBrowser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leftoversErr != nil {
		return nil, r.leftoversErr
	}
	ids := make([]string, 0, len(r.left))
	for id := range r.left {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]ports.LeftBrowser, 0, len(ids))
	for _, id := range ids {
		r.open++
		out = append(out, ports.LeftBrowser{
			ProfileID: r.left[id].profileID, SessionID: id,
			Archive: &countedArchive{Reader: bytes.NewReader(r.left[id].archive), r: r},
		})
	}
	return out, nil
}

func (r *leftoversRuntime) Discard(sessionID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.discardErr; err != nil {
		r.discardErr = nil
		return err
	}
	r.discarded = append(r.discarded, sessionID)
	delete(r.left, sessionID)
	return nil
}

func (r *leftoversRuntime) state() (discarded []string, open int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.discarded...), r.open
}

// countedArchive tells its runtime when it is closed, once.
type countedArchive struct {
	io.Reader
	r      *leftoversRuntime
	closed bool
}

func (a *countedArchive) Close() error {
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	if !a.closed {
		a.closed = true
		a.r.open--
	}
	return nil
}

// crashFixture is a fixture on thisNode whose runtime has leftovers.
func crashFixture(t *testing.T) (*fixture, *leftoversRuntime) {
	t.Helper()
	f := newFixture(t)
	rt := &leftoversRuntime{fakeRuntime: f.rt, left: map[string]leftDir{}}
	f.deps.Runtime = rt
	f.deps.Policy.NodeURL = func() string { return thisNode }
	f.build()
	return f, rt
}

// runningBeforeTheKill stores the session a killed process left on p:
// launched by alice on node, with its relay address.
func runningBeforeTheKill(t *testing.T, f *fixture, p profile.Profile, sessionID, node string) {
	t.Helper()
	sess := &profile.Session{
		ID: sessionID, StartedAt: t0, ExpiresAt: t0.Add(10 * time.Minute), LaunchedBy: "usr_alice", Headless: true,
		CDPURL: "ws://localhost/api/v1/sessions/" + sessionID + "/cdp", CDPTokenHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Node: node,
	}
	ok, err := f.store.Profiles().SwapSession(ctx, p.TeamID, p.ID, profilestore.SessionSwap{Next: sess})
	if err != nil || !ok {
		t.Fatalf("storing session %s on %s: %v %v", sessionID, p.ID, ok, err)
	}
}

// storedFiles reads the regular files of the profile's data: name to
// content; nil for a profile without data.
func storedFiles(t *testing.T, f *fixture, id string) map[string]string {
	t.Helper()
	if f.stored(t, id).Data == nil {
		return nil
	}
	dl, err := f.data.Data(ctx, alice, id)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Body.Close()
	zr, err := gzip.NewReader(dl.Body)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = string(b)
	}
}

const leftStorage = "Default/Local Storage/leveldb/000003.log"

func wantFiles(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
	}
}

func wantRecovered(t *testing.T, f *fixture, wantEnded int) {
	t.Helper()
	n, err := f.svc.RecoverBrowsers(ctx)
	if err != nil || n != wantEnded {
		t.Fatalf("RecoverBrowsers: %d, %v; want %d sessions ended", n, err, wantEnded)
	}
}

func TestRecoverBrowsersEndsTheSessionsOfAKilledProcess(t *testing.T) {
	t.Parallel()
	f, rt := crashFixture(t)
	left := f.create(t, "Left a directory")    // prf_001
	bare := f.create(t, "Left no directory")   // prf_002
	elsewhere := f.create(t, "Runs on node B") // prf_003
	idle := f.create(t, "Idle")                // prf_004
	if _, err := f.data.PutData(ctx, alice, left.ID, appbrowserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{leftStorage: "before the launch"}))}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.data.PutData(ctx, alice, bare.ID, appbrowserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{leftStorage: "kept as it was"}))}); err != nil {
		t.Fatal(err)
	}
	runningBeforeTheKill(t, f, left, "ses_left", thisNode)
	runningBeforeTheKill(t, f, bare, "ses_bare", thisNode)
	runningBeforeTheKill(t, f, elsewhere, "ses_b", otherNode)
	rt.left["ses_left"] = leftDir{profileID: left.ID, archive: testenv.TarGz(t, map[string]string{leftStorage: "written before the kill"})}
	// A directory whose session ended before the kill: no profile holds it.
	rt.left["ses_gone"] = leftDir{profileID: idle.ID, archive: testenv.TarGz(t, map[string]string{leftStorage: "of an ended session"})}

	wantRecovered(t, f, 2)

	wantEvents(t, f.eventsOf(t, event.ProfileStopped),
		outboxEvent{Type: event.ProfileStopped, Profile: "prf_001", Reason: "crashed", Session: "ses_left", By: "usr_alice"},
		outboxEvent{Type: event.ProfileStopped, Profile: "prf_002", Reason: "crashed", Session: "ses_bare", By: "usr_alice"},
	)
	f.wantSession(t, left.ID, "")
	f.wantSession(t, bare.ID, "")
	f.wantSession(t, elsewhere.ID, "ses_b")
	wantFiles(t, "data of the profile that left a directory", storedFiles(t, f, left.ID), map[string]string{leftStorage: "written before the kill"})
	wantFiles(t, "data of the profile that left none", storedFiles(t, f, bare.ID), map[string]string{leftStorage: "kept as it was"})
	wantFiles(t, "data of the idle profile", storedFiles(t, f, idle.ID), nil)
	if got := f.stored(t, left.ID).Version; got != 3 {
		t.Errorf("version of %s after its data were stored: %d, want 3", left.ID, got)
	}
	discarded, open := rt.state()
	if !slices.Equal(discarded, []string{"ses_gone", "ses_left"}) || open != 0 {
		t.Errorf("discarded %v with %d archives left open, want [ses_gone ses_left] and none open", discarded, open)
	}
	if n, err := f.svc.SessionsRunning(ctx); err != nil || n != 1 {
		t.Errorf("SessionsRunning: %d, %v; want 1 (node B's)", n, err)
	}

	// The profiles launch at once, and a second recovery ends nothing.
	f.launch(t, alice, left.ID)
	f.launch(t, alice, bare.ID)
	wantRecovered(t, f, 0)
	if got := len(f.eventsOf(t, event.ProfileStopped)); got != 2 {
		t.Errorf("profile.stopped emitted %d times after a second recovery, want 2", got)
	}
}

func TestRecoverBrowsersThatDiesMidwayEndsEachSessionOnce(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset by peer")
	wantOneCrash := func(t *testing.T, f *fixture, p profile.Profile) {
		t.Helper()
		wantEvents(t, f.eventsOf(t, event.ProfileStopped),
			outboxEvent{Type: event.ProfileStopped, Profile: p.ID, Reason: "crashed", Session: "ses_left", By: "usr_alice"})
		f.wantSession(t, p.ID, "")
		wantFiles(t, "data", storedFiles(t, f, p.ID), map[string]string{leftStorage: "written before the kill"})
	}

	t.Run("before the session ended", func(t *testing.T) {
		t.Parallel()
		f, rt := crashFixture(t)
		p := f.create(t, "Left a directory")
		runningBeforeTheKill(t, f, p, "ses_left", thisNode)
		rt.left["ses_left"] = leftDir{profileID: p.ID, archive: testenv.TarGz(t, map[string]string{leftStorage: "written before the kill"})}
		store := f.deps.Profiles
		f.failSwap(0, boom)

		n, err := f.svc.RecoverBrowsers(ctx)
		if !errors.Is(err, boom) || n != 0 {
			t.Fatalf("RecoverBrowsers with the store failing: %d, %v; want 0 and %v", n, err, boom)
		}
		// Nothing ended: the lease and the directory wait for the next
		// start.
		f.wantLeaseKept(t, p.ID, "ses_left")
		if discarded, open := rt.state(); len(discarded) != 0 || open != 0 {
			t.Fatalf("discarded %v with %d archives open, want nothing discarded and none open", discarded, open)
		}

		f.useProfiles(store)
		wantRecovered(t, f, 1)
		wantOneCrash(t, f, p)
	})

	t.Run("after the session ended, before its directory went", func(t *testing.T) {
		t.Parallel()
		f, rt := crashFixture(t)
		p := f.create(t, "Left a directory")
		runningBeforeTheKill(t, f, p, "ses_left", thisNode)
		rt.left["ses_left"] = leftDir{profileID: p.ID, archive: testenv.TarGz(t, map[string]string{leftStorage: "written before the kill"})}
		rt.discardErr = boom

		n, err := f.svc.RecoverBrowsers(ctx)
		if !errors.Is(err, boom) || n != 1 {
			t.Fatalf("RecoverBrowsers with Discard failing: %d, %v; want 1 and %v", n, err, boom)
		}
		wantOneCrash(t, f, p)
		data := *f.stored(t, p.ID).Data

		// The directory is still there at the next start: its session has
		// ended, so it goes, and nothing else happens.
		wantRecovered(t, f, 0)
		wantOneCrash(t, f, p)
		if got := *f.stored(t, p.ID).Data; got != data {
			t.Errorf("data after the second recovery %+v, want %+v", got, data)
		}
		if discarded, open := rt.state(); !slices.Equal(discarded, []string{"ses_left"}) || open != 0 {
			t.Errorf("discarded %v with %d archives open, want [ses_left] and none open", discarded, open)
		}
	})
}

func TestRecoverBrowsersEndsASessionWhoseDataCannotBeStored(t *testing.T) {
	t.Parallel()
	f, rt := crashFixture(t)
	p := f.create(t, "Left a broken directory")
	if _, err := f.data.PutData(ctx, alice, p.ID, appbrowserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{leftStorage: "before the launch"}))}); err != nil {
		t.Fatal(err)
	}
	runningBeforeTheKill(t, f, p, "ses_left", thisNode)
	rt.left["ses_left"] = leftDir{profileID: p.ID, archive: []byte("not a tar.gz")}

	n, err := f.svc.RecoverBrowsers(ctx)
	if err == nil || !strings.Contains(err.Error(), "could not be stored") || n != 1 {
		t.Fatalf("RecoverBrowsers: %d, %v; want 1 ended and the data not stored", n, err)
	}
	wantEvents(t, f.eventsOf(t, event.ProfileStopped),
		outboxEvent{Type: event.ProfileStopped, Profile: p.ID, Reason: "crashed", Session: "ses_left", By: "usr_alice"})
	wantFiles(t, "data", storedFiles(t, f, p.ID), map[string]string{leftStorage: "before the launch"})
	if discarded, open := rt.state(); !slices.Equal(discarded, []string{"ses_left"}) || open != 0 {
		t.Errorf("discarded %v with %d archives open, want [ses_left] and none open", discarded, open)
	}
}

func TestRecoverBrowsersLeavesEverythingWhenTheLeftoversCannotBeRead(t *testing.T) {
	t.Parallel()
	f, rt := crashFixture(t)
	p := f.create(t, "Maybe left a directory")
	runningBeforeTheKill(t, f, p, "ses_left", thisNode)
	boom := errors.New("permission denied")
	rt.leftoversErr = boom

	// Ending the session without what its directory may hold would lose
	// it: the session keeps its lease.
	if n, err := f.svc.RecoverBrowsers(ctx); !errors.Is(err, boom) || n != 0 {
		t.Fatalf("RecoverBrowsers: %d, %v; want 0 and %v", n, err, boom)
	}
	f.wantLeaseKept(t, p.ID, "ses_left")
}

func TestRecoverBrowsersOfALeaseOnlyRuntimeEndsTheNodesSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := f.create(t, "On this node")
	q := f.create(t, "Starting when the process died")
	runningBeforeTheKill(t, f, p, "ses_here", "http://localhost")
	runningBeforeTheKill(t, f, q, "ses_starting", "")

	wantRecovered(t, f, 1)
	wantEvents(t, f.eventsOf(t, event.ProfileStopped),
		outboxEvent{Type: event.ProfileStopped, Profile: p.ID, Reason: "crashed", Session: "ses_here", By: "usr_alice"})
	// A session not yet placed on a node is no one's to end: its lease
	// runs out.
	f.wantSession(t, q.ID, "ses_starting")
}

func TestRecoverBrowsersWhenTheNodesSessionsCannotBeListed(t *testing.T) {
	t.Parallel()
	f, _ := crashFixture(t)
	p := f.create(t, "On this node")
	runningBeforeTheKill(t, f, p, "ses_here", thisNode)
	boom := errors.New("database is locked")
	f.useProfiles(&nodeSessionsHook{Profiles: f.deps.Profiles, err: boom})

	if n, err := f.svc.RecoverBrowsers(ctx); !errors.Is(err, boom) || n != 0 {
		t.Fatalf("RecoverBrowsers: %d, %v; want 0 and %v", n, err, boom)
	}
	f.wantLeaseKept(t, p.ID, "ses_here")
}

// nodeSessionsHook makes ListNodeSessions fail with err.
type nodeSessionsHook struct {
	profilestore.Profiles
	err error
}

func (h *nodeSessionsHook) ListNodeSessions(context.Context, string, int) ([]profile.Profile, error) {
	return nil, h.err
}
