//go:build linux

package chromium

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// testSandbox finds bubblewrap or skips the test.
func testSandbox(t *testing.T) Sandbox {
	t.Helper()
	path, ok := FindBwrap("")
	if !ok {
		if os.Getenv("CI") != "" {
			t.Fatal("no bwrap on PATH: CI installs bubblewrap")
		}
		t.Skip("no bwrap on PATH: install bubblewrap (apt-get install bubblewrap) to run the browser runtime's tests")
	}
	return Sandbox{Bwrap: path}
}

// chromiumPath finds the browser or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	path, ok := Find("")
	if !ok {
		t.Skip("no Chromium on PATH: install chromium (apt-get install chromium bubblewrap) to run the browser runtime's tests")
	}
	return path
}

// newRuntime builds a runtime in a fresh work directory and closes it when
// the test ends.
func newRuntime(t *testing.T, maxBrowsers int) *Runtime {
	t.Helper()
	rt, err := New(Options{
		Path: chromiumPath(t), MaxBrowsers: maxBrowsers, WorkDir: filepath.Join(t.TempDir(), "browsers"),
		AllowPrivateTargets: true, Sandbox: testSandbox(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

var testFingerprint = profile.Fingerprint{
	UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	Platform:  "Win32", Locale: "de-DE", Timezone: "Asia/Tokyo", Screen: profile.Screen{Width: 1366, Height: 768},
}

func launchSpec(profileID, sessionID string) ports.LaunchSpec {
	return ports.LaunchSpec{
		Profile: profile.Profile{
			ID: profileID, TeamID: "team_chromium", Name: "Chromium", TemplateID: "tpl_chrome_win_de",
			Browser: profile.BrowserChromium, Fingerprint: testFingerprint, Version: 1,
		},
		SessionID: sessionID, Headless: true,
	}
}

func TestConformance(t *testing.T) {
	chromiumPath(t)
	conformance.RunBrowserRuntime(t, func(t *testing.T) ports.BrowserRuntime { return newRuntime(t, 2) }, conformance.BrowserServesCDP)
}

// client is a CDP client of the test's own, as a customer's Playwright or
// chromedp would connect; each call to page opens a new tab.
type client struct {
	t     *testing.T
	alloc context.Context
}

func connect(t *testing.T, cdpURL string) *client {
	t.Helper()
	alloc, cancel := remote.NewAllocator(testContext(t), cdpURL, remote.NoModifyURL)
	t.Cleanup(cancel)
	return &client{t: t, alloc: alloc}
}

// page opens a new tab at url; the tab closes when the test ends.
func (c *client) page(url string) context.Context {
	c.t.Helper()
	ctx, cancel := chromedp.NewContext(c.alloc)
	c.t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		c.t.Fatalf("navigate to %s: %v", url, err)
	}
	return ctx
}

func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// pageServer serves a blank page on loopback and records the
// Accept-Language of each request.
type pageServer struct {
	*httptest.Server
	mu        sync.Mutex
	languages []string
}

func newPageServer(t *testing.T) *pageServer {
	ps := &pageServer{}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			ps.mu.Lock()
			ps.languages = append(ps.languages, r.Header.Get("Accept-Language"))
			ps.mu.Unlock()
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!doctype html><title>test</title>")
	}))
	t.Cleanup(ps.Close)
	return ps
}

