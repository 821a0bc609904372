package profiles_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// pageRenders renders a page as "name:status:version" per profile and
// counts the renderings.
type pageRenders struct{ n atomic.Int32 }

func (r *pageRenders) render(p paging.Page[profile.Profile]) []byte {
	r.n.Add(1)
	var parts []string
	for _, it := range p.Items {
		parts = append(parts, fmt.Sprintf("%s:%s:%d", it.Name, it.Status(), it.Version))
	}
	return []byte(strings.Join(parts, ","))
}

// listRendered lists as actor with in and checks whether the page was
// served from a copy (not rendered again).
func (f *fixture) listRendered(t *testing.T, r *pageRenders, actor team.Actor, in profiles.ListInput, fromCopy bool) string {
	t.Helper()
	before := r.n.Load()
	body, err := f.svc.ListRendered(ctx, actor, in, r.render)
	if err != nil {
		t.Fatalf("ListRendered: %v", err)
	}
	if copied := r.n.Load() == before; copied != fromCopy {
		t.Fatalf("page served from a copy: %v, want %v (page %q)", copied, fromCopy, body)
	}
	return string(body)
}

var firstPage = profiles.ListInput{Limit: 50}

// Every write of a team's profiles, a create included, replaces the copy
// of its pages, so the next page shows it; unchanged pages are served
// from the copy. The version is the profile cache's, or without one the
// store's.
func TestListRenderedSeesEveryWrite(t *testing.T) { forEachVersion(t, listRenderedSeesEveryWrite) }

// forEachVersion runs fn on a fixture whose pages are tagged with the
// profile cache's version, then on one with the store's.
func forEachVersion(t *testing.T, fn func(t *testing.T, f *fixture)) {
	t.Run("cache", func(t *testing.T) {
		f := newFixture(t)
		f.deps.Cache = newLeaseCache()
		f.build()
		fn(t, f)
	})
	t.Run("store", func(t *testing.T) { fn(t, newFixture(t)) })
}

func listRenderedSeesEveryWrite(t *testing.T, f *fixture) {
	r := &pageRenders{}
	p := f.create(t, "Shop")

	if got := f.listRendered(t, r, alice, firstPage, false); got != "Shop:idle:1" {
		t.Fatalf("first page %q", got)
	}
	if got := f.listRendered(t, r, alice, firstPage, true); got != "Shop:idle:1" {
		t.Fatalf("copied page %q", got)
	}
	steps := []struct {
		what  string
		write func() error
		want  string
	}{
		{"create", func() error {
			_, err := f.svc.Create(ctx, alice, profile.Settings{Name: "Blog", TemplateID: "tpl_chrome_win_us"})
			return err
		}, "Blog:idle:1,Shop:idle:1"},
		{"update", func() error {
			name := "Store"
			_, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{Name: &name}, nil)
			return err
		}, "Blog:idle:1,Store:idle:2"},
		{"launch", func() error {
			_, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{})
			return err
		}, "Blog:idle:1,Store:running:2"},
		{"release", func() error { _, err := f.svc.Release(ctx, alice, p.ID); return err }, "Blog:idle:1,Store:idle:2"},
		{"lease run out", func() error {
			if _, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); err != nil {
				return err
			}
			if got := f.listRendered(t, r, alice, firstPage, false); got != "Blog:idle:1,Store:running:2" {
				return fmt.Errorf("page after the launch %q", got)
			}
			f.listRendered(t, r, alice, firstPage, true)
			f.clock.Advance(2 * time.Hour)
			n, err := f.svc.ReapExpired(ctx)
			if err == nil && n != 1 {
				err = fmt.Errorf("%d sessions reaped, want 1", n)
			}
			return err
		}, "Blog:idle:1,Store:idle:2"},
		{"delete", func() error { return f.svc.Delete(ctx, admin, p.ID) }, "Blog:idle:1"},
	}
	for _, s := range steps {
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := f.listRendered(t, r, alice, firstPage, false); got != s.want {
			t.Fatalf("page after %s %q, want %q", s.what, got, s.want)
		}
		if got := f.listRendered(t, r, alice, firstPage, true); got != s.want {
			t.Fatalf("copied page after %s %q, want %q", s.what, got, s.want)
		}
	}
}

// A copy is kept per team and per page asked for, never outlives the
// pages' TTL, and is served only to an actor who may read.
func TestListRenderedCopiesArePerTeamAndPage(t *testing.T) {
	f := newFixture(t)
	c := newLeaseCache()
	f.deps.Cache = c
	f.deps.Policy.PagesTTL = time.Minute
	f.build()
	r := &pageRenders{}
	f.create(t, "Shop")
	f.create(t, "Blog")

	f.listRendered(t, r, alice, firstPage, false)
	if got := f.listRendered(t, r, outsider, firstPage, false); got != "" {
		t.Fatalf("another team's page %q, want none of team_1's", got)
	}
	if got := f.listRendered(t, r, bob, firstPage, true); got != "Blog:idle:1,Shop:idle:1" {
		t.Fatalf("another member's page %q", got)
	}
	one := profiles.ListInput{Limit: 1}
	if got := f.listRendered(t, r, alice, one, false); got != "Blog:idle:1" {
		t.Fatalf("page of one %q", got)
	}
	if got := f.listRendered(t, r, alice, profiles.ListInput{Limit: 50, Query: "sho"}, false); got != "Shop:idle:1" {
		t.Fatalf("page of q=sho %q", got)
	}
	f.listRendered(t, r, alice, one, true)

	if _, err := f.svc.ListRendered(ctx, team.Actor{UserID: "usr_x", TeamID: "team_1"}, firstPage, r.render); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("an actor without a role: %v, want forbidden", err)
	}
	if _, err := f.svc.ListRendered(ctx, alice, profiles.ListInput{Limit: 50, Status: "asleep"}, r.render); !domain.IsKind(err, domain.KindBadRequest) {
		t.Fatalf("a bad status: %v, want a bad request", err)
	}

	f.clock.Advance(time.Minute)
	f.listRendered(t, r, alice, firstPage, false)
	f.listRendered(t, r, alice, firstPage, true)
}

