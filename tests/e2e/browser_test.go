//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/profilesvc/profilesvc/tests/testenv"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// The fingerprint the journey's profile asks for; every value differs from
// the template it starts from (tpl_chrome_win_us) and from what a headless
// Chromium on Linux reports by itself.
const (
	journeyUserAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	journeyPlatform  = "Win32"
	journeyLocale    = "de-DE"
	journeyTimezone  = "Asia/Tokyo"
	journeyWidth     = 1366
	journeyHeight    = 768
)

// journeySiteName is the host name of the test's site. It is in the
// reserved .test domain and resolves nowhere: only the test's proxy knows
// it, so a page that loads came through the proxy.
const journeySiteName = "journey.test"

const (
	journeyProxyUser = "journey"
	journeyProxyPass = "proxy pass phrase"
)

// stepTimeout bounds one client step: a node run, or one chromedp
// connection's work.
const stepTimeout = 90 * time.Second

// pageView is what a page of the profile's browser sees of itself.
type pageView struct {
	UserAgent      string `json:"userAgent"`
	Platform       string `json:"platform"`
	Language       string `json:"language"`
	Timezone       string `json:"timezone"`
	ScreenWidth    int    `json:"screenWidth"`
	ScreenHeight   int    `json:"screenHeight"`
	AcceptLanguage string `json:"acceptLanguage"`
}

// pageState is what a page finds of the data an earlier page left.
type pageState struct {
	Cookie  string `json:"cookie"`
	Storage string `json:"storage"`
}

// viewScript is the chromedp counterpart of journey.mjs's "set" reading.
const viewScript = `(async () => {
	const headers = await (await fetch('/headers')).json();
	return {
		userAgent: navigator.userAgent,
		platform: navigator.platform,
		language: navigator.language,
		timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
		screenWidth: screen.width,
		screenHeight: screen.height,
		acceptLanguage: headers.acceptLanguage,
	};
})()`

const stateScript = `({cookie: document.cookie, storage: localStorage.getItem('k')})`

