//go:build linux

package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"go.uber.org/fx"
	"golang.org/x/net/websocket"

	"github.com/profilesvc/profilesvc/adapters/browser/chromium"
	"github.com/profilesvc/profilesvc/adapters/wiring"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// chromiumOrSkip skips a browser test on a machine without Chromium or
// bubblewrap (every browser runs in its sandbox), and fails it in CI,
// which must run it.
func chromiumOrSkip(t *testing.T) {
	t.Helper()
	_, chromiumFound := chromium.Find(os.Getenv("CHROMIUM_PATH"))
	_, bwrapFound := chromium.FindBwrap("")
	if !chromiumFound || !bwrapFound {
		if os.Getenv("CI") != "" {
			t.Fatal("Chromium or bubblewrap is not installed; CI must run the browser suites")
		}
		t.Skip("Chromium or bubblewrap is not installed: apt-get install chromium bubblewrap (or set CHROMIUM_PATH) to run the browser suites")
	}
}

// browserService starts a service that runs Chromium, with its data in
// dataDir.
func browserService(t *testing.T, databaseURL, dataDir string, env ...string) *harness {
	t.Helper()
	o := options{databaseURL: databaseURL, env: map[string]string{}}
	for i := 0; i+1 < len(env); i += 2 {
		o.env[env[i]] = env[i+1]
	}
	return browserServiceWith(t, o, dataDir)
}

// browserServiceWith is browserService on top of o's environment and fx
// options.
func browserServiceWith(t *testing.T, o options, dataDir string) *harness {
	t.Helper()
	chromiumOrSkip(t)
	e := map[string]string{"BROWSER_RUNTIME": "chromium", "ALLOW_PRIVATE_TARGETS": "true", "DATA_DIR": dataDir}
	for k, v := range o.env {
		e[k] = v
	}
	o.env = e
	return start(t, o)
}

// launchBrowser launches id headless and returns its session.
func (h *harness) launchBrowser(t *testing.T, auth []string, id string) map[string]any {
	t.Helper()
	r := h.post("/api/v1/profiles/"+id+"/launch", map[string]any{"headless": true}, auth...)
	expect(t, r, http.StatusOK)
	sess := r.data()["session"].(map[string]any)
	if !strings.Contains(str(sess["cdpUrl"]), "/api/v1/sessions/"+str(sess["id"])+"/cdp?token=") {
		t.Fatalf("cdpUrl %v is not the relay's", sess["cdpUrl"])
	}
	return sess
}

// cdp connects a chromedp client to cdpURL; cancel drops the connection
// and leaves the browser running.
func cdp(t *testing.T, cdpURL string) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancelTimeout := context.WithTimeout(context.Background(), time.Minute)
	actx, cancelAlloc := remote.NewAllocator(ctx, cdpURL, remote.NoModifyURL)
	return actx, func() { cancelAlloc(); cancelTimeout() }
}

