package cdprelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/tests/poll"
)

const (
	cdpSession = "ses_1"
	cdpToken   = "s3cret&+/token"
	// cdpEvent is what a browser sends a client unasked.
	cdpEvent = `{"method":"Target.targetCreated","params":{"targetInfo":{"targetId":"T1","type":"page"}}}`
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

// fakeBrowser is the session's browser as the runtime hands it to the
// relay: every Connect opens a fakeCDPConn, or fails with connectErr.
type fakeBrowser struct {
	connectErr error
	// greeting is what every connection receives first, unasked, as a
	// browser's events.
	greeting []string

	mu    sync.Mutex
	conns []*fakeCDPConn
}

func (b *fakeBrowser) target() profiles.CDPTarget {
	return profiles.CDPTarget{Connect: b.connect}
}

func (b *fakeBrowser) connect(context.Context) (profiles.CDPConn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.connectErr != nil {
		return nil, b.connectErr
	}
	c := &fakeCDPConn{toClient: make(chan []byte, 64), ended: make(chan struct{}), closed: make(chan struct{})}
	for _, msg := range b.greeting {
		c.toClient <- []byte(msg)
	}
	b.conns = append(b.conns, c)
	return c, nil
}

// opened returns the connections opened so far.
func (b *fakeBrowser) opened() []*fakeCDPConn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*fakeCDPConn(nil), b.conns...)
}

// only returns the one connection opened so far.
func (b *fakeBrowser) only(t *testing.T) *fakeCDPConn {
	t.Helper()
	conns := b.opened()
	if len(conns) != 1 {
		t.Fatalf("the browser has %d connections, want 1", len(conns))
	}
	return conns[0]
}

// fakeCDPConn answers as Chromium does: Browser.getVersion with its
// version, a message over a kilobyte with its size, and echoes any other.
type fakeCDPConn struct {
	toClient chan []byte
	ended    chan struct{} // closed when the browser ends the connection
	endOnce  sync.Once
	closed   chan struct{} // closed by Close
	once     sync.Once

	mu       sync.Mutex
	received []string // what Send got, or its size when over a kilobyte
}

var _ profiles.CDPConn = (*fakeCDPConn)(nil)

// fakeVersion is the fake's answer to a Browser.getVersion of id %d.
const fakeVersion = `{"id":%d,"result":{"protocolVersion":"1.3","product":"HeadlessChrome/131.0.6778.85",` +
	`"revision":"@e5ba4a8b1e4c1ef1f2d3b0fdcf9a6b1a2c3d4e5f","userAgent":"Mozilla/5.0 HeadlessChrome/131.0.6778.85","jsVersion":"13.1.201.15"}}`

func (c *fakeCDPConn) Send(ctx context.Context, msg []byte) error {
	answer := "echo:" + string(msg)
	record := string(msg)
	var call struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
	}
	switch {
	case len(msg) > 1024:
		answer = fmt.Sprintf("received %d bytes", len(msg))
		record = answer
	case json.Unmarshal(msg, &call) == nil && call.Method == "Browser.getVersion":
		answer = fmt.Sprintf(fakeVersion, call.ID)
	}
	c.mu.Lock()
	c.received = append(c.received, record)
	c.mu.Unlock()
	return c.push(ctx, answer)
}

// push sends msg to the client, as a browser's event.
func (c *fakeCDPConn) push(ctx context.Context, msg string) error {
	select {
	case c.toClient <- []byte(msg):
		return nil
	case <-c.ended:
		return errors.New("the browser is gone")
	case <-c.closed:
		return errors.New("send on a closed connection")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *fakeCDPConn) Receive(ctx context.Context) ([]byte, error) {
	select {
	case msg := <-c.toClient:
		return msg, nil
	case <-c.ended:
		return nil, errors.New("the browser is gone")
	case <-c.closed:
		return nil, errors.New("receive on a closed connection")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *fakeCDPConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// end ends the connection from the browser's side, as a browser that
// exits.
func (c *fakeCDPConn) end() { c.endOnce.Do(func() { close(c.ended) }) }

func (c *fakeCDPConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *fakeCDPConn) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.received...)
}

// waitClosed waits until the relay has closed c.
func (c *fakeCDPConn) waitClosed(t *testing.T, why string) {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(5 * time.Second):
		t.Fatalf("the relay did not close the browser's connection %s", why)
	}
}

