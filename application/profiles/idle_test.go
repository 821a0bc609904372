package profiles_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// renameTo is a change of another module: the name set, the version raised.
func renameTo(name string) func(context.Context, profile.Profile, time.Time) (profile.Profile, error) {
	return func(_ context.Context, cur profile.Profile, now time.Time) (profile.Profile, error) {
		cur.Name, cur.Version, cur.UpdatedAt = name, cur.Version+1, now
		return cur, nil
	}
}

// ChangeIdle writes a change that raises the version, with its event, and
// writes nothing for one that does not.
func TestChangeIdleWritesWhatRaisesTheVersion(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	got, err := f.svc.ChangeIdle(ctx, alice, p.ID, "testing", renameTo("Renamed"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Renamed" || got.Version != 2 {
		t.Fatalf("ChangeIdle answered %q version %d, want Renamed version 2", got.Name, got.Version)
	}
	if s := f.stored(t, p.ID); s.Name != "Renamed" || s.Version != 2 {
		t.Fatalf("stored %q version %d, want Renamed version 2", s.Name, s.Version)
	}
	wantEvents(t, f.eventsOf(t, event.ProfileUpdated), outboxEvent{Type: event.ProfileUpdated, Profile: "prf_001"})

	same, err := f.svc.ChangeIdle(ctx, alice, p.ID, "testing", func(_ context.Context, cur profile.Profile, _ time.Time) (profile.Profile, error) {
		cur.Notes = "not kept: the version is the same"
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := f.stored(t, p.ID); same.Version != 2 || s.Version != 2 || s.Notes != "" {
		t.Fatalf("a change that keeps the version: answered version %d, stored %d with notes %q; want 2, 2, none", same.Version, s.Version, s.Notes)
	}
	if n := len(f.eventsOf(t, event.ProfileUpdated)); n != 1 {
		t.Fatalf("%d profile.updated, want 1", n)
	}
}

// ChangeIdle is for members of the profile's team, of an idle profile; a
// change that fails writes nothing.
func TestChangeIdleRefusals(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	if _, err := f.svc.ChangeIdle(ctx, viewer, p.ID, "testing", renameTo("x")); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer: %v, want forbidden", err)
	}
	if _, err := f.svc.ChangeIdle(ctx, outsider, p.ID, "testing", renameTo("x")); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("another team: %v, want not found", err)
	}
	refused := errors.New("refused by the change")
	_, err := f.svc.ChangeIdle(ctx, alice, p.ID, "testing", func(context.Context, profile.Profile, time.Time) (profile.Profile, error) {
		return profile.Profile{}, refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("failing change: %v, want %v", err, refused)
	}
	f.launch(t, alice, p.ID)
	_, err = f.svc.ChangeIdle(ctx, alice, p.ID, "testing", renameTo("x"))
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindConflict || len(de.Fields) != 1 || !strings.Contains(de.Fields[0].Issue, "alice@example.com") {
		t.Fatalf("running profile: %v, want a conflict naming alice", err)
	}
	if _, err := f.svc.Idle(ctx, "team_1", p.ID); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("Idle of a running profile: %v, want a conflict", err)
	}
	if s := f.stored(t, p.ID); s.Name != "Shop" || s.Version != 1 {
		t.Fatalf("stored %q version %d after the refusals, want Shop version 1", s.Name, s.Version)
	}
}

// A change that loses the race to another writer runs again on top of
// its result, and gives up after the policy's attempts with a conflict
// that says during what.
func TestChangeIdleRetriesOnTopOfAConcurrentWriter(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	f.renamedAfterRead(t, p, 1)
	got, err := f.svc.ChangeIdle(ctx, alice, p.ID, "testing", func(_ context.Context, cur profile.Profile, now time.Time) (profile.Profile, error) {
		cur.Notes, cur.Version, cur.UpdatedAt = "on top", cur.Version+1, now
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Rival" || got.Notes != "on top" || got.Version != 3 {
		t.Fatalf("changed %q %q version %d, want Rival, on top, version 3", got.Name, got.Notes, got.Version)
	}

	g, q := newShop(t)
	g.renamedAfterRead(t, q, 100)
	_, err = g.svc.ChangeIdle(ctx, alice, q.ID, "it was tested", renameTo("x"))
	if !domain.IsKind(err, domain.KindConflict) || !strings.Contains(err.Error(), "the profile kept changing while it was tested; try again") {
		t.Fatalf("always raced: %v, want the conflict of a change during a test", err)
	}
}

// A profile launched after the unit read it idle is the running conflict.
func TestChangeIdleOfAProfileLaunchedMeanwhile(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	inner := f.deps.Profiles
	f.useProfiles(&byIDHook{Profiles: inner, fn: func(ctx context.Context, n int, teamID, id string) (profile.Profile, error) {
		if n == 1 {
			sess := &profile.Session{ID: "ses_rival", StartedAt: t0, ExpiresAt: t0.Add(time.Minute), LaunchedBy: "usr_bob"}
			if ok, err := inner.SwapSession(ctx, teamID, id, profilestore.SessionSwap{Next: sess}); !ok || err != nil {
				t.Errorf("rival launch: %v %v", ok, err)
			}
			return p, nil
		}
		return inner.ByID(ctx, teamID, id)
	}})
	_, err := f.svc.ChangeIdle(ctx, alice, p.ID, "testing", renameTo("x"))
	if !domain.IsKind(err, domain.KindConflict) || !strings.Contains(err.Error(), "ses_rival") {
		t.Fatalf("launched meanwhile: %v, want the conflict naming ses_rival", err)
	}
}

// A change to a proxy of the team assigns it (proxy.assigned); one to a
// proxy the team does not have is a validation error.
func TestChangeIdleOfTheProxy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Proxies = onePool{px: proxy.Proxy{ID: "prx_1", TeamID: "team_1", Type: proxy.TypeSOCKS5, Host: "proxy.example.test", Port: 1080}}
	f.build()
	p := f.create(t, "Shop")
	to := func(id string) func(context.Context, profile.Profile, time.Time) (profile.Profile, error) {
		return func(_ context.Context, cur profile.Profile, _ time.Time) (profile.Profile, error) {
			cur.ProxyID, cur.Version = id, cur.Version+1
			return cur, nil
		}
	}
	_, err := f.svc.ChangeIdle(ctx, alice, p.ID, "testing", to("prx_none"))
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation || len(de.Fields) != 1 || de.Fields[0].Field != "proxy.id" {
		t.Fatalf("unknown proxy: %v, want a validation error of proxy.id", err)
	}
	got, err := f.svc.ChangeIdle(ctx, alice, p.ID, "testing", to("prx_1"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Proxy == nil || got.Proxy.ID != "prx_1" || got.Proxy.Host != "proxy.example.test" {
		t.Fatalf("proxy shown as %+v, want prx_1 at proxy.example.test", got.Proxy)
	}
	wantEvents(t, f.eventsOf(t, event.ProxyAssigned), outboxEvent{Type: event.ProxyAssigned, Profile: "prf_001"})
	if s, err := f.svc.Stored(ctx, "team_1", p.ID); err != nil || s.ProxyID != "prx_1" || s.Proxy == nil || s.Proxy.ID != "prx_1" {
		t.Fatalf("Stored: %q shown as %+v, %v; want prx_1", s.ProxyID, s.Proxy, err)
	}
}
