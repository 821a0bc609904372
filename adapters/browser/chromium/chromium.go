//go:build linux

// Package chromium owns the browser runtime that runs one Chromium per
// session: its process group, a user-data directory unpacked from the
// profile's data, the local forwarder all of its traffic goes through, and
// a CDP control connection of the runtime's own that
// puts the profile's fingerprint on every target, moves cookies in and out
// and closes the browser gracefully, after which the directory is packed
// as the profile's new data.
//
// It is built on Linux alone: every browser runs in a bubblewrap sandbox
// of Linux namespaces (sandbox.go), and its processes are followed through
// /proc. Elsewhere the service runs sessions as leases only.
package chromium

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/profilesvc/profilesvc/adapters/browser/forwarder"
	"github.com/profilesvc/profilesvc/adapters/netguard"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.BrowserRuntime = (*Runtime)(nil)

const (
	defaultStartTimeout = 30 * time.Second
	defaultStopTimeout  = 10 * time.Second
	// termGrace is how long a browser that ignored Browser.close gets
	// after SIGTERM before it is killed.
	termGrace = 3 * time.Second
	// prepareTimeout bounds the preparation of one attached target.
	prepareTimeout = 10 * time.Second
	// cookieTimeout bounds reading a browser's cookies: a browser that does
	// not answer by then (stopped, or stuck) keeps the cookies last read.
	cookieTimeout = 5 * time.Second
	// exitSendTimeout bounds how long a report on Exits waits for room.
	exitSendTimeout = 5 * time.Second
	// exitsBuffer is the room on Exits beyond one report per browser.
	exitsBuffer = 16
)

// Options configure a Runtime.
type Options struct {
	// Path is the Chromium binary (see Find).
	Path string
	// MaxBrowsers bounds the browsers running or starting at once.
	MaxBrowsers int
	// WorkDir holds one directory per session (DATA_DIR/browsers); what a
	// previous process left in it is reported by Leftovers (see New).
	WorkDir string
	// AllowPrivateTargets lets a browser without an upstream proxy reach
	// private and loopback addresses (for tests and closed networks).
	AllowPrivateTargets bool
	// StartTimeout bounds a launch until the browser accepts CDP, and
	// StopTimeout how long a browser gets to close itself; zero means 30 s
	// and 10 s.
	StartTimeout, StopTimeout time.Duration
	// Sandbox contains each browser (see sandbox.go).
	Sandbox Sandbox
	// MaxClients bounds the CDP clients connected to one browser at once;
	// zero means DefaultMaxClients.
	MaxClients int
	Log        *slog.Logger
}

// DefaultMaxClients is how many CDP clients one browser takes by default:
// a script, a second tool and a viewer, with room to spare.
const DefaultMaxClients = 16

// Runtime runs a Chromium per session.
type Runtime struct {
	opts  Options
	log   *slog.Logger
	exits chan ports.BrowserExit
	// version is the engine's ("156.0.8078.108"), read once at New; ""
	// when the binary does not say.
	version string

	mu sync.Mutex
	// sessions are the browsers started and not yet stopped.
	sessions map[string]*session
	// slots counts the browsers starting, running or being stopped: every
	// one still holds a process or its directory.
	slots int
	// starting names the sessions whose Start has not returned.
	starting map[string]bool
	closed   bool
}

// session is one browser of one session.
type session struct {
	id, profileID string
	dir           string // WorkDir/<session id>
	fwd           *forwarder.Forwarder
	proc          *process
	mux           *cdpMux
	ctl           *control

	// stopping is set (under Runtime.mu) by the Stop that collects the
	// session, so that its exit is not reported as the browser's own.
	stopping bool

	cookiesMu sync.Mutex
	// lastCookies are the cookies last read, for a browser that ended
	// before it could be asked.
	lastCookies []browserdata.Cookie
}

// Find returns the Chromium binary: path when set, else the first of
// chromium, chromium-browser and google-chrome on PATH.
func Find(path string) (string, bool) {
	if path != "" {
		found, err := exec.LookPath(path)
		return found, err == nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if found, err := exec.LookPath(name); err == nil {
			return found, true
		}
	}
	return "", false
}

