package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/gorilla/mux"
	"go.uber.org/zap"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
)

// The live view: a running profile's browser in the page. The console
// opens a CDP connection of its own to the browser (the runtime's checked
// connection, as a relay client gets), attaches to its page, and carries
// the page's screencast to the viewer's WebSocket and the viewer's clicks,
// scrolling and typing back as input events. Its connection is one client
// more of the browser: an automation client connected at the same time
// keeps its own. Frames are acknowledged at once and a viewer that reads
// slowly only misses frames, so a slow viewer never holds the browser up.

// liveHopHeader marks a live view one instance carries to the instance
// that runs the browser; that one never carries it further.
const liveHopHeader = "X-Profilesvc-Live-Hop"

// liveMaxMessage bounds what a viewer may send in one message: an input
// event is a few hundred bytes.
const liveMaxMessage = 4 << 10

func (c *Console) liveRoutes() []route {
	return []route{
		{http.MethodGet, Prefix + "/profiles/{id}/live", c.signedIn(c.livePage)},
		{http.MethodGet, Prefix + "/profiles/{id}/live/ws", c.signedIn(c.liveSocket)},
	}
}

// livePage is the page that shows the live view.
type livePage struct {
	Name, ID string
	// Input: the viewer may click and type (else it watches only).
	Input bool
}

func (c *Console) livePage(q *request) error {
	id := mux.Vars(q.r)["id"]
	p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	view, err := c.svc.Profiles.LiveView(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "live", "Live view of "+p.Name, livePage{Name: p.Name, ID: p.ID, Input: view.Input})
}

func (c *Console) liveSocket(q *request) error {
	// A page of another site cannot open a viewer's live view with its
	// cookie: checked here, before anything, because the hop to another
	// instance speaks for the console there with an Origin of its own.
	if !sameOrigin(q.r) {
		return errCrossOrigin
	}
	id := mux.Vars(q.r)["id"]
	view, err := c.svc.Profiles.LiveView(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	if view.Node != "" {
		return c.liveHop(q, view.Node)
	}
	conn, err := view.Connect(q.r.Context())
	if err != nil {
		if domain.KindOf(err) != domain.KindInternal {
			return err
		}
		httpapi.RequestLogger(q.r.Context()).Warn("live view could not connect to the browser", zap.Error(err))
		return domain.Unavailable("the profile's browser did not answer; retry later")
	}
	defer conn.Close()
	liftDeadlines(q)
	ws, err := websocket.Accept(q.w, q.r, nil)
	if err != nil {
		return nil
	}
	ws.SetReadLimit(liveMaxMessage)
	s := &liveSession{ws: ws, cdp: conn, input: view.Input, replies: map[int64]chan cdpReply{}, frames: make(chan []byte, 1), shownPages: make(chan cdpTarget, 8)}
	s.run(q.r.Context(), httpapi.RequestLogger(q.r.Context()))
	return nil
}

// liveHop carries the live view to the instance that runs the browser,
// with the viewer's cookies: that instance resolves the same session.
func (c *Console) liveHop(q *request, node string) error {
	if q.r.Header.Get(liveHopHeader) != "" {
		return domain.Unavailable("the instances disagree about where the profile's browser runs; retry later")
	}
	target, err := url.Parse(node)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") {
		return domain.Unavailable("the profile's browser runs on an instance this one cannot reach")
	}
	liftDeadlines(q)
	var failed error
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path = q.r.URL.Path
			pr.Out.URL.RawPath = ""
			pr.Out.Host = target.Host
			// The other instance checks the Origin against its own host.
			pr.Out.Header.Set("Origin", target.Scheme+"://"+target.Host)
			pr.Out.Header.Del("Sec-Fetch-Site")
			pr.Out.Header.Set(liveHopHeader, "1")
		},
		ErrorHandler: func(http.ResponseWriter, *http.Request, error) {
			failed = domain.Unavailable("the instance that runs the profile's browser did not answer; retry later")
		},
	}
	proxy.ServeHTTP(q.w, q.r)
	return failed
}

