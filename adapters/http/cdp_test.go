package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
)

const (
	cdpSession = "ses_1"
	cdpToken   = "s3cret&+/token"
)

// fakeTargets knows one session, cdpSession with cdpToken, and where its
// browser runs.
type fakeTargets struct {
	target profiles.CDPTarget
}

func (f fakeTargets) CDPTarget(_ context.Context, sessionID, token string) (profiles.CDPTarget, error) {
	if sessionID != cdpSession || token != cdpToken {
		return profiles.CDPTarget{}, domain.Unauthorized("the session is over or the token is wrong")
	}
	return f.target, nil
}

// anyToken lets every token through, as a front instance that got the
// check wrong would.
type anyToken struct {
	target profiles.CDPTarget
}

func (a anyToken) CDPTarget(context.Context, string, string) (profiles.CDPTarget, error) {
	return a.target, nil
}

// handshake is what the fake browser saw of one WebSocket upgrade.
type handshake struct {
	host, path, query string
	header            http.Header
}

// fakeBrowser serves what Chromium does on its DevTools port:
// /json/version, and a WebSocket at /devtools/browser/abc that echoes.
type fakeBrowser struct {
	srv      *httptest.Server
	requests atomic.Int32

	mu         sync.Mutex
	handshakes []handshake
}

func newFakeBrowser(t *testing.T) *fakeBrowser {
	t.Helper()
	b := &fakeBrowser{}
	m := http.NewServeMux()
	m.HandleFunc("GET /json/version", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		_ = json.NewEncoder(w).Encode(map[string]string{
			"Browser":              "HeadlessChrome/131.0.6778.85",
			"Protocol-Version":     "1.3",
			"User-Agent":           "Mozilla/5.0 HeadlessChrome/131.0.6778.85",
			"V8-Version":           "13.1.201.15",
			"WebKit-Version":       "537.36",
			"webSocketDebuggerUrl": "ws://" + r.Host + "/devtools/browser/abc",
		})
	})
	m.Handle("/devtools/browser/abc", websocket.Server{
		Handshake: func(_ *websocket.Config, r *http.Request) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.handshakes = append(b.handshakes, handshake{host: r.Host, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone()})
			return nil
		},
		Handler: func(ws *websocket.Conn) {
			for {
				var msg string
				if err := websocket.Message.Receive(ws, &msg); err != nil {
					return
				}
				if err := websocket.Message.Send(ws, "echo:"+msg); err != nil {
					return
				}
			}
		},
	})
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.requests.Add(1)
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *fakeBrowser) wsURL() string {
	return "ws://" + b.srv.Listener.Addr().String() + "/devtools/browser/abc"
}

func (b *fakeBrowser) seen() []handshake {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]handshake(nil), b.handshakes...)
}

// newRelay serves the relay routes for targets on loopback; configure may
// set the server's timeouts before it starts.
func newRelay(t *testing.T, target profiles.CDPTarget, publicURL string, configure func(*http.Server)) *httptest.Server {
	t.Helper()
	srv, _ := newRelayStack(t, target, publicURL, configure)
	return srv
}