// TestBrowserJourney runs the service with a real Chromium and drives its
// browser the way clients do, through session.cdpUrl: Playwright (Node)
// and chromedp see the profile's fingerprint, reach a site only through
// the profile's authenticated proxy, find the cookies and local storage
// they wrote after a release and a new launch, and a dropped chromedp
// connection finds its page again. No browser outlives its session.
func TestBrowserJourney(t *testing.T) {
	chromium, nodeDir := browserTools(t)

	site := newJourneySite(t)
	_, sitePort, err := net.SplitHostPort(site.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	siteHost := net.JoinHostPort(journeySiteName, sitePort)
	pageURL := "http://" + siteHost + "/"
	proxy := newJourneyProxy(t, map[string]string{siteHost: site.srv.Listener.Addr().String()})

	dir, dataDir, tmpDir := browserDirs(t)
	addr := freeAddr(t)
	base := "http://" + addr
	p := startProcess(t, dir, minimalEnv(
		"HTTP_ADDR="+addr, "DATA_DIR="+dataDir, "TMPDIR="+tmpDir, "LOG_LEVEL=warn",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH="+chromium, "ALLOW_PRIVATE_TARGETS=true",
	), addr)
	stopAtCleanup(t, p, dataDir)

	var signIn struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(base, "/api/v1/auth/register", "", map[string]string{
		"email": "journey@example.com", "password": "a long enough password", "name": "Journey",
	}, &signIn); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, err)
	}
	token := signIn.AccessToken
	var proxyRes struct {
		ID string `json:"id"`
	}
	_, proxyPort, _ := net.SplitHostPort(proxy.srv.Listener.Addr().String())
	port, _ := strconv.Atoi(proxyPort)
	if code, err := post(base, "/api/v1/proxies", token, map[string]any{
		"type": "http", "host": "127.0.0.1", "port": port, "username": journeyProxyUser, "password": journeyProxyPass,
	}, &proxyRes); err != nil || code != http.StatusCreated {
		t.Fatalf("add proxy: %d %v", code, err)
	}
	var prof struct {
		ID string `json:"id"`
	}
	if code, err := post(base, "/api/v1/profiles", token, map[string]any{
		"name": "Journey", "templateId": "tpl_chrome_win_us", "proxy": map[string]string{"id": proxyRes.ID},
		"fingerprint": map[string]any{
			"userAgent": journeyUserAgent, "platform": journeyPlatform, "locale": journeyLocale,
			"timezone": journeyTimezone, "screen": map[string]int{"width": journeyWidth, "height": journeyHeight},
		},
	}, &prof); err != nil || code != http.StatusCreated {
		t.Fatalf("create profile: %d %v", code, err)
	}
	s := &journeySession{base: base, token: token, profile: prof.ID, output: p.output}

	t.Run("playwright", func(t *testing.T) {
		cdpURL := s.launch(t)
		var view pageView
		runNode(t, nodeDir, cdpURL, pageURL, "set", &view)
		checkView(t, chromium, view)
		checkSite(t, site, proxy, siteHost)
		s.release(t)

		cdpURL = s.launch(t)
		var state pageState
		runNode(t, nodeDir, cdpURL, pageURL, "get", &state)
		if state.Cookie != "journey=c1" || state.Storage != "v1" {
			t.Errorf("after release and launch the page has cookie %q and localStorage k=%q, want journey=c1 and v1", state.Cookie, state.Storage)
		}
		s.release(t)
	})

	t.Run("chromedp", func(t *testing.T) {
		cdpURL := s.launch(t)
		var view pageView
		withTab(t, cdpURL, func(ctx context.Context) (err error) {
			if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
				return err
			}
			if view, err = chromedp.Run(ctx, chromedp.Evaluate[pageView](viewScript, chromedp.EvalAwaitPromise)); err != nil {
				return err
			}
			return chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.cookie = 'journey=c2; path=/; expires=Fri, 31 Dec 2060 23:59:59 GMT'; localStorage.setItem('k', 'v2')`))
		})
		checkView(t, chromium, view)
		checkSite(t, site, proxy, siteHost)
		s.release(t)

		cdpURL = s.launch(t)
		var state pageState
		withTab(t, cdpURL, func(ctx context.Context) (err error) {
			if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
				return err
			}
			state, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](stateScript))
			return err
		})
		if state.Cookie != "journey=c2" || state.Storage != "v2" {
			t.Errorf("after release and launch the page has cookie %q and localStorage k=%q, want journey=c2 and v2", state.Cookie, state.Storage)
		}
		s.release(t)
	})

	t.Run("reconnect", func(t *testing.T) {
		cdpURL := s.launch(t)

		// The first connection opens a page, marks it, and leaves: the
		// tab is detached, not closed, and the connection dropped.
		var pageID target.ID
		withTab(t, cdpURL, func(ctx context.Context) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.Evaluate[chromedp.Void](`window.journeyMark = 'left here'`)); err != nil {
				return err
			}
			pageID = chromedp.FromContext(ctx).Target.TargetID
			return nil
		}, chromedp.WithDetachOnCancel())

		// The second connection, on the same URL, finds the page as it
		// was left. Listing targets opens no tab of its own.
		withTab(t, cdpURL, func(ctx context.Context) error {
			targets, err := chromedp.Targets(ctx)
			if err != nil {
				return fmt.Errorf("targets after reconnecting: %w", err)
			}
			var found *target.Info
			for _, info := range targets {
				if info.TargetID == pageID {
					found = info
				}
			}
			if found == nil || found.Type != "page" || found.URL != pageURL {
				return fmt.Errorf("after reconnecting, page %s at %s is not among the targets: %s", pageID, pageURL, describeTargets(targets))
			}
			tabCtx, cancelTab := chromedp.NewContext(ctx, chromedp.WithTargetID(pageID))
			defer cancelTab()
			mark, err := chromedp.Run(tabCtx, chromedp.Evaluate[string](`window.journeyMark`))
			if err != nil {
				return fmt.Errorf("attaching to the page after reconnecting: %w", err)
			}
			if mark != "left here" {
				return fmt.Errorf("the page after reconnecting has mark %q, want the one set before the drop", mark)
			}
			return nil
		})
		s.release(t)
	})

	// Release closed every browser, and with it every process that ran
	// with the service's data directory.
	waitNoProcessMentions(t, dataDir)
}

// browserTools finds Chromium and the Node client, or skips the test
// saying what is missing; with CI set, a missing piece fails it instead.
func browserTools(t *testing.T) (chromium, nodeDir string) {
	t.Helper()
	missing := missingTool(t, "the browser journey", "apt-get install chromium bubblewrap; npm ci --prefix tests/e2e/node")
	chromium = os.Getenv("CHROMIUM_PATH")
	if chromium == "" {
		chromium = "chromium"
	}
	path, err := exec.LookPath(chromium)
	if err != nil {
		missing("Chromium: " + err.Error())
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		missing("bubblewrap: " + err.Error())
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("Node.js: " + err.Error())
	}
	nodeDir, err = filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core in tests/e2e/node/node_modules: " + err.Error())
	}
	return path, nodeDir
}

// journeySession launches and releases the journey's profile.
type journeySession struct {
	base    string
	token   string
	profile string
	output  *testenv.Output
	// running is whether a launched session awaits its release.
	running bool
}

// launch starts a headless browser for the profile and returns its cdpUrl.
// A step that fails before its release leaves the session to the release
// at the end of t, so that the next step can launch.
func (s *journeySession) launch(t *testing.T) string {
	t.Helper()
	return s.launchAs(t, true)
}

// launchAs is launch, headless or headed.
func (s *journeySession) launchAs(t *testing.T, headless bool) string {
	t.Helper()
	var res struct {
		Session struct {
			ID     string  `json:"id"`
			CDPURL *string `json:"cdpUrl"`
		} `json:"session"`
	}
	code, err := post(s.base, "/api/v1/profiles/"+s.profile+"/launch", s.token, map[string]any{"headless": headless}, &res)
	if err != nil || code != http.StatusOK {
		t.Fatalf("launch: %d %v\n%s", code, err, s.output)
	}
	if res.Session.CDPURL == nil {
		t.Fatalf("launch answered no cdpUrl: the service runs no browser\n%s", s.output)
	}
	u, err := url.Parse(*res.Session.CDPURL)
	if err != nil || u.Scheme != "ws" || u.Path != "/api/v1/sessions/"+res.Session.ID+"/cdp" || u.Query().Get("token") == "" {
		t.Fatalf("cdpUrl %q is not ws://<host>/api/v1/sessions/%s/cdp?token=...", *res.Session.CDPURL, res.Session.ID)
	}
	s.running = true
	t.Cleanup(func() {
		if s.running {
			s.release(t)
		}
	})
	return *res.Session.CDPURL
}

// release ends the session; the service answers once the browser's data
// are stored.
func (s *journeySession) release(t *testing.T) {
	t.Helper()
	if code, err := post(s.base, "/api/v1/profiles/"+s.profile+"/release", s.token, map[string]any{}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("release: %d %v\n%s", code, err, s.output)
	}
	s.running = false
}

// runNode runs journey.mjs in mode and decodes the JSON line it prints.
func runNode(t *testing.T, nodeDir, cdpURL, pageURL, mode string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "journey.mjs", cdpURL, pageURL, mode)
	cmd.Dir = nodeDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node journey.mjs %s: %v\n%s", mode, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("node journey.mjs %s printed %q: %v", mode, stdout, err)
	}
}

// withTab connects chromedp to cdpURL and runs fn in a context of its own
// tab (opened by fn's first action), then closes the tab (or with
// chromedp.WithDetachOnCancel leaves it) and drops the connection. The
// browser keeps running: cancelling a remote allocator only disconnects.
func withTab(t *testing.T, cdpURL string, fn func(ctx context.Context) error, opts ...chromedp.ContextOption) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	allocCtx, cancelAlloc := remote.NewAllocator(ctx, cdpURL, remote.NoModifyURL)
	defer cancelAlloc()
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, opts...)
	defer cancelTab()
	if err := fn(tabCtx); err != nil {
		t.Fatalf("chromedp: %v", err)
	}
}

// checkView asserts that a page saw the journey's fingerprint, with the
// user agent at the version of the engine (Chromium at chromium).
func checkView(t *testing.T, chromium string, v pageView) {
	t.Helper()
	ua := strings.Replace(journeyUserAgent, "Chrome/131.0.0.0", "Chrome/"+engineMajor(t, chromium)+".0.0.0", 1)
	want := pageView{
		UserAgent: ua, Platform: journeyPlatform, Language: journeyLocale,
		Timezone: journeyTimezone, ScreenWidth: journeyWidth, ScreenHeight: journeyHeight,
		AcceptLanguage: v.AcceptLanguage,
	}
	if v != want {
		t.Errorf("the page sees %+v, want %+v", v, want)
	}
	if first := firstLanguage(v.AcceptLanguage); first != journeyLocale {
		t.Errorf("the site received Accept-Language %q, want %s first", v.AcceptLanguage, journeyLocale)
	}
}

// engineMajor is the major version chromium says it is ("Chromium
// 156.0.8078.108 built on Debian...").
func engineMajor(t *testing.T, chromium string) string {
	t.Helper()
	out, err := exec.Command(chromium, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", chromium, err)
	}
	for _, field := range strings.Fields(string(out)) {
		if major, _, ok := strings.Cut(field, "."); ok {
			if _, err := strconv.Atoi(major); err == nil {
				return major
			}
		}
	}
	t.Fatalf("%s --version says no version: %q", chromium, out)
	return ""
}

// firstLanguage is the first language tag of an Accept-Language value.
func firstLanguage(header string) string {
	first, _, _ := strings.Cut(header, ",")
	tag, _, _ := strings.Cut(first, ";")
	return strings.TrimSpace(tag)
}

// checkSite asserts that the page's navigation reached the site with the
// fingerprint's language, through the proxy with its credentials.
func checkSite(t *testing.T, site *journeySite, proxy *journeyProxy, siteHost string) {
	t.Helper()
	langs := site.navigationLanguages()
	if len(langs) == 0 {
		t.Fatal("the site served no page")
	}
	for _, l := range langs {
		if firstLanguage(l) != journeyLocale {
			t.Errorf("a navigation to the site sent Accept-Language %q, want %s first", l, journeyLocale)
		}
	}
	if n := proxy.carriedCount(siteHost); n == 0 {
		t.Errorf("the proxy carried nothing to %s with its credentials; it carried %v and refused %d requests without them",
			siteHost, proxy.carriedHosts(), proxy.deniedCount())
	}
	// The browser calls nobody by itself (sign-in, updates, components,
	// safe browsing): the only host it asked for is the site.
	for host := range proxy.carriedHosts() {
		if host != siteHost {
			t.Errorf("the browser asked the proxy for %s, which no page of the test named", host)
		}
	}
}

// stopAtCleanup stops the service p with SIGTERM when the test ends, if a
// failed step left it running, and checks it exits 0: a graceful shutdown
// closes the browsers it runs, and none may outlive it (none mentions
// dataDir afterwards).
func stopAtCleanup(t *testing.T, p *process, dataDir string) {
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Error(err)
			}
			if code := p.wait(t); code != 0 {
				t.Errorf("exit code %d after SIGTERM\n%s", code, p.output)
			}
		}
		waitNoProcessMentions(t, dataDir)
	})
}

// browserDirs makes a directory for a service that runs browsers: dir
// itself, dataDir (DATA_DIR, not made: the service makes it) and tmpDir
// (TMPDIR, made, so the browsers' temporary files stay inside dir).
func browserDirs(t *testing.T) (dir, dataDir, tmpDir string) {
	dir = t.TempDir()
	dataDir = filepath.Join(dir, "data")
	tmpDir = filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmpDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir, dataDir, tmpDir
}

// missingTool is what a test calls when a tool it needs is missing: it
// skips the test saying what to install, or fails it when CI is set.
func missingTool(t *testing.T, test, install string) func(what string) {
	return func(what string) {
		t.Helper()
		msg := test + " needs " + what + " (" + install + ")"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI is set, so it must run")
		}
		t.Skip(msg)
	}
}

// waitNoProcessMentions waits until no process names s in its command
// line or its mount table (a sandboxed browser sees its profile directory
// only there).
func waitNoProcessMentions(t *testing.T, s string) {
	t.Helper()
	poll.Check(t, 20*time.Second, "the processes of "+s+" to exit", func() error {
		if left := processesMentioning(t, s); len(left) > 0 {
			return fmt.Errorf("still running:\n%s", strings.Join(left, "\n"))
		}
		return nil
	})
}

// processesMentioning describes the processes that name s in their
// command line or mount table.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	var found []string
	for _, pid := range testenv.ProcessesUsing(s) {
		found = append(found, strconv.Itoa(pid)+": "+testenv.CommandLine(pid))
	}
	return found
}

func describeTargets(targets []*target.Info) string {
	var b strings.Builder
	for _, info := range targets {
		fmt.Fprintf(&b, "\n  %s %s %s", info.TargetID, info.Type, info.URL)
	}
	return b.String()
}

// journeySite is the web server the browser visits: a page, and /headers
// answering with the Accept-Language it received.
type journeySite struct {
	srv   *httptest.Server
	mu    sync.Mutex
	langs []string
}

func newJourneySite(t *testing.T) *journeySite {
	t.Helper()
	s := &journeySite{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.langs = append(s.langs, r.Header.Get("Accept-Language"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>journey</title><p>journey</p>")
	})
	mux.HandleFunc("GET /headers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"acceptLanguage": r.Header.Get("Accept-Language")})
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *journeySite) navigationLanguages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.langs...)
}

// journeyProxy is an HTTP proxy that demands Basic credentials, tunnels
// CONNECT and forwards absolute-URI requests, and reaches only the
// addresses routes names: any other target is refused, so the browser's
// traffic never leaves the machine.
type journeyProxy struct {
	srv       *httptest.Server
	routes    map[string]string
	transport *http.Transport

	mu      sync.Mutex
	carried map[string]int
	denied  int
	tunnels map[net.Conn]struct{}
}

func newJourneyProxy(t *testing.T, routes map[string]string) *journeyProxy {
	t.Helper()
	p := &journeyProxy{
		routes:    routes,
		transport: &http.Transport{Proxy: nil},
		carried:   map[string]int{},
		tunnels:   map[net.Conn]struct{}{},
	}
	p.srv = httptest.NewServer(p)
	t.Cleanup(func() {
		p.mu.Lock()
		for c := range p.tunnels {
			c.Close()
		}
		p.mu.Unlock()
		p.srv.Close()
		p.transport.CloseIdleConnections()
	})
	return p
}

func (p *journeyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if r.Method != http.MethodConnect {
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		target = r.URL.Host
		if r.URL.Port() == "" {
			target = net.JoinHostPort(r.URL.Hostname(), "80")
		}
	}
	user, pass, ok := proxyCredentials(r.Header.Get("Proxy-Authorization"))
	if !ok || user != journeyProxyUser || pass != journeyProxyPass {
		p.mu.Lock()
		p.denied++
		p.mu.Unlock()
		w.Header().Set("Proxy-Authenticate", `Basic realm="journey"`)
		w.WriteHeader(http.StatusProxyAuthRequired)
		return
	}
	p.mu.Lock()
	p.carried[target]++
	p.mu.Unlock()
	local, ok := p.routes[target]
	if !ok {
		http.Error(w, "this proxy reaches only the test's site", http.StatusBadGateway)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, local)
		return
	}
	p.forward(w, r, local)
}

// proxyCredentials decodes a Basic Proxy-Authorization header.
func proxyCredentials(header string) (user, pass string, ok bool) {
	encoded, found := strings.CutPrefix(header, "Basic ")
	if !found {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}

func (p *journeyProxy) tunnel(w http.ResponseWriter, local string) {
	up, err := net.DialTimeout("tcp", local, 5*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	client, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	p.mu.Lock()
	p.tunnels[client], p.tunnels[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	defer func() {
		client.Close()
		up.Close()
		p.mu.Lock()
		delete(p.tunnels, client)
		delete(p.tunnels, up)
		p.mu.Unlock()
	}()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, rw.Reader)
		up.Close()
	}()
	_, _ = io.Copy(client, up)
	client.Close()
	<-done
}

func (p *journeyProxy) forward(w http.ResponseWriter, r *http.Request, local string) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Host = local
	out.Header.Del("Proxy-Authorization")
	out.Header.Del("Proxy-Connection")
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *journeyProxy) carriedCount(host string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.carried[host]
}

func (p *journeyProxy) carriedHosts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.carried))
	for k, v := range p.carried {
		out[k] = v
	}
	return out
}

func (p *journeyProxy) deniedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.denied
}
