//go:build linux

package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/profilesvc/profilesvc/adapters/browser/chromium"
	"github.com/profilesvc/profilesvc/tests/bench/load"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// The browser figures (issue #28) set the service's sandboxed browser,
// reached through its CDP relay, beside a bare Chromium that the bench
// starts itself as the runtime did before the sandbox: the same binary and
// flags, a DevTools port instead of the pipe, no bwrap, no relay. Both
// take turns, so that what else loads the machine falls on both alike.

// browserOptions say how many samples the browser figures take.
type browserOptions struct {
	launches   int // launch and release (kill) of each kind
	connects   int // connect + new page of each kind
	roundTrips int // Runtime.evaluate calls of each kind
	memory     int // browsers of each kind whose memory is read, alone
	// before is the git revision of the service before the sandbox.
	before string
	// beforeDevice is that of the service before the device model.
	beforeDevice string
}

// browserFigures are what the browser section measured. The service's
// side is "svc", the bare Chromium's "bare".
type browserFigures struct {
	product               string
	svcLaunch, bareLaunch []time.Duration
	svcRelease, bareKill  []time.Duration
	// The service before the sandbox (-browser-before), when built.
	beforeLaunch, beforeRelease []time.Duration
	// Launch until a first page has loaded: the service, and the service
	// before the device model (-browser-before-device), with their
	// memory per browser.
	svcFirstPage, beforeDeviceFirstPage []time.Duration
	beforeDeviceMemory                  treeMemory
	svcConnect, bareConnect             []time.Duration
	svcRoundTrip, bareRoundTrip         []time.Duration
	// Round trips to the bare browser through a plain Go TCP forwarder.
	fwdRoundTrip          []time.Duration
	svcMemory, bareMemory treeMemory
}

// treeMemory is the memory of a browser's processes, summed (bytes).
// PSS shares each page out among the processes that map it, also those
// of other browsers on the machine; USS counts only the pages no other
// process maps.
type treeMemory struct {
	processes     int
	pss, uss, rss int64
}

// The goals of issue #28.
const (
	launchRatioGoal = 1.15
	// Issue #29: the device may cost at most 10 % of the launch to a
	// first page.
	firstPageRatioGoal = 1.10
	relayConnectGoalMs = 150
	roundTripRatioGoal = 1.2
)

// findBrowser returns Chromium and bubblewrap as the service finds them,
// or why the browser figures cannot be taken.
func findBrowser() (chromiumPath, bwrapPath, why string) {
	chromiumPath, ok := chromium.Find(os.Getenv("CHROMIUM_PATH"))
	if !ok {
		return "", "", "Chromium is not installed (apt-get install chromium, or CHROMIUM_PATH naming it)"
	}
	bwrapPath, ok = chromium.FindBwrap(os.Getenv("BWRAP_PATH"))
	if !ok {
		return "", "", "bubblewrap is not installed (apt-get install bubblewrap, or BWRAP_PATH naming it)"
	}
	return chromiumPath, bwrapPath, ""
}

// browserBins are the binaries the browser figures run: the service, the
// service before the sandbox (none when it could not be built) and the
// limit server, whose forward mode stands beside the relay.
type browserBins struct {
	svc, before, limit string
	// beforeDevice is the service before the device model, for the
	// launch to a first page and the memory (none when not built).
	beforeDevice string
}

