package conformance_test

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/browser"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

func TestLeaseOnlyRuntime(t *testing.T) {
	conformance.RunBrowserRuntime(t, func(*testing.T) ports.BrowserRuntime { return browser.LeaseOnly{} }, conformance.BrowserLeaseOnly)
}

// TestFakeCDPRuntime runs the suite's CDP checks against a runtime that
// serves what a DevTools client first talks to, so they are known to pass
// on a correct runtime before a Chromium adapter depends on them.
func TestFakeCDPRuntime(t *testing.T) {
	conformance.RunBrowserRuntime(t, func(t *testing.T) ports.BrowserRuntime { return newFakeCDPRuntime(t, correct) }, conformance.BrowserServesCDP)
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
	{"reports another address", conformance.BrowserServesCDP, fakeWith(reportsAnotherAddress), "start then stop", "/json/version at"},
	{"reports an address off loopback", conformance.BrowserServesCDP, fakeWith(reportsAnAddressOffLoopback), "start then stop", "is not on a loopback IP address"},
	{"keeps running after Stop", conformance.BrowserServesCDP, fakeWith(keepsRunningAfterStop), "start then stop", "still answers"},
	{"stops by profile", conformance.BrowserServesCDP, fakeWith(stopsByProfile), "stopping another session of a running profile leaves it running", "does not answer"},
	{"starts when cancelled", conformance.BrowserServesCDP, fakeWith(startsWhenCancelled), "a cancelled context starts nothing", "the caller has given up"},
	{"serves no CDP", conformance.BrowserServesCDP, func(*testing.T) ports.BrowserRuntime { return browser.LeaseOnly{} }, "start then stop", "reported no CDP address"},
	{"lease-only with an address", conformance.BrowserLeaseOnly, fakeWith(correct), "start then stop", "a lease-only runtime reported the CDP address"},
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
	for _, b := range brokenRuntimes {
		t.Run(b.name, func(t *testing.T) {
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

// The suite's handshake check and the fake's answer are written apart; the
// example of RFC 6455, section 1.3, ties the fake's to the standard.
func TestFakeAnswersTheRFC6455Handshake(t *testing.T) {
	if got := webSocketAccept("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("accept = %q, want the RFC's s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", got)
	}
}

// fault is how a broken fake departs from a correct runtime.
type fault int

const (
	correct fault = iota
	reportsAnotherAddress
	reportsAnAddressOffLoopback
	keepsRunningAfterStop
	stopsByProfile
	startsWhenCancelled
)

func fakeWith(f fault) func(t *testing.T) ports.BrowserRuntime {
	return func(t *testing.T) ports.BrowserRuntime { return newFakeCDPRuntime(t, f) }
}

// fakeCDPRuntime stands in for a runtime that runs browsers: per session it
// listens on a loopback port of its own and serves what a DevTools client
// first talks to, Chromium's /json/version and the WebSocket handshake at
// the browser's address.
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

type fakeBrowser struct {
	profileID string
	srv       *http.Server
	served    chan struct{} // closed when Serve has returned
	stopOnce  sync.Once
}

func (b *fakeBrowser) stop() {
	b.stopOnce.Do(func() {
		_ = b.srv.Close()
		<-b.served
	})
}

func (rt *fakeCDPRuntime) Start(ctx context.Context, spec ports.LaunchSpec) (ports.RunningBrowser, error) {
	if err := ctx.Err(); err != nil && rt.fault != startsWhenCancelled {
		return ports.RunningBrowser{}, fmt.Errorf("start the browser of session %s: %w", spec.SessionID, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ports.RunningBrowser{}, err
	}
	path := "/devtools/browser/" + randomHex()
	address := "ws://" + l.Addr().String() + path
	mux := http.NewServeMux()
	mux.HandleFunc("GET /json/version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{
			"Browser":              "FakeChrome/1.0",
			"Protocol-Version":     "1.3",
			"webSocketDebuggerUrl": address,
		})
	})
	mux.HandleFunc("GET "+path, serveHandshake)
	b := &fakeBrowser{profileID: spec.Profile.ID, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, served: make(chan struct{})}
	go func() {
		defer close(b.served)
		_ = b.srv.Serve(l)
	}()
	rt.mu.Lock()
	rt.browsers[spec.SessionID] = b
	rt.all = append(rt.all, b)
	rt.mu.Unlock()
	reported := address
	switch rt.fault {
	case reportsAnotherAddress:
		reported = "ws://" + l.Addr().String() + "/devtools/browser/" + randomHex()
	case reportsAnAddressOffLoopback:
		// A documentation address (RFC 5737): the suite must refuse it
		// before dialling it.
		reported = "ws://192.0.2.1:9222" + path
	}
	return ports.RunningBrowser{CDPURL: reported}, nil
}

func (rt *fakeCDPRuntime) Stop(_ context.Context, profileID, sessionID string) (*ports.BrowserState, error) {
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
	if ok && rt.fault != keepsRunningAfterStop {
		b.stop()
	}
	return nil, nil
}

func (rt *fakeCDPRuntime) Cookies(context.Context, string) ([]browserdata.Cookie, error) {
	return nil, domain.NotFound("browser")
}

func (rt *fakeCDPRuntime) Endpoint(string) (string, bool) { return "", false }

func (rt *fakeCDPRuntime) Exits() <-chan ports.BrowserExit { return nil }

// serveHandshake accepts a WebSocket handshake and hangs up: the suite
// checks the handshake, not the protocol that would follow.
func serveHandshake(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || key == "" {
		http.Error(w, "not a WebSocket handshake", http.StatusBadRequest)
		return
	}
	w.Header().Set("Upgrade", "websocket")
	w.Header().Set("Connection", "Upgrade")
	w.Header().Set("Sec-WebSocket-Accept", webSocketAccept(key))
	w.WriteHeader(http.StatusSwitchingProtocols)
}

func webSocketAccept(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
