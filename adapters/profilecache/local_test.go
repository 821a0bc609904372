package profilecache_test

import (
	"context"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/profilecache"
	"github.com/profilesvc/profilesvc/domain/profile"
)

func TestLocalFillsOnlyUnderItsLeaseAndHidesOtherTeams(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	l := profilecache.NewLocal(time.Minute, 100, c.Now)
	p := profile.Profile{ID: "prf_1", TeamID: "tm_1", Name: "old", Tags: []string{"a"},
		Fingerprint: profile.Fingerprint{Fonts: []string{"Arial"}, Navigator: profile.Navigator{Languages: []string{"en-US"}}}}

	if _, hit, lease := l.Get(ctx, "tm_1", "prf_1"); hit || lease == "" {
		t.Fatalf("first read: hit %v lease %q, want a miss with a lease", hit, lease)
	}
	// A second reader during the fill reads the database and does not fill.
	if _, hit, lease := l.Get(ctx, "tm_1", "prf_1"); hit || lease != "" {
		t.Fatalf("read during a fill: hit %v lease %q, want a miss without a lease", hit, lease)
	}

	// A drop between a miss and its fill keeps the old row out.
	_ = l.Drop(ctx, "tm_1", "prf_1")
	_, _, lease := l.Get(ctx, "tm_1", "prf_1")
	_ = l.Drop(ctx, "tm_1", "prf_1")
	l.Fill(ctx, "tm_1", "prf_1", lease, p)
	if _, hit, _ := l.Get(ctx, "tm_1", "prf_1"); hit {
		t.Fatal("a fill after a drop was kept")
	}

	_ = l.Drop(ctx, "tm_1", "prf_1")
	_, _, lease = l.Get(ctx, "tm_1", "prf_1")
	l.Fill(ctx, "tm_1", "prf_1", lease, p)
	got, hit, _ := l.Get(ctx, "tm_1", "prf_1")
	if !hit || got.Name != "old" || got.Tags[0] != "a" {
		t.Fatalf("read after a fill: %+v hit %v", got, hit)
	}
	got.Tags[0] = "changed by a caller"
	got.Fingerprint.Fonts[0], got.Fingerprint.Navigator.Languages[0] = "changed by a caller", "changed by a caller"
	if again, _, _ := l.Get(ctx, "tm_1", "prf_1"); again.Tags[0] != "a" || again.Fingerprint.Fonts[0] != "Arial" || again.Fingerprint.Navigator.Languages[0] != "en-US" {
		t.Fatal("a caller's change reached the cached entry")
	}
	if _, hit, _ := l.Get(ctx, "tm_2", "prf_1"); hit {
		t.Fatal("another team read the entry")
	}
	c.Advance(time.Minute)
	if _, hit, _ := l.Get(ctx, "tm_1", "prf_1"); hit {
		t.Fatal("an entry outlived its TTL")
	}
}

func TestLocalStaysWithinItsSize(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	l := profilecache.NewLocal(time.Minute, 50, c.Now)
	for i := range 500 {
		id := "prf_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		_, _, lease := l.Get(ctx, "tm_1", id)
		l.Fill(ctx, "tm_1", id, lease, profile.Profile{ID: id, TeamID: "tm_1"})
		if n := l.Len(); n > 50 {
			t.Fatalf("after %d profiles the cache holds %d, want at most 50", i+1, n)
		}
	}
}