// measureBrowsers starts a service with the Chromium runtime and takes the
// browser figures, the service's and the bare browser's in turns; the
// service as it was before the sandbox, when built, also launches and
// releases in the same turns.
func measureBrowsers(ctx context.Context, bins browserBins, dir, chromiumPath, bwrapPath string, o browserOptions) (*browserFigures, error) {
	env := map[string]string{
		"DATABASE_URL": "sqlite://{data}/bench.db", "BROWSER_RUNTIME": "chromium",
		"CHROMIUM_PATH": chromiumPath, "BWRAP_PATH": bwrapPath, "BROWSERS_MAX": "4",
		// The first page is the bench's own, on loopback.
		"ALLOW_PRIVATE_TARGETS": "true",
	}
	svc, err := startBrowserService(ctx, bins.svc, dir, backend{key: "browsers", name: "SQLite, Chromium", env: env})
	if err != nil {
		return nil, err
	}
	in := svc.in
	defer in.proc.stop()
	bare := bareChromium{path: chromiumPath, dir: dir}
	f := &browserFigures{}

	// 1. Launch and release: each kind in turn, in an order that changes
	// every round; one round unmeasured first, so that all start with the
	// binary in the page cache.
	serviceTurn := func(s *serviceBrowsers, launches, releases *[]time.Duration) func(measured bool) error {
		return func(measured bool) error {
			_, took, product, err := s.launch(ctx)
			if err != nil {
				return err
			}
			t0 := time.Now()
			if err := s.release(); err != nil {
				return err
			}
			if measured {
				*launches, *releases = append(*launches, took), append(*releases, time.Since(t0))
			}
			f.product = product
			return nil
		}
	}
	turns := []func(measured bool) error{
		serviceTurn(svc, &f.svcLaunch, &f.svcRelease),
		func(measured bool) error {
			br, took, err := bare.launch(ctx)
			if err != nil {
				return err
			}
			t0 := time.Now()
			br.kill()
			if measured {
				f.bareLaunch, f.bareKill = append(f.bareLaunch, took), append(f.bareKill, time.Since(t0))
			}
			return nil
		},
	}
	if bins.before != "" {
		// The same environment: the service before the sandbox had no use
		// for BWRAP_PATH and ignores it.
		before, err := startBrowserService(ctx, bins.before, dir, backend{key: "browsers-before", name: "SQLite, Chromium, before the sandbox", env: env})
		if err != nil {
			return nil, fmt.Errorf("the service before the sandbox: %w", err)
		}
		defer before.in.proc.stop()
		turns = append(turns, serviceTurn(before, &f.beforeLaunch, &f.beforeRelease))
	}
	fmt.Fprintf(os.Stderr, "browsers: %d launches of each of %d kinds, in turns\n", o.launches, len(turns))
	for i := -1; i < o.launches; i++ {
		for j := range turns {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := turns[(max(i, 0)+j)%len(turns)](i >= 0); err != nil {
				return nil, err
			}
		}
	}

	// 2 and 3. Connect + new page, then round trips on a page, with one
	// browser of each kind running.
	// On an error the browsers end with the service (stopped above) and
	// with br.kill.
	sess, _, _, err := svc.launch(ctx)
	if err != nil {
		return nil, err
	}
	br, _, err := bare.launch(ctx)
	if err != nil {
		return nil, err
	}
	defer br.kill()
	urls := [2]string{sess.CDPURL, br.wsURL}
	fmt.Fprintf(os.Stderr, "browsers: %d connects + new page of each, alternating\n", o.connects)
	for i := -1; i < o.connects; i++ {
		for j := range 2 {
			k := (max(i, 0) + j) % 2
			took, err := connectNewPage(ctx, urls[k])
			if err != nil {
				return nil, err
			}
			switch {
			case i < 0:
			case k == 0:
				f.svcConnect = append(f.svcConnect, took)
			default:
				f.bareConnect = append(f.bareConnect, took)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "browsers: %d Runtime.evaluate round trips on a page of each, in alternating blocks\n", o.roundTrips)
	// The least a Go process in the middle adds: the bare browser's
	// DevTools WebSocket through a plain TCP forwarder of its own.
	hostPort, path, _ := strings.Cut(strings.TrimPrefix(br.wsURL, "ws://"), "/")
	fwd, err := startLimit(bins.limit, dir, "forward", "-to", hostPort)
	if err != nil {
		return nil, err
	}
	defer fwd.stop()
	var pages [3]*cdpPage
	for k, u := range []string{sess.CDPURL, br.wsURL, "ws://" + fwd.addr + "/" + path} {
		if pages[k], err = openPage(ctx, u); err != nil {
			return nil, err
		}
		defer pages[k].close()
	}
	roundTrips := [3]*[]time.Duration{&f.svcRoundTrip, &f.bareRoundTrip, &f.fwdRoundTrip}
	const block = 100
	for k := range pages {
		// Warm-up: the first evaluations compile and settle.
		if _, err := pages[k].evaluate(ctx, block); err != nil {
			return nil, err
		}
	}
	for done := 0; done < o.roundTrips; done += block {
		n := min(block, o.roundTrips-done)
		for j := range pages {
			k := (done/block + j) % len(pages)
			took, err := pages[k].evaluate(ctx, n)
			if err != nil {
				return nil, err
			}
			*roundTrips[k] = append(*roundTrips[k], took...)
		}
	}
	for k := range pages {
		pages[k].close()
	}
	if err := svc.release(); err != nil {
		return nil, err
	}
	br.kill()

	// 4. Launch until a first page has loaded, beside the service before
	// the device model.
	var beforeDevice *serviceBrowsers
	if bins.beforeDevice != "" {
		if beforeDevice, err = startBrowserService(ctx, bins.beforeDevice, dir, backend{key: "browsers-before-device", name: "SQLite, Chromium, before the device model", env: env}); err != nil {
			return nil, fmt.Errorf("the service before the device model: %w", err)
		}
		defer beforeDevice.in.proc.stop()
		page, err := firstPageServer()
		if err != nil {
			return nil, err
		}
		defer page.Close()
		fmt.Fprintf(os.Stderr, "browsers: %d launches to a first page of each, in turns\n", o.launches)
		kinds := []struct {
			s   *serviceBrowsers
			out *[]time.Duration
		}{{svc, &f.svcFirstPage}, {beforeDevice, &f.beforeDeviceFirstPage}}
		for i := -1; i < o.launches; i++ {
			for j := range kinds {
				k := kinds[(max(i, 0)+j)%len(kinds)]
				took, err := k.s.launchToFirstPage(ctx, "http://"+page.Addr().String()+"/")
				if err != nil {
					return nil, err
				}
				if i >= 0 {
					*k.out = append(*k.out, took)
				}
			}
		}
	}

	// 5. Memory: each browser alone on the machine (pages that two
	// browsers share would be shared out between them), as launched, with
	// one client connected, after it settled.
	fmt.Fprintf(os.Stderr, "browsers: memory of %d browsers of each, one at a time\n", o.memory)
	var svcMem, bareMem, beforeDeviceMem []treeMemory
	for range o.memory {
		if beforeDevice != nil {
			sess, _, _, err := beforeDevice.launch(ctx)
			if err != nil {
				return nil, err
			}
			pid := beforeDevice.in.proc.cmd.Process.Pid
			m, err := settledMemory(ctx, sess.CDPURL, func() treeMemory { return memoryOf(testenv.Descendants(pid)) })
			if err != nil {
				return nil, err
			}
			beforeDeviceMem = append(beforeDeviceMem, m)
			if err := beforeDevice.release(); err != nil {
				return nil, err
			}
		}
		sess, _, _, err := svc.launch(ctx)
		if err != nil {
			return nil, err
		}
		m, err := settledMemory(ctx, sess.CDPURL, func() treeMemory { return memoryOf(testenv.Descendants(in.proc.cmd.Process.Pid)) })
		if err != nil {
			return nil, err
		}
		svcMem = append(svcMem, m)
		if err := svc.release(); err != nil {
			return nil, err
		}
		br, _, err := bare.launch(ctx)
		if err != nil {
			return nil, err
		}
		pid := br.cmd.Process.Pid
		m, err = settledMemory(ctx, br.wsURL, func() treeMemory { return memoryOf(append([]int{pid}, testenv.Descendants(pid)...)) })
		br.kill()
		if err != nil {
			return nil, err
		}
		bareMem = append(bareMem, m)
	}
	f.svcMemory, f.bareMemory = medianMemory(svcMem), medianMemory(bareMem)
	if len(beforeDeviceMem) > 0 {
		f.beforeDeviceMemory = medianMemory(beforeDeviceMem)
	}
	return f, nil
}

// firstPageServer serves the page every launch opens first.
func firstPageServer() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><title>first</title><p>the first page</p>")
	})}
	go func() { _ = srv.Serve(ln) }()
	return ln, nil
}

