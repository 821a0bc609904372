//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// fleetNode is one instance of a test fleet: a process of its own, with
// its own data and temporary directories, sharing the fleet's database.
type fleetNode struct {
	p *process
	// exited is set once the test has waited for the process to end.
	exited  bool
	base    string
	dataDir string
	tmpDir  string
}

// fleetFixture is a fleet of instances on one PostgreSQL (and Redis, when
// redis is set), with a user signed up through the first.
type fleetFixture struct {
	nodes []*fleetNode
	token string
	env   []string
	dir   string
}

// The fleet's shared secrets: every instance signs and reads the same
// tokens, placed launches and proxy passwords.
const (
	fleetJWTSecret = "fleet-jwt-secret-0123456789abcdef0123456789"
	fleetSecretKey = "fleet-secret-key-0123456789abcdef0123456789"
)

// startFleet starts n instances that run at most max browsers each, beat
// every 500 ms and take one another for gone after 2 s; extra adds to
// every instance's environment.
func startFleet(t *testing.T, chromium string, n, max int, redis bool, extra ...string) *fleetFixture {
	t.Helper()
	dbURL := testenv.PostgresURL(t)
	f := &fleetFixture{dir: t.TempDir()}
	f.env = append([]string{
		"DATABASE_URL=" + dbURL, "JWT_SECRET=" + fleetJWTSecret, "SECRET_KEY=" + fleetSecretKey,
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH=" + chromium, "BROWSERS_MAX=" + strconv.Itoa(max),
		"FLEET_HEARTBEAT=500ms", "FLEET_TIMEOUT=2s", "ALLOW_PRIVATE_TARGETS=true", "LOG_LEVEL=warn",
	}, extra...)
	if redis {
		client := testenv.RedisClient(t)
		f.env = append(f.env, "REDIS_URL="+os.Getenv(testenv.RedisURLVariable), "REDIS_KEY_PREFIX="+testenv.RedisKeyPrefix(t, client, "fleet"))
	}
	// A balancer's address: the cdpUrl every instance hands out names it,
	// and a client reaches any instance through it (here the first).
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = freeAddr(t)
	}
	for i := range n {
		f.nodes = append(f.nodes, f.start(t, addrs[i], "http://"+addrs[0]))
	}
	var signIn struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(f.nodes[0].base, "/api/v1/auth/register", "", map[string]string{
		"email": "fleet@example.com", "password": "a long enough password", "name": "Fleet",
	}, &signIn); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %v\n%s", code, err, f.nodes[0].p.output)
	}
	f.token = signIn.AccessToken
	f.waitFleet(t, "every instance to record itself", func(fl fleetView) bool { return len(fl.Instances) == n })
	return f
}

// start runs one instance at addr, as the other instances reach it.
func (f *fleetFixture) start(t *testing.T, addr, public string) *fleetNode {
	t.Helper()
	dir := filepath.Join(f.dir, strings.ReplaceAll(addr, ":", "_"))
	node := &fleetNode{base: "http://" + addr, dataDir: filepath.Join(dir, "data"), tmpDir: filepath.Join(dir, "tmp")}
	for _, d := range []string{node.dataDir, node.tmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := minimalEnv(append([]string{
		"HTTP_ADDR=" + addr, "NODE_URL=http://" + addr, "PUBLIC_URL=" + public,
		"DATA_DIR=" + node.dataDir, "TMPDIR=" + node.tmpDir,
	}, f.env...)...)
	node.p = startProcess(t, dir, env, addr)
	t.Cleanup(func() {
		if !node.exited {
			_ = node.p.cmd.Process.Signal(syscall.SIGINT)
			node.wait(t)
		}
		waitNoProcessMentions(t, node.tmpDir)
	})
	return node
}

// wait waits for the instance's process to exit and returns its code.
func (n *fleetNode) wait(t *testing.T) int {
	t.Helper()
	n.exited = true
	return n.p.wait(t)
}

type fleetView struct {
	Capacity  int `json:"capacity"`
	Running   int `json:"running"`
	Free      int `json:"free"`
	Instances []struct {
		ID       string `json:"id"`
		Capacity int    `json:"capacity"`
		Running  int    `json:"running"`
		Draining bool   `json:"draining"`
	} `json:"instances"`
}

// waitFleet waits until GET /api/v1/fleet, asked of the first instance,
// shows what ok accepts.
func (f *fleetFixture) waitFleet(t *testing.T, what string, ok func(fleetView) bool) fleetView {
	t.Helper()
	var fl fleetView
	poll.Check(t, 20*time.Second, what, func() error {
		fl = fleetView{}
		if code := getData(t, f.nodes[0].base+"/api/v1/fleet", f.token, &fl); code != http.StatusOK {
			return fmt.Errorf("GET /api/v1/fleet: %d", code)
		}
		if !ok(fl) {
			return fmt.Errorf("the fleet shows %+v", fl)
		}
		return nil
	})
	return fl
}

// stoppedHooks subscribes a receiver to the team's profile.stopped.
func (f *fleetFixture) stoppedHooks(t *testing.T) *stoppedReceiver {
	t.Helper()
	hooks := newStoppedReceiver(t)
	if code, err := post(f.nodes[0].base, "/v1/webhooks", f.token, map[string]any{
		"url": hooks.srv.URL, "events": []string{"profile.stopped"}, "secret": shutdownWebhookSecret,
	}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("subscribe to profile.stopped: %d %v", code, err)
	}
	return hooks
}

// createProfiles creates n profiles through the first instance.
func (f *fleetFixture) createProfiles(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		var prof struct {
			ID string `json:"id"`
		}
		if code, err := post(f.nodes[0].base, "/api/v1/profiles", f.token, map[string]any{"name": fmt.Sprintf("fleet %d", i), "templateId": "tpl_chrome_win_us"}, &prof); err != nil || code != http.StatusCreated {
			t.Fatalf("create a profile: %d %v", code, err)
		}
		ids = append(ids, prof.ID)
	}
	return ids
}

