package conformance

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
)

// NewBrowserRuntime builds a runtime for one subtest and arranges (with
// t.Cleanup) to stop whatever it still runs.
type NewBrowserRuntime func(t *testing.T) ports.BrowserRuntime

// BrowserRuntimeKind says what a runtime promises about the sessions it
// starts, so the suite knows whether a missing CDP address is right.
type BrowserRuntimeKind int

const (
	// BrowserLeaseOnly runtimes run no browser (the client runs it), so no
	// session has a CDP address.
	BrowserLeaseOnly BrowserRuntimeKind = iota + 1
	// BrowserServesCDP runtimes run a browser per session and report the
	// ws:// address of its DevTools endpoint on loopback, as Chromium's
	// /json/version names it.
	BrowserServesCDP
)

// RunBrowserRuntime checks what the profile use cases and the CDP relay
// rely on. For every runtime: a started session can be stopped, stopping a
// session the runtime does not know (another instance or the client ran
// it, or it was stopped already) is not an error and stops nothing else,
// two profiles run side by side, a stopped profile starts again, and a
// Start whose context is cancelled fails with the context's error (a
// lease-only runtime, which starts nothing, may succeed instead). A
// lease-only runtime reports no CDP address. A runtime that serves CDP reports a ws://
// URL on a loopback address, distinct per session, whose host answers
// /json/version with that very URL and accepts a WebSocket handshake at it
// while the session runs, and where nothing answers once Stop returns.
func RunBrowserRuntime(t *testing.T, newRuntime NewBrowserRuntime, kind BrowserRuntimeKind) {
	t.Helper()
	if kind != BrowserLeaseOnly && kind != BrowserServesCDP {
		t.Fatalf("unknown browser runtime kind %d", kind)
	}
	spec := func(profileID, sessionID string) ports.LaunchSpec {
		tpl := profile.Templates()[0]
		return ports.LaunchSpec{
			Profile: profile.Profile{
				ID: profileID, TeamID: "team_conformance", Name: "Conformance", TemplateID: tpl.ID,
				Browser: tpl.Browser, Fingerprint: tpl.Fingerprint(), Version: 1,
			},
			SessionID: sessionID, Headless: true,
		}
	}
	ctx := func(t *testing.T) context.Context {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		return c
	}
	start := func(t *testing.T, rt ports.BrowserRuntime, s ports.LaunchSpec) ports.RunningBrowser {
		t.Helper()
		running, err := rt.Start(ctx(t), s)
		if err != nil {
			t.Fatalf("Start %s: %v", s.SessionID, err)
		}
		if kind == BrowserLeaseOnly {
			if running.CDPURL != "" {
				t.Fatalf("a lease-only runtime reported the CDP address %q for %s", running.CDPURL, s.SessionID)
			}
			return running
		}
		if running.CDPURL == "" {
			t.Fatalf("a runtime that serves CDP reported no CDP address for %s", s.SessionID)
		}
		expectCDPServed(t, running.CDPURL)
		return running
	}
	stop := func(t *testing.T, rt ports.BrowserRuntime, s ports.LaunchSpec, running ports.RunningBrowser) {
		t.Helper()
		state, err := rt.Stop(ctx(t), s.Profile.ID, s.SessionID)
		if err != nil {
			t.Fatalf("Stop %s: %v", s.SessionID, err)
		}
		closeState(t, state)
		if kind == BrowserServesCDP {
			expectNothingAnswers(t, running.CDPURL)
		}
	}

	t.Run("start then stop", func(t *testing.T) {
		rt := newRuntime(t)
		s := spec("prf_conf_a", "ses_conf_a")
		stop(t, rt, s, start(t, rt, s))
	})
	t.Run("stopping an unknown session is not an error", func(t *testing.T) {
		rt := newRuntime(t)
		if err := stopUnknown(t, rt, ctx(t), "prf_conf_unknown", "ses_conf_unknown"); err != nil {
			t.Fatalf("Stop of an unknown session: %v", err)
		}
	})
	t.Run("stopping another session of a running profile leaves it running", func(t *testing.T) {
		rt := newRuntime(t)
		s := spec("prf_conf_c", "ses_conf_c")
		running := start(t, rt, s)
		// A late release of the profile's previous session must not end
		// the browser of the current one.
		if err := stopUnknown(t, rt, ctx(t), s.Profile.ID, "ses_conf_c_previous"); err != nil {
			t.Fatalf("Stop of a session the runtime does not know: %v", err)
		}
		if kind == BrowserServesCDP {
			expectCDPServed(t, running.CDPURL)
		}
		stop(t, rt, s, running)
	})
	t.Run("stopping twice", func(t *testing.T) {
		rt := newRuntime(t)
		s := spec("prf_conf_d", "ses_conf_d")
		stop(t, rt, s, start(t, rt, s))
		if err := stopUnknown(t, rt, ctx(t), s.Profile.ID, s.SessionID); err != nil {
			t.Fatalf("second Stop of %s: %v", s.SessionID, err)
		}
	})
	t.Run("two profiles side by side", func(t *testing.T) {
		rt := newRuntime(t)
		a, b := spec("prf_conf_b1", "ses_conf_b1"), spec("prf_conf_b2", "ses_conf_b2")
		ra := start(t, rt, a)
		rb := start(t, rt, b)
		if kind == BrowserServesCDP && ra.CDPURL == rb.CDPURL {
			t.Fatalf("two sessions share the CDP address %s", ra.CDPURL)
		}
		stop(t, rt, a, ra)
		if kind == BrowserServesCDP {
			expectCDPServed(t, rb.CDPURL)
		}
		stop(t, rt, b, rb)
	})
	t.Run("a stopped profile starts again", func(t *testing.T) {
		rt := newRuntime(t)
		first, second := spec("prf_conf_e", "ses_conf_e1"), spec("prf_conf_e", "ses_conf_e2")
		stop(t, rt, first, start(t, rt, first))
		// What the first session left behind (Chromium's SingletonLock,
		// say) must not keep the profile from running again.
		stop(t, rt, second, start(t, rt, second))
	})
	t.Run("a cancelled context starts nothing", func(t *testing.T) {
		rt := newRuntime(t)
		s := spec("prf_conf_f", "ses_conf_f")
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		running, err := rt.Start(cancelled, s)
		switch {
		case err != nil && !errors.Is(err, context.Canceled):
			t.Fatalf("Start with a cancelled context: %v, want an error that wraps context.Canceled", err)
		case err == nil && kind == BrowserServesCDP:
			t.Fatalf("Start with a cancelled context started a browser at %q: the caller has given up on it", running.CDPURL)
		case err == nil && running.CDPURL != "":
			t.Fatalf("a lease-only runtime reported the CDP address %q", running.CDPURL)
		}
		if err := stopUnknown(t, rt, ctx(t), s.Profile.ID, s.SessionID); err != nil {
			t.Fatalf("Stop of a session that did not start: %v", err)
		}
	})
}