// testPage serves a page on loopback.
func testPage(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><title>journey</title><body>ok</body></html>"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBrowserSessionThroughTheRelay(t *testing.T) {
	h := browserService(t, "memory://", t.TempDir())
	a := h.register(t)
	auth := bearer(a.access)
	id := h.createProfile(t, a, map[string]any{"fingerprint": map[string]any{
		"platform": "Win32", "locale": "de-DE", "timezone": "Asia/Tokyo", "screen": map[string]any{"width": 1366, "height": 768},
	}})
	page := testPage(t)

	sess := h.launchBrowser(t, auth, id)
	cdpURL := str(sess["cdpUrl"])

	// A wrong token is refused before any upgrade.
	bad := strings.Replace(strings.Replace(cdpURL, "ws://", "http://", 1), "token=", "token=x", 1)
	resp, err := http.Get(bad)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d, want 401", resp.StatusCode)
	}

	actx, drop := cdp(t, cdpURL)
	tab, closeTab := chromedp.NewContext(actx)
	if err := chromedp.Do(tab, chromedp.Navigate(page.URL+"/kept")); err != nil {
		t.Fatalf("through the relay: %v", err)
	}
	ua := evaluate[string](t, tab, `navigator.userAgent`)
	platform := evaluate[string](t, tab, `navigator.platform`)
	lang := evaluate[string](t, tab, `navigator.language`)
	tz := evaluate[string](t, tab, `Intl.DateTimeFormat().resolvedOptions().timeZone`)
	width := evaluate[int](t, tab, `screen.width`)
	height := evaluate[int](t, tab, `screen.height`)
	evaluate[bool](t, tab, `localStorage.setItem('k', 'v1'); document.cookie = 'c=1; max-age=86400'; true`)
	// WebRTC gathers no candidate that would reveal an address outside the
	// proxy: no host or server-reflexive UDP candidate.
	candidates, err := chromedp.Run(tab, chromedp.Evaluate[[]string](webRTCCandidates, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("WebRTC: %v", err)
	}
	for _, c := range candidates {
		if strings.Contains(c, " udp ") || strings.Contains(c, " UDP ") {
			t.Fatalf("WebRTC revealed a UDP candidate: %q (all: %v)", c, candidates)
		}
	}
	fp := h.get("/api/v1/profiles/"+id, auth...).data()["fingerprint"].(map[string]any)
	if ua != str(fp["userAgent"]) || platform != "Win32" || lang != "de-DE" || tz != "Asia/Tokyo" || width != 1366 || height != 768 {
		t.Fatalf("page saw %q %q %q %q %dx%d", ua, platform, lang, tz, width, height)
	}
	closeTab()
	drop()

	// A client opens a page, its connection drops; connected again to the
	// same cdpUrl, it finds the page as it left it.
	raw := rawCDP(t, cdpURL)
	raw.call(t, "Target.createTarget", map[string]any{"url": page.URL + "/kept"})
	raw.conn.Close()
	raw = rawCDP(t, cdpURL)
	defer raw.conn.Close()
	poll.Check(t, poll.Timeout, "the page "+page.URL+"/kept after reconnecting", func() error {
		var res struct {
			TargetInfos []struct {
				URL string `json:"url"`
			} `json:"targetInfos"`
		}
		raw.decode(t, raw.call(t, "Target.getTargets", map[string]any{}), &res)
		var urls []string
		for _, ti := range res.TargetInfos {
			urls = append(urls, ti.URL)
		}
		if !slices.Contains(urls, page.URL+"/kept") {
			return fmt.Errorf("the targets are %v", urls)
		}
		return nil
	})

	// Release stores what the browser wrote; the next launch has it.
	r := h.post("/api/v1/profiles/"+id+"/release", nil, auth...)
	expect(t, r, http.StatusOK)
	if r.data()["data"] == nil {
		t.Fatalf("released profile has no data: %v", r.data())
	}
	sess = h.launchBrowser(t, auth, id)
	actx, drop = cdp(t, str(sess["cdpUrl"]))
	defer drop()
	tab, closeTab = chromedp.NewContext(actx)
	defer closeTab()
	if err := chromedp.Do(tab, chromedp.Navigate(page.URL+"/again")); err != nil {
		t.Fatal(err)
	}
	value := evaluate[string](t, tab, `localStorage.getItem('k') || ''`)
	cookie := evaluate[string](t, tab, `document.cookie`)
	if value != "v1" || !strings.Contains(cookie, "c=1") {
		t.Fatalf("after release and launch: localStorage %q, cookie %q", value, cookie)
	}
	expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)
}

// webRTCCandidates gathers the ICE candidates of a data channel offer.
const webRTCCandidates = `new Promise((resolve) => {
	const pc = new RTCPeerConnection({iceServers: []});
	const found = [];
	pc.createDataChannel('x');
	pc.onicecandidate = (e) => {
		if (e.candidate) { found.push(e.candidate.candidate); } else { resolve(found); }
	};
	pc.createOffer().then((o) => pc.setLocalDescription(o));
	setTimeout(() => resolve(found), 3000);
})`

