package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"
)

// liveWait bounds every wait of these tests: far longer than anything
// takes, short enough to fail a stuck test.
const liveWait = 10 * time.Second

// fakeCmd is one command the live view sent the fake browser.
type fakeCmd struct {
	ID      int64           `json:"id"`
	Method  string          `json:"method"`
	Session string          `json:"sessionId"`
	Params  json.RawMessage `json:"params"`
}

func (c fakeCmd) String() string { return c.Method + " [" + c.Session + "] " + string(c.Params) }

// fakeBrowser is a CDPConn over memory: it records every command, answers
// the ones the live view waits for (attaching to target T gives session
// "sess-T") and delivers what the test pushes, in order. Its inbox has no
// bound, so the live view's sends never wait on its reads.
type fakeBrowser struct {
	targets string // Target.getTargets' targetInfos, as JSON

	mu      sync.Mutex
	cmds    []fakeCmd
	changed chan struct{} // closed (and replaced) at every command
	inbox   [][]byte
	more    chan struct{}

	ended, closed       chan struct{}
	endOnce, closeOnce  sync.Once
	receiveErr, sendErr error
}

func newFakeBrowser(targets string) *fakeBrowser {
	return &fakeBrowser{
		targets: targets, changed: make(chan struct{}), more: make(chan struct{}, 1),
		ended: make(chan struct{}), closed: make(chan struct{}),
		receiveErr: errors.New("the browser is gone"), sendErr: errors.New("the connection is closed"),
	}
}

func (b *fakeBrowser) Send(ctx context.Context, msg []byte) error {
	select {
	case <-b.closed:
		return b.sendErr
	default:
	}
	var c fakeCmd
	if err := json.Unmarshal(msg, &c); err != nil {
		return err
	}
	var reply string
	switch c.Method {
	case "Target.setDiscoverTargets", "Page.startScreencast", "Target.detachFromTarget":
		reply = `{}`
	case "Target.getTargets":
		reply = `{"targetInfos":` + b.targets + `}`
	case "Target.attachToTarget":
		var p struct {
			TargetID string `json:"targetId"`
		}
		_ = json.Unmarshal(c.Params, &p)
		reply = `{"sessionId":"sess-` + p.TargetID + `"}`
	}
	b.mu.Lock()
	b.cmds = append(b.cmds, c)
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	if reply != "" {
		b.push(fmt.Sprintf(`{"id":%d,"result":%s}`, c.ID, reply))
	}
	return nil
}

func (b *fakeBrowser) Receive(ctx context.Context) ([]byte, error) {
	for {
		b.mu.Lock()
		if len(b.inbox) > 0 {
			m := b.inbox[0]
			b.inbox = b.inbox[1:]
			b.mu.Unlock()
			return m, nil
		}
		b.mu.Unlock()
		select {
		case <-b.more:
		case <-b.ended:
			return nil, b.receiveErr
		case <-b.closed:
			return nil, b.sendErr
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (b *fakeBrowser) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return nil
}

// push delivers a message of the browser to the live view.
func (b *fakeBrowser) push(msg string) {
	b.mu.Lock()
	b.inbox = append(b.inbox, []byte(msg))
	b.mu.Unlock()
	select {
	case b.more <- struct{}{}:
	default:
	}
}

// end makes the browser's side end: Receive fails from now on.
func (b *fakeBrowser) end() { b.endOnce.Do(func() { close(b.ended) }) }

// commands returns the commands sent so far, as strings, those of method
// prefix only (all with "").
func (b *fakeBrowser) commands(prefix string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, c := range b.cmds {
		if strings.HasPrefix(c.Method, prefix) {
			out = append(out, c.String())
		}
	}
	return out
}

// waitCommands waits until the commands of method prefix satisfy ok and
// returns them.
func (b *fakeBrowser) waitCommands(t *testing.T, what, prefix string, ok func([]string) bool) []string {
	t.Helper()
	deadline := time.NewTimer(liveWait)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		ch := b.changed
		b.mu.Unlock()
		got := b.commands(prefix)
		if ok(got) {
			return got
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("waiting for %s; the browser got:\n%s", what, strings.Join(got, "\n"))
		}
	}
}

// waitCount waits for n commands of method prefix and returns them.
func (b *fakeBrowser) waitCount(t *testing.T, prefix string, n int) []string {
	t.Helper()
	return b.waitCommands(t, fmt.Sprintf("%d %s commands", n, prefix), prefix, func(got []string) bool { return len(got) >= n })
}

func (b *fakeBrowser) waitClosed(t *testing.T) {
	t.Helper()
	select {
	case <-b.closed:
	case <-time.After(liveWait):
		t.Fatal("the live view did not close its CDP connection")
	}
}

// liveHarness is a live view over a fake browser, and its viewer: a real
// WebSocket through an HTTP server.
type liveHarness struct {
	b    *fakeBrowser
	ws   *websocket.Conn
	done chan struct{} // closed when the session's run returns
}

// smallBuffers makes a TCP connection's kernel buffers as small as they
// go, so a viewer that reads nothing soon holds the live view's writes.
func smallBuffers(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
		_ = tc.SetReadBuffer(4096)
	}
}

