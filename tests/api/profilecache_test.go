package api_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/tests/testenv"
)

// cachedService starts an instance with PROFILE_CACHE=redis on the given
// database and Redis key prefix.
func cachedService(t *testing.T, databaseURL, redisURL, prefix string) *harness {
	return start(t, options{databaseURL: databaseURL, redisURL: redisURL,
		env: map[string]string{"PROFILE_CACHE": "redis", "REDIS_KEY_PREFIX": prefix}})
}

// cachedValues counts the profiles kept in Redis under prefix (leases
// aside).
func cachedValues(t *testing.T, prefix string) int {
	t.Helper()
	client := testenv.RedisClient(t)
	ctx := context.Background()
	keys, err := client.Keys(ctx, prefix+"profile:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range keys {
		if v, err := client.Get(ctx, k).Result(); err == nil && strings.HasPrefix(v, "v") {
			n++
		}
	}
	return n
}

// A write on one instance is seen by the very next read on another, which
// had the profile cached: every write drops the shared entry after its
// commit.
func TestProfileCacheIsCoherentAcrossInstances(t *testing.T) {
	redisURL := os.Getenv(testenv.RedisURLVariable)
	if redisURL == "" {
		t.Skip(testenv.RedisURLVariable + " is not set")
	}
	url := testenv.PostgresURL(t)
	prefix := testenv.RedisKeyPrefix(t, testenv.RedisClient(t), "pc")
	a := cachedService(t, url, redisURL, prefix)
	b := cachedService(t, url, redisURL, prefix)
	acc := a.register(t)
	auth := bearer(acc.access)
	id := a.createProfile(t, acc, map[string]any{"name": "Before"})
	path := "/api/v1/profiles/" + id

	// readOnB reads the profile on b twice: the second read is the cache's.
	readOnB := func() map[string]any {
		t.Helper()
		first := b.get(path, auth...)
		expect(t, first, http.StatusOK)
		if cachedValues(t, prefix) != 1 {
			t.Fatalf("after a read on b, %d profiles are cached, want 1", cachedValues(t, prefix))
		}
		second := b.get(path, auth...)
		expect(t, second, http.StatusOK)
		return second.data()
	}

	if d := readOnB(); d["name"] != "Before" {
		t.Fatalf("name %v, want Before", d["name"])
	}
	expect(t, a.patch(path, map[string]any{"name": "After"}, auth...), http.StatusOK)
	if d := readOnB(); d["name"] != "After" {
		t.Fatalf("after a rename on a, b reads %v, want After", d["name"])
	}
	launch := a.post(path+"/launch", map[string]any{}, auth...)
	expect(t, launch, http.StatusOK)
	if d := readOnB(); d["status"] != "running" {
		t.Fatalf("after a launch on a, b reads status %v, want running", d["status"])
	}
	expect(t, a.post(path+"/release", nil, auth...), http.StatusOK)
	if d := readOnB(); d["status"] != "idle" {
		t.Fatalf("after a release on a, b reads status %v, want idle", d["status"])
	}
	expect(t, a.delete(path, auth...), http.StatusNoContent)
	expect(t, b.get(path, auth...), http.StatusNotFound)
	if n := cachedValues(t, prefix); n != 0 {
		t.Fatalf("%d profiles still cached after the delete, want 0", n)
	}
}

// With Redis gone the cache steps aside: reads come from the database.
func TestProfileReadsWithTheCacheDown(t *testing.T) {
	if os.Getenv(testenv.RedisURLVariable) == "" {
		t.Skip(testenv.RedisURLVariable + " is not set")
	}
	client := testenv.RedisClient(t)
	proxy := testenv.StartProxy(t, client.Options().Addr)
	prefix := testenv.RedisKeyPrefix(t, client, "pcdown")
	h := cachedService(t, "memory://", "redis://"+proxy.Addr()+"/0", prefix)
	acc := h.register(t)
	auth := bearer(acc.access)
	id := h.createProfile(t, acc, map[string]any{"name": "Shop"})
	expect(t, h.get("/api/v1/profiles/"+id, auth...), http.StatusOK)

	proxy.Blackhole()
	expect(t, h.patch("/api/v1/profiles/"+id, map[string]any{"name": "Renamed"}, auth...), http.StatusOK)
	for range 2 {
		r := h.get("/api/v1/profiles/"+id, auth...)
		expect(t, r, http.StatusOK)
		if r.data()["name"] != "Renamed" {
			t.Fatalf("with Redis down the read shows %v, want Renamed", r.data()["name"])
		}
	}
}

// PROFILE_CACHE=local, the default on SQLite: the one process that uses the
// file drops its own copy at every write, so the next read sees it.
func TestLocalProfileCacheSeesEveryWrite(t *testing.T) {
	h := start(t, options{databaseURL: "sqlite://" + filepath.Join(t.TempDir(), "cache.db")})
	acc := h.register(t)
	auth := bearer(acc.access)
	id := h.createProfile(t, acc, map[string]any{"name": "Before"})
	path := "/api/v1/profiles/" + id
	read := func() map[string]any {
		t.Helper()
		expect(t, h.get(path, auth...), http.StatusOK) // fills
		r := h.get(path, auth...)                      // the cache's
		expect(t, r, http.StatusOK)
		return r.data()
	}
	if d := read(); d["name"] != "Before" {
		t.Fatalf("name %v, want Before", d["name"])
	}
	expect(t, h.patch(path, map[string]any{"name": "After"}, auth...), http.StatusOK)
	if d := read(); d["name"] != "After" {
		t.Fatalf("after a rename, name %v, want After", d["name"])
	}
	expect(t, h.post(path+"/launch", map[string]any{}, auth...), http.StatusOK)
	if d := read(); d["status"] != "running" {
		t.Fatalf("after a launch, status %v, want running", d["status"])
	}
	expect(t, h.post(path+"/release", nil, auth...), http.StatusOK)
	if d := read(); d["status"] != "idle" {
		t.Fatalf("after a release, status %v, want idle", d["status"])
	}
	other := h.register(t)
	expect(t, h.get(path, bearer(other.access)...), http.StatusNotFound)
	expect(t, h.delete(path, auth...), http.StatusNoContent)
	expect(t, h.get(path, auth...), http.StatusNotFound)
}