func TestAPageSeesTheFingerprint(t *testing.T) {
	rt := newRuntime(t, 1)
	srv := newPageServer(t)
	_, err := rt.Start(testContext(t), launchSpec("prf_fp", "ses_fp"))
	if err != nil {
		t.Fatal(err)
	}
	page := connect(t, relayURL(t, rt, "ses_fp")).page(srv.URL + "/")
	type seen struct {
		UserAgent, Platform, Language, TimeZone string
		Width, Height                           int
	}
	got := evaluate[seen](t, page, `({
		UserAgent: navigator.userAgent, Platform: navigator.platform, Language: navigator.language,
		TimeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
		Width: screen.width, Height: screen.height})`)
	// The user agent names the version of the engine, as the browser
	// itself reports it ("HeadlessChrome/156.0.8078.108").
	version, err := chromedp.CallBrowser(page, cdpbrowser.GetVersion, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	product := version.Product
	_, engine, _ := strings.Cut(product, "/")
	major, _, _ := strings.Cut(engine, ".")
	wantUA := strings.Replace(testFingerprint.UserAgent, "Chrome/131.0.0.0", "Chrome/"+major+".0.0.0", 1)
	want := seen{wantUA, "Win32", "de-DE", "Asia/Tokyo", 1366, 768}
	if major == "" || got != want {
		t.Errorf("the page sees %+v, want %+v (the engine is %s)", got, want, product)
	}
	brands := evaluate[string](t, page, `navigator.userAgentData.brands.map(b => b.brand + "/" + b.version).join(",") + " " + navigator.userAgentData.platform`)
	if !strings.Contains(brands, "Chromium/"+major+",") || !strings.Contains(brands, "Google Chrome/"+major) || !strings.HasSuffix(brands, " Windows") {
		t.Errorf("navigator.userAgentData says %q, want Chromium and Google Chrome %s on Windows", brands, major)
	}
	full := evaluate[string](t, page, `navigator.userAgentData.getHighEntropyValues(["fullVersionList"]).then(v => v.fullVersionList.map(b => b.brand + "/" + b.version).join(","))`)
	if !strings.Contains(full, "Chromium/"+engine) {
		t.Errorf("the full version list %q lacks Chromium/%s", full, engine)
	}
	srv.mu.Lock()
	languages := append([]string(nil), srv.languages...)
	srv.mu.Unlock()
	if len(languages) == 0 || !strings.HasPrefix(languages[0], "de-DE") {
		t.Errorf("the server saw Accept-Language %q, want one starting with de-DE", languages)
	}
}

func TestDataRoundTrip(t *testing.T) {
	rt := newRuntime(t, 1)
	srv := newPageServer(t)
	first := launchSpec("prf_data", "ses_data_1")
	_, err := rt.Start(testContext(t), first)
	if err != nil {
		t.Fatal(err)
	}
	page := connect(t, relayURL(t, rt, first.SessionID)).page(srv.URL + "/")
	evaluate[chromedp.Void](t, page, `document.cookie = "kept=cookie-value; max-age=3600; path=/"; localStorage.setItem("kept", "storage-value")`)

	state, err := rt.Stop(testContext(t), first.Profile.ID, first.SessionID)
	if err != nil || state == nil {
		t.Fatalf("Stop: %v, %v", state, err)
	}
	archive, err := io.ReadAll(state.Archive)
	if err != nil {
		t.Fatalf("reading the archive: %v", err)
	}
	if err := state.Archive.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rt.opts.WorkDir, first.SessionID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the session's directory is still there after the archive was closed: %v", err)
	}
	expectNoBrowser(t, filepath.Join(rt.opts.WorkDir, first.SessionID))
	if !hasCookie(state.Cookies, "kept", "cookie-value") {
		t.Errorf("Stop returned the cookies %+v, want kept=cookie-value", state.Cookies)
	}
	names := archiveNames(t, archive)
	if !names["Default/"] {
		t.Errorf("the archive has no Default/ directory: %v", names)
	}
	for name := range names {
		if strings.HasPrefix(name, "Singleton") || strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
			t.Errorf("the archive holds %q", name)
		}
	}

	second := launchSpec("prf_data", "ses_data_2")
	second.Data = bytes.NewReader(archive)
	second.Cookies = state.Cookies
	_, err = rt.Start(testContext(t), second)
	if err != nil {
		t.Fatal(err)
	}
	page = connect(t, relayURL(t, rt, second.SessionID)).page(srv.URL + "/")
	if got := evaluate[string](t, page, `localStorage.getItem("kept") + " " + document.cookie`); got != "storage-value kept=cookie-value" {
		t.Errorf("the second session sees %q, want the first one's storage and cookie", got)
	}
	cookies, err := rt.Cookies(testContext(t), second.SessionID)
	if err != nil || !hasCookie(cookies, "kept", "cookie-value") {
		t.Errorf("Cookies: %+v, %v; want kept=cookie-value", cookies, err)
	}
}

