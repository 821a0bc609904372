package conformance

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
)

// NewBrowserRuntime builds a runtime for one subtest and arranges (with
// t.Cleanup) to stop whatever it still runs.
type NewBrowserRuntime func(t *testing.T) ports.BrowserRuntime

// RunBrowserRuntime checks what the profile use cases rely on: a started
// session can be stopped, stopping a session the runtime does not know is
// not an error (another instance or the client ran it), two profiles run
// side by side, and a CDP address, when one is given, is a ws:// or http://
// URL.
func RunBrowserRuntime(t *testing.T, newRuntime NewBrowserRuntime) {
	t.Helper()
	spec := func(id string) ports.LaunchSpec {
		tpl := profile.Templates()[0]
		return ports.LaunchSpec{
			Profile: profile.Profile{
				ID: id, TeamID: "team_conformance", Name: "Conformance", TemplateID: tpl.ID,
				Browser: tpl.Browser, Fingerprint: tpl.Fingerprint(), Version: 1,
			},
			SessionID: "ses_" + id, Headless: true,
		}
	}
	ctx := func(t *testing.T) context.Context {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		return c
	}

	t.Run("start then stop", func(t *testing.T) {
		rt := newRuntime(t)
		s := spec("prf_conf_a")
		running, err := rt.Start(ctx(t), s)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		if running.CDPURL != "" {
			u, err := url.Parse(running.CDPURL)
			if err != nil || (u.Scheme != "ws" && u.Scheme != "http") || u.Host == "" {
				t.Fatalf("CDPURL %q is not a ws:// or http:// address", running.CDPURL)
			}
		}
		if err := rt.Stop(ctx(t), s.Profile.ID, s.SessionID); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	})
	t.Run("stopping an unknown session is not an error", func(t *testing.T) {
		rt := newRuntime(t)
		if err := rt.Stop(ctx(t), "prf_conf_unknown", "ses_unknown"); err != nil {
			t.Fatalf("Stop of an unknown session: %v", err)
		}
	})
	t.Run("two profiles side by side", func(t *testing.T) {
		rt := newRuntime(t)
		a, b := spec("prf_conf_b1"), spec("prf_conf_b2")
		ra, err := rt.Start(ctx(t), a)
		if err != nil {
			t.Fatalf("Start a: %v", err)
		}
		rb, err := rt.Start(ctx(t), b)
		if err != nil {
			t.Fatalf("Start b: %v", err)
		}
		if ra.CDPURL != "" && ra.CDPURL == rb.CDPURL {
			t.Fatalf("two sessions share the CDP address %s", ra.CDPURL)
		}
		for _, s := range []ports.LaunchSpec{a, b} {
			if err := rt.Stop(ctx(t), s.Profile.ID, s.SessionID); err != nil {
				t.Fatalf("Stop %s: %v", s.Profile.ID, err)
			}
		}
	})
}