// launchToFirstPage is POST /launch, then what a client does first:
// connect through the cdpUrl, open a page and load url in it, until its
// load event; then the release, unmeasured.
func (s *serviceBrowsers) launchToFirstPage(ctx context.Context, url string) (time.Duration, error) {
	t0 := time.Now()
	var out struct {
		Data struct {
			Session browserSession `json:"session"`
		} `json:"data"`
	}
	if err := api(s.in.addr, "POST", "/api/v1/profiles/"+s.profile+"/launch", [2]string{"X-API-Key", s.key}, map[string]any{"headless": true}, 200, &out); err != nil {
		return 0, fmt.Errorf("launch: %w (%s)", err, s.in.proc.tail())
	}
	if err := loadFirstPage(ctx, out.Data.Session.CDPURL, url); err != nil {
		return 0, fmt.Errorf("the first page: %w", err)
	}
	took := time.Since(t0)
	return took, s.release()
}

// loadFirstPage connects to cdpURL, opens a page, navigates it to url and
// waits for its load event.
func loadFirstPage(ctx context.Context, cdpURL, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := dialCDP(ctx, cdpURL)
	if err != nil {
		return err
	}
	defer c.close()
	_, session, err := c.newPage(ctx)
	if err != nil {
		return err
	}
	if _, err := c.call(ctx, session, "Page.enable", nil); err != nil {
		return err
	}
	c.last++
	raw, _ := json.Marshal(map[string]any{"id": c.last, "method": "Page.navigate", "params": map[string]any{"url": url}, "sessionId": session})
	if err := c.ws.Write(ctx, websocket.MessageText, raw); err != nil {
		return err
	}
	answered, loaded := false, false
	for !answered || !loaded {
		_, raw, err := c.ws.Read(ctx)
		if err != nil {
			return err
		}
		var m struct {
			ID        int64           `json:"id"`
			Method    string          `json:"method"`
			SessionID string          `json:"sessionId"`
			Error     json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		switch {
		case m.ID == c.last && m.Error != nil:
			return fmt.Errorf("navigate: %s", m.Error)
		case m.ID == c.last:
			answered = true
		case m.Method == "Page.loadEventFired" && m.SessionID == session:
			loaded = true
		}
	}
	return nil
}

// startBrowserService runs a service for the browser figures, with an
// account and the one profile it launches.
func startBrowserService(ctx context.Context, bin, dir string, b backend) (*serviceBrowsers, error) {
	in, err := launch(ctx, bin, dir, b, nil, 0)
	if err != nil {
		return nil, err
	}
	_, key, err := in.account("browsers@example.com")
	if err != nil {
		in.proc.stop()
		return nil, err
	}
	var created struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := api(in.addr, "POST", "/api/v1/profiles", [2]string{"X-API-Key", key}, map[string]any{"name": "bench browser", "templateId": "tpl_chrome_win_us", "proxy": nil}, 201, &created); err != nil {
		in.proc.stop()
		return nil, err
	}
	return &serviceBrowsers{in: in, key: key, profile: created.Data.ID}, nil
}

// serviceBrowsers launches and releases the one profile of the bench's
// account on the service.
type serviceBrowsers struct {
	in      *instance
	key     string
	profile string
}

type browserSession struct {
	ID     string `json:"id"`
	CDPURL string `json:"cdpUrl"`
}

// launch is POST /launch until the browser answers Browser.getVersion
// through the session's cdpUrl, as a client that connects at once sees it.
func (s *serviceBrowsers) launch(ctx context.Context) (browserSession, time.Duration, string, error) {
	t0 := time.Now()
	var out struct {
		Data struct {
			Session browserSession `json:"session"`
		} `json:"data"`
	}
	if err := api(s.in.addr, "POST", "/api/v1/profiles/"+s.profile+"/launch", [2]string{"X-API-Key", s.key}, map[string]any{"headless": true}, 200, &out); err != nil {
		return browserSession{}, 0, "", fmt.Errorf("launch: %w (%s)", err, s.in.proc.tail())
	}
	product, err := browserVersion(ctx, out.Data.Session.CDPURL)
	if err != nil {
		return browserSession{}, 0, "", fmt.Errorf("the service's browser: %w", err)
	}
	return out.Data.Session, time.Since(t0), product, nil
}

// release is POST /release: the browser closes, its data are stored.
func (s *serviceBrowsers) release() error {
	return api(s.in.addr, "POST", "/api/v1/profiles/"+s.profile+"/release", [2]string{"X-API-Key", s.key}, nil, 200, nil)
}

// bareChromium starts Chromium as the runtime did before the sandbox.
type bareChromium struct {
	path string
	dir  string // where the user-data directories go
}

// bareArgs are the runtime's flags (browserArgs) with a DevTools port in
// place of the pipe, and without the proxy: there is no forwarder, and a
// blank page needs no network. Chromium refuses to run as root with its
// own sandbox, as the runtime knew.
func bareArgs(userDataDir string) []string {
	args := []string{
		"--remote-debugging-port=0",
		"--remote-debugging-address=127.0.0.1",
		"--user-data-dir=" + userDataDir,
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-default-apps",
		"--disable-extensions",
		"--disable-breakpad",
		"--disable-dev-shm-usage",
		"--password-store=basic",
		"--use-mock-keychain",
		"--disable-features=Translate,MediaRouter,OptimizationHints",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--user-agent=Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
		"--lang=en-US",
		"--window-size=1920,1080",
		"--headless=new",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	return append(args, "about:blank")
}

// bareBrowser is one running bare Chromium.
type bareBrowser struct {
	cmd    *exec.Cmd
	dir    string
	wsURL  string
	exited chan struct{}
	killed bool
}

// launch runs Chromium and returns once it answers Browser.getVersion on
// the DevTools WebSocket it prints, and how long after the exec that was.
func (c bareChromium) launch(ctx context.Context) (*bareBrowser, time.Duration, error) {
	dir, err := os.MkdirTemp(c.dir, "bare-chromium-")
	if err != nil {
		return nil, 0, err
	}
	t0 := time.Now()
	cmd := exec.Command(c.path, bareArgs(dir)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TZ=America/New_York", "LANG=en_US.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	b := &bareBrowser{cmd: cmd, dir: dir, exited: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, addr, ok := strings.Cut(sc.Text(), "DevTools listening on "); ok {
				found <- strings.TrimSpace(addr)
				break
			}
		}
		// The browser must never block on a full pipe.
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(b.exited)
	}()
	select {
	case b.wsURL = <-found:
	case <-b.exited:
		b.kill()
		return nil, 0, errors.New("the bare Chromium exited before it listened")
	case <-time.After(30 * time.Second):
		b.kill()
		return nil, 0, errors.New("the bare Chromium did not listen within 30 s")
	}
	if _, err := browserVersion(ctx, b.wsURL); err != nil {
		b.kill()
		return nil, 0, fmt.Errorf("the bare Chromium: %w", err)
	}
	return b, time.Since(t0), nil
}

// kill ends the browser's whole process group, waits until none of it
// runs, and removes its directory; once.
func (b *bareBrowser) kill() {
	if b.killed {
		return
	}
	b.killed = true
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	<-b.exited
	for deadline := time.Now().Add(5 * time.Second); groupRuns(b.cmd.Process.Pid) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	_ = os.RemoveAll(b.dir)
}

// cdpConn is a CDP client's WebSocket, one command at a time.
type cdpConn struct {
	ws   *websocket.Conn
	last int64
}

func dialCDP(ctx context.Context, url string) (*cdpConn, error) {
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	// A DevTools answer can be large (a screenshot); these are small.
	ws.SetReadLimit(64 << 20)
	return &cdpConn{ws: ws}, nil
}

func (c *cdpConn) close() { _ = c.ws.Close(websocket.StatusNormalClosure, "") }

// call sends one command and reads until its answer, passing over events.
func (c *cdpConn) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	c.last++
	msg := map[string]any{"id": c.last, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if err := c.ws.Write(ctx, websocket.MessageText, raw); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		_, raw, err := c.ws.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var answer struct {
			ID     int64           `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(raw, &answer); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if answer.ID != c.last {
			continue
		}
		if answer.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, answer.Error)
		}
		return answer.Result, nil
	}
}

// browserVersion connects to url, asks Browser.getVersion and returns the
// browser's product.
func browserVersion(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := dialCDP(ctx, url)
	if err != nil {
		return "", err
	}
	defer c.close()
	res, err := c.call(ctx, "", "Browser.getVersion", nil)
	if err != nil {
		return "", err
	}
	var v struct {
		Product string `json:"product"`
	}
	err = json.Unmarshal(res, &v)
	return v.Product, err
}

// newPage opens about:blank and attaches to it with a flat session, as
// Playwright's newPage does after connectOverCDP; it returns the target
// and the session.
func (c *cdpConn) newPage(ctx context.Context) (target, session string, err error) {
	res, err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return "", "", err
	}
	var t struct {
		TargetID string `json:"targetId"`
	}
	if err := json.Unmarshal(res, &t); err != nil || t.TargetID == "" {
		return "", "", fmt.Errorf("Target.createTarget answered %s", res)
	}
	res, err = c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": t.TargetID, "flatten": true})
	if err != nil {
		return "", "", err
	}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &s); err != nil || s.SessionID == "" {
		return "", "", fmt.Errorf("Target.attachToTarget answered %s", res)
	}
	return t.TargetID, s.SessionID, nil
}

// connectNewPage is one sample of connect + new page: from the dial to the
// attach's answer. The page is closed afterwards, unmeasured.
func connectNewPage(ctx context.Context, url string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := dialCDP(ctx, url)
	if err != nil {
		return 0, err
	}
	defer c.close()
	target, _, err := c.newPage(ctx)
	if err != nil {
		return 0, err
	}
	took := time.Since(t0)
	_, err = c.call(ctx, "", "Target.closeTarget", map[string]any{"targetId": target})
	return took, err
}

// cdpPage is a client connected to a browser with one page attached.
type cdpPage struct {
	c       *cdpConn
	target  string
	session string
}

func openPage(ctx context.Context, url string) (*cdpPage, error) {
	c, err := dialCDP(ctx, url)
	if err != nil {
		return nil, err
	}
	target, session, err := c.newPage(ctx)
	if err != nil {
		c.close()
		return nil, err
	}
	return &cdpPage{c: c, target: target, session: session}, nil
}

// evaluate runs Runtime.evaluate of 1 on the page n times in a row and
// returns each round trip.
func (p *cdpPage) evaluate(ctx context.Context, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	params := map[string]any{"expression": "1"}
	for range n {
		t0 := time.Now()
		if _, err := p.c.call(ctx, p.session, "Runtime.evaluate", params); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

func (p *cdpPage) close() {
	if p.c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = p.c.call(ctx, "", "Target.closeTarget", map[string]any{"targetId": p.target})
	p.c.close()
	p.c = nil
}

// settledMemory connects a client to the browser at url, waits for its
// memory to settle (two readings a second apart within 2 %, or 10 s) and
// returns the last reading.
func settledMemory(ctx context.Context, url string, read func() treeMemory) (treeMemory, error) {
	c, err := dialCDP(ctx, url)
	if err != nil {
		return treeMemory{}, err
	}
	defer c.close()
	if _, err := c.call(ctx, "", "Browser.getVersion", nil); err != nil {
		return treeMemory{}, err
	}
	prev := read()
	for range 10 {
		time.Sleep(time.Second)
		now := read()
		if d := now.pss - prev.pss; d < prev.pss/50 && -d < prev.pss/50 {
			return now, nil
		}
		prev = now
	}
	return prev, nil
}

// statFields are the fields of /proc/PID/stat after the command's name
// (state, ppid, pgrp, ...).
func statFields(pid int) ([]string, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(string(raw[i+1:]))
	return f, len(f) > 2
}

// groupRuns reports whether a process of group pgid runs (a zombie has
// ended).
func groupRuns(pgid int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := statFields(p); ok && st[2] == strconv.Itoa(pgid) && st[0] != "Z" && st[0] != "X" {
			return true
		}
	}
	return false
}

// memoryOf sums the proportional, unique and resident set sizes of pids;
// a process that ended meanwhile is left out.
func memoryOf(pids []int) treeMemory {
	var m treeMemory
	for _, pid := range pids {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
		if err != nil {
			continue
		}
		var pss, uss, rss int64
		for line := range strings.SplitSeq(string(raw), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "Pss":
				pss = kb << 10
			case "Rss":
				rss = kb << 10
			case "Private_Clean", "Private_Dirty":
				uss += kb << 10
			}
		}
		m.processes++
		m.pss += pss
		m.uss += uss
		m.rss += rss
	}
	return m
}

func medianMemory(ms []treeMemory) treeMemory {
	if len(ms) == 0 {
		return treeMemory{}
	}
	s := slices.Clone(ms)
	slices.SortFunc(s, func(a, b treeMemory) int { return cmp.Compare(a.pss, b.pss) })
	return s[(len(s)-1)/2]
}

// pct is the q-th percentile of ds in milliseconds.
func pct(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	load.SortDurations(s)
	return ms(load.Percentile(s, q))
}