// listHook stands in for List.
type listHook struct {
	profilestore.Profiles
	calls atomic.Int32
	fn    func(ctx context.Context, n int, teamID string, fl profilestore.Filter) ([]profile.Profile, error)
}

func (h *listHook) List(ctx context.Context, teamID string, fl profilestore.Filter) ([]profile.Profile, error) {
	return h.fn(ctx, int(h.calls.Add(1)), teamID, fl)
}

// A page read while a write commits is answered, but not served again:
// its copy carries the version read before it, which the write replaced.
func TestListRenderedDoesNotKeepAPageAWriteOvertook(t *testing.T) {
	forEachVersion(t, listRenderedDoesNotKeepAPageAWriteOvertook)
}

func listRenderedDoesNotKeepAPageAWriteOvertook(t *testing.T, f *fixture) {
	p := f.create(t, "Old")
	inner := f.deps.Profiles
	f.useProfiles(&listHook{Profiles: inner, fn: func(ctx context.Context, n int, teamID string, fl profilestore.Filter) ([]profile.Profile, error) {
		read, err := inner.List(ctx, teamID, fl)
		if n == 1 {
			name := "New"
			if _, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{Name: &name}, nil); err != nil {
				t.Errorf("the writer's Update: %v", err)
			}
		}
		return read, err
	}})
	r := &pageRenders{}
	if got := f.listRendered(t, r, alice, firstPage, false); got != "Old:idle:1" {
		t.Fatalf("the racing page %q, want the Old it read", got)
	}
	if got := f.listRendered(t, r, alice, firstPage, false); got != "New:idle:2" {
		t.Fatalf("the page after the write %q, want New", got)
	}
	if got := f.listRendered(t, r, alice, firstPage, true); got != "New:idle:2" {
		t.Fatalf("the copied page %q, want New", got)
	}
}

// versionHook stands in for ListVersion, failing while down.
type versionHook struct {
	profilestore.Profiles
	down  atomic.Bool
	calls atomic.Int32
}

func (h *versionHook) ListVersion(ctx context.Context, teamID string) (string, error) {
	h.calls.Add(1)
	if h.down.Load() {
		return "", errors.New("database unreachable")
	}
	return h.Profiles.ListVersion(ctx, teamID)
}

// A cache that answers spares the store's version; one that does not
// leaves it to the store, whose version still keeps pages. When neither
// tells one, every page is read afresh.
func TestListRenderedTakesTheStoresVersionWhenTheCacheHasNone(t *testing.T) {
	f := newFixture(t)
	c := newLeaseCache()
	f.deps.Cache = c
	versions := &versionHook{Profiles: f.deps.Profiles}
	f.useProfiles(versions)
	f.create(t, "Shop")
	r := &pageRenders{}
	f.listRendered(t, r, alice, firstPage, false)
	f.listRendered(t, r, alice, firstPage, true)
	if n := versions.calls.Load(); n != 0 {
		t.Fatalf("the store's version read %d times with the cache answering, want 0", n)
	}

	c.down = true
	f.listRendered(t, r, alice, firstPage, false)
	f.listRendered(t, r, alice, firstPage, true)
	if n := versions.calls.Load(); n != 2 {
		t.Fatalf("the store's version read %d times with the cache down, want 2", n)
	}

	versions.down.Store(true)
	for range 2 {
		if got := f.listRendered(t, r, alice, firstPage, false); got != "Shop:idle:1" {
			t.Fatalf("page with no version %q", got)
		}
	}
}

// The copies stay within their bound: many large pages do not pile up.
func TestListRenderedCopiesStayBounded(t *testing.T) {
	f := newFixture(t)
	c := newLeaseCache()
	f.deps.Cache = c
	f.build()
	f.create(t, "Shop")
	big := bytes.Repeat([]byte("x"), 1<<20)
	render := func(paging.Page[profile.Profile]) []byte { return big }
	for i := range 200 {
		if _, err := f.svc.ListRendered(ctx, alice, profiles.ListInput{Limit: 50, Query: fmt.Sprint(i)}, render); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.svc.KeptPageBytes(); n > 32<<20 || n < 1<<20 {
		t.Fatalf("%d bytes of pages kept after 200 pages of 1 MiB, want at most 32 MiB and some", n)
	}
}