// TestCookiesGoInBeforeStartReturns puts cookies that the data do not hold.
func TestCookiesGoInBeforeStartReturns(t *testing.T) {
	rt := newRuntime(t, 1)
	spec := launchSpec("prf_cookies", "ses_cookies")
	spec.Cookies = []browserdata.Cookie{
		{Name: "session", Value: "s1", Domain: "127.0.0.1", Path: "/", Expires: -1, SameSite: browserdata.SameSiteLax},
		{Name: "strict", Value: "s2", Domain: "127.0.0.1", Path: "/", Expires: float64(time.Now().Add(time.Hour).Unix()), HTTPOnly: true, SameSite: browserdata.SameSiteStrict},
	}
	if _, err := rt.Start(testContext(t), spec); err != nil {
		t.Fatal(err)
	}
	got, err := rt.Cookies(testContext(t), spec.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]browserdata.Cookie{}
	for _, c := range got {
		byName[c.Name] = c
	}
	if c := byName["session"]; c.Value != "s1" || c.Expires != -1 || c.SameSite != browserdata.SameSiteLax {
		t.Errorf("session cookie read back as %+v", c)
	}
	if c := byName["strict"]; c.Value != "s2" || c.Expires != spec.Cookies[1].Expires || !c.HTTPOnly || c.SameSite != browserdata.SameSiteStrict {
		t.Errorf("strict cookie read back as %+v, want %+v", c, spec.Cookies[1])
	}
}

func TestAKilledBrowserIsReportedCrashed(t *testing.T) {
	rt := newRuntime(t, 1)
	spec := launchSpec("prf_crash", "ses_crash")
	if _, err := rt.Start(testContext(t), spec); err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	pid := rt.sessions[spec.SessionID].proc.cmd.Process.Pid
	rt.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	expectExit(t, rt, spec, profile.StopCrashed)
	if conn, err := rt.Connect(testContext(t), spec.SessionID); !domain.IsKind(err, domain.KindNotFound) {
		if conn != nil {
			conn.Close()
		}
		t.Errorf("Connect to a dead browser: %v, want NotFound", err)
	}
	expectArchive(t, rt, spec)
}

