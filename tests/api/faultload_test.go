package api_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// The fault runs below measure the service under a bounded load while a
// dependency fails. The issue states their requirement in wall-clock terms
// ("no request takes longer than 1 s"), so each run counts, per request,
// its status and how long it took, and the test asserts the counts: no
// timing decides how the run proceeds, and every run stops by itself.

// sample is one request of a load run.
type sample struct {
	client  string
	status  int // 0: no answer (transport error)
	started time.Time
	took    time.Duration
}

// loadClient sends one request and returns its status, or 0 on error.
type loadClient struct {
	name string
	send func() int
}

// loadRun runs every client in a loop of its own until d has passed, and
// returns every request made.
func loadRun(d time.Duration, clients []loadClient) []sample {
	stop := time.Now().Add(d)
	var mu sync.Mutex
	var all []sample
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for time.Now().Before(stop) {
				begin := time.Now()
				status := c.send()
				s := sample{client: c.name, status: status, started: begin, took: time.Since(begin)}
				mu.Lock()
				all = append(all, s)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return all
}

// loadReport is what a run measured.
type loadReport struct {
	requests int
	byStatus map[int]int
	slowest  time.Duration
	byClient map[string]map[int]int
}

func report(samples []sample) loadReport {
	r := loadReport{byStatus: map[int]int{}, byClient: map[string]map[int]int{}}
	for _, s := range samples {
		r.requests++
		r.byStatus[s.status]++
		if r.byClient[s.client] == nil {
			r.byClient[s.client] = map[int]int{}
		}
		r.byClient[s.client][s.status]++
		r.slowest = max(r.slowest, s.took)
	}
	return r
}

func (r loadReport) String() string {
	s := fmt.Sprintf("%d requests, slowest %s, by status %v;", r.requests, r.slowest.Round(time.Millisecond), r.byStatus)
	for _, c := range slices.Sorted(maps.Keys(r.byClient)) {
		s += fmt.Sprintf(" %s %v", c, r.byClient[c])
	}
	return s
}

// faultLoadClients are the clients of both runs: API-key and token reads,
// a login, and idempotent creations.
func faultLoadClients(h *harness, a account, key string) []loadClient {
	var mu sync.Mutex
	seq := 0
	next := func() int { mu.Lock(); defer mu.Unlock(); seq++; return seq }
	login := fmt.Sprintf(`{"email":%q,"password":%q}`, a.email, a.password)
	return []loadClient{
		{"apikey-list", func() int { return h.rawDo(http.MethodGet, "/api/v1/profiles", "", "X-API-Key", key) }},
		{"apikey-me", func() int { return h.rawDo(http.MethodGet, "/api/v1/me", "", "X-API-Key", key) }},
		{"token-me", func() int { return h.rawDo(http.MethodGet, "/api/v1/me", "", bearer(a.access)...) }},
		{"login", func() int { return h.rawDo(http.MethodPost, "/api/v1/auth/login", login) }},
		{"idempotent-create", func() int {
			n := next()
			body := fmt.Sprintf(`{"name":"Load %d","templateId":%q}`, n, windowsTemplate)
			return h.rawDo(http.MethodPost, "/api/v1/profiles", body, "X-API-Key", key, "Idempotency-Key", fmt.Sprintf("load-%d", n))
		}},
	}
}

// profileQuota leaves room for every creation of a run.
const profileQuota = 1_000_000

func TestRedisBlackholedUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a 12 s fault run")
	}
	raw := os.Getenv(testenv.RedisURLVariable)
	if raw == "" {
		t.Skip(testenv.RedisURLVariable + " is not set")
	}
	client := testenv.RedisClient(t)
	proxy := testenv.StartProxy(t, client.Options().Addr)
	prefix := testenv.RedisKeyPrefix(t, client, "faultload")
	h := start(t, options{databaseURL: testenv.PostgresURL(t), redisURL: "redis://" + proxy.Addr() + "/0",
		env: map[string]string{"REDIS_KEY_PREFIX": prefix, "QUOTA_PROFILES": fmt.Sprint(profileQuota)}})
	a := h.register(t)
	key := h.apiKey(t, a)
	clients := faultLoadClients(h, a, key)

	healthy := report(loadRun(time.Second, clients))
	t.Logf("Redis healthy, 1 s: %s", healthy)
	proxy.Blackhole()
	down := report(loadRun(12*time.Second, clients))
	t.Logf("Redis blackholed, 12 s: %s", down)
	proxy.Forward()

	if down.byStatus[http.StatusInternalServerError] > 0 || down.byStatus[0] > 0 {
		t.Errorf("with Redis blackholed, %d requests answered 500 and %d got no answer", down.byStatus[500], down.byStatus[0])
	}
	if down.slowest > time.Second {
		t.Errorf("with Redis blackholed, the slowest request took %s, over 1 s", down.slowest)
	}
	for c, want := range map[string]int{"apikey-list": 200, "apikey-me": 200, "token-me": 200, "login": 200, "idempotent-create": 201} {
		if n := down.byClient[c][want]; n == 0 || n+throttled(c, down.byClient[c]) != sum(down.byClient[c]) {
			t.Errorf("%s with Redis blackholed: %v, want every request %d", c, down.byClient[c], want)
		}
	}
	poll.Until(t, "readyz to report the cache ok again", func() bool {
		r := h.get("/readyz")
		return r.status == http.StatusOK && r.data()["status"] == "ok"
	})
}

func TestPostgresStoppedUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4 s fault run")
	}
	u, err := url.Parse(testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartProxy(t, u.Host)
	u.Host = proxy.Addr()
	h := start(t, options{databaseURL: u.String(), env: map[string]string{"QUOTA_PROFILES": fmt.Sprint(profileQuota)}})
	a := h.register(t)
	key := h.apiKey(t, a)
	clients := faultLoadClients(h, a, key)

	healthy := report(loadRun(time.Second, clients))
	t.Logf("PostgreSQL up, 1 s: %s", healthy)
	stopped := time.Now()
	proxy.Stop()
	samples := loadRun(4*time.Second, clients)
	proxy.Forward()
	down := report(samples)
	t.Logf("PostgreSQL stopped, 4 s: %s", down)

	if down.slowest > 2*time.Second {
		t.Errorf("with PostgreSQL stopped, the slowest request took %s, over 2 s", down.slowest)
	}
	for _, s := range samples {
		// A request begun before the stop may have been answered first.
		if s.status != http.StatusServiceUnavailable && throttled(s.client, map[int]int{s.status: 1}) == 0 &&
			!s.started.Before(stopped.Add(100*time.Millisecond)) {
			t.Errorf("%s begun %s into the outage answered %d, want 503", s.client, s.started.Sub(stopped).Round(time.Millisecond), s.status)
		}
	}
	// The load spent the login budgets of its email and of the loopback
	// address: a new login window lets a login show that it reaches the
	// database again, and gives the next run a fresh token.
	h.clock.Advance(16 * time.Minute)
	poll.Until(t, "the service to serve again by itself", func() bool {
		if h.rawDo(http.MethodGet, "/api/v1/profiles", "", "X-API-Key", key) != http.StatusOK {
			return false
		}
		r := h.post("/api/v1/auth/login", map[string]any{"email": a.email, "password": a.password})
		a.access = str(r.data()["accessToken"])
		return r.status == http.StatusOK
	})
	clients = faultLoadClients(h, a, key)
	after := report(loadRun(time.Second, clients))
	t.Logf("PostgreSQL back, 1 s: %s", after)
	if n := after.byStatus[http.StatusOK] + after.byStatus[http.StatusCreated] + throttled("login", after.byClient["login"]); n != after.requests {
		t.Errorf("after PostgreSQL came back: %s, want every request to succeed", after)
	}
}

// throttled counts the logins refused by the login throttle: it counts
// every attempt before the password is checked (5 per email per 15 min,
// and the load client logs in as fast as it can), and answers 429 before
// any dependency is asked.
func throttled(client string, byStatus map[int]int) int {
	if client != "login" {
		return 0
	}
	return byStatus[http.StatusTooManyRequests]
}

func sum(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