// New makes the work directory. Of what a previous process left in it
// (its browsers died with it), the session directories that name their
// profile stay for Leftovers, and the rest is removed.
func New(opts Options) (*Runtime, error) {
	if opts.Path == "" {
		return nil, errors.New("chromium: no binary given")
	}
	if opts.MaxBrowsers < 1 {
		return nil, fmt.Errorf("chromium: MaxBrowsers is %d, want at least 1", opts.MaxBrowsers)
	}
	if opts.WorkDir == "" {
		return nil, errors.New("chromium: no work directory given")
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = defaultStopTimeout
	}
	if opts.MaxClients <= 0 {
		opts.MaxClients = DefaultMaxClients
	}
	if opts.Sandbox.Bwrap == "" {
		return nil, errors.New("chromium: no sandbox (bwrap) given")
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.WorkDir, 0o700); err != nil {
		return nil, fmt.Errorf("chromium: %w", err)
	}
	if err := os.Chmod(opts.WorkDir, 0o700); err != nil {
		return nil, fmt.Errorf("chromium: %w", err)
	}
	if err := clearWorkDir(opts.WorkDir); err != nil {
		return nil, fmt.Errorf("chromium: %w", err)
	}
	if opts.Sandbox.Xvfb == "" {
		opts.Sandbox.Xvfb, _ = exec.LookPath("Xvfb")
	}
	version, err := engineVersion(opts.Path)
	if err != nil {
		log.Warn("browser: the engine's version is unknown; user agents keep the version they name", "path", opts.Path, "error", err)
	}
	return &Runtime{
		opts: opts, log: log, version: version,
		exits:    make(chan ports.BrowserExit, opts.MaxBrowsers+exitsBuffer),
		sessions: map[string]*session{}, starting: map[string]bool{},
	}, nil
}

// Version is the engine's version, as "156.0.8078.108"; "" when the
// binary did not tell it.
func (r *Runtime) Version() string { return r.version }

// Start launches the session's browser from its data and answers once the
// browser accepts CDP with the fingerprint in place and the cookies put.
func (r *Runtime) Start(ctx context.Context, spec ports.LaunchSpec) (ports.RunningBrowser, error) {
	fail := func(err error) (ports.RunningBrowser, error) {
		// A caller that gave up is told so, whichever step noticed.
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %v", ctxErr, err)
		}
		return ports.RunningBrowser{}, fmt.Errorf("start the browser of session %s: %w", spec.SessionID, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	// The session id names the session's directory.
	if id := spec.SessionID; id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\\\x00") {
		return fail(fmt.Errorf("session id %q cannot name a directory", id))
	}
	if err := r.reserve(spec.SessionID); err != nil {
		return ports.RunningBrowser{}, err
	}
	s := &session{id: spec.SessionID, profileID: spec.Profile.ID, dir: filepath.Join(r.opts.WorkDir, spec.SessionID)}
	started := false
	defer func() {
		r.mu.Lock()
		delete(r.starting, s.id)
		r.mu.Unlock()
		if !started {
			r.discard(s)
		}
	}()
	if err := r.launch(ctx, s, spec); err != nil {
		return fail(err)
	}
	r.mu.Lock()
	if !s.proc.running() {
		r.mu.Unlock()
		return fail(fmt.Errorf("the browser exited as it started: %s", s.proc.output.String()))
	}
	if err := ctx.Err(); err != nil {
		r.mu.Unlock()
		return fail(err)
	}
	r.sessions[s.id] = s
	started = true
	r.mu.Unlock()
	go r.watch(s)
	return ports.RunningBrowser{CDP: true}, nil
}

// reserve takes a slot for a session, or refuses.
func (r *Runtime) reserve(sessionID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return domain.Unavailable("the browser runtime is shutting down")
	case r.sessions[sessionID] != nil || r.starting[sessionID]:
		return domain.Conflict("session " + sessionID + " already has a browser")
	case r.slots >= r.opts.MaxBrowsers:
		return domain.Unavailable("this instance runs as many browsers as it may (" + strconv.Itoa(r.opts.MaxBrowsers) + ")")
	}
	r.slots++
	r.starting[sessionID] = true
	return nil
}