// newRelayStack is newRelay that also returns the stack, to read its log.
func newRelayStack(t *testing.T, target profiles.CDPTarget, publicURL string, configure func(*http.Server)) (*httptest.Server, testStack) {
	t.Helper()
	s := newTestStack(t, NewCDPHandlers(fakeTargets{target: target}, constURL(publicURL)).Routes(), nil)
	srv := httptest.NewUnstartedServer(s.handler)
	if configure != nil {
		configure(srv.Config)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, s
}

func cdpPath(session, token string) string {
	return "/api/v1/sessions/" + session + "/cdp?token=" + url.QueryEscape(token)
}

// dialCDP connects as a CDP client would, with an Origin and the service's
// credentials that must not reach the browser.
func dialCDP(t *testing.T, relay *httptest.Server, session, token string) *websocket.Conn {
	t.Helper()
	cfg, err := websocket.NewConfig("ws://"+relay.Listener.Addr().String()+cdpPath(session, token), "http://localhost:3000")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Header.Set("Authorization", "Bearer user-jwt")
	cfg.Header.Set("X-API-Key", "psk_secret")
	cfg.Header.Set("Cookie", "sid=abc")
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatalf("dial the relay: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func roundTrip(t *testing.T, ws *websocket.Conn, msg string) {
	t.Helper()
	if err := ws.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := websocket.Message.Send(ws, msg); err != nil {
		t.Fatalf("send %q: %v", msg, err)
	}
	var got string
	if err := websocket.Message.Receive(ws, &got); err != nil {
		t.Fatalf("receive the echo of %q: %v", msg, err)
	}
	if got != "echo:"+msg {
		t.Fatalf("echo %q, want %q", got, "echo:"+msg)
	}
}

// upgradeRequest is a WebSocket upgrade as a plain request, to read the
// status of one that is refused.
func upgradeRequest(t *testing.T, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	return req
}

// expectErrorResponse checks a live response like expectError checks a
// recorded one.
func expectErrorResponse(t *testing.T, req *http.Request, status int, code string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	w := httptest.NewRecorder()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := w.Body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	expectError(t, w, status, code)
}

func TestCDPRelayCarriesMessagesToTheBrowserWithoutTheClientsCredentials(t *testing.T) {
	b := newFakeBrowser(t)
	relay, stack := newRelayStack(t, profiles.CDPTarget{Local: b.wsURL()}, "http://localhost:8080", nil)

	ws := dialCDP(t, relay, cdpSession, cdpToken)
	roundTrip(t, ws, `{"id":1,"method":"Browser.getVersion"}`)
	roundTrip(t, ws, `{"id":2,"method":"Target.getTargets"}`)
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	// The access log has the connection once it ends, as a 101.
	deadline := time.Now().Add(5 * time.Second)
	for stack.logs.FilterMessage("request").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no access log line for the relayed connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	line := stack.logs.FilterMessage("request").All()[0].ContextMap()
	if line["status"] != int64(101) || line["route"] != "/api/v1/sessions/{id}/cdp" {
		t.Fatalf("access log %v", line)
	}

	seen := b.seen()
	if len(seen) != 1 {
		t.Fatalf("browser saw %d handshakes, want 1", len(seen))
	}
	hs := seen[0]
	if want := b.srv.Listener.Addr().String(); hs.host != want {
		t.Fatalf("browser saw Host %q, want %q", hs.host, want)
	}
	if hs.path != "/devtools/browser/abc" || hs.query != "" {
		t.Fatalf("browser saw %s?%s", hs.path, hs.query)
	}
	for _, k := range []string{"Origin", "Authorization", "X-API-Key", "Cookie", relayedHeader} {
		if v, ok := hs.header[k]; ok {
			t.Fatalf("browser saw %s: %q", k, v)
		}
	}
}

func TestCDPRelayRefusesABadTokenBeforeReachingTheBrowser(t *testing.T) {
	b := newFakeBrowser(t)
	relay := newRelay(t, profiles.CDPTarget{Local: b.wsURL()}, "http://localhost:8080", nil)
	cases := map[string]string{
		"wrong token":     cdpPath(cdpSession, "guess"),
		"no token":        "/api/v1/sessions/" + cdpSession + "/cdp",
		"empty token":     "/api/v1/sessions/" + cdpSession + "/cdp?token=",
		"unknown session": cdpPath("ses_2", cdpToken),
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			expectErrorResponse(t, upgradeRequest(t, relay.URL+path), 401, "unauthorized")
			version := strings.Replace(path, "/cdp", "/cdp/json/version", 1)
			req, err := http.NewRequest(http.MethodGet, relay.URL+version, nil)
			if err != nil {
				t.Fatal(err)
			}
			expectErrorResponse(t, req, 401, "unauthorized")
		})
	}
	if n := b.requests.Load(); n != 0 {
		t.Fatalf("the browser got %d requests from refused clients", n)
	}
}

