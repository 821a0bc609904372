package profilecache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/profilecache"
	"github.com/profilesvc/profilesvc/adapters/redisguard"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func newCache(t *testing.T, client redis.UniversalClient, prefix string) (*profilecache.Redis, *clock.Fake) {
	c := clock.NewFake(t0)
	g := redisguard.New(c, time.Second, zap.NewNop(), prometheus.NewRegistry())
	return profilecache.New(client, g, prefix, time.Minute), c
}

// throughProxy is a client of real's Redis through a proxy the test can
// blackhole, giving up on an unanswered call within 200 ms.
func throughProxy(t *testing.T, real *redis.Client) (*redis.Client, *testenv.Proxy) {
	proxy := testenv.StartProxy(t, real.Options().Addr)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, PoolTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	return client, proxy
}

func running(teamID, id, name string) profile.Profile {
	return profile.Profile{
		ID: id, TeamID: teamID, Name: name, TemplateID: "tpl_chrome_win_us", Browser: profile.BrowserChromium,
		Tags: []string{"b", "a"}, Version: 3, CreatedBy: "usr_1", CreatedAt: t0, UpdatedAt: t0.Add(time.Minute),
		Session: &profile.Session{ID: "ses_1", StartedAt: t0, ExpiresAt: t0.Add(time.Hour), LaunchedBy: "usr_1", CDPURL: "ws://127.0.0.1:1/x"},
		Data:    &profile.Data{Content: profile.Content{SHA256: "ab", Size: 7}, UpdatedAt: t0},
	}
}

func TestMissLeasesAndFillIsThenServed(t *testing.T) {
	client := testenv.RedisClient(t)
	pc, _ := newCache(t, client, testenv.RedisKeyPrefix(t, client, "profilecache-fill"))
	ctx := context.Background()
	want := running("tm_1", "prf_1", "Shop")

	_, hit, lease := pc.Get(ctx, "tm_1", "prf_1")
	if hit || lease == "" {
		t.Fatalf("first Get: hit %v lease %q, want a miss with a lease", hit, lease)
	}
	// A second reader meanwhile gets no lease: only the first fills.
	if _, hit, other := pc.Get(ctx, "tm_1", "prf_1"); hit || other != "" {
		t.Fatalf("Get while leased: hit %v lease %q, want a miss without a lease", hit, other)
	}
	pc.Fill(ctx, "tm_1", "prf_1", lease, want)
	got, hit, _ := pc.Get(ctx, "tm_1", "prf_1")
	if !hit {
		t.Fatal("Get after Fill missed")
	}
	if got.Name != want.Name || got.Session == nil || !got.Session.ExpiresAt.Equal(want.Session.ExpiresAt) ||
		got.Data == nil || got.Data.Size != 7 || len(got.Tags) != 2 || got.Tags[0] != "b" || got.Version != 3 {
		t.Fatalf("cached profile = %+v, want %+v", got, want)
	}
	// Another team's profile of the same id is another entry.
	if _, hit, _ := pc.Get(ctx, "tm_2", "prf_1"); hit {
		t.Fatal("another team's Get hit the entry")
	}
}

// The race the lease guards: a reader misses and reads the old row, a
// writer commits and drops, then the reader fills. The fill must not land.
func TestFillAfterDropIsRefused(t *testing.T) {
	client := testenv.RedisClient(t)
	pc, _ := newCache(t, client, testenv.RedisKeyPrefix(t, client, "profilecache-race"))
	ctx := context.Background()
	old := running("tm_1", "prf_1", "Old")

	_, _, lease := pc.Get(ctx, "tm_1", "prf_1")
	if err := pc.Drop(ctx, "tm_1", "prf_1"); err != nil {
		t.Fatal(err)
	}
	pc.Fill(ctx, "tm_1", "prf_1", lease, old)
	if p, hit, _ := pc.Get(ctx, "tm_1", "prf_1"); hit {
		t.Fatalf("Get after a dropped reader's Fill hit %q, want a miss", p.Name)
	}

	// The same when another reader leased after the drop: the first
	// reader's fill must not overwrite the second's lease either.
	_, _, first := pc.Get(ctx, "tm_1", "prf_2")
	if err := pc.Drop(ctx, "tm_1", "prf_2"); err != nil {
		t.Fatal(err)
	}
	_, _, second := pc.Get(ctx, "tm_1", "prf_2")
	pc.Fill(ctx, "tm_1", "prf_2", first, old)
	fresh := running("tm_1", "prf_2", "New")
	pc.Fill(ctx, "tm_1", "prf_2", second, fresh)
	if p, hit, _ := pc.Get(ctx, "tm_1", "prf_2"); !hit || p.Name != "New" {
		t.Fatalf("Get = %q (hit %v), want the second reader's New", p.Name, hit)
	}
}