// discard ends what a failed Start made and frees its slot.
func (r *Runtime) discard(s *session) {
	if s.proc != nil {
		s.proc.kill()
	}
	if s.ctl != nil {
		s.ctl.close()
	} else if s.mux != nil {
		s.mux.close()
	}
	if s.fwd != nil {
		_ = s.fwd.Close()
	}
	if err := os.RemoveAll(s.dir); err != nil {
		r.log.Warn("browser: removing the directory of a failed launch", "session", s.id, "error", err)
	}
	r.release()
}

func (r *Runtime) release() {
	r.mu.Lock()
	r.slots--
	r.mu.Unlock()
}

// launch prepares the directory, starts the process and connects to it.
func (r *Runtime) launch(ctx context.Context, s *session, spec ports.LaunchSpec) error {
	profileDir := filepath.Join(s.dir, "profile")
	if err := os.RemoveAll(s.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(profileDir, 0o700); err != nil {
		return err
	}
	if err := writeSessionMeta(s.dir, s.id, s.profileID); err != nil {
		return err
	}
	if spec.Data != nil {
		if err := unpack(profileDir, spec.Data); err != nil {
			return err
		}
	}
	if err := removeSingletons(profileDir); err != nil {
		return err
	}
	if err := enforcePreferences(profileDir); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fp := spec.Profile.Fingerprint
	// The browser says the version it is: what a page can feature-test
	// agrees with the user agent.
	fp.UserAgent = withEngineVersion(fp.UserAgent, r.version)
	headless := spec.Headless
	if !headless && r.opts.Sandbox.Xvfb == "" {
		r.log.Info("browser: no Xvfb for a headed browser's display, running it headless (apt-get install xvfb)", "session", s.id)
		headless = true
	}
	env := browserEnv(fp)
	screen := ""
	if !headless {
		screen = displayScreen(fp)
	}
	sb, err := r.opts.Sandbox.start(sandboxLaunch{chromium: r.opts.Path, sessionDir: profileDir, args: browserArgs(headless, fp), env: env, fonts: fontsConfig(fp.Fonts), screen: screen}, ctx.Done())
	if err != nil {
		return err
	}
	s.proc = sb.proc
	// Every request of the browser goes through the forwarder, whose
	// listener is the only thing the browser's network holds: to the
	// profile's proxy, or, without one, out directly but kept off the
	// service's own network.
	var guard func(network, address string, c syscall.RawConn) error
	if !r.opts.AllowPrivateTargets {
		guard = netguard.DialControl
	}
	fwd, err := forwarder.Start(forwarder.Options{Upstream: spec.Proxy, Guard: guard, Listener: sb.listener, Log: r.log.With("session", s.id)})
	if err != nil {
		sb.listener.Close()
		closeAll(sb.cdpIn, sb.cdpOut)
		return fmt.Errorf("the session's proxy: %w", err)
	}
	s.fwd = fwd
	s.mux = newCDPMux(sb.cdpIn, sb.cdpOut, r.opts.MaxClients, r.log.With("session", s.id))
	// A client that closes the browser itself (Puppeteer's browser.close)
	// would take with it the cookies its last page set: they are read
	// first.
	s.mux.beforeClose = func() {
		ctx, cancel := context.WithTimeout(context.Background(), cookieTimeout)
		defer cancel()
		if _, err := r.readCookies(ctx, s); err != nil {
			r.log.Warn("browser: cookies not read before the client closed the browser", "session", s.id, "error", err)
		}
	}
	s.ctl = newControl(s.mux, overridesFor(fp, r.version, headless), r.log.With("session", s.id))

	startCtx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
	defer cancel()
	if err := s.ctl.watch(startCtx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if !s.proc.running() {
			return fmt.Errorf("the browser exited as it started (%s): %s", s.proc.status, s.proc.output.String())
		}
		return fmt.Errorf("the browser did not answer CDP (within %s): %w: %s", r.opts.StartTimeout, err, s.proc.output.String())
	}
	if err := s.ctl.setCookies(startCtx, spec.Cookies); err != nil {
		return err
	}
	s.lastCookies = spec.Cookies
	return nil
}

// browserArgs are Chromium's flags for a session (the sandbox adds the
// proxy, its forwarder): CDP over the pipe, so that no DevTools port
// exists; the profile directory of the sandbox; loopback too through the
// proxy (Chromium bypasses a proxy for loopback unless told
// "<-loopback"); WebRTC without UDP outside the proxy (it would reveal the
// machine's own address; the flag where Chromium honours it, and the
// preference enforcePreferences writes in any case); none of the
// background traffic a fresh browser makes by itself; and the
// fingerprint's user agent, language and window size from the first
// request on.
func browserArgs(headless bool, fp profile.Fingerprint) []string {
	args := []string{
		"--remote-debugging-pipe",
		"--user-data-dir=" + sandboxProfileDir,
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		// Chromium's on-device model installer asks the component updater
		// even so: its requests go to a name that never resolves, which
		// the forwarder refuses without a packet sent.
		"--component-updater=url-source=https://components.invalid/",
		"--disable-sync",
		"--disable-default-apps",
		"--disable-extensions",
		"--disable-breakpad",
		"--disable-dev-shm-usage",
		"--password-store=basic",
		"--use-mock-keychain",
		// The omnibox's popups drawn as web pages (WebUIOmniboxPopup and
		// its AI mode and full-frame kinds) are pages Chromium loads with
		// every window, before any tab: a client sees them as tabs, the
		// first of them among its pages, a window of a pixel or a strip
		// of the toolbar's height, without the device. The native popup
		// leaves the browser's tabs its only pages.
		"--disable-features=Translate,MediaRouter,OptimizationHints,NetworkTimeServiceQuerying,CertificateTransparencyComponentUpdater,OptimizationGuideModelDownloading,OptimizationHintsFetching,OptimizationTargetPrediction,AutofillServerCommunication,InterestFeedContentSuggestions,MediaDrmPreprovisioning,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup",
		"--disable-component-extensions-with-background-pages",
		// navigator.webdriver stays false: the pipe is for the service and
		// its clients, not a mark for every page to read.
		"--disable-blink-features=AutomationControlled",
		"--disable-client-side-phishing-detection",
		"--disable-domain-reliability",
		"--no-service-autorun",
		"--no-pings",
		"--metrics-recording-only",
		"--proxy-bypass-list=<-loopback>",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--user-agent=" + fp.UserAgent,
		"--lang=" + fp.Locale,
	}
	switch {
	case headless:
		// A phone's pages also emulate its viewport and touch screen;
		// frames of other sites in processes of their own see the screen
		// of the flag.
		args = append(append(args, "--headless=new"), screenFlags(fp)...)
	default:
		// The display is the device's screen; the window fills what the
		// taskbar leaves of it.
		sc := screenOf(fp)
		args = append(args, "--window-position=0,0",
			// The display has no GPU: WebGL is drawn in software, as a
			// headless browser's is.
			"--use-angle=swiftshader", "--enable-unsafe-swiftshader",
			"--window-size="+strconv.Itoa(sc.AvailWidth)+","+strconv.Itoa(sc.AvailHeight),
			"--force-device-scale-factor="+strconv.FormatFloat(sc.PixelRatio, 'f', -1, 64))
	}
	return append(args, "about:blank")
}

// browserEnv is all of the environment a browser gets: the fingerprint's
// time zone and language, which Chromium reads at start.
func browserEnv(fp profile.Fingerprint) map[string]string {
	return map[string]string{"TZ": fp.Timezone, "LANG": posixLocale(fp.Locale)}
}

// watch reports a browser that ends without Stop.
func (r *Runtime) watch(s *session) {
	<-s.proc.exited
	r.mu.Lock()
	own := r.sessions[s.id] == s && !s.stopping
	r.mu.Unlock()
	if !own {
		return
	}
	reason := profile.StopCrashed
	if s.proc.status != nil && s.proc.status.Success() {
		reason = profile.StopClosed
	}
	r.log.Info("browser: ended by itself", "session", s.id, "reason", reason, "status", s.proc.status.String())
	t := time.NewTimer(exitSendTimeout)
	defer t.Stop()
	select {
	case r.exits <- ports.BrowserExit{ProfileID: s.profileID, SessionID: s.id, Reason: reason}:
	case <-t.C:
		r.log.Error("browser: nobody reads the exits; this one is not reported", "session", s.id, "reason", reason)
	}
}

// Stop closes the session's browser, if it still runs, and returns its
// directory packed, with its cookies.
func (r *Runtime) Stop(ctx context.Context, profileID, sessionID string) (*ports.BrowserState, error) {
	r.mu.Lock()
	s := r.sessions[sessionID]
	if s == nil || s.profileID != profileID || s.stopping {
		r.mu.Unlock()
		return nil, nil
	}
	s.stopping = true
	r.mu.Unlock()

	r.shut(ctx, s)
	r.mu.Lock()
	delete(r.sessions, sessionID)
	r.mu.Unlock()

	s.cookiesMu.Lock()
	cookies := s.lastCookies
	s.cookiesMu.Unlock()
	release := func() error {
		defer r.release()
		return os.RemoveAll(s.dir)
	}
	return &ports.BrowserState{Archive: packDir(filepath.Join(s.dir, "profile"), release), Cookies: cookies}, nil
}

// shut reads the cookies of a running browser, asks it to close, and
// makes sure that nothing of it runs once it returns.
func (r *Runtime) shut(ctx context.Context, s *session) {
	grace := r.opts.StopTimeout
	if s.proc.running() {
		cookieCtx, cancel := context.WithTimeout(ctx, cookieTimeout)
		_, err := r.readCookies(cookieCtx, s)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			// A browser that does not answer would not close itself
			// either: it is killed at once.
			r.log.Warn("browser: no answer within the deadline; killing it, keeping the last cookies", "session", s.id)
			grace = 0
		case err != nil:
			r.log.Warn("browser: cookies not read before close; keeping the last ones", "session", s.id, "error", err)
		}
		if grace > 0 {
			closeCtx, cancel := context.WithTimeout(ctx, grace)
			if err := s.ctl.closeBrowser(closeCtx); err != nil {
				r.log.Warn("browser: close refused", "session", s.id, "error", err)
				grace = 0
			}
			cancel()
		}
	}
	s.proc.end(grace)
	s.ctl.close()
	if err := s.fwd.Close(); err != nil {
		r.log.Warn("browser: closing the session's proxy", "session", s.id, "error", err)
	}
}