// newRelay serves the relay routes of svc on loopback; opts.PublicURL
// defaults to http://localhost:8080, and configure may set the server's
// timeouts before it starts.
func newRelay(t *testing.T, svc Targets, opts Options, configure func(*http.Server)) *httptest.Server {
	t.Helper()
	srv, _ := newRelayStack(t, svc, opts, configure)
	return srv
}

// newRelayStack is newRelay that also returns the stack, to read its log.
func newRelayStack(t *testing.T, svc Targets, opts Options, configure func(*http.Server)) (*httptest.Server, testStack) {
	t.Helper()
	if opts.PublicURL == nil {
		opts.PublicURL = constURL("http://localhost:8080")
	}
	s := newTestStack(t, New(svc, opts).Routes())
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

func versionPath(suffix string) string {
	return strings.Replace(cdpPath(cdpSession, cdpToken), "/cdp?", "/cdp"+suffix+"?", 1)
}

// tryDialCDP connects as a CDP client would, sending header.
func tryDialCDP(t *testing.T, relay *httptest.Server, header http.Header) (*websocket.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws://"+relay.Listener.Addr().String()+cdpPath(cdpSession, cdpToken), &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		if resp != nil {
			err = fmt.Errorf("%w (%s)", err, resp.Status)
		}
		return nil, err
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return ws, nil
}

func dialCDP(t *testing.T, relay *httptest.Server, header http.Header) *websocket.Conn {
	t.Helper()
	ws, err := tryDialCDP(t, relay, header)
	if err != nil {
		t.Fatalf("dial the relay: %v", err)
	}
	return ws
}

// receive reads the next message of the relay and expects want.
func receive(t *testing.T, ws *websocket.Conn, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	typ, got, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("receive %q: %v", want, err)
	}
	if typ != websocket.MessageText || string(got) != want {
		t.Fatalf("received %v %q, want text %q", typ, got, want)
	}
}

func send(t *testing.T, ws *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("send %d bytes: %v", len(msg), err)
	}
}

func roundTrip(t *testing.T, ws *websocket.Conn, msg string) {
	t.Helper()
	send(t, ws, msg)
	receive(t, ws, "echo:"+msg)
}

