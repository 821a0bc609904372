package cdprelay

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// headerLog records the headers of the requests a handler serves.
type headerLog struct {
	mu      sync.Mutex
	headers []http.Header
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.headers = append(l.headers, r.Header.Clone())
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) seen() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]http.Header(nil), l.headers...)
}

// newOwner serves the relay of the instance that runs b's browser, and
// logs the headers it gets.
func newOwner(t *testing.T, b *fakeBrowser, opts Options, configure func(*http.Server)) (*httptest.Server, *headerLog) {
	t.Helper()
	if opts.PublicURL == nil {
		opts.PublicURL = constURL("https://profiles.example.com")
	}
	log := &headerLog{}
	srv := httptest.NewUnstartedServer(log.wrap(newTestStack(t, New(fakeTargets{target: b.target()}, opts).Routes()).handler))
	if configure != nil {
		configure(srv.Config)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, log
}

func TestCDPRelayGoesToTheInstanceThatRunsTheBrowser(t *testing.T) {
	t.Parallel()
	b := &fakeBrowser{greeting: []string{cdpEvent}}
	owner, log := newOwner(t, b, Options{}, nil)
	front, frontStack := newRelayStack(t, fakeTargets{target: profiles.CDPTarget{Node: owner.URL}}, Options{PublicURL: constURL("https://front.example.com")}, nil)

	// The client's credentials for the service stay with the front.
	ws := dialCDP(t, front, http.Header{"Authorization": {"Bearer user-jwt"}, "X-Api-Key": {"psk_secret"}, "Cookie": {"sid=abc"}})
	receive(t, ws, cdpEvent)
	roundTrip(t, ws, `{"id":1,"method":"Target.getTargets"}`)
	seen := log.seen()
	if len(seen) != 1 {
		t.Fatalf("the owner got %d requests, want 1", len(seen))
	}
	for _, k := range []string{"Authorization", "X-API-Key", "Cookie"} {
		if v, ok := seen[0][http.CanonicalHeaderKey(k)]; ok {
			t.Fatalf("the owner got %s: %q", k, v)
		}
	}
	if got := seen[0].Get(relayedHeader); got != "1" {
		t.Fatalf("the owner got %s %q, want 1", relayedHeader, got)
	}
	conn := b.only(t)
	if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	conn.waitClosed(t, "when its client, two hops away, closed")
	// The front logs and counts the connection it relayed as a 101,
	// written past its ResponseWriter.
	poll.Until(t, "the front's access log line of the relayed connection", func() bool {
		return frontStack.logs.FilterMessage("request").Len() > 0
	})
	if line := frontStack.logs.FilterMessage("request").All()[0].ContextMap(); line["status"] != int64(101) || line["route"] != "/api/v1/sessions/{id}/cdp" {
		t.Fatalf("the front's access log %v", line)
	}
	if n := frontStack.requestsCounted(t, "/api/v1/sessions/{id}/cdp", 101); n != 1 {
		t.Fatalf("the front's metrics count %v relayed connections as 101, want 1", n)
	}

	// The owner answers, with its public URL.
	wantVersionDocument(t, getVersion(t, front.URL+versionPath("/json/version/")),
		"wss://profiles.example.com/api/v1/sessions/ses_1/cdp?token=s3cret%26%2B%2Ftoken")
	opened := len(b.opened())

	// The owner checks the token itself, whatever the front let through.
	lax := newRelay(t, anyToken{target: profiles.CDPTarget{Node: owner.URL}}, Options{}, nil)
	expectErrorResponse(t, upgradeRequest(t, lax.URL+cdpPath(cdpSession, "guess")), 401, "unauthorized")
	expectErrorResponse(t, getRequest(t, lax.URL+strings.Replace(cdpPath(cdpSession, "guess"), "/cdp?", "/cdp/json/version?", 1)), 401, "unauthorized")
	if n := len(b.opened()); n != opened {
		t.Fatalf("the browser has %d connections, want %d: a bad token reached it", n, opened)
	}
}

func TestCDPRelayToAnotherInstanceKeepsTheOriginRules(t *testing.T) {
	t.Parallel()
	t.Run("a listed origin", func(t *testing.T) {
		t.Parallel()
		b := &fakeBrowser{}
		opts := Options{Origins: []string{"https://console.example.com"}}
		owner, _ := newOwner(t, b, opts, nil)
		front := newRelay(t, fakeTargets{target: profiles.CDPTarget{Node: owner.URL}}, opts, nil)
		roundTrip(t, dialCDP(t, front, http.Header{"Origin": {"https://console.example.com"}}), "first")
	})
	t.Run("the front's own origin", func(t *testing.T) {
		t.Parallel()
		// The owner compares an Origin with its own host, the NODE_URL
		// the front dialled: the front, which checked it, must not pass
		// it on.
		b := &fakeBrowser{}
		owner, _ := newOwner(t, b, Options{}, nil)
		front := newRelay(t, fakeTargets{target: profiles.CDPTarget{Node: owner.URL}}, Options{}, nil)
		roundTrip(t, dialCDP(t, front, http.Header{"Origin": {front.URL}}), "first")
	})
	t.Run("another site", func(t *testing.T) {
		t.Parallel()
		b := &fakeBrowser{}
		owner, log := newOwner(t, b, Options{}, nil)
		front := newRelay(t, fakeTargets{target: profiles.CDPTarget{Node: owner.URL}}, Options{}, nil)
		req := upgradeRequest(t, front.URL+cdpPath(cdpSession, cdpToken))
		req.Header.Set("Origin", "https://evil.example")
		expectErrorResponse(t, req, 403, "forbidden")
		if n := len(log.seen()); n != 0 {
			t.Fatalf("the owner got %d requests from a refused page", n)
		}
	})
}

func TestCDPRelayDoesNotRelayARelayedRequest(t *testing.T) {
	t.Parallel()
	b := &fakeBrowser{}
	// Each instance believes the other runs the browser.
	second := httptest.NewUnstartedServer(nil)
	first := newRelay(t, fakeTargets{target: profiles.CDPTarget{Node: "http://" + second.Listener.Addr().String()}}, Options{}, nil)
	second.Config.Handler = newTestStack(t, New(fakeTargets{target: profiles.CDPTarget{Node: first.URL}}, Options{PublicURL: constURL("http://localhost:8080")}).Routes()).handler
	second.Start()
	t.Cleanup(second.Close)

	expectErrorResponse(t, upgradeRequest(t, first.URL+cdpPath(cdpSession, cdpToken)), 503, "unavailable")
	expectErrorResponse(t, getRequest(t, first.URL+versionPath("/json/version")), 503, "unavailable")

	// A request that arrives already relayed is not sent on.
	req := upgradeRequest(t, first.URL+cdpPath(cdpSession, cdpToken))
	req.Header.Set(relayedHeader, "1")
	expectErrorResponse(t, req, 503, "unavailable")
	if n := len(b.opened()); n != 0 {
		t.Fatalf("the browser has %d connections", n)
	}
}

func TestCDPRelayAnswers503WhenTheOtherInstanceIsGone(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	addr := gone.Listener.Addr().String()
	gone.Close()
	relay := newRelay(t, fakeTargets{target: profiles.CDPTarget{Node: "http://" + addr}}, Options{}, nil)

	expectErrorResponse(t, upgradeRequest(t, relay.URL+cdpPath(cdpSession, cdpToken)), 503, "unavailable")
	expectErrorResponse(t, getRequest(t, relay.URL+versionPath("/json/version")), 503, "unavailable")
}

func TestCDPRelayOutlivesTheServersTimeouts(t *testing.T) {
	t.Parallel()
	// Short, but not so short that a loaded machine (two cores under
	// -race) misses a header deadline before the relay hijacks.
	const timeout = 500 * time.Millisecond
	short := func(s *http.Server) {
		s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout = timeout, timeout, timeout, timeout
	}
	owner, _ := newOwner(t, &fakeBrowser{}, Options{}, short)
	front := newRelay(t, fakeTargets{target: profiles.CDPTarget{Node: owner.URL}}, Options{}, short)

	for name, relay := range map[string]*httptest.Server{"local": owner, "remote": front} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ws := dialCDP(t, relay, nil)
			// The server's read and write deadlines are absolute: a
			// connection still carrying messages well past them proves
			// the relay lifted them.
			past := time.Now().Add(3 * timeout)
			for n := 0; time.Now().Before(past); n++ {
				roundTrip(t, ws, fmt.Sprintf("message %d", n))
			}
			roundTrip(t, ws, "past the deadlines")
		})
	}
}

// constURL is a PUBLIC_URL known from the start.
func constURL(u string) func() string { return func() string { return u } }