func (r *Runtime) readCookies(ctx context.Context, s *session) ([]browserdata.Cookie, error) {
	cookies, err := s.ctl.cookies(ctx)
	if err != nil {
		return nil, err
	}
	s.cookiesMu.Lock()
	s.lastCookies = cookies
	s.cookiesMu.Unlock()
	return cookies, nil
}

// Cookies reads the cookies of a running browser.
func (r *Runtime) Cookies(ctx context.Context, sessionID string) ([]browserdata.Cookie, error) {
	r.mu.Lock()
	s := r.sessions[sessionID]
	r.mu.Unlock()
	if s == nil || !s.proc.running() {
		return nil, domain.NotFound("browser")
	}
	return r.readCookies(ctx, s)
}

// Connect opens a client's CDP connection to the session's browser.
func (r *Runtime) Connect(ctx context.Context, sessionID string) (ports.CDPConn, error) {
	r.mu.Lock()
	s := r.sessions[sessionID]
	stopping := s != nil && s.stopping
	r.mu.Unlock()
	if s == nil || stopping || !s.proc.running() {
		return nil, domain.NotFound("browser")
	}
	e, err := s.mux.connect(ctx)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Exits delivers the browsers that ended without Stop.
func (r *Runtime) Exits() <-chan ports.BrowserExit { return r.exits }

// Close ends every browser and removes its directory, and refuses new
// ones. It is for shutdown: data are saved by calling Stop first.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	var all []*session
	for id, s := range r.sessions {
		if !s.stopping {
			s.stopping = true
			all = append(all, s)
			delete(r.sessions, id)
		}
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.shut(ctx, s)
			errs[i] = os.RemoveAll(s.dir)
			r.release()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