func TestCDPRelayAsksForAWebSocket(t *testing.T) {
	b := newFakeBrowser(t)
	relay := newRelay(t, profiles.CDPTarget{Local: b.wsURL()}, "http://localhost:8080", nil)
	req, err := http.NewRequest(http.MethodGet, relay.URL+cdpPath(cdpSession, cdpToken), nil)
	if err != nil {
		t.Fatal(err)
	}
	expectErrorResponse(t, req, 400, "bad_request")
	if n := b.requests.Load(); n != 0 {
		t.Fatalf("the browser got %d requests", n)
	}
}

func getVersion(t *testing.T, target string) map[string]string {
	t.Helper()
	resp, err := http.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", target, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control %q: the document carries the token", cc)
	}
	var doc map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestCDPVersionNamesThePublicCDPURL(t *testing.T) {
	b := newFakeBrowser(t)
	cases := []struct {
		publicURL, want string
	}{
		{"https://profiles.example.com", "wss://profiles.example.com/api/v1/sessions/ses_1/cdp?token=s3cret%26%2B%2Ftoken"},
		{"http://localhost:8080/", "ws://localhost:8080/api/v1/sessions/ses_1/cdp?token=s3cret%26%2B%2Ftoken"},
		{"https://gateway.example.com/browsers", "wss://gateway.example.com/browsers/api/v1/sessions/ses_1/cdp?token=s3cret%26%2B%2Ftoken"},
	}
	for _, c := range cases {
		t.Run(c.publicURL, func(t *testing.T) {
			relay := newRelay(t, profiles.CDPTarget{Local: b.wsURL()}, c.publicURL, nil)
			for _, suffix := range []string{"/json/version", "/json/version/"} {
				path := strings.Replace(cdpPath(cdpSession, cdpToken), "/cdp?", "/cdp"+suffix+"?", 1)
				doc := getVersion(t, relay.URL+path)
				if doc["webSocketDebuggerUrl"] != c.want {
					t.Fatalf("%s: webSocketDebuggerUrl %q, want %q", suffix, doc["webSocketDebuggerUrl"], c.want)
				}
				if doc["Browser"] != "HeadlessChrome/131.0.6778.85" || doc["Protocol-Version"] != "1.3" || doc["V8-Version"] != "13.1.201.15" {
					t.Fatalf("%s: the browser's fields did not come through: %v", suffix, doc)
				}
			}
		})
	}
}

func TestCDPRelayGoesToTheInstanceThatRunsTheBrowser(t *testing.T) {
	b := newFakeBrowser(t)
	owner := newRelay(t, profiles.CDPTarget{Local: b.wsURL()}, "https://profiles.example.com", nil)
	front := newRelay(t, profiles.CDPTarget{Node: owner.URL}, "https://front.example.com", nil)

	ws := dialCDP(t, front, cdpSession, cdpToken)
	roundTrip(t, ws, `{"id":1,"method":"Browser.getVersion"}`)
	seen := b.seen()
	if len(seen) != 1 {
		t.Fatalf("browser saw %d handshakes, want 1", len(seen))
	}
	for _, k := range []string{"Origin", "Authorization", "X-API-Key", "Cookie", relayedHeader} {
		if v, ok := seen[0].header[k]; ok {
			t.Fatalf("browser saw %s: %q", k, v)
		}
	}

	// The owner answers, with its public URL.
	path := strings.Replace(cdpPath(cdpSession, cdpToken), "/cdp?", "/cdp/json/version/?", 1)
	doc := getVersion(t, front.URL+path)
	if want := "wss://profiles.example.com/api/v1/sessions/ses_1/cdp?token=s3cret%26%2B%2Ftoken"; doc["webSocketDebuggerUrl"] != want {
		t.Fatalf("webSocketDebuggerUrl %q, want %q", doc["webSocketDebuggerUrl"], want)
	}

	// The owner checks the token itself, whatever the front let through.
	lax := httptest.NewServer(newTestStack(t, NewCDPHandlers(anyToken{target: profiles.CDPTarget{Node: owner.URL}}, constURL("https://front.example.com")).Routes(), nil).handler)
	t.Cleanup(lax.Close)
	expectErrorResponse(t, upgradeRequest(t, lax.URL+cdpPath(cdpSession, "guess")), 401, "unauthorized")
	if n := len(b.seen()); n != 1 {
		t.Fatalf("browser saw %d handshakes, want only the first", n)
	}
}