type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		smallBuffers(c)
	}
	return c, err
}

// startLive runs a live view of a browser listing targets for a viewer
// who may send input or not, and reads the viewer's "ready".
func startLive(t *testing.T, targets string, input bool) *liveHarness {
	t.Helper()
	h := startLiveRaw(t, targets, input)
	want := fmt.Sprintf(`{"input":%v,"type":"ready"}`, input)
	if got := h.read(t); got != want {
		t.Fatalf("first message %s, want %s", got, want)
	}
	return h
}

// startLiveRaw is startLive without reading anything.
func startLiveRaw(t *testing.T, targets string, input bool) *liveHarness {
	t.Helper()
	h := &liveHarness{b: newFakeBrowser(targets), done: make(chan struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(h.done)
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		// As liveSocket makes it.
		ws.SetReadLimit(liveMaxMessage)
		s := &liveSession{ws: ws, cdp: h.b, input: input, replies: map[int64]chan cdpReply{}, frames: make(chan []byte, 1), shownPages: make(chan cdpTarget, 8)}
		s.run(r.Context(), zap.NewNop())
	}))
	srv.Listener = smallBufListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), liveWait)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			smallBuffers(c)
		}
		return c, err
	}}}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		t.Fatalf("dial the live view: %v", err)
	}
	ws.SetReadLimit(1 << 20)
	h.ws = ws
	t.Cleanup(func() {
		_ = ws.CloseNow()
		select {
		case <-h.done:
		case <-time.After(liveWait):
			t.Error("the live view did not end after its viewer left")
		}
	})
	return h
}

// read reads the viewer's next message.
func (h *liveHarness) read(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), liveWait)
	defer cancel()
	_, raw, err := h.ws.Read(ctx)
	if err != nil {
		t.Fatalf("the viewer's read: %v", err)
	}
	return string(raw)
}

// send sends the viewer's messages as they are.
func (h *liveHarness) send(t *testing.T, msgs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), liveWait)
	defer cancel()
	for _, m := range msgs {
		if err := h.ws.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatalf("the viewer's write of %.60s: %v", m, err)
		}
	}
}

// waitEnd waits for the viewer's WebSocket to close and returns the error
// its read ended with.
func (h *liveHarness) waitEnd(t *testing.T) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), liveWait)
	defer cancel()
	for {
		_, _, err := h.ws.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatal("the viewer's WebSocket stayed open")
			}
			return err
		}
	}
}

// frame is a Page.screencastFrame of session sess, number n; data is
// base64 (nothing to escape).
func frame(sess string, n int, data string) string {
	return `{"method":"Page.screencastFrame","sessionId":"` + sess + `","params":{"data":"` + data +
		fmt.Sprintf(`","metadata":{"deviceWidth":800,"deviceHeight":600,"n":%d},"sessionId":%d}}`, n, n)
}

const (
	// The start of a live view: targets found, then the chosen one.
	liveDiscover  = `Target.setDiscoverTargets [] {"discover":true}`
	liveGetTarget = `Target.getTargets [] {}`
	// screencast is Page.startScreencast's params.
	screencast = `{"everyNthFrame":1,"format":"jpeg","maxHeight":960,"maxWidth":1280,"quality":70}`
	// webTargets: a browser's own page, a blank tab, a web page and a
	// service worker of it.
	webTargets = `[{"targetId":"chrome","type":"page","url":"chrome://newtab/"},` +
		`{"targetId":"blank","type":"page","url":"about:blank"},` +
		`{"targetId":"web","type":"page","url":"https://shop.example/cart"},` +
		`{"targetId":"sw","type":"service_worker","url":"https://shop.example/sw.js"}]`
)

