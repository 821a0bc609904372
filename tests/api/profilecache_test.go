package api_test

import (
	"context"
	"fmt"
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
		// A lease is "l" and a token; a profile is its tag and JSON.
		if v, err := client.Get(ctx, k).Result(); err == nil && !strings.HasPrefix(v, "l") {
			n++
		}
	}
	return n
}

// A write on one instance is seen by the very next read on another, which
// had the profile cached: every write drops the shared entry after its
// commit.
func TestProfileCacheIsCoherentAcrossInstances(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
		d := r.data()
		// The list, read from the database, agrees.
		want := fmt.Sprintf("%v:%v", d["name"], d["status"])
		if got := pageOf(t, h, auth); got != want {
			t.Fatalf("the list shows %q, the profile %q", got, want)
		}
		return d
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
	if got := pageOf(t, h, auth); got != "" {
		t.Fatalf("the list after the delete shows %q", got)
	}
}

// pageOf lists the first page on h and describes it: "name:status" per
// profile, with ":port" for one with a proxy.
func pageOf(t *testing.T, h *harness, auth []string) string {
	t.Helper()
	r := h.get("/api/v1/profiles?limit=50", auth...)
	expect(t, r, http.StatusOK)
	var parts []string
	for _, it := range asList(r.env["data"]) {
		m, _ := it.(map[string]any)
		s := fmt.Sprintf("%v:%v", m["name"], m["status"])
		if px, ok := m["proxy"].(map[string]any); ok {
			s += fmt.Sprintf(":%v", px["port"])
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// The list is read from the database, with or without the profile cache:
// a write on one instance, a create or a change of a proxy its profiles
// show included, is seen by the next list on another.
func TestListOfProfilesIsCoherentAcrossInstances(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) { listOfProfilesIsCoherentAcrossInstances(t, true) })
	t.Run("database", func(t *testing.T) { listOfProfilesIsCoherentAcrossInstances(t, false) })
}

func listOfProfilesIsCoherentAcrossInstances(t *testing.T, redisCache bool) {
	url := testenv.PostgresURL(t)
	env := map[string]string{"PROFILE_CACHE": "off", "ALLOW_PRIVATE_TARGETS": "true"}
	var redisURL string
	if redisCache {
		if redisURL = os.Getenv(testenv.RedisURLVariable); redisURL == "" {
			t.Skip(testenv.RedisURLVariable + " is not set")
		}
		prefix := testenv.RedisKeyPrefix(t, testenv.RedisClient(t), "pl")
		env["PROFILE_CACHE"], env["REDIS_KEY_PREFIX"] = "redis", prefix
	}
	a := start(t, options{databaseURL: url, redisURL: redisURL, env: env})
	b := start(t, options{databaseURL: url, redisURL: redisURL, env: env})
	acc := a.register(t)
	auth := bearer(acc.access)
	id := a.createProfile(t, acc, map[string]any{"name": "Shop"})
	path := "/api/v1/profiles/" + id

	if got := pageOf(t, b, auth); got != "Shop:idle" {
		t.Fatalf("first page %q", got)
	}
	px := a.post("/api/v1/proxies", map[string]any{"type": "http", "host": "127.0.0.1", "port": 9}, auth...)
	expect(t, px, http.StatusCreated)
	proxyID := str(px.data()["id"])
	steps := []struct {
		what  string
		write func() response
		code  int
		want  string
	}{
		{"create", func() response {
			return a.post("/api/v1/profiles", map[string]any{"name": "Blog", "templateId": windowsTemplate}, auth...)
		}, http.StatusCreated, "Blog:idle,Shop:idle"},
		{"rename", func() response { return a.patch(path, map[string]any{"name": "Store"}, auth...) }, http.StatusOK, "Blog:idle,Store:idle"},
		{"launch", func() response { return a.post(path+"/launch", map[string]any{}, auth...) }, http.StatusOK, "Blog:idle,Store:running"},
		{"release", func() response { return a.post(path+"/release", nil, auth...) }, http.StatusOK, "Blog:idle,Store:idle"},
		{"proxy set", func() response { return a.patch(path, map[string]any{"proxy": map[string]any{"id": proxyID}}, auth...) }, http.StatusOK, "Blog:idle,Store:idle:9"},
		{"proxy changed", func() response {
			return a.patch("/api/v1/proxies/"+proxyID, map[string]any{"port": 10}, auth...)
		}, http.StatusOK, "Blog:idle,Store:idle:10"},
		{"delete", func() response { return a.delete(path, auth...) }, http.StatusNoContent, "Blog:idle"},
	}
	for _, s := range steps {
		expect(t, s.write(), s.code)
		if got := pageOf(t, b, auth); got != s.want {
			t.Fatalf("after the %s on a, b lists %q, want %q", s.what, got, s.want)
		}
	}
	other := a.register(t)
	if got := pageOf(t, b, bearer(other.access)); got != "" {
		t.Fatalf("another team lists %q, want nothing of the first team's", got)
	}
}
