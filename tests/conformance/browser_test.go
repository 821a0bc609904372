package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/browser"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

func TestLeaseOnlyRuntime(t *testing.T) {
	conformance.RunBrowserRuntime(t, func(*testing.T) ports.BrowserRuntime { return browser.LeaseOnly{} }, conformance.BrowserLeaseOnly)
}

// TestFakeCDPRuntime runs the suite's CDP checks against an in-memory
// runtime whose connections answer what a DevTools client first asks, so
// they are known to pass on a correct runtime before a Chromium adapter
// depends on them.
func TestFakeCDPRuntime(t *testing.T) {
	conformance.RunBrowserRuntime(t, fakeWith(correct), conformance.BrowserServesCDP)
}

// brokenRuntimes are runtimes the suite must reject, each with the subtest
// that must fail and a part of its message.
var brokenRuntimes = []struct {
	name    string
	kind    conformance.BrowserRuntimeKind
	newRT   func(t *testing.T) ports.BrowserRuntime
	subtest string
	message string
}{
	{"keeps running after Stop", conformance.BrowserServesCDP, fakeWith(keepsRunningAfterStop), "start then stop", "Connect ses_conf_a, which the runtime does not run, opened a connection"},
	{"stops by profile", conformance.BrowserServesCDP, fakeWith(stopsByProfile), "stopping another session of a running profile leaves it running", "Connect ses_conf_c: browser not found"},
	{"starts when cancelled", conformance.BrowserServesCDP, fakeWith(startsWhenCancelled), "a cancelled context starts nothing", "Start with a cancelled context started a browser: the caller has given up on it"},
	{"answers without a product", conformance.BrowserServesCDP, fakeWith(answersWithoutAProduct), "start then stop", `Browser.getVersion of ses_conf_a answered {"id":7,"result":{"protocolVersion":"1.3","product":""}}`},
	{"refuses an unknown session without NotFound", conformance.BrowserServesCDP, fakeWith(refusesWithoutNotFound), "start then stop", "Connect ses_conf_a, which the runtime does not run: no browser for session ses_conf_a, want a domain NotFound error"},
	{"serves no CDP", conformance.BrowserServesCDP, func(*testing.T) ports.BrowserRuntime { return browser.LeaseOnly{} }, "start then stop", "a runtime that serves CDP reported none for ses_conf_a"},
	{"lease-only that reports CDP", conformance.BrowserLeaseOnly, fakeWith(correct), "start then stop", "a lease-only runtime reported CDP for ses_conf_a"},
}

// brokenRuntimeVariable names the broken runtime TestSuiteOnABrokenRuntime
// runs the suite on, in the child process TestBrokenRuntimesFailTheSuite
// starts.
const brokenRuntimeVariable = "CONFORMANCE_BROKEN_BROWSER_RUNTIME"

// TestBrokenRuntimesFailTheSuite runs the suite on each broken runtime in a
// child process (a failing subtest cannot be observed from the test it
// fails) and expects the run to fail in the subtest that covers the fault,
// while a subtest the fault does not touch passes.
func TestBrokenRuntimesFailTheSuite(t *testing.T) {
	t.Parallel()
	for _, b := range brokenRuntimes {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSuiteOnABrokenRuntime$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenRuntimeVariable+"="+b.name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("the suite on a runtime that %s: %v, want exit status 1\n%s", b.name, err, out)
			}
			subtest := func(name string) string {
				return "TestSuiteOnABrokenRuntime/" + strings.ReplaceAll(name, " ", "_")
			}
			for _, want := range []string{"--- FAIL: " + subtest(b.subtest), b.message, "--- PASS: " + subtest("stopping an unknown session is not an error")} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the suite's output lacks %q\n%s", want, out)
				}
			}
		})
	}
}

// TestSuiteOnABrokenRuntime is the child of TestBrokenRuntimesFailTheSuite,
// where its failures are the expected outcome.
func TestSuiteOnABrokenRuntime(t *testing.T) {
	name := os.Getenv(brokenRuntimeVariable)
	if name == "" {
		t.Skip("runs as the child process of TestBrokenRuntimesFailTheSuite")
	}
	for _, b := range brokenRuntimes {
		if b.name == name {
			conformance.RunBrowserRuntime(t, b.newRT, b.kind)
			return
		}
	}
	t.Fatalf("%s=%q names no broken runtime", brokenRuntimeVariable, name)
}

// fault is how a broken fake departs from a correct runtime.
type fault int

const (
	correct fault = iota
	keepsRunningAfterStop
	stopsByProfile
	startsWhenCancelled
	answersWithoutAProduct
	refusesWithoutNotFound
)

func fakeWith(f fault) func(t *testing.T) ports.BrowserRuntime {
	return func(t *testing.T) ports.BrowserRuntime { return newFakeCDPRuntime(t, f) }
}

// fakeCDPRuntime stands in for a runtime that runs browsers, in memory: a
// browser per session whose connections answer Browser.getVersion, and
// whose connections end when it stops.
type fakeCDPRuntime struct {
	fault    fault
	mu       sync.Mutex
	browsers map[string]*fakeBrowser // by session id
	// all holds every browser ever started, so the test's end stops even
	// those a faulty Stop left running.
	all []*fakeBrowser
}

