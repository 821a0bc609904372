package profilecache_test

import (
	"context"
	"fmt"
	"reflect"
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
	if v, err := real.Get(ctx, prefix+"tm_1:prf_1").Result(); err == nil && !strings.HasPrefix(v, "l") {
		t.Fatalf("the dropped value is still in Redis: %q", v)
	}
}

// Concurrent readers each get their own entry, and each reader of a
// missing entry its own miss.
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

// everyField is a profile with every field set, pointers and lists
// included, each to a value of its own.
func everyField() profile.Profile {
	return profile.Profile{
		ID: "prf_1", TeamID: "tm_1", Name: "Shop \"é東🎭\"", TemplateID: "tpl_chrome_win_us", Browser: profile.BrowserChromium,
		Fingerprint: profile.Fingerprint{
			UserAgent: "Mozilla/5.0", Platform: "Win32", Locale: "de-DE", Timezone: "Europe/Berlin",
			Screen:    profile.Screen{Width: 1536, Height: 864, AvailWidth: 1536, AvailHeight: 816, ColorDepth: 24, PixelRatio: 1.25},
			Navigator: profile.Navigator{HardwareConcurrency: 8, DeviceMemory: 0.25, MaxTouchPoints: 1, Languages: []string{"de-DE", "de"}},
			ClientHints: profile.ClientHints{Platform: "Windows", PlatformVersion: "15.0.0", Architecture: "x86", Bitness: "64",
				Model: "Pixel 8", Mobile: true},
			Window: profile.Window{ChromeWidth: 16, ChromeHeight: 87},
			WebGL: profile.WebGL{Vendor: "Google Inc. (NVIDIA)", Renderer: "ANGLE (NVIDIA)", MaxTextureSize: 16384,
				MaxRenderbufferSize: 16383, MaxViewportDims: [2]int{32767, 32766}, MaxVertexAttribs: 16, MaxVertexUniformVectors: 4095,
				MaxFragmentUniformVectors: 1024, MaxVaryingVectors: 30, MaxCombinedTextureImageUnits: 32, MaxTextureImageUnits: 17,
				MaxVertexTextureImageUnits: 18, MaxCubeMapTextureSize: 16385,
				AliasedLineWidthRange: [2]float64{1, 1.0 / 3}, AliasedPointSizeRange: [2]float64{0.5, 1024}},
			Fonts:        []string{"Arial", "Segoe UI"},
			MediaDevices: profile.MediaDevices{AudioInputs: 1, VideoInputs: 2, AudioOutputs: 3},
			WebRTC:       profile.WebRTCProxyOnly, NoiseSeed: "seed",
		},
		ProxyID: "prx_1",
		Proxy:   &profile.ProxyRef{ID: "prx_1", Type: "socks5", Host: "proxy.example", Port: 1080},
		Tags:    []string{"b", "a"}, Notes: "line\nnext",
		Session: &profile.Session{ID: "ses_1", StartedAt: t0.Add(time.Nanosecond), ExpiresAt: t0.Add(time.Hour), LaunchedBy: "usr_2",
			Headless: true, CDPURL: "ws://127.0.0.1:1/x", CDPTokenHash: "ab12", Node: "http://10.0.0.2:8080"},
		Data:    &profile.Data{Content: profile.Content{SHA256: "cd34", Size: 1 << 40}, UpdatedAt: t0.Add(2 * time.Minute)},
		Cookies: &profile.Content{SHA256: "ef56", Size: 7},
		Version: 3, CreatedBy: "usr_1", CreatedAt: t0, UpdatedAt: t0.Add(time.Minute),
	}
}

// zeroFields names the fields reachable from v that hold their zero value.
func zeroFields(v reflect.Value, path string) []string {
	if v.IsZero() {
		return []string{path}
	}
	var out []string
	switch v.Kind() {
	case reflect.Pointer:
		out = zeroFields(v.Elem(), path)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return nil
		}
		for i := range v.NumField() {
			out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = append(out, zeroFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// A profile comes back from Redis as it was filled: every field, times to
// the nanosecond, nil and empty lists and absent parts each as they were.
func TestFilledProfileComesBackEqual(t *testing.T) {
	full := everyField()
	if zero := zeroFields(reflect.ValueOf(full), "Profile"); len(zero) > 0 {
		t.Fatalf("the test's profile leaves fields unset: %v", zero)
	}
	bare := profile.Profile{ID: "prf_2", TeamID: "tm_1", Name: "Bare", CreatedAt: t0, UpdatedAt: t0}
	empty := everyField()
	empty.ID, empty.Proxy, empty.Session, empty.Data, empty.Cookies = "prf_3", nil, nil, nil, nil
	empty.Tags, empty.Fingerprint.Fonts, empty.Fingerprint.Navigator.Languages = []string{}, []string{}, nil

	client := testenv.RedisClient(t)
	pc, _ := newCache(t, client, testenv.RedisKeyPrefix(t, client, "profilecache-fields"))
	ctx := context.Background()
	for _, want := range []profile.Profile{full, bare, empty} {
		_, _, lease := pc.Get(ctx, want.TeamID, want.ID)
		pc.Fill(ctx, want.TeamID, want.ID, lease, want)
		got, hit, _ := pc.Get(ctx, want.TeamID, want.ID)
		if !hit {
			t.Fatalf("%s: Get after Fill missed", want.ID)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s came back\n%#v\nwant\n%#v", want.ID, got, want)
		}
	}
}

// An entry of another format (the binary one of earlier versions, or the
// JSON of a profile with other fields, written by another version) is a
// miss, never a profile read from bytes it does not understand; so is a
// value that is not JSON.
func TestEntryOfAnotherFormatMisses(t *testing.T) {
	client := testenv.RedisClient(t)
	prefix := testenv.RedisKeyPrefix(t, client, "profilecache-format")
	pc, _ := newCache(t, client, prefix)
	ctx := context.Background()
	// What this version writes: its tag, then the profile's JSON.
	_, _, lease := pc.Get(ctx, "tm_1", "prf_kept")
	pc.Fill(ctx, "tm_1", "prf_kept", lease, profile.Profile{ID: "prf_kept", TeamID: "tm_1", Name: "Kept", Version: 1})
	raw, err := client.Get(ctx, prefix+"tm_1:prf_kept").Result()
	if err != nil {
		t.Fatal(err)
	}
	tag, body, ok := strings.Cut(raw, "{")
	if !ok || len(tag) < 2 {
		t.Fatalf("stored %q, want a tag and JSON", raw)
	}
	if _, hit, _ := pc.Get(ctx, "tm_1", "prf_kept"); !hit {
		t.Fatal("the entry this version wrote is a miss")
	}
	for id, v := range map[string]string{
		"prf_binary":  "v\x02\x05prf_1\x04tm_1",
		"prf_broken":  tag + `{"ID":"prf_broken","TeamID":"tm_1"`,
		"prf_unknown": "p0000000000000000{" + strings.ReplaceAll(body, "prf_kept", "prf_unknown"),
	} {
		if err := client.Set(ctx, prefix+"tm_1:"+id, v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if p, hit, lease := pc.Get(ctx, "tm_1", id); hit || lease != "" {
			t.Fatalf("%s: Get = %+v, hit %v, lease %q; want a miss without a lease", id, p, hit, lease)
		}
	}
}