// cdpClient probes the addresses a runtime reports. No proxy: the address
// is on loopback and must be reached directly; no keep-alive, so that no
// connection of a probe outlives it.
var cdpClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// cdpAddress parses a CDP address after checking that it is a ws:// URL on
// a loopback IP address; only such an address is dialled.
func cdpAddress(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "ws" {
		t.Fatalf("CDP address %q is not a ws:// URL", raw)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || port == "" {
		t.Fatalf("CDP address %q has no port", raw)
	}
	// An IP literal, not a name: a name could resolve anywhere, and the
	// browser must be reachable only from this machine (through the relay).
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		t.Fatalf("CDP address %q is not on a loopback IP address", raw)
	}
	return u
}

// expectCDPServed checks that a DevTools endpoint answers at raw: its
// /json/version names raw as the browser's WebSocket address, and raw
// accepts a WebSocket handshake.
func expectCDPServed(t *testing.T, raw string) {
	t.Helper()
	u := cdpAddress(t, raw)
	host := u.Host
	resp, err := cdpClient.Get("http://" + host + "/json/version")
	if err != nil {
		t.Fatalf("the CDP address %s does not answer: %v", raw, err)
	}
	var version struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	err = json.NewDecoder(resp.Body).Decode(&version)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("GET /json/version at %s: %d, %v", host, resp.StatusCode, err)
	}
	if version.WebSocketDebuggerURL != raw {
		t.Fatalf("/json/version at %s names the browser's address %q, not the reported %q", host, version.WebSocketDebuggerURL, raw)
	}

	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	key := base64.StdEncoding.EncodeToString(nonce)
	handshake := *u
	handshake.Scheme = "http"
	req, err := http.NewRequest(http.MethodGet, handshake.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// No Origin header: Chromium refuses WebSocket clients that send one
	// unless it was started with --remote-allow-origins.
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", key)
	resp, err = cdpClient.Do(req)
	if err != nil {
		t.Fatalf("WebSocket handshake at %s: %v", raw, err)
	}
	resp.Body.Close()
	if want := webSocketAccept(key); resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != want {
		t.Fatalf("WebSocket handshake at %s answered %d with Sec-WebSocket-Accept %q, want 101 and %q",
			raw, resp.StatusCode, resp.Header.Get("Sec-WebSocket-Accept"), want)
	}
}

// expectNothingAnswers checks that nothing listens at the host of raw: Stop
// returns once the browser has ended, since the service then stores what
// the browser wrote.
func expectNothingAnswers(t *testing.T, raw string) {
	t.Helper()
	host := cdpAddress(t, raw).Host
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("something still answers at %s after Stop returned", host)
	}
}

// webSocketAccept is the Sec-WebSocket-Accept answer to a handshake's
// Sec-WebSocket-Key (RFC 6455, section 4.2.2).
func webSocketAccept(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// closeState closes what a Stop returned, if anything.
func closeState(t *testing.T, state *ports.BrowserState) {
	t.Helper()
	if state != nil {
		if err := state.Archive.Close(); err != nil {
			t.Fatalf("closing the state of a stopped browser: %v", err)
		}
	}
}

// stopUnknown stops a session that should leave nothing to collect.
func stopUnknown(t *testing.T, rt ports.BrowserRuntime, ctx context.Context, profileID, sessionID string) error {
	t.Helper()
	state, err := rt.Stop(ctx, profileID, sessionID)
	if state != nil {
		closeState(t, state)
		t.Errorf("Stop of %s, which the runtime does not run, returned a state", sessionID)
	}
	return err
}