var _ ports.BrowserRuntime = (*fakeCDPRuntime)(nil)

func newFakeCDPRuntime(t *testing.T, f fault) *fakeCDPRuntime {
	rt := &fakeCDPRuntime{fault: f, browsers: map[string]*fakeBrowser{}}
	t.Cleanup(func() {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		for _, b := range rt.all {
			b.stop()
		}
	})
	return rt
}

func (rt *fakeCDPRuntime) Start(ctx context.Context, spec ports.LaunchSpec) (ports.RunningBrowser, error) {
	if err := ctx.Err(); err != nil && rt.fault != startsWhenCancelled {
		return ports.RunningBrowser{}, fmt.Errorf("start the browser of session %s: %w", spec.SessionID, err)
	}
	b := &fakeBrowser{profileID: spec.Profile.ID, product: "FakeChrome/1.0", conns: map[*fakeCDPConn]bool{}}
	if rt.fault == answersWithoutAProduct {
		b.product = ""
	}
	rt.mu.Lock()
	rt.browsers[spec.SessionID] = b
	rt.all = append(rt.all, b)
	rt.mu.Unlock()
	return ports.RunningBrowser{CDP: true}, nil
}

func (rt *fakeCDPRuntime) Stop(_ context.Context, profileID, sessionID string) (*ports.BrowserState, error) {
	if rt.fault == keepsRunningAfterStop {
		return nil, nil
	}
	rt.mu.Lock()
	b, ok := rt.browsers[sessionID]
	if ok && b.profileID != profileID {
		ok = false
	}
	if !ok && rt.fault == stopsByProfile {
		for id, other := range rt.browsers {
			if other.profileID == profileID {
				b, ok, sessionID = other, true, id
			}
		}
	}
	if ok {
		delete(rt.browsers, sessionID)
	}
	rt.mu.Unlock()
	if ok {
		b.stop()
	}
	return nil, nil
}

func (rt *fakeCDPRuntime) Cookies(context.Context, string) ([]browserdata.Cookie, error) {
	return nil, domain.NotFound("browser")
}

func (rt *fakeCDPRuntime) Connect(_ context.Context, sessionID string) (ports.CDPConn, error) {
	rt.mu.Lock()
	b, ok := rt.browsers[sessionID]
	rt.mu.Unlock()
	if !ok {
		if rt.fault == refusesWithoutNotFound {
			return nil, fmt.Errorf("no browser for session %s", sessionID)
		}
		return nil, domain.NotFound("browser")
	}
	return b.connect()
}

func (rt *fakeCDPRuntime) Exits() <-chan ports.BrowserExit { return nil }

// fakeBrowser is one session's browser: it answers Browser.getVersion with
// product and ends every connection when it stops.
type fakeBrowser struct {
	profileID string
	product   string

	mu      sync.Mutex
	stopped bool
	conns   map[*fakeCDPConn]bool
}

func (b *fakeBrowser) connect() (*fakeCDPConn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return nil, domain.NotFound("browser")
	}
	c := &fakeCDPConn{browser: b, answers: make(chan []byte, 16), ended: make(chan struct{})}
	b.conns[c] = true
	return c, nil
}

func (b *fakeBrowser) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	for c := range b.conns {
		c.end()
	}
	clear(b.conns)
}

// fakeCDPConn is one client's connection to a fakeBrowser.
type fakeCDPConn struct {
	browser *fakeBrowser
	answers chan []byte
	ended   chan struct{} // closed when the browser stops or the client closes
	once    sync.Once
}

var _ ports.CDPConn = (*fakeCDPConn)(nil)

func (c *fakeCDPConn) end() { c.once.Do(func() { close(c.ended) }) }

// Send answers as Chromium does: Browser.getVersion with the browser's
// version, any other method with an error.
func (c *fakeCDPConn) Send(ctx context.Context, msg []byte) error {
	var call struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
	}
	if err := json.Unmarshal(msg, &call); err != nil {
		return fmt.Errorf("not a CDP message: %w", err)
	}
	answer := fmt.Sprintf(`{"id":%d,"error":{"code":-32601,"message":"'%s' wasn't found"}}`, call.ID, call.Method)
	if call.Method == "Browser.getVersion" {
		version, err := json.Marshal(struct {
			ProtocolVersion string `json:"protocolVersion"`
			Product         string `json:"product"`
		}{"1.3", c.browser.product})
		if err != nil {
			return err
		}
		answer = fmt.Sprintf(`{"id":%d,"result":%s}`, call.ID, version)
	}
	select {
	case <-c.ended:
		return errors.New("the browser is gone")
	case <-ctx.Done():
		return ctx.Err()
	case c.answers <- []byte(answer):
		return nil
	}
}

func (c *fakeCDPConn) Receive(ctx context.Context) ([]byte, error) {
	select {
	case <-c.ended:
		return nil, errors.New("the browser is gone")
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg := <-c.answers:
		return msg, nil
	}
}

func (c *fakeCDPConn) Close() error {
	c.end()
	c.browser.mu.Lock()
	defer c.browser.mu.Unlock()
	delete(c.browser.conns, c)
	return nil
}