func TestLiveAttachPicksTheTabThatShowsSomething(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, targets, want string
	}{
		{"a web page over a blank tab and the browser's own pages", webTargets, "web"},
		{"a data page over a blank tab", `[{"targetId":"blank","type":"page","url":"about:blank"},{"targetId":"data","type":"page","url":"data:text/html,hi"},{"targetId":"settings","type":"page","url":"chrome://settings/"}]`, "data"},
		{"an http page however listed", `[{"targetId":"plain","type":"page","url":"http://127.0.0.1:8080/"},{"targetId":"blank","type":"page","url":"about:blank"}]`, "plain"},
		{"a blank tab over the browser's own pages", `[{"targetId":"chrome","type":"page","url":"chrome://newtab/"},{"targetId":"blank","type":"page","url":"about:blank"},{"targetId":"ext","type":"background_page","url":"chrome-extension://x/bg.html"}]`, "blank"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := startLive(t, c.targets, true)
			want := []string{
				liveDiscover, liveGetTarget,
				`Target.attachToTarget [] {"flatten":true,"targetId":"` + c.want + `"}`,
				`Page.startScreencast [sess-` + c.want + `] ` + screencast,
			}
			got := h.b.waitCount(t, "", 4)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestLiveOfABrowserWithOnlyItsOwnPagesShowsNothing(t *testing.T) {
	t.Parallel()
	h := startLiveRaw(t, `[{"targetId":"chrome","type":"page","url":"chrome://newtab/"},{"targetId":"devtools","type":"page","url":"devtools://devtools/inspector.html"}]`, true)
	err := h.waitEnd(t)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure || !strings.Contains(err.Error(), "the browser has no page to show") {
		t.Fatalf("the viewer's WebSocket ended with %v", err)
	}
	if got := h.b.commands("Target.attachToTarget"); len(got) != 0 {
		t.Fatalf("attached to %v", got)
	}
	h.b.waitClosed(t)
}

func TestLiveMovesFromABlankTabToAPageThatComesToShowSomething(t *testing.T) {
	t.Parallel()
	for _, event := range []string{"Target.targetInfoChanged", "Target.targetCreated"} {
		t.Run(event, func(t *testing.T) {
			t.Parallel()
			h := startLive(t, `[{"targetId":"chrome","type":"page","url":"chrome://newtab/"},{"targetId":"blank","type":"page","url":"about:blank"}]`, true)
			h.b.waitCommands(t, "the screencast of the blank tab", "Page.startScreencast", func(got []string) bool { return len(got) == 1 })
			// Neither the browser's own page nor another blank tab is worth
			// moving to; the automation client's page is.
			h.b.push(`{"method":"` + event + `","params":{"targetInfo":{"targetId":"settings","type":"page","url":"chrome://settings/"}}}`)
			h.b.push(`{"method":"` + event + `","params":{"targetInfo":{"targetId":"blank2","type":"page","url":"about:blank"}}}`)
			h.b.push(`{"method":"` + event + `","params":{"targetInfo":{"targetId":"worker","type":"service_worker","url":"https://shop.example/sw.js"}}}`)
			h.b.push(`{"method":"` + event + `","params":{"targetInfo":{"targetId":"new","type":"page","url":"https://shop.example/"}}}`)
			want := []string{
				liveDiscover, liveGetTarget,
				`Target.attachToTarget [] {"flatten":true,"targetId":"blank"}`,
				`Page.startScreencast [sess-blank] ` + screencast,
				`Target.attachToTarget [] {"flatten":true,"targetId":"new"}`,
				`Target.detachFromTarget [] {"sessionId":"sess-blank"}`,
				`Page.startScreencast [sess-new] ` + screencast,
			}
			got := h.b.waitCount(t, "", len(want))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// watching starts a live view of webTargets and waits for the screencast
// of the web page, session sess-web.
func watching(t *testing.T, input bool) *liveHarness {
	t.Helper()
	h := startLive(t, webTargets, input)
	h.b.waitCommands(t, "the screencast of the web page", "Page.startScreencast", func(got []string) bool { return len(got) == 1 })
	return h
}

func TestLiveFramesReachTheViewerAndAreAcked(t *testing.T) {
	t.Parallel()
	h := watching(t, false)
	// A frame of a page the live view left is neither shown nor acked.
	h.b.push(frame("sess-blank", 7, "old"))
	h.b.push(frame("sess-web", 1, "AAAA"))
	h.b.push(frame("sess-web", 2, "BBBB"))
	if got, want := h.read(t), `{"data":"AAAA","meta":{"deviceWidth":800,"deviceHeight":600,"n":1},"type":"frame"}`; got != want {
		t.Fatalf("frame %s, want %s", got, want)
	}
	if got, want := h.read(t), `{"data":"BBBB","meta":{"deviceWidth":800,"deviceHeight":600,"n":2},"type":"frame"}`; got != want {
		t.Fatalf("frame %s, want %s", got, want)
	}
	acks := h.b.waitCount(t, "Page.screencastFrameAck", 2)
	want := []string{
		`Page.screencastFrameAck [sess-web] {"sessionId":1}`,
		`Page.screencastFrameAck [sess-web] {"sessionId":2}`,
	}
	if strings.Join(acks, "\n") != strings.Join(want, "\n") {
		t.Fatalf("acks:\n%s\nwant:\n%s", strings.Join(acks, "\n"), strings.Join(want, "\n"))
	}
}

func TestLiveSlowViewerNeverHoldsTheBrowserUp(t *testing.T) {
	t.Parallel()
	h := watching(t, false)
	// 500 frames of 8 KiB while the viewer reads nothing (its connection
	// holds a few at most): every one is acked at once.
	const frames = 500
	pad := strings.Repeat("A", 8<<10)
	for n := 1; n <= frames; n++ {
		h.b.push(frame("sess-web", n, fmt.Sprintf("%03d", n)+pad))
	}
	acks := h.b.waitCount(t, "Page.screencastFrameAck", frames)
	for i, a := range acks {
		if want := fmt.Sprintf(`Page.screencastFrameAck [sess-web] {"sessionId":%d}`, i+1); a != want {
			t.Fatalf("ack %d: %s, want %s", i+1, a, want)
		}
	}
	// The viewer then reads: what its connection held, then the newest
	// frame, the ones between dropped.
	var got []int
	for len(got) == 0 || got[len(got)-1] != frames {
		var f struct {
			Type, Data string
			Meta       struct{ N int }
		}
		if err := json.Unmarshal([]byte(h.read(t)), &f); err != nil || f.Type != "frame" || f.Data != fmt.Sprintf("%03d", f.Meta.N)+pad {
			t.Fatalf("not a frame of the browser's: %v %s %d", err, f.Type, f.Meta.N)
		}
		if len(got) > 0 && f.Meta.N <= got[len(got)-1] {
			t.Fatalf("frame %d after %v", f.Meta.N, got)
		}
		got = append(got, f.Meta.N)
	}
	t.Logf("the viewer got frames %v", got)
	if len(got) > frames/10 {
		t.Fatalf("the slow viewer got %d frames, want the newest after a few its connection held: %v", len(got), got)
	}
}

// liveValidInput is input of every kind, each with the command it makes
// on the watched page: bounds are inclusive, modifiers keep their four
// bits, Enter types a carriage return, a key with Ctrl types nothing.
var liveValidInput = []struct{ in, want string }{
	{`{"type":"mouse","event":"mousePressed","x":10.5,"y":20,"button":"left","clickCount":1}`,
		`Input.dispatchMouseEvent [sess-web] {"button":"left","clickCount":1,"modifiers":0,"type":"mousePressed","x":10.5,"y":20}`},
	{`{"type":"mouse","event":"mouseReleased","x":16384,"y":0,"button":"right","clickCount":3,"modifiers":31}`,
		`Input.dispatchMouseEvent [sess-web] {"button":"right","clickCount":3,"modifiers":15,"type":"mouseReleased","x":16384,"y":0}`},
	{`{"type":"mouse","event":"mouseMoved","x":1,"y":16384,"button":"none","clickCount":0,"modifiers":16}`,
		`Input.dispatchMouseEvent [sess-web] {"button":"none","clickCount":0,"modifiers":0,"type":"mouseMoved","x":1,"y":16384}`},
	{`{"type":"mouse","event":"mousePressed","x":3,"y":4,"button":"middle","clickCount":2,"modifiers":4}`,
		`Input.dispatchMouseEvent [sess-web] {"button":"middle","clickCount":2,"modifiers":4,"type":"mousePressed","x":3,"y":4}`},
	{`{"type":"wheel","x":100,"y":200,"deltaX":-10000,"deltaY":120.5,"modifiers":2}`,
		`Input.dispatchMouseEvent [sess-web] {"deltaX":-10000,"deltaY":120.5,"modifiers":2,"type":"mouseWheel","x":100,"y":200}`},
	{`{"type":"wheel","x":0,"y":0,"deltaX":0,"deltaY":10000}`,
		`Input.dispatchMouseEvent [sess-web] {"deltaX":0,"deltaY":10000,"modifiers":0,"type":"mouseWheel","x":0,"y":0}`},
	{`{"type":"key","event":"keyDown","key":"Enter","code":"Enter","text":"\r"}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"Enter","key":"Enter","modifiers":0,"text":"\r","type":"keyDown","windowsVirtualKeyCode":13}`},
	{`{"type":"key","event":"keyUp","key":"Enter","code":"Enter"}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"Enter","key":"Enter","modifiers":0,"type":"keyUp","windowsVirtualKeyCode":13}`},
	{`{"type":"key","event":"keyDown","key":"Backspace","code":"Backspace","text":"x"}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"Backspace","key":"Backspace","modifiers":0,"type":"keyDown","windowsVirtualKeyCode":8}`},
	{`{"type":"key","event":"keyDown","key":"ArrowLeft","code":"ArrowLeft","modifiers":8}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"ArrowLeft","key":"ArrowLeft","modifiers":8,"type":"keyDown","windowsVirtualKeyCode":37}`},
	{`{"type":"key","event":"keyDown","key":"a","code":"KeyA","text":"a"}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"KeyA","key":"a","modifiers":0,"text":"a","type":"keyDown"}`},
	{`{"type":"key","event":"keyDown","key":"A","code":"KeyA","text":"A","modifiers":8}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"KeyA","key":"A","modifiers":8,"text":"A","type":"keyDown"}`},
	{`{"type":"key","event":"keyDown","key":"a","code":"KeyA","text":"a","modifiers":2}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"KeyA","key":"a","modifiers":2,"type":"keyDown"}`},
	{`{"type":"key","event":"keyDown","key":"c","code":"KeyC","text":"c","modifiers":10}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"KeyC","key":"c","modifiers":10,"type":"keyDown"}`},
	{`{"type":"key","event":"keyUp","key":"a","code":"KeyA","text":"a"}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"KeyA","key":"a","modifiers":0,"type":"keyUp"}`},
	{`{"type":"key","event":"keyUp","key":"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk","code":"cccccccccccccccccccccccccccccccc"}`,
		`Input.dispatchKeyEvent [sess-web] {"code":"cccccccccccccccccccccccccccccccc","key":"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk","modifiers":0,"type":"keyUp"}`},
	{`{"type":"text","text":"héllo wörld"}`,
		`Input.insertText [sess-web] {"text":"héllo wörld"}`},
	{`{"type":"text","text":"` + strings.Repeat("x", 1000) + `"}`,
		`Input.insertText [sess-web] {"text":"` + strings.Repeat("x", 1000) + `"}`},
}

// liveHostileInput is input the live view drops, each for its reason.
var liveHostileInput = []string{
	`{"type":"teleport","x":1,"y":1}`,
	`{"type":"","x":1,"y":1}`,
	`{"type":"mouse","event":"mouseTeleported","x":1,"y":1,"button":"left","clickCount":1}`,
	`{"type":"mouse","event":"mouseWheel","x":1,"y":1,"deltaY":5}`,
	`{"type":"mouse","event":"mousePressed","x":1,"y":1,"button":"back","clickCount":1}`,
	`{"type":"mouse","event":"mousePressed","x":1,"y":1,"clickCount":1}`,
	`{"type":"mouse","event":"mousePressed","x":-1,"y":1,"button":"left","clickCount":1}`,
	`{"type":"mouse","event":"mousePressed","x":1,"y":-0.5,"button":"left","clickCount":1}`,
	`{"type":"mouse","event":"mousePressed","x":16384.5,"y":1,"button":"left","clickCount":1}`,
	`{"type":"mouse","event":"mousePressed","x":1,"y":1e9,"button":"left","clickCount":1}`,
	`{"type":"mouse","event":"mousePressed","x":1,"y":1,"button":"left","clickCount":4}`,
	`{"type":"mouse","event":"mousePressed","x":1,"y":1,"button":"left","clickCount":-1}`,
	`{"type":"wheel","x":1,"y":1,"deltaX":0,"deltaY":10001}`,
	`{"type":"wheel","x":1,"y":1,"deltaX":-10000.5,"deltaY":0}`,
	`{"type":"wheel","x":-5,"y":1,"deltaX":0,"deltaY":10}`,
	`{"type":"wheel","x":1,"y":20000,"deltaX":0,"deltaY":10}`,
	`{"type":"key","event":"keyPress","key":"a","code":"KeyA","text":"a"}`,
	`{"type":"key","event":"keyDown","key":"","code":"KeyA","text":"a"}`,
	`{"type":"key","event":"keyDown","key":"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk","code":"KeyA"}`,
	`{"type":"key","event":"keyDown","key":"a","code":"ccccccccccccccccccccccccccccccccc"}`,
	`{"type":"key","event":"keyDown","key":"a","code":"KeyA","text":"abcde"}`,
	`{"type":"text","text":"` + strings.Repeat("x", 1001) + `"}`,
	`{"type":"text","text":"a\u0000b"}`,
	`{"type":"text","text":""}`,
	`{"type":"mouse","event":"mousePressed"`,
	`not json`,
	`{"type":"mouse","event":"mousePressed","x":"10","y":1,"button":"left","clickCount":1}`,
	`{"type":"mouse","event":"mousePressed","x":1,"y":1,"button":"left","clickCount":1.5}`,
	`{"type":"text","text":["a"]}`,
	`["mouse"]`,
	`null`,
	``,
}

func TestLiveInputMapsToExactlyItsCommand(t *testing.T) {
	t.Parallel()
	h := watching(t, true)
	var want []string
	for _, c := range liveValidInput {
		h.send(t, c.in)
		want = append(want, c.want)
	}
	got := h.b.waitCount(t, "Input.", len(want))
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("input %s made\n%s\nwant\n%s", liveValidInput[i].in, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d commands, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}

func TestLiveHostileInputIsDropped(t *testing.T) {
	t.Parallel()
	h := watching(t, true)
	h.send(t, liveHostileInput...)
	// The viewer's messages are taken in order: once the last one's
	// command arrives, every one before it was dropped.
	h.send(t, `{"type":"text","text":"end"}`)
	got := h.b.waitCount(t, "Input.", 1)
	if want := `Input.insertText [sess-web] {"text":"end"}`; len(got) != 1 || got[0] != want {
		t.Fatalf("commands:\n%s\nwant only %s", strings.Join(got, "\n"), want)
	}
}

func TestLiveMessageOverTheReadLimitIsRefused(t *testing.T) {
	t.Parallel()
	h := watching(t, true)
	// A click padded past 4 KiB.
	big := `{"type":"mouse","event":"mousePressed","x":1,"y":1,"button":"left","clickCount":1,"pad":"` + strings.Repeat("x", 4<<10) + `"}`
	h.send(t, big)
	err := h.waitEnd(t)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("the viewer's WebSocket ended with %v, want status %d", err, websocket.StatusMessageTooBig)
	}
	h.b.waitClosed(t)
	if got := h.b.commands("Input."); len(got) != 0 {
		t.Fatalf("an oversized message made %v", got)
	}
}

func TestLiveViewerWithoutInputSendsNothingToTheBrowser(t *testing.T) {
	t.Parallel()
	h := watching(t, false)
	for _, c := range liveValidInput {
		h.send(t, c.in)
	}
	h.send(t, liveHostileInput...)
	// Its messages are taken in order: once its leaving closed the CDP
	// connection, every one was taken and dropped.
	if err := h.ws.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatalf("the viewer's close: %v", err)
	}
	h.b.waitClosed(t)
	if got := h.b.commands("Input."); len(got) != 0 {
		t.Fatalf("a viewer without input made:\n%s", strings.Join(got, "\n"))
	}
}

func TestLiveBrowserEndingClosesTheViewer(t *testing.T) {
	t.Parallel()
	h := watching(t, true)
	h.b.end()
	err := h.waitEnd(t)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure || !strings.Contains(err.Error(), "the browser's session ended") {
		t.Fatalf("the viewer's WebSocket ended with %v, want a normal closure saying the browser's session ended", err)
	}
	h.b.waitClosed(t)
	select {
	case <-h.done:
	case <-time.After(liveWait):
		t.Fatal("the live view did not end with its browser")
	}
}

func TestLiveViewerLeavingClosesTheBrowserConnection(t *testing.T) {
	t.Parallel()
	h := watching(t, true)
	if err := h.ws.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatalf("the viewer's close: %v", err)
	}
	h.b.waitClosed(t)
	select {
	case <-h.done:
	case <-time.After(liveWait):
		t.Fatal("the live view did not end with its viewer")
	}
}