// sameOrigin reports whether a WebSocket request comes from a page of the
// console's own origin (a browser always says which), or from a program
// that is no page (no Origin).
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// liftDeadlines clears the server's deadlines, meant for one request, on a
// connection about to carry a WebSocket that lives as long as its viewer.
func liftDeadlines(q *request) {
	rc := http.NewResponseController(q.w)
	if err := errors.Join(rc.SetReadDeadline(time.Time{}), rc.SetWriteDeadline(time.Time{})); err != nil {
		httpapi.RequestLogger(q.r.Context()).Warn("could not lift the deadlines of a live view: " + err.Error())
	}
}

// cdpReply is the browser's answer to one command.
type cdpReply struct {
	Result json.RawMessage
	Err    *struct {
		Message string `json:"message"`
	}
}

// cdpMessage is any message of the browser: an answer (ID) or an event.
type cdpMessage struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	SessionID string          `json:"sessionId"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// liveSession is one viewer's live view.
type liveSession struct {
	ws    *websocket.Conn
	cdp   profiles.CDPConn
	input bool

	nextID  atomic.Int64
	mu      sync.Mutex
	replies map[int64]chan cdpReply
	// page is the flat session of the page being watched, watched its
	// target.
	page    atomic.Value
	watched atomic.Value
	// shownPages are pages that came to show something, for follow.
	shownPages chan cdpTarget
	// frames holds the newest frame not yet written to the viewer.
	frames chan []byte
}

func (s *liveSession) run(parent context.Context, log *zap.Logger) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); defer cancel(); s.readBrowser(ctx) }()
	go func() { defer wg.Done(); defer cancel(); s.writeFrames(ctx) }()
	go func() { defer wg.Done(); s.follow(ctx, log) }()
	reason := "the browser's session ended"
	// The viewer hears that it is connected, and whether it may act,
	// before the first frame can come.
	_ = s.ws.Write(ctx, websocket.MessageText, mustJSON(map[string]any{"type": "ready", "input": s.input}))
	if err := s.attach(ctx); err != nil {
		log.Info("live view could not watch the page", zap.Error(err))
		reason = "the browser has no page to show"
	} else {
		// A read cancelled by ctx would drop the viewer's connection
		// without a word: when the browser's side ends first, the viewer
		// is told why and its read ends with the close.
		stop := context.AfterFunc(ctx, func() { _ = s.ws.Close(websocket.StatusNormalClosure, reason) })
		s.readViewer(context.WithoutCancel(ctx))
		stop()
	}
	cancel()
	_ = s.cdp.Close()
	_ = s.ws.Close(websocket.StatusNormalClosure, reason)
	wg.Wait()
}

// call sends a command and waits for its answer.
func (s *liveSession) call(ctx context.Context, sessionID, method string, params any) (json.RawMessage, error) {
	id := s.nextID.Add(1)
	ch := make(chan cdpReply, 1)
	s.mu.Lock()
	s.replies[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.replies, id)
		s.mu.Unlock()
	}()
	if err := s.send(ctx, id, sessionID, method, params); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, errors.New(method + ": " + r.Err.Message)
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send sends a command without waiting for its answer.
func (s *liveSession) send(ctx context.Context, id int64, sessionID, method string, params any) error {
	msg := map[string]any{"id": id, "method": method, "params": params}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	return s.cdp.Send(ctx, mustJSON(msg))
}

// cdpTarget is a target as the browser lists it.
type cdpTarget struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	URL      string `json:"url"`
}

// tab reports whether a target is a tab of the browser: a page of the web
// or a blank one, not a page of the browser's own interface (chrome://).
func (t cdpTarget) tab() bool {
	scheme, _, _ := strings.Cut(t.URL, ":")
	return t.Type == "page" && (t.URL == "about:blank" || scheme == "http" || scheme == "https" || scheme == "data" || scheme == "blob")
}

// shown reports whether a tab is worth watching: one that shows something,
// rather than a new tab's blank page.
func (t cdpTarget) shown() bool { return t.tab() && t.URL != "about:blank" }

// attach watches the browser's page: the one that shows something, else
// any page. While it watches a blank page, the first page that comes to
// show something is watched instead (the automation client opened it).
func (s *liveSession) attach(ctx context.Context) error {
	if _, err := s.call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true}); err != nil {
		return err
	}
	raw, err := s.call(ctx, "", "Target.getTargets", map[string]any{})
	if err != nil {
		return err
	}
	var targets struct {
		TargetInfos []cdpTarget `json:"targetInfos"`
	}
	if err := json.Unmarshal(raw, &targets); err != nil {
		return err
	}
	var pick *cdpTarget
	for i, t := range targets.TargetInfos {
		if t.tab() && (pick == nil || !pick.shown() && t.shown()) {
			pick = &targets.TargetInfos[i]
		}
	}
	if pick == nil {
		return errors.New("no page target")
	}
	return s.watch(ctx, *pick)
}

// watch moves the screencast to target t.
func (s *liveSession) watch(ctx context.Context, t cdpTarget) error {
	raw, err := s.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": t.TargetID, "flatten": true})
	if err != nil {
		return err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(raw, &att); err != nil {
		return err
	}
	old := s.pageSession()
	s.page.Store(att.SessionID)
	s.watched.Store(t)
	if old != "" {
		_ = s.send(ctx, s.nextID.Add(1), "", "Target.detachFromTarget", map[string]any{"sessionId": old})
	}
	_, err = s.call(ctx, att.SessionID, "Page.startScreencast", map[string]any{
		"format": "jpeg", "quality": 70, "maxWidth": 1280, "maxHeight": 960, "everyNthFrame": 1,
	})
	return err
}

// follow watches the pages that come to show something while the watched
// one is blank, one at a time, until ctx ends.
func (s *liveSession) follow(ctx context.Context, log *zap.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case t := <-s.shownPages:
			cur, ok := s.watched.Load().(cdpTarget)
			if !ok || cur.shown() || cur.TargetID == t.TargetID {
				continue
			}
			if err := s.watch(ctx, t); err != nil && ctx.Err() == nil {
				log.Info("live view could not move to a new page", zap.Error(err))
			}
		}
	}
}

func (s *liveSession) pageSession() string {
	id, _ := s.page.Load().(string)
	return id
}

// readBrowser takes the browser's messages: answers to their callers,
// frames acknowledged at once and kept as the newest.
func (s *liveSession) readBrowser(ctx context.Context) {
	for {
		raw, err := s.cdp.Receive(ctx)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if m.ID != 0 {
			s.mu.Lock()
			ch := s.replies[m.ID]
			s.mu.Unlock()
			if ch != nil {
				ch <- cdpReply{Result: m.Result, Err: m.Error}
			}
			continue
		}
		switch m.Method {
		case "Page.screencastFrame":
			if m.SessionID != s.pageSession() {
				continue
			}
			var f struct {
				Data      string          `json:"data"`
				Metadata  json.RawMessage `json:"metadata"`
				SessionID int64           `json:"sessionId"`
			}
			if json.Unmarshal(m.Params, &f) != nil {
				continue
			}
			_ = s.send(ctx, s.nextID.Add(1), m.SessionID, "Page.screencastFrameAck", map[string]any{"sessionId": f.SessionID})
			frame := mustJSON(map[string]any{"type": "frame", "data": f.Data, "meta": f.Metadata})
			select {
			case <-s.frames:
			default:
			}
			s.frames <- frame
		case "Target.targetCreated", "Target.targetInfoChanged":
			var info struct {
				TargetInfo cdpTarget `json:"targetInfo"`
			}
			if json.Unmarshal(m.Params, &info) == nil && info.TargetInfo.shown() {
				select {
				case s.shownPages <- info.TargetInfo:
				default:
				}
			}
		case "Target.detachedFromTarget":
			var d struct {
				SessionID string `json:"sessionId"`
			}
			if json.Unmarshal(m.Params, &d) == nil && d.SessionID == s.pageSession() {
				return
			}
		}
	}
}

// writeFrames writes the newest frame to the viewer whenever it can take
// one; frames that came meanwhile are dropped.
func (s *liveSession) writeFrames(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-s.frames:
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := s.ws.Write(wctx, websocket.MessageText, f)
			cancel()
			if err != nil {
				return
			}
		}
	}
}

// liveInput is one input event of the viewer.
type liveInput struct {
	Type       string  `json:"type"`
	Event      string  `json:"event"`
	X          float64 `json:"x"`
	Y          float64 `json:"y"`
	Button     string  `json:"button"`
	ClickCount int     `json:"clickCount"`
	DeltaX     float64 `json:"deltaX"`
	DeltaY     float64 `json:"deltaY"`
	Key        string  `json:"key"`
	Code       string  `json:"code"`
	Text       string  `json:"text"`
	Modifiers  int     `json:"modifiers"`
}

// readViewer reads the viewer's input until it leaves. A viewer who may
// not act (the role viewer) has its input dropped: it only watches.
func (s *liveSession) readViewer(ctx context.Context) {
	for {
		_, raw, err := s.ws.Read(ctx)
		if err != nil {
			return
		}
		if !s.input {
			continue
		}
		var in liveInput
		if json.Unmarshal(raw, &in) != nil {
			continue
		}
		method, params, ok := in.command()
		if !ok {
			continue
		}
		if err := s.send(ctx, s.nextID.Add(1), s.pageSession(), method, params); err != nil {
			return
		}
	}
}

// Mouse buttons and events the live view passes on.
var (
	liveMouseEvents = map[string]bool{"mousePressed": true, "mouseReleased": true, "mouseMoved": true}
	liveButtons     = map[string]bool{"none": true, "left": true, "middle": true, "right": true}
	liveKeyEvents   = map[string]bool{"keyDown": true, "keyUp": true}
	// liveKeyCodes are the Windows key codes of the keys that type no
	// text, which Chromium needs to act on them.
	liveKeyCodes = map[string]int{
		"Backspace": 8, "Tab": 9, "Enter": 13, "Escape": 27, "PageUp": 33, "PageDown": 34, "End": 35,
		"Home": 36, "ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40, "Delete": 46,
	}
)

// command is the CDP command of an input event, checked: known events,
// coordinates on a screen, short keys and text.
func (in liveInput) command() (string, map[string]any, bool) {
	onScreen := in.X >= 0 && in.Y >= 0 && in.X <= 16384 && in.Y <= 16384
	mods := in.Modifiers & 15
	switch in.Type {
	case "mouse":
		if !liveMouseEvents[in.Event] || !liveButtons[in.Button] || !onScreen || in.ClickCount < 0 || in.ClickCount > 3 {
			return "", nil, false
		}
		return "Input.dispatchMouseEvent", map[string]any{
			"type": in.Event, "x": in.X, "y": in.Y, "button": in.Button, "clickCount": in.ClickCount, "modifiers": mods,
		}, true
	case "wheel":
		if !onScreen || in.DeltaX < -10000 || in.DeltaX > 10000 || in.DeltaY < -10000 || in.DeltaY > 10000 {
			return "", nil, false
		}
		return "Input.dispatchMouseEvent", map[string]any{
			"type": "mouseWheel", "x": in.X, "y": in.Y, "deltaX": in.DeltaX, "deltaY": in.DeltaY, "modifiers": mods,
		}, true
	case "key":
		if !liveKeyEvents[in.Event] || len(in.Key) == 0 || len(in.Key) > 32 || len(in.Code) > 32 || len(in.Text) > 4 {
			return "", nil, false
		}
		p := map[string]any{"type": in.Event, "key": in.Key, "code": in.Code, "modifiers": mods}
		if code, ok := liveKeyCodes[in.Key]; ok {
			p["windowsVirtualKeyCode"] = code
			if in.Key == "Enter" && in.Event == "keyDown" {
				p["text"] = "\r"
			}
		} else if in.Event == "keyDown" && in.Text != "" && mods&^8 == 0 {
			p["text"] = in.Text
		}
		return "Input.dispatchKeyEvent", p, true
	case "text":
		if in.Text == "" || len(in.Text) > 1000 || strings.ContainsRune(in.Text, 0) {
			return "", nil, false
		}
		return "Input.insertText", map[string]any{"text": in.Text}, true
	}
	return "", nil, false
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // maps of plain values always encode
		panic(err)
	}
	return b
}