func TestAClientThatClosesTheBrowserIsReportedClosed(t *testing.T) {
	rt := newRuntime(t, 1)
	spec := launchSpec("prf_closed", "ses_closed")
	if _, err := rt.Start(testContext(t), spec); err != nil {
		t.Fatal(err)
	}
	conn, err := rt.Connect(testContext(t), spec.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Send(testContext(t), []byte(`{"id":1,"method":"Browser.close"}`)); err != nil {
		t.Fatal(err)
	}
	expectExit(t, rt, spec, profile.StopClosed)
	expectArchive(t, rt, spec)
}

func TestMaxBrowsers(t *testing.T) {
	rt := newRuntime(t, 1)
	first := launchSpec("prf_max_1", "ses_max_1")
	if _, err := rt.Start(testContext(t), first); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Start(testContext(t), launchSpec("prf_max_2", "ses_max_2"))
	if !domain.IsKind(err, domain.KindUnavailable) {
		t.Fatalf("a second Start with MaxBrowsers 1: %v, want Unavailable", err)
	}
	if entries, _ := os.ReadDir(rt.opts.WorkDir); len(entries) != 1 {
		t.Errorf("the refused Start left a directory: %d entries in the work directory", len(entries))
	}
}

func TestCloseEndsEveryBrowser(t *testing.T) {
	rt := newRuntime(t, 2)
	for _, id := range []string{"ses_close_1", "ses_close_2"} {
		if _, err := rt.Start(testContext(t), launchSpec("prf_"+id, id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Close(testContext(t)); err != nil {
		t.Fatal(err)
	}
	expectNoBrowser(t, rt.opts.WorkDir)
	if entries, _ := os.ReadDir(rt.opts.WorkDir); len(entries) != 0 {
		t.Errorf("Close left %d directories", len(entries))
	}
	if _, err := rt.Start(testContext(t), launchSpec("prf_after", "ses_after")); !domain.IsKind(err, domain.KindUnavailable) {
		t.Errorf("Start after Close: %v, want Unavailable", err)
	}
}

func TestNewClearsWhatAPreviousProcessLeft(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "browsers")
	if err := os.MkdirAll(filepath.Join(dir, "ses_left", "profile"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Path: "/bin/true", MaxBrowsers: 1, WorkDir: dir, Sandbox: Sandbox{Bwrap: "/bin/true"}}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("the work directory holds %d entries (%v), want none", len(entries), err)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the work directory: %v, %v; want mode 0700", info, err)
	}
}

func expectExit(t *testing.T, rt *Runtime, spec ports.LaunchSpec, reason profile.StopReason) {
	t.Helper()
	select {
	case exit := <-rt.Exits():
		want := ports.BrowserExit{ProfileID: spec.Profile.ID, SessionID: spec.SessionID, Reason: reason}
		if exit != want {
			t.Fatalf("Exits delivered %+v, want %+v", exit, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no exit reported within 5 s, want %s", reason)
	}
}

// expectArchive stops a session whose browser ended and checks that its
// data still come back.
func expectArchive(t *testing.T, rt *Runtime, spec ports.LaunchSpec) {
	t.Helper()
	state, err := rt.Stop(testContext(t), spec.Profile.ID, spec.SessionID)
	if err != nil || state == nil {
		t.Fatalf("Stop of an ended browser: %v, %v; want its data", state, err)
	}
	data, err := io.ReadAll(state.Archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := state.Archive.Close(); err != nil {
		t.Fatal(err)
	}
	if names := archiveNames(t, data); !names["Default/"] {
		t.Errorf("the archive of an ended browser has no Default/: %v", names)
	}
	expectNoBrowser(t, filepath.Join(rt.opts.WorkDir, spec.SessionID))
}

// expectNoBrowser fails when a live process names dir on its command line.
func expectNoBrowser(t *testing.T, dir string) {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			t.Errorf("process %s still runs: %s", p.Name(), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

func hasCookie(cookies []browserdata.Cookie, name, value string) bool {
	for _, c := range cookies {
		if c.Name == name && c.Value == value {
			return true
		}
	}
	return false
}

func TestAHeadedLaunchWithoutXvfbRunsHeadless(t *testing.T) {
	rt := newRuntime(t, 1)
	rt.opts.Sandbox.Xvfb = ""
	spec := launchSpec("prf_headed", "ses_headed")
	spec.Headless = false
	if _, err := rt.Start(testContext(t), spec); err != nil {
		t.Fatalf("a headed launch without Xvfb: %v", err)
	}
	expectVersion(t, rt, spec.SessionID)
}

func TestASessionIDThatIsNoDirectoryNameIsRefused(t *testing.T) {
	root := t.TempDir()
	rt, err := New(Options{Path: "/bin/false", MaxBrowsers: 1, WorkDir: filepath.Join(root, "browsers"), Sandbox: testSandbox(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "..", "../escape", "a/b"} {
		if _, err := rt.Start(testContext(t), launchSpec("prf_bad", id)); err == nil {
			t.Errorf("Start accepted the session id %q", id)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "escape")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory was made outside the work directory: %v", err)
	}
}

func TestAFailedLaunchFreesItsSlot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "browsers")
	rt, err := New(Options{Path: "/bin/false", MaxBrowsers: 1, WorkDir: dir, Sandbox: testSandbox(t)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		_, err := rt.Start(testContext(t), launchSpec("prf_false", "ses_false_"+strconv.Itoa(i)))
		if err == nil || domain.IsKind(err, domain.KindUnavailable) {
			t.Fatalf("Start %d of a browser that exits at once: %v, want a launch failure", i, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed launches left %d directories", len(entries))
	}
}

// TestAStoppedBrowserIsEndedWithinTheDeadlines stops every process of a
// browser's sandbox (SIGSTOP): it answers nothing any more. Stop must
// still end it within its deadlines, free its slot and return its data,
// and the next launch must work.
func TestAStoppedBrowserIsEndedWithinTheDeadlines(t *testing.T) {
	rt := newRuntime(t, 1)
	spec := launchSpec("prf_stopped", "ses_stopped")
	if _, err := rt.Start(testContext(t), spec); err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	proc := rt.sessions[spec.SessionID].proc
	rt.mu.Unlock()
	stopped := 0
	for _, pid := range testenv.Descendants(proc.cmd.Process.Pid) {
		if exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); strings.Contains(exe, "chromium") || strings.Contains(exe, "chrome") {
			if syscall.Kill(pid, syscall.SIGSTOP) == nil {
				stopped++
			}
		}
	}
	if stopped == 0 {
		t.Fatal("no browser process found in the sandbox")
	}
	began := time.Now()
	state, err := rt.Stop(testContext(t), spec.Profile.ID, spec.SessionID)
	if err != nil || state == nil {
		t.Fatalf("Stop of a stopped browser: %v, %v", state, err)
	}
	if _, err := io.Copy(io.Discard, state.Archive); err != nil {
		t.Fatalf("the data of a stopped browser: %v", err)
	}
	if err := state.Archive.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop of a browser stopped with SIGSTOP took %s (a cookie read of at most 5 s, then SIGKILL)", time.Since(began).Round(time.Millisecond))
	if _, err := rt.Start(testContext(t), launchSpec("prf_after_stopped", "ses_after_stopped")); err != nil {
		t.Fatalf("a launch after the stopped browser ended: %v", err)
	}
}