// evaluate runs expr in the tab and returns its value.
func evaluate[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// rawClient speaks CDP over one WebSocket, one call at a time.
type rawClient struct {
	conn *websocket.Conn
	next int
}

func rawCDP(t *testing.T, cdpURL string) *rawClient {
	t.Helper()
	u, err := url.Parse(cdpURL)
	if err != nil {
		t.Fatal(err)
	}
	// This client always sends an Origin: the service's own, as a page of
	// the service would; another site's is refused.
	cfg, err := websocket.NewConfig(cdpURL, "http://"+u.Host+"/")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatalf("dial %s: %v", cdpURL, err)
	}
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return &rawClient{conn: conn}
}

// call sends a command and returns its result, skipping events.
func (c *rawClient) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	c.next++
	if err := websocket.JSON.Send(c.conn, map[string]any{"id": c.next, "method": method, "params": params}); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := websocket.JSON.Receive(c.conn, &msg); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if msg.ID != c.next {
			continue
		}
		if msg.Error != nil {
			t.Fatalf("%s: %s", method, msg.Error)
		}
		return msg.Result
	}
}

func (c *rawClient) decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

// browserPID finds the main Chromium process of a session: one that sees
// the session's directory (as its sandboxed profile) and is no helper
// (--type=).
func browserPID(t *testing.T, dataDir, sessionID string) int {
	t.Helper()
	dir := filepath.Join(dataDir, "browsers", sessionID)
	for _, pid := range testenv.ProcessesUsing(dir) {
		cmd := testenv.CommandLine(pid)
		if strings.Contains(cmd, "--user-data-dir") && !strings.Contains(cmd, "--type=") {
			return pid
		}
	}
	t.Fatalf("no Chromium process for %s", dir)
	return 0
}

// chromiumLeft lists the processes that use dir.
func chromiumLeft(dir string) []int {
	return testenv.ProcessesUsing(dir)
}

func TestKilledBrowserEndsItsSessionAsCrashed(t *testing.T) {
	dataDir := t.TempDir()
	h := browserServiceWith(t, webhookOptions("memory://"), dataDir)
	a := h.register(t)
	auth := bearer(a.access)
	rc := newReceiver(t, http.StatusOK)
	h.subscribe(t, a, rc.srv.URL, string(event.ProfileStopped))
	id := h.createProfile(t, a, nil)
	sess := h.launchBrowser(t, auth, id)

	if err := syscall.Kill(browserPID(t, dataDir, str(sess["id"])), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The profile turns idle and its subscriber is told why.
	poll.Check(t, poll.Timeout, "the killed browser's profile idle and its subscriber told", func() error {
		status, n := h.get("/api/v1/profiles/"+id, auth...).data()["status"], len(rc.requests())
		if status != "idle" || n == 0 {
			return fmt.Errorf("the profile is %v and the receiver got %d deliveries", status, n)
		}
		return nil
	})
	got := rc.requests()[0]
	data, _ := got.payload["data"].(map[string]any)
	prof, _ := data["profile"].(map[string]any)
	delivered, _ := data["session"].(map[string]any)
	if !got.validMAC || got.payload["type"] != string(event.ProfileStopped) || data["reason"] != "crashed" ||
		prof["id"] != id || delivered["id"] != sess["id"] {
		t.Fatalf("the receiver got %s (signature valid: %v), want profile.stopped of %s, session %s, reason crashed",
			got.body, got.validMAC, id, sess["id"])
	}
	var reasons []string
	for _, e := range h.events(t, event.ProfileStopped) {
		reasons = append(reasons, str(eventData(t, e)["reason"]))
	}
	if len(reasons) != 1 || reasons[0] != "crashed" {
		t.Fatalf("profile.stopped reasons %v, want [crashed]", reasons)
	}
	// A new launch works.
	h.launchBrowser(t, auth, id)
	expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)
	if left := chromiumLeft(filepath.Join(dataDir, "browsers")); len(left) != 0 {
		t.Fatalf("Chromium processes left: %v", left)
	}
}

