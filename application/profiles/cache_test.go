package profiles_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
)

// leaseCache is the profile cache's contract in memory: a miss leases the
// entry, a fill lands only on its own lease, a drop removes entry and lease.
type leaseCache struct {
	mu      sync.Mutex
	entries map[string]string // "v" or a lease
	values  map[string]profile.Profile
	next    int
	hits    int
	down    bool
}

func newLeaseCache() *leaseCache {
	return &leaseCache{entries: map[string]string{}, values: map[string]profile.Profile{}}
}

func (c *leaseCache) Get(_ context.Context, teamID, id string) (profile.Profile, bool, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return profile.Profile{}, false, ""
	}
	k := teamID + "/" + id
	switch e, ok := c.entries[k]; {
	case ok && e == "v":
		c.hits++
		return c.values[k], true, ""
	case ok:
		return profile.Profile{}, false, ""
	}
	c.next++
	lease := "l" + strconv.Itoa(c.next)
	c.entries[k] = lease
	return profile.Profile{}, false, lease
}

func (c *leaseCache) Fill(_ context.Context, teamID, id, lease string, p profile.Profile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := teamID + "/" + id
	if c.entries[k] == lease {
		c.entries[k], c.values[k] = "v", p
	}
}

func (c *leaseCache) Drop(_ context.Context, teamID, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := teamID + "/" + id
	delete(c.entries, k)
	delete(c.values, k)
	return nil
}

// cachedGet reads id as alice and checks it is served from the cache when
// fromCache says so.
func (f *fixture) cachedGet(t *testing.T, c *leaseCache, id string, fromCache bool) profile.Profile {
	t.Helper()
	before := c.hits
	p, err := f.svc.Get(ctx, alice, id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	if hit := c.hits > before; hit != fromCache {
		t.Fatalf("Get %s from the cache: %v, want %v", id, hit, fromCache)
	}
	return p
}

// Every write of the service drops the entry, so the next Get sees it.
func TestCachedGetSeesEveryWrite(t *testing.T) {
	f := newFixture(t)
	c := newLeaseCache()
	f.deps.Cache = c
	f.build()
	p := f.create(t, "Shop")

	f.cachedGet(t, c, p.ID, false)
	if got := f.cachedGet(t, c, p.ID, true); got.Name != "Shop" {
		t.Fatalf("cached name %q, want Shop", got.Name)
	}
	name := "Renamed"
	if _, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{Name: &name}, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.cachedGet(t, c, p.ID, false); got.Name != "Renamed" {
		t.Fatalf("name after Update %q, want Renamed", got.Name)
	}

	launched := f.launch(t, alice, p.ID)
	got := f.cachedGet(t, c, p.ID, false)
	if got.Status() != profile.StatusRunning || got.Session.ID != launched.Session.ID {
		t.Fatalf("after Launch the read shows %+v, want session %s", got.Session, launched.Session.ID)
	}
	f.cachedGet(t, c, p.ID, true)
	f.clock.Advance(time.Minute)
	ttl := 1800
	beat, err := f.svc.Heartbeat(ctx, alice, p.ID, launched.Session.ID, &ttl)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.cachedGet(t, c, p.ID, false); !got.Session.ExpiresAt.Equal(beat.Session.ExpiresAt) {
		t.Fatalf("after Heartbeat the lease ends %v, want %v", got.Session.ExpiresAt, beat.Session.ExpiresAt)
	}
	if _, err := f.svc.Release(ctx, alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.cachedGet(t, c, p.ID, false); got.Status() != profile.StatusIdle {
		t.Fatalf("after Release the read shows %s, want idle", got.Status())
	}

	f.launch(t, alice, p.ID)
	f.cachedGet(t, c, p.ID, false)
	f.clock.Advance(2 * time.Hour)
	if n, err := f.svc.ReapExpired(ctx); err != nil || n != 1 {
		t.Fatalf("ReapExpired = %d, %v; want 1 session ended", n, err)
	}
	if got := f.cachedGet(t, c, p.ID, false); got.Status() != profile.StatusIdle {
		t.Fatalf("after the lease expired the read shows %s, want idle", got.Status())
	}

	f.cachedGet(t, c, p.ID, true)
	if err := f.svc.Delete(ctx, admin, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, alice, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("Get after Delete: %v, want not found", err)
	}
}

// A reader misses, reads the row; a writer commits and drops before the
// reader fills. The reader's old row must not be served afterwards.
func TestCachedGetDoesNotWriteBackARowReplacedDuringItsRead(t *testing.T) {
	f := newFixture(t)
	c := newLeaseCache()
	f.deps.Cache = c
	p := f.create(t, "Old")
	inner := f.deps.Profiles
	f.useProfiles(&byIDHook{Profiles: inner, fn: func(ctx context.Context, n int, teamID, id string) (profile.Profile, error) {
		read, err := inner.ByID(ctx, teamID, id)
		if n == 1 {
			name := "New"
			if _, err := f.svc.Update(ctx, alice, id, profile.Patch{Name: &name}, nil); err != nil {
				t.Errorf("the writer's Update: %v", err)
			}
		}
		return read, err
	}})

	if got := f.cachedGet(t, c, p.ID, false); got.Name != "Old" {
		t.Fatalf("the racing read returned %q, want the Old it read", got.Name)
	}
	if got := f.cachedGet(t, c, p.ID, false); got.Name != "New" {
		t.Fatalf("the read after the write returned %q, want New", got.Name)
	}
	if got := f.cachedGet(t, c, p.ID, true); got.Name != "New" {
		t.Fatalf("the cached read returned %q, want New", got.Name)
	}
}

// A cache that does not answer leaves every read to the store.
func TestCachedGetWithTheCacheDownReadsTheStore(t *testing.T) {
	f := newFixture(t)
	c := newLeaseCache()
	c.down = true
	f.deps.Cache = c
	f.build()
	p := f.create(t, "Shop")
	for range 2 {
		if got := f.cachedGet(t, c, p.ID, false); got.Name != "Shop" {
			t.Fatalf("Get = %q, want Shop", got.Name)
		}
	}
}