// launchAnswer is what a launch answered.
type launchAnswer struct {
	code       int
	cdpURL     string
	retryAfter string
	message    string
}

// launch launches profile id headless through node.
func (f *fleetFixture) launch(t *testing.T, node *fleetNode, id string) launchAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, node.base+"/api/v1/profiles/"+id+"/launch", strings.NewReader(`{"headless":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var env struct {
		Data struct {
			Session struct {
				CDPURL string `json:"cdpUrl"`
			} `json:"session"`
		} `json:"data"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("launch %s: %d %s", id, resp.StatusCode, body)
	}
	return launchAnswer{code: resp.StatusCode, cdpURL: env.Data.Session.CDPURL, retryAfter: resp.Header.Get("Retry-After"), message: env.Error.Message}
}

// through is cdpURL with its host replaced by node's: the same session,
// reached through another instance.
func through(t *testing.T, cdpURL string, node *fleetNode) string {
	t.Helper()
	u, err := url.Parse(cdpURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = strings.TrimPrefix(node.base, "http://")
	return u.String()
}

// browsersOf counts the Chromium browsers below the instance's process:
// their main processes, the ones given a user-data directory (renderers,
// zygotes and utilities have a --type, crash handlers and sandboxes no
// directory).
func browsersOf(node *fleetNode) int {
	n := 0
	for _, pid := range testenv.Descendants(node.p.cmd.Process.Pid) {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		cmd := testenv.CommandLine(pid)
		if !strings.HasSuffix(exe, "/bwrap") && strings.Contains(cmd, "--user-data-dir=") && !strings.Contains(cmd, "--type=") {
			n++
		}
	}
	return n
}

// fleetPage serves a page whose title names the path it was asked for
// and which sets a cookie lasting a day.
func fleetPage(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.URL.Query().Get("cookie"); v != "" {
			http.SetCookie(w, &http.Cookie{Name: "fleet", Value: v, Path: "/", MaxAge: 86400})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p>fleet", strings.TrimPrefix(r.URL.Path, "/"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFleetPlacesLaunchesWhereThereIsRoom runs three instances with room
// for two browsers each and sends seven launches to the first: six
// succeed, two on each instance, and the seventh is 503 with Retry-After
// saying the fleet is full. Each browser is driven by chromedp through an
// instance that does not run it, GET /api/v1/fleet adds the numbers up,
// and the first instance counts four launches placed elsewhere and one
// refused. Released through the second instance, every browser is closed
// by the instance that runs it. Once on PostgreSQL, once with Redis too
// (there without driving the browsers again).
func TestFleetPlacesLaunchesWhereThereIsRoom(t *testing.T) {
	chromium := chromiumOrSkip(t)
	for _, redis := range []bool{false, true} {
		name := map[bool]string{false: "postgres", true: "postgres and redis"}[redis]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testFleetPlacement(t, chromium, redis)
		})
	}
}

func testFleetPlacement(t *testing.T, chromium string, redis bool) {
	f := startFleet(t, chromium, 3, 2, redis)
	page := fleetPage(t)
	ids := f.createProfiles(t, 7)
	var cdpURLs []string
	for i, id := range ids[:6] {
		a := f.launch(t, f.nodes[0], id)
		if a.code != http.StatusOK || a.cdpURL == "" {
			t.Fatalf("launch %d of 6 through the first instance: %d %s\n%s", i+1, a.code, a.message, f.nodes[0].p.output)
		}
		cdpURLs = append(cdpURLs, a.cdpURL)
	}
	a := f.launch(t, f.nodes[0], ids[6])
	if a.code != http.StatusServiceUnavailable || a.retryAfter == "" || !strings.Contains(a.message, "the fleet is full") {
		t.Fatalf("the 7th launch: %d, Retry-After %q, %q; want 503 with Retry-After, the fleet is full", a.code, a.retryAfter, a.message)
	}
	for i, node := range f.nodes {
		if got := browsersOf(node); got != 2 {
			t.Errorf("instance %d runs %d browsers; want 2", i+1, got)
		}
	}
	fl := f.waitFleet(t, "the fleet to count six browsers", func(fl fleetView) bool { return fl.Running == 6 })
	if fl.Capacity != 6 || fl.Free != 0 || len(fl.Instances) != 3 {
		t.Fatalf("the fleet shows %+v; want 3 instances, capacity 6, 6 running, 0 free", fl)
	}
	// Every browser answers through every instance, whichever runs it
	// (once: the store under the relay is the same with Redis).
	if redis {
		cdpURLs = nil
	}
	for i, cdpURL := range cdpURLs {
		for j, node := range f.nodes {
			var title string
			want := fmt.Sprintf("b%d-via%d", i, j)
			withTab(t, through(t, cdpURL, node), func(ctx context.Context) (err error) {
				if err := chromedp.Do(ctx, chromedp.Navigate(page.URL+"/"+want)); err != nil {
					return err
				}
				title, err = chromedp.Run(ctx, chromedp.Title())
				return err
			})
			if title != want {
				t.Fatalf("browser %d through instance %d shows %q; want %q", i+1, j+1, title, want)
			}
		}
	}
	addr := strings.TrimPrefix(f.nodes[0].base, "http://")
	if placed, refused := metricValue(t, addr, "profilesvc_launches_placed_elsewhere_total"), metricValue(t, addr, "profilesvc_launches_refused_total"); placed != 4 || refused != 1 {
		t.Errorf("the first instance counted %v placed elsewhere and %v refused; want 4 and 1", placed, refused)
	}
	// Released through one instance, each browser is closed by the one
	// that runs it: none is left.
	for _, id := range ids[:6] {
		if code, err := post(f.nodes[1].base, "/api/v1/profiles/"+id+"/release", f.token, map[string]any{}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("release %s through the second instance: %d %v", id, code, err)
		}
	}
	for i, node := range f.nodes {
		if got := browsersOf(node); got != 0 {
			t.Errorf("after every release instance %d runs %d browsers; want 0", i+1, got)
		}
	}
}

// TestFleetGivesEachProfileOneWinner sends 40 launches of 20 profiles at
// once, each profile's two to two different instances of three: exactly
// one of each pair succeeds, the other is 409, and the instances run 20
// browsers in all, none started for a loser.
func TestFleetGivesEachProfileOneWinner(t *testing.T) {
	chromium := chromiumOrSkip(t)
	t.Parallel()
	// Room for every launch at once, so a loser can only lose the lease.
	f := startFleet(t, chromium, 3, 14, false)
	ids := f.createProfiles(t, 20)
	codes := make([][2]int, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		for k := range 2 {
			node := f.nodes[(i+k)%3]
			wg.Go(func() { codes[i][k] = f.launch(t, node, id).code })
		}
	}
	wg.Wait()
	for i, c := range codes {
		if !(c == [2]int{200, 409} || c == [2]int{409, 200}) {
			t.Errorf("profile %d: the two launches answered %v; want one 200 and one 409", i+1, c)
		}
	}
	total := 0
	for _, node := range f.nodes {
		total += browsersOf(node)
	}
	if total != 20 {
		t.Fatalf("the fleet runs %d browsers; want 20, one a profile", total)
	}
}

// TestFleetEndsTheSessionsOfAKilledInstance kills with SIGKILL the
// instance that runs two browsers, whose pages set a cookie that a
// checkpoint saved. Within the fleet's timeout both sessions end as
// crashed (one profile.stopped each), no process of the killed instance is
// left, and both profiles launch again at once elsewhere, into browsers
// that send their cookie.
func TestFleetEndsTheSessionsOfAKilledInstance(t *testing.T) {
	chromium := chromiumOrSkip(t)
	t.Parallel()
	f := startFleet(t, chromium, 3, 2, false, "COOKIE_CHECKPOINT_INTERVAL=200ms")
	page := fleetPage(t)
	hooks := f.stoppedHooks(t)
	victim := f.nodes[1]
	ids := f.createProfiles(t, 2)
	for i, id := range ids {
		a := f.launch(t, victim, id)
		if a.code != http.StatusOK {
			t.Fatalf("launch %s: %d %s", id, a.code, a.message)
		}
		withTab(t, a.cdpURL, func(ctx context.Context) error {
			return chromedp.Do(ctx, chromedp.Navigate(page.URL+"/set?cookie=kept-"+strconv.Itoa(i)))
		})
		poll.Check(t, 20*time.Second, "the cookie checkpoint of "+id, func() error {
			var cookies []struct {
				Name, Value string
			}
			getData(t, f.nodes[0].base+"/api/v1/profiles/"+id+"/cookies", f.token, &cookies)
			for _, c := range cookies {
				if c.Name == "fleet" && c.Value == "kept-"+strconv.Itoa(i) {
					return nil
				}
			}
			return fmt.Errorf("cookies %+v", cookies)
		})
	}
	if got := browsersOf(victim); got != 2 {
		t.Fatalf("the instance runs %d browsers; want 2", got)
	}
	if err := victim.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	victim.wait(t)
	killed := time.Now()
	want := []string{ids[0] + " crashed", ids[1] + " crashed"}
	sort.Strings(want)
	hooks.waitFor(t, want)
	t.Logf("both sessions ended as crashed %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	// The killed instance's browsers died with it.
	waitNoProcessMentions(t, victim.tmpDir)
	for i, id := range ids {
		a := f.launch(t, f.nodes[0], id)
		if a.code != http.StatusOK {
			t.Fatalf("relaunch %s: %d %s", id, a.code, a.message)
		}
		var cookie string
		withTab(t, a.cdpURL, func(ctx context.Context) (err error) {
			if err := chromedp.Do(ctx, chromedp.Navigate(page.URL+"/get")); err != nil {
				return err
			}
			cookie, err = chromedp.Run(ctx, chromedp.Evaluate[string]("document.cookie"))
			return err
		})
		if cookie != "fleet=kept-"+strconv.Itoa(i) {
			t.Errorf("relaunched %s sends cookie %q; want fleet=kept-%d", id, cookie, i)
		}
	}
	if a, c := browsersOf(f.nodes[0]), browsersOf(f.nodes[2]); a+c != 2 {
		t.Fatalf("the surviving instances run %d and %d browsers; want 2 in all", a, c)
	}
}

// TestFleetDrain sends SIGTERM to the instance that runs a browser: while
// it drains, the fleet shows it draining, and launches sent to it start on
// the others; its session goes on until DRAIN_TIMEOUT, then ends as a
// shutdown with its data stored, and the instance exits 0.
func TestFleetDrain(t *testing.T) {
	chromium := chromiumOrSkip(t)
	t.Parallel()
	// Long enough for the checks below on a loaded machine: the session
	// must still run when they are done.
	f := startFleet(t, chromium, 3, 1, false, "DRAIN_TIMEOUT=12s")
	page := fleetPage(t)
	hooks := f.stoppedHooks(t)
	drained := f.nodes[1]
	ids := f.createProfiles(t, 3)
	a := f.launch(t, drained, ids[0])
	if a.code != http.StatusOK {
		t.Fatalf("launch: %d %s", a.code, a.message)
	}
	withTab(t, a.cdpURL, func(ctx context.Context) error {
		return chromedp.Do(ctx, chromedp.Navigate(page.URL+"/drain"),
			chromedp.Evaluate[chromedp.Void](`localStorage.setItem('k', 'kept through the drain')`))
	})
	if err := drained.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	f.waitFleet(t, "the instance to drain", func(fl fleetView) bool {
		for _, in := range fl.Instances {
			if in.Draining {
				return true
			}
		}
		return false
	})
	if got := browsersOf(drained); got != 1 {
		t.Fatalf("the draining instance runs %d browsers; want its one\n%s", got, drained.p.output)
	}
	// The draining instance still answers: its launches go to the others.
	for _, id := range ids[1:] {
		if a := f.launch(t, drained, id); a.code != http.StatusOK {
			t.Fatalf("a launch sent to the draining instance: %d %s", a.code, a.message)
		}
	}
	if a, c := browsersOf(f.nodes[0]), browsersOf(f.nodes[2]); a != 1 || c != 1 {
		t.Fatalf("the others run %d and %d browsers; want 1 and 1", a, c)
	}
	var prof struct {
		Status string `json:"status"`
	}
	if getData(t, f.nodes[0].base+"/api/v1/profiles/"+ids[0], f.token, &prof); prof.Status != "running" || browsersOf(drained) != 1 {
		t.Fatalf("the draining instance's profile is %s before DRAIN_TIMEOUT; want running, its browser too", prof.Status)
	}
	if code := drained.wait(t); code != 0 {
		t.Fatalf("exit code %d after the drain\n%s", code, drained.p.output)
	}
	hooks.waitFor(t, []string{ids[0] + " shutdown"})
	// The two left are full: make room, and launch the drained profile
	// again.
	if code, err := post(f.nodes[0].base, "/api/v1/profiles/"+ids[1]+"/release", f.token, map[string]any{}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("release %s: %d %v", ids[1], code, err)
	}
	a = f.launch(t, f.nodes[0], ids[0])
	if a.code != http.StatusOK {
		t.Fatalf("relaunch: %d %s", a.code, a.message)
	}
	var value string
	withTab(t, a.cdpURL, func(ctx context.Context) (err error) {
		if err := chromedp.Do(ctx, chromedp.Navigate(page.URL+"/drain")); err != nil {
			return err
		}
		value, err = chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem('k') || ''`))
		return err
	})
	if value != "kept through the drain" {
		t.Fatalf("after the drain the profile's page finds %q", value)
	}
}

// TestSIGUSR1DrainsAndKeepsTheInstanceUp sends SIGUSR1 to an instance that
// runs a browser: /readyz answers 503 draining, a launch finds no room in
// the fleet, the browser's session ends as a shutdown with its data stored
// once DRAIN_TIMEOUT has passed, and the instance still serves until
// SIGTERM stops it at once.
func TestSIGUSR1DrainsAndKeepsTheInstanceUp(t *testing.T) {
	chromium := chromiumOrSkip(t)
	t.Parallel()
	f := startFleet(t, chromium, 1, 1, false, "DRAIN_TIMEOUT=2s")
	node := f.nodes[0]
	ids := f.createProfiles(t, 2)
	if a := f.launch(t, node, ids[0]); a.code != http.StatusOK {
		t.Fatalf("launch: %d %s", a.code, a.message)
	}
	if err := node.p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	poll.Check(t, 20*time.Second, "/readyz to say the instance drains", func() error {
		res, err := http.Get(node.base + "/readyz")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"draining"`) {
			return fmt.Errorf("/readyz: %d %s", res.StatusCode, body)
		}
		return nil
	})
	if a := f.launch(t, node, ids[1]); a.code != http.StatusServiceUnavailable || !strings.Contains(a.message, "the fleet is full") {
		t.Fatalf("a launch while the only instance drains: %d %s; want 503, the fleet is full", a.code, a.message)
	}
	poll.Check(t, 30*time.Second, "the session to end at DRAIN_TIMEOUT with its data", func() error {
		var prof struct {
			Status string          `json:"status"`
			Data   json.RawMessage `json:"data"`
		}
		getData(t, node.base+"/api/v1/profiles/"+ids[0], f.token, &prof)
		if prof.Status != "idle" || isNull(prof.Data) {
			return fmt.Errorf("the profile is %s with data %s", prof.Status, prof.Data)
		}
		return nil
	})
	if got := browsersOf(node); got != 0 {
		t.Fatalf("the drained instance runs %d browsers", got)
	}
	res, err := http.Get(node.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the drained instance answers /healthz %d", res.StatusCode)
	}
	if err := node.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := node.wait(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, node.p.output)
	}
}