func TestLaunchBeyondBrowsersMaxIs503(t *testing.T) {
	h := browserService(t, "memory://", t.TempDir(), "BROWSERS_MAX", "1")
	a := h.register(t)
	auth := bearer(a.access)
	first, second := h.createProfile(t, a, nil), h.createProfile(t, a, nil)
	h.launchBrowser(t, auth, first)

	r := h.post("/api/v1/profiles/"+second+"/launch", map[string]any{"headless": true}, auth...)
	expect(t, r, http.StatusServiceUnavailable)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if d := h.get("/api/v1/profiles/"+second, auth...).data(); d["status"] != "idle" || d["session"] != nil {
		t.Fatalf("the refused profile is %v", d)
	}
	if n := len(h.events(t, event.ProfileLaunched)); n != 1 {
		t.Fatalf("%d profile.launched events, want 1", n)
	}
	expect(t, h.post("/api/v1/profiles/"+first+"/release", nil, auth...), http.StatusOK)
	h.launchBrowser(t, auth, second)
	expect(t, h.post("/api/v1/profiles/"+second+"/release", nil, auth...), http.StatusOK)
}

func TestRelayReachesTheBrowserFromAnotherInstance(t *testing.T) {
	chromiumOrSkip(t)
	url := testenv.PostgresURL(t)
	owner := browserService(t, url, t.TempDir())
	other := browserService(t, url, t.TempDir())
	a := owner.register(t)
	auth := bearer(a.access)
	id := owner.createProfile(t, a, nil)
	sess := owner.launchBrowser(t, auth, id)

	// The same cdpUrl, sent to the other instance.
	viaOther := strings.Replace(str(sess["cdpUrl"]), strings.TrimPrefix(owner.base, "http://"), strings.TrimPrefix(other.base, "http://"), 1)
	actx, drop := cdp(t, viaOther)
	defer drop()
	tab, closeTab := chromedp.NewContext(actx)
	defer closeTab()
	ua := evaluate[string](t, tab, `navigator.userAgent`)
	fp := owner.get("/api/v1/profiles/"+id, auth...).data()["fingerprint"].(map[string]any)
	if ua != str(fp["userAgent"]) {
		t.Fatalf("userAgent %q through the other instance, want %q", ua, fp["userAgent"])
	}
	expect(t, owner.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)
}

func TestRunningSessionsCookiesAreCheckpointed(t *testing.T) {
	h := browserServiceWith(t, options{databaseURL: "memory://", extra: []fx.Option{
		fx.Decorate(func() wiring.CheckpointInterval { return wiring.CheckpointInterval(100 * time.Millisecond) }),
	}}, t.TempDir())
	a := h.register(t)
	auth := bearer(a.access)
	id := h.createProfile(t, a, nil)
	sess := h.launchBrowser(t, auth, id)
	version := h.get("/api/v1/profiles/"+id, auth...).data()["version"]
	page := testPage(t)

	actx, drop := cdp(t, str(sess["cdpUrl"]))
	defer drop()
	tab, closeTab := chromedp.NewContext(actx)
	defer closeTab()
	if err := chromedp.Do(tab, chromedp.Navigate(page.URL)); err != nil {
		t.Fatal(err)
	}
	// cookieValue is the value of the checkpointed cookie c, or "".
	cookieValue := func() string {
		for _, c := range cookieList(t, h.get("/api/v1/profiles/"+id+"/cookies", auth...)) {
			if c["name"] == "c" {
				return str(c["value"])
			}
		}
		return ""
	}
	// Each value the page sets becomes the profile's without a release.
	for _, value := range []string{"first", "second"} {
		evaluate[bool](t, tab, `document.cookie = 'c=`+value+`; max-age=86400'; true`)
		poll.Until(t, "the checkpoint of cookie c="+value, func() bool { return cookieValue() == value })
	}

	d := h.get("/api/v1/profiles/"+id, auth...).data()
	running, _ := d["session"].(map[string]any)
	if d["status"] != "running" || running["id"] != sess["id"] || d["version"] != version {
		t.Fatalf("after the checkpoints the profile is %v, session %v, version %v; want running, %v, version %v",
			d["status"], running["id"], d["version"], sess["id"], version)
	}
	if n := len(h.events(t, event.ProfileUpdated)); n != 0 {
		t.Fatalf("%d profile.updated events for checkpoints, want none", n)
	}
	expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)
}
