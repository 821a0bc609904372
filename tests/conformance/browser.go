package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
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
	// BrowserServesCDP runtimes run a browser per session and open CDP
	// connections to it (Connect) for the relay.
	BrowserServesCDP
)

// RunBrowserRuntime checks what the profile use cases and the CDP relay
// rely on. For every runtime: a started session can be stopped, stopping a
// session the runtime does not know (another instance or the client ran
// it, or it was stopped already) is not an error and stops nothing else,
// two profiles run side by side, a stopped profile starts again, and a
// Start whose context is cancelled fails with the context's error (a
// lease-only runtime, which starts nothing, may succeed instead). A
// lease-only runtime reports no CDP and connects nobody. A runtime that
// serves CDP opens, while the session runs, connections that answer
// Browser.getVersion, and once Stop returns it connects nobody (domain
// NotFound) and the connections it opened end.
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
			if running.CDP {
				t.Fatalf("a lease-only runtime reported CDP for %s", s.SessionID)
			}
			expectNoConnection(t, rt, s.SessionID)
			return running
		}
		if !running.CDP {
			t.Fatalf("a runtime that serves CDP reported none for %s", s.SessionID)
		}
		expectCDPServed(t, rt, s.SessionID)
		return running
	}
	stop := func(t *testing.T, rt ports.BrowserRuntime, s ports.LaunchSpec, _ ports.RunningBrowser) {
		t.Helper()
		var open ports.CDPConn
		if kind == BrowserServesCDP {
			c, err := rt.Connect(ctx(t), s.SessionID)
			if err != nil {
				t.Fatalf("Connect %s: %v", s.SessionID, err)
			}
			open = c
			defer c.Close()
		}
		state, err := rt.Stop(ctx(t), s.Profile.ID, s.SessionID)
		if err != nil {
			t.Fatalf("Stop %s: %v", s.SessionID, err)
		}
		closeState(t, state)
		expectNoConnection(t, rt, s.SessionID)
		if open != nil {
			expectEnded(t, open)
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
			expectCDPServed(t, rt, s.SessionID)
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
		stop(t, rt, a, ra)
		if kind == BrowserServesCDP {
			expectCDPServed(t, rt, b.SessionID)
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
			t.Fatalf("Start with a cancelled context started a browser: the caller has given up on it")
		case err == nil && running.CDP:
			t.Fatalf("a lease-only runtime reported CDP")
		}
		if err := stopUnknown(t, rt, ctx(t), s.Profile.ID, s.SessionID); err != nil {
			t.Fatalf("Stop of a session that did not start: %v", err)
		}
	})
}

// expectCDPServed checks that a connection to the session's browser
// answers Browser.getVersion with a product.
func expectCDPServed(t *testing.T, rt ports.BrowserRuntime, sessionID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := rt.Connect(ctx, sessionID)
	if err != nil {
		t.Fatalf("Connect %s: %v", sessionID, err)
	}
	defer conn.Close()
	if err := conn.Send(ctx, []byte(`{"id":7,"method":"Browser.getVersion"}`)); err != nil {
		t.Fatalf("Send to %s: %v", sessionID, err)
	}
	for {
		raw, err := conn.Receive(ctx)
		if err != nil {
			t.Fatalf("Receive from %s: %v", sessionID, err)
		}
		var answer struct {
			ID     int64 `json:"id"`
			Result struct {
				Product string `json:"product"`
			} `json:"result"`
		}
		if json.Unmarshal(raw, &answer) != nil || answer.ID != 7 {
			continue
		}
		if answer.Result.Product == "" {
			t.Fatalf("Browser.getVersion of %s answered %s", sessionID, raw)
		}
		return
	}
}

// expectNoConnection checks that the runtime connects nobody to a session
// it does not run.
func expectNoConnection(t *testing.T, rt ports.BrowserRuntime, sessionID string) {
	t.Helper()
	conn, err := rt.Connect(context.Background(), sessionID)
	if err == nil {
		conn.Close()
		t.Fatalf("Connect %s, which the runtime does not run, opened a connection", sessionID)
	}
	if !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("Connect %s, which the runtime does not run: %v, want a domain NotFound error", sessionID, err)
	}
}

// expectEnded checks that a connection to a stopped browser has ended.
func expectEnded(t *testing.T, conn ports.CDPConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, err := conn.Receive(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatalf("a connection to a stopped browser goes on")
			}
			return
		}
	}
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