// expectClosed reads until the relay closes ws, and expects it to say
// want.
func expectClosed(t *testing.T, ws *websocket.Conn, want websocket.CloseError) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, msg, err := ws.Read(ctx)
	var got websocket.CloseError
	if !errors.As(err, &got) || got != want {
		t.Fatalf("read %q, %v; want the relay to close with %v", msg, err, want)
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

func getRequest(t *testing.T, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestCDPRelayCarriesMessagesBothWays(t *testing.T) {
	t.Parallel()
	b := &fakeBrowser{greeting: []string{cdpEvent}}
	relay, stack := newRelayStack(t, fakeTargets{target: b.target()}, Options{}, nil)

	ws := dialCDP(t, relay, nil)
	receive(t, ws, cdpEvent)
	send(t, ws, `{"id":1,"method":"Browser.getVersion"}`)
	receive(t, ws, fmt.Sprintf(fakeVersion, 1))
	roundTrip(t, ws, `{"id":2,"method":"Target.getTargets"}`)
	conn := b.only(t)
	if err := conn.push(t.Context(), `{"method":"Target.targetDestroyed","params":{"targetId":"T1"}}`); err != nil {
		t.Fatal(err)
	}
	receive(t, ws, `{"method":"Target.targetDestroyed","params":{"targetId":"T1"}}`)
	if got, want := conn.got(), []string{`{"id":1,"method":"Browser.getVersion"}`, `{"id":2,"method":"Target.getTargets"}`}; !slices.Equal(got, want) {
		t.Fatalf("the browser received %q, want %q", got, want)
	}

	if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	conn.waitClosed(t, "when its client closed")
	// The access log has the connection once it ends, as a 101.
	poll.Until(t, "the access log line of the relayed connection", func() bool {
		return stack.logs.FilterMessage("request").Len() > 0
	})
	line := stack.logs.FilterMessage("request").All()[0].ContextMap()
	if line["status"] != int64(101) || line["route"] != "/api/v1/sessions/{id}/cdp" {
		t.Fatalf("access log %v", line)
	}
	if n := stack.requestsCounted(t, "/api/v1/sessions/{id}/cdp", 101); n != 1 {
		t.Fatalf("the metrics count %v relayed connections as 101, want 1", n)
	}
	if n := len(b.opened()); n != 1 {
		t.Fatalf("the browser has %d connections, want 1", n)
	}
}

func TestCDPRelayClosesTheBrowsersConnectionWhenTheClientLeaves(t *testing.T) {
	t.Parallel()
	leave := map[string]func(*websocket.Conn) error{
		"with a close handshake":     func(ws *websocket.Conn) error { return ws.Close(websocket.StatusNormalClosure, "done") },
		"by dropping the connection": func(ws *websocket.Conn) error { return ws.CloseNow() },
	}
	for name, leave := range leave {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := &fakeBrowser{}
			relay := newRelay(t, fakeTargets{target: b.target()}, Options{}, nil)
			ws := dialCDP(t, relay, nil)
			roundTrip(t, ws, "first")
			conn := b.only(t)
			if conn.isClosed() {
				t.Fatal("the browser's connection is closed while its client is there")
			}
			if err := leave(ws); err != nil {
				t.Fatal(err)
			}
			conn.waitClosed(t, "when its client left")
		})
	}
}

func TestCDPRelayClosesTheClientWhenTheBrowserEnds(t *testing.T) {
	t.Parallel()
	b := &fakeBrowser{}
	relay := newRelay(t, fakeTargets{target: b.target()}, Options{MaxConnections: 1}, nil)
	ws := dialCDP(t, relay, nil)
	roundTrip(t, ws, "first")

	b.only(t).end()
	expectClosed(t, ws, websocket.CloseError{Code: websocket.StatusGoingAway, Reason: "the session's browser is gone"})
	b.only(t).waitClosed(t, "when the browser ended it")

	// The ended connection no longer counts against the bound.
	var next *websocket.Conn
	poll.Until(t, "the relay to take a connection again", func() bool {
		ws, err := tryDialCDP(t, relay, nil)
		next = ws
		return err == nil
	})
	roundTrip(t, next, "second")
}

func TestCDPRelayRefusesABadTokenBeforeConnecting(t *testing.T) {
	t.Parallel()
	b := &fakeBrowser{}
	relay := newRelay(t, fakeTargets{target: b.target()}, Options{}, nil)
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
			expectErrorResponse(t, getRequest(t, relay.URL+version), 401, "unauthorized")
		})
	}
	if n := len(b.opened()); n != 0 {
		t.Fatalf("refused clients opened %d connections to the browser", n)
	}
}

func TestCDPRelayAsksForAWebSocket(t *testing.T) {
	t.Parallel()
	b := &fakeBrowser{}
	relay := newRelay(t, fakeTargets{target: b.target()}, Options{}, nil)
	expectErrorResponse(t, getRequest(t, relay.URL+cdpPath(cdpSession, cdpToken)), 400, "bad_request")
	if n := len(b.opened()); n != 0 {
		t.Fatalf("a plain GET opened %d connections to the browser", n)
	}
}