func TestCDPRelayDoesNotRelayARelayedRequest(t *testing.T) {
	b := newFakeBrowser(t)
	// Each instance believes the other runs the browser.
	second := httptest.NewUnstartedServer(nil)
	first := newRelay(t, profiles.CDPTarget{Node: "http://" + second.Listener.Addr().String()}, "http://localhost:8080", nil)
	second.Config.Handler = newTestStack(t, NewCDPHandlers(fakeTargets{target: profiles.CDPTarget{Node: first.URL}}, constURL("http://localhost:8080")).Routes(), nil).handler
	second.Start()
	t.Cleanup(second.Close)

	expectErrorResponse(t, upgradeRequest(t, first.URL+cdpPath(cdpSession, cdpToken)), 503, "unavailable")
	version := strings.Replace(cdpPath(cdpSession, cdpToken), "/cdp?", "/cdp/json/version?", 1)
	expectErrorResponse(t, upgradeRequest(t, first.URL+version), 503, "unavailable")

	// A request that arrives already relayed is not sent on.
	req := upgradeRequest(t, first.URL+cdpPath(cdpSession, cdpToken))
	req.Header.Set(relayedHeader, "1")
	expectErrorResponse(t, req, 503, "unavailable")
	if n := b.requests.Load(); n != 0 {
		t.Fatalf("the browser got %d requests", n)
	}
}

func TestCDPRelayAnswers503WhenTheBrowserIsGone(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	addr := gone.Listener.Addr().String()
	gone.Close()
	relay := newRelay(t, profiles.CDPTarget{Local: "ws://" + addr + "/devtools/browser/abc"}, "http://localhost:8080", nil)

	expectErrorResponse(t, upgradeRequest(t, relay.URL+cdpPath(cdpSession, cdpToken)), 503, "unavailable")
	version := strings.Replace(cdpPath(cdpSession, cdpToken), "/cdp?", "/cdp/json/version?", 1)
	req, err := http.NewRequest(http.MethodGet, relay.URL+version, nil)
	if err != nil {
		t.Fatal(err)
	}
	expectErrorResponse(t, req, 503, "unavailable")
}

func TestCDPRelayOutlivesTheServersTimeouts(t *testing.T) {
	const timeout = 100 * time.Millisecond
	b := newFakeBrowser(t)
	short := func(s *http.Server) {
		s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout = timeout, timeout, timeout, timeout
	}
	owner := newRelay(t, profiles.CDPTarget{Local: b.wsURL()}, "http://localhost:8080", short)
	front := newRelay(t, profiles.CDPTarget{Node: owner.URL}, "http://localhost:8080", short)

	for name, relay := range map[string]*httptest.Server{"local": owner, "remote": front} {
		t.Run(name, func(t *testing.T) {
			ws := dialCDP(t, relay, cdpSession, cdpToken)
			roundTrip(t, ws, "first")
			// A CDP client may stay quiet for longer than any request may
			// take; the connection must still be there.
			time.Sleep(3 * timeout)
			roundTrip(t, ws, "after a quiet spell")
			time.Sleep(3 * timeout)
			roundTrip(t, ws, "and another")
		})
	}
}

// constURL is a PUBLIC_URL known from the start.
func constURL(u string) func() string { return func() string { return u } }