// While Redis does not answer, reads miss without a lease (the service
// reads the database), and a drop is kept until Redis answers again.
func TestOutageMissesAndKeepsDrops(t *testing.T) {
	real := testenv.RedisClient(t)
	prefix := testenv.RedisKeyPrefix(t, real, "profilecache-outage")
	client, proxy := throughProxy(t, real)
	pc, c := newCache(t, client, prefix)
	ctx := context.Background()

	_, _, lease := pc.Get(ctx, "tm_1", "prf_1")
	pc.Fill(ctx, "tm_1", "prf_1", lease, running("tm_1", "prf_1", "Old"))
	proxy.Blackhole()
	if err := pc.Drop(ctx, "tm_1", "prf_1"); err != nil {
		t.Fatalf("Drop with Redis blackholed: %v, want it kept", err)
	}
	if _, hit, lease := pc.Get(ctx, "tm_1", "prf_1"); hit || lease != "" {
		t.Fatalf("Get with Redis blackholed: hit %v lease %q, want a miss without a lease", hit, lease)
	}
	proxy.Forward()
	c.Advance(time.Second)
	if _, hit, _ := pc.Get(ctx, "tm_1", "prf_1"); hit {
		t.Fatal("Get after Redis came back served the entry dropped during the outage")
	}
	// That Get leased the entry anew; the dropped value is gone.
	if v, err := real.Get(ctx, prefix+"tm_1:prf_1").Result(); err == nil && strings.HasPrefix(v, "v") {
		t.Fatalf("the dropped value is still in Redis: %q", v)
	}
}

// Concurrent readers share pipelines: each still gets its own entry, and
// each reader of a missing entry its own miss.
func TestConcurrentGetsEachGetTheirEntry(t *testing.T) {
	client := testenv.RedisClient(t)
	pc, _ := newCache(t, client, testenv.RedisKeyPrefix(t, client, "profilecache-concurrent"))
	ctx := context.Background()
	const n = 40
	for i := range n {
		id := fmt.Sprintf("prf_%d", i)
		_, _, lease := pc.Get(ctx, "tm_1", id)
		pc.Fill(ctx, "tm_1", id, lease, running("tm_1", id, "name "+id))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 10*n)
	for round := range 5 {
		for i := range 2 * n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("prf_%d", i)
				p, hit, _ := pc.Get(ctx, "tm_1", id)
				switch {
				case i < n && (!hit || p.ID != id || p.Name != "name "+id):
					errs <- fmt.Sprintf("round %d: %s: hit %v, %s %q", round, id, hit, p.ID, p.Name)
				case i >= n && hit:
					errs <- fmt.Sprintf("round %d: %s was never filled but hit", round, id)
				}
			}()
		}
		wg.Wait()
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A team's list version is the same for every instance until a drop on
// any of them; a version once replaced is not handed out again, and
// while Redis does not answer there is none (the list is read from the
// database) and the drop is kept until Redis answers.
func TestListVersionIsSharedAndReplacedByADrop(t *testing.T) {
	real := testenv.RedisClient(t)
	prefix := testenv.RedisKeyPrefix(t, real, "profilecache-lists")
	client, proxy := throughProxy(t, real)
	a, c := newCache(t, client, prefix)
	b, _ := newCache(t, real, prefix)
	ctx := context.Background()

	first := a.ListVersion(ctx, "tm_1")
	if first == "" {
		t.Fatal("no list version while Redis answers")
	}
	if got := b.ListVersion(ctx, "tm_1"); got != first {
		t.Fatalf("the other instance reads version %q, want %q", got, first)
	}
	if got := a.ListVersion(ctx, "tm_2"); got == "" || got == first {
		t.Fatalf("another team's version %q, want one of its own", got)
	}
	seen := map[string]bool{first: true}
	for range 5 {
		if err := b.DropList(ctx, "tm_1"); err != nil {
			t.Fatal(err)
		}
		next := a.ListVersion(ctx, "tm_1")
		if next == "" || seen[next] {
			t.Fatalf("version after a drop %q, want a new one (seen %v)", next, seen)
		}
		seen[next] = true
	}
	if got := a.ListVersion(ctx, "tm_1"); !seen[got] {
		t.Fatalf("version without a drop %q changed", got)
	}
	// A profile's drop replaces its team's version too, in the same DEL.
	if err := b.Drop(ctx, "tm_1", "prf_1"); err != nil {
		t.Fatal(err)
	}
	if got := a.ListVersion(ctx, "tm_1"); got == "" || seen[got] {
		t.Fatalf("version after a profile's drop %q, want a new one", got)
	}

	before := a.ListVersion(ctx, "tm_1")
	proxy.Blackhole()
	if got := a.ListVersion(ctx, "tm_1"); got != "" {
		t.Fatalf("version with Redis blackholed %q, want none", got)
	}
	if err := a.DropList(ctx, "tm_1"); err != nil {
		t.Fatalf("DropList with Redis blackholed: %v, want it kept", err)
	}
	if got := b.ListVersion(ctx, "tm_1"); got != before {
		t.Fatalf("the other instance reads %q during the outage, want %q", got, before)
	}
	proxy.Forward()
	c.Advance(time.Second)
	if got := a.ListVersion(ctx, "tm_1"); got == "" || got == before {
		t.Fatalf("version once Redis answers %q, want a new one after the kept drop", got)
	}
	if got := b.ListVersion(ctx, "tm_1"); got == before {
		t.Fatal("the kept drop did not reach the other instance")
	}
}