func TestCDPRelayRefusesPagesOfOtherOrigins(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, origin string
		origins      []string
	}{
		{"another site", "https://evil.example", nil},
		{"another site while others are listed", "https://evil.example", []string{"https://console.example.com"}},
		{"a listed site over another scheme", "http://console.example.com", []string{"https://console.example.com"}},
		{"another port of the relay's host", "http://127.0.0.1:1", nil},
		{"an opaque origin", "null", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := &fakeBrowser{}
			relay := newRelay(t, fakeTargets{target: b.target()}, Options{Origins: c.origins}, nil)
			req := upgradeRequest(t, relay.URL+cdpPath(cdpSession, cdpToken))
			req.Header.Set("Origin", c.origin)
			env := expectErrorResponse(t, req, 403, "forbidden")
			want := "pages of origin " + c.origin + " may not open a CDP connection (CORS_ORIGINS lists the origins that may)"
			if env.Error.Message != want {
				t.Fatalf("message %q, want %q", env.Error.Message, want)
			}
			if n := len(b.opened()); n != 0 {
				t.Fatalf("a refused page opened %d connections to the browser", n)
			}
		})
	}
}

func TestCDPRelayLetsAllowedOriginsIn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		origins []string
		origin  func(relay *httptest.Server) string
	}{
		{"no origin, as Playwright and Puppeteer", nil, func(*httptest.Server) string { return "" }},
		{"a listed origin", []string{"https://other.example", "https://console.example.com"}, func(*httptest.Server) string { return "https://console.example.com" }},
		{"any origin with *", []string{"*"}, func(*httptest.Server) string { return "https://anywhere.example" }},
		{"the relay's own origin", nil, func(relay *httptest.Server) string { return relay.URL }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := &fakeBrowser{}
			relay := newRelay(t, fakeTargets{target: b.target()}, Options{Origins: c.origins}, nil)
			header := http.Header{}
			if o := c.origin(relay); o != "" {
				header.Set("Origin", o)
			}
			roundTrip(t, dialCDP(t, relay, header), `{"id":1,"method":"Target.getTargets"}`)
		})
	}
}

func TestCDPRelayBoundsItsConnections(t *testing.T) {
	t.Parallel()
	b := &fakeBrowser{}
	relay := newRelay(t, fakeTargets{target: b.target()}, Options{MaxConnections: 2}, nil)
	first := dialCDP(t, relay, nil)
	roundTrip(t, dialCDP(t, relay, nil), "second")

	env := expectErrorResponse(t, upgradeRequest(t, relay.URL+cdpPath(cdpSession, cdpToken)), 503, "unavailable")
	if want := "this instance relays as many CDP connections as it may (2, CDP_CONNECTIONS_MAX); retry later"; env.Error.Message != want {
		t.Fatalf("message %q, want %q", env.Error.Message, want)
	}
	if n := len(b.opened()); n != 2 {
		t.Fatalf("the browser has %d connections, want the 2 relayed", n)
	}

	// A connection that ends frees its place.
	if err := first.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	var third *websocket.Conn
	poll.Until(t, "the relay to take a connection again", func() bool {
		ws, err := tryDialCDP(t, relay, nil)
		third = ws
		return err == nil
	})
	roundTrip(t, third, "third")
}

