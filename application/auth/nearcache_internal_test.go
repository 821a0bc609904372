package auth

import (
	"fmt"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

func liveNearCache(capacity int) *nearCache {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newNearCache(time.Minute, capacity, func() time.Time { return now })
	c.hear(ports.Notice{Kind: ports.NoticeListening})
	return c
}

func TestNearCacheStaysWithinCapacity(t *testing.T) {
	t.Parallel()
	c := liveNearCache(100)
	for i := range 1000 {
		c.put(c.generation(), fmt.Sprint("k:", i), authContext{UserID: fmt.Sprint("usr_", i), TeamID: "team_1"})
		if n := len(c.entries); n > 100 {
			t.Fatalf("after %d puts the cache holds %d entries, capacity 100", i+1, n)
		}
	}
	if _, ok := c.get("k:999"); !ok {
		t.Fatal("the entry just put is missing")
	}
	// The tag index shrinks with the entries it points to.
	if n := len(c.tagged); n > 2*100 {
		t.Fatalf("%d tags indexed for at most 100 entries of 2 tags each", n)
	}
}

func TestNearCacheInvalidatesByTag(t *testing.T) {
	t.Parallel()
	c := liveNearCache(100)
	ada1 := authContext{UserID: "usr_ada", TeamID: "team_1"}
	ada2 := authContext{UserID: "usr_ada", TeamID: "team_2", KeyID: "key_1"}
	bob1 := authContext{UserID: "usr_bob", TeamID: "team_1"}
	for key, v := range map[string]authContext{"ada1": ada1, "ada2": ada2, "bob1": bob1} {
		c.put(c.generation(), key, v)
	}
	present := func() (out []bool) {
		for _, k := range []string{"ada1", "ada2", "bob1"} {
			_, ok := c.get(k)
			out = append(out, ok)
		}
		return out
	}
	c.hear(ports.Notice{Kind: ports.NoticeMessage, Payload: memberTag("team_1", "usr_ada")})
	if got := present(); got[0] || !got[1] || !got[2] {
		t.Fatalf("after ada's membership of team_1 changed, present = %v; want only ada1 gone", got)
	}
	c.hear(ports.Notice{Kind: ports.NoticeMessage, Payload: "u:nobody\n" + keyTag("key_1")})
	if got := present(); got[1] || !got[2] {
		t.Fatalf("after key_1 went, present = %v; want bob1 only", got)
	}
}

func TestNearCacheRefusesWhatMayBeStale(t *testing.T) {
	t.Parallel()
	c := liveNearCache(100)
	gen := c.generation()
	c.invalidate(userTag("usr_other"))
	c.put(gen, "k", authContext{UserID: "usr_ada", TeamID: "team_1"})
	if _, ok := c.get("k"); ok {
		t.Fatal("a value read before an invalidation was cached after it")
	}
	c.hear(ports.Notice{Kind: ports.NoticeDeaf})
	c.put(c.generation(), "k", authContext{UserID: "usr_ada", TeamID: "team_1"})
	if _, ok := c.get("k"); ok {
		t.Fatal("a value was cached while the notices were deaf")
	}
}