func TestCDPRelayClosesAClientMessageOverTheLimit(t *testing.T) {
	t.Parallel()
	b := &fakeBrowser{}
	relay := newRelay(t, fakeTargets{target: b.target()}, Options{}, nil)
	ws := dialCDP(t, relay, nil)

	// 16 MiB is the most a message may have.
	send(t, ws, strings.Repeat("x", 16<<20))
	receive(t, ws, "received 16777216 bytes")

	send(t, ws, strings.Repeat("x", 16<<20+1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, msg, err := ws.Read(ctx)
	if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
		t.Fatalf("read %q, %v: close status %v, want %v", msg, err, got, websocket.StatusMessageTooBig)
	}
	conn := b.only(t)
	conn.waitClosed(t, "after its client sent too much")
	if got, want := conn.got(), []string{"received 16777216 bytes"}; !slices.Equal(got, want) {
		t.Fatalf("the browser received %q, want %q", got, want)
	}
}

func TestCDPRelayPassesOnWhyTheBrowserCannotBeReached(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name             string
		err              error
		connect, version int
		code             string
	}{
		// CDPTarget's Connect says so of a browser that ended since the
		// token was checked.
		{"the browser has ended", domain.Unauthorized("the session is over or the token is wrong"), 401, 401, "unauthorized"},
		{"the browser has as many clients as it may", domain.Unavailable("the session's browser has as many CDP clients as it may (8); close one first"), 503, 503, "unavailable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			relay := newRelay(t, fakeTargets{target: (&fakeBrowser{connectErr: c.err}).target()}, Options{}, nil)
			env := expectErrorResponse(t, upgradeRequest(t, relay.URL+cdpPath(cdpSession, cdpToken)), c.connect, c.code)
			if env.Error.Message != c.err.Error() {
				t.Fatalf("message %q, want %q", env.Error.Message, c.err.Error())
			}
			expectErrorResponse(t, getRequest(t, relay.URL+versionPath("/json/version")), c.version, c.code)
		})
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

// fakeVersionDocument is the /json/version of fakeVersion, but for
// webSocketDebuggerUrl.
var fakeVersionDocument = map[string]string{
	"Browser":          "HeadlessChrome/131.0.6778.85",
	"Protocol-Version": "1.3",
	"User-Agent":       "Mozilla/5.0 HeadlessChrome/131.0.6778.85",
	"V8-Version":       "13.1.201.15",
	"WebKit-Version":   "537.36 (@e5ba4a8b1e4c1ef1f2d3b0fdcf9a6b1a2c3d4e5f)",
}

func wantVersionDocument(t *testing.T, doc map[string]string, webSocketDebuggerURL string) {
	t.Helper()
	want := maps.Clone(fakeVersionDocument)
	want["webSocketDebuggerUrl"] = webSocketDebuggerURL
	if !maps.Equal(doc, want) {
		t.Fatalf("/json/version\n got %v\nwant %v", doc, want)
	}
}

func TestCDPVersionAsksTheBrowserAndNamesThePublicCDPURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		publicURL, want string
	}{
		{"https://profiles.example.com", "wss://profiles.example.com/api/v1/sessions/ses_1/cdp?token=s3cret%26%2B%2Ftoken"},
		{"http://localhost:8080/", "ws://localhost:8080/api/v1/sessions/ses_1/cdp?token=s3cret%26%2B%2Ftoken"},
		{"https://gateway.example.com/browsers", "wss://gateway.example.com/browsers/api/v1/sessions/ses_1/cdp?token=s3cret%26%2B%2Ftoken"},
	}
	for _, c := range cases {
		t.Run(c.publicURL, func(t *testing.T) {
			t.Parallel()
			// The browser's events come before the answer; the relay
			// waits for the answer to its own call.
			b := &fakeBrowser{greeting: []string{cdpEvent, `{"id":99,"result":{}}`}}
			relay := newRelay(t, fakeTargets{target: b.target()}, Options{PublicURL: constURL(c.publicURL)}, nil)
			for _, suffix := range []string{"/json/version", "/json/version/"} {
				wantVersionDocument(t, getVersion(t, relay.URL+versionPath(suffix)), c.want)
			}
			conns := b.opened()
			if len(conns) != 2 {
				t.Fatalf("the browser has %d connections, want one per document", len(conns))
			}
			for _, conn := range conns {
				if got, want := conn.got(), []string{`{"id":1,"method":"Browser.getVersion"}`}; !slices.Equal(got, want) {
					t.Fatalf("the browser received %q, want %q", got, want)
				}
				conn.waitClosed(t, "once it answered the version")
			}
		})
	}
}

func TestCDPVersionAnswers503WhenTheBrowserFails(t *testing.T) {
	t.Parallel()
	b := &fakeBrowser{connectErr: errors.New("dial unix /tmp/cdp.sock: connect: no such file or directory")}
	relay, stack := newRelayStack(t, fakeTargets{target: b.target()}, Options{}, nil)
	env := expectErrorResponse(t, getRequest(t, relay.URL+versionPath("/json/version")), 503, "unavailable")
	if want := "the session's browser did not answer; retry later"; env.Error.Message != want {
		t.Fatalf("message %q, want %q", env.Error.Message, want)
	}
	if n := stack.logs.FilterMessage("browser did not answer Browser.getVersion").Len(); n != 1 {
		t.Fatalf("%d warnings about the browser, want 1", n)
	}
}
