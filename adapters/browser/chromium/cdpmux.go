//go:build linux

package chromium

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

const (
	// maxBrowserMessage bounds one message from the browser: a full-page
	// screenshot is tens of megabytes; a browser that sends more is broken
	// or hostile, and its pipe is closed.
	maxBrowserMessage = 512 << 20
	// maxClientQueued bounds what waits for a client that does not read;
	// past it the client is disconnected, so that it never holds up the
	// browser, the runtime or another client.
	maxClientQueued = 256 << 20
	// pipeWriteTimeout bounds one write to a browser that has stopped
	// reading (stopped, or busy for good); the pipe is then broken.
	pipeWriteTimeout = 10 * time.Second
	// detachTimeout bounds ending a client's session on the browser.
	detachTimeout = 5 * time.Second
)

var (
	errPipeClosed   = errors.New("the browser's CDP pipe is closed")
	errClientClosed = errors.New("the CDP connection is closed")
	errTooSlow      = errors.New("the CDP client does not read what its browser sends")
)

// cdpMux shares the browser's one CDP pipe between the runtime's control
// connection and any number of clients. Each client gets a session of its
// own on the browser target (Target.attachToBrowserTarget), so that it sees
// what a client of a DevTools WebSocket sees: its own events, its own auto
// attach, its own targets. Messages are routed by their CDP session: a
// client may only use the sessions the browser attached for it, and every
// command it sends is checked first (checkCommand).
type cdpMux struct {
	in  *os.File // the browser reads its commands from here
	out *os.File // and writes its answers and events here
	log *slog.Logger

	wmu  sync.Mutex
	wbuf []byte

	// ids numbers the commands of the mux and the control on the browser's
	// root session.
	ids atomic.Int64

	mu sync.Mutex
	// owners maps each CDP session to the endpoint it belongs to.
	owners map[string]*endpoint
	// pending are the mux's own commands on the root session.
	pending map[int64]chan wireMsg
	clients map[*endpoint]bool
	// maxClients bounds the clients, those connecting included.
	maxClients, connecting int
	root                   *endpoint
	err                    error
	// beforeClose runs before a client's Browser.close reaches the
	// browser, so that what it holds is read first.
	beforeClose func()
	// preparing holds, for each target the browser attached to the root
	// session and paused, a channel closed once the control has put the
	// fingerprint on it (prepared): a client's Target.createTarget is
	// answered only then, so that nothing it does in the new target runs
	// before the fingerprint is there.
	preparing map[string]chan struct{}
}

// wireHead is what routing reads of every message of the browser.
type wireHead struct {
	ID        int64  `json:"id,omitempty"`
	Method    string `json:"method,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
}

// wireMsg is a whole CDP message.
type wireMsg struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     json.RawMessage `json:"error,omitempty"`
}

func newCDPMux(in, out *os.File, maxClients int, log *slog.Logger) *cdpMux {
	m := &cdpMux{in: in, out: out, log: log, maxClients: maxClients, owners: map[string]*endpoint{}, pending: map[int64]chan wireMsg{}, clients: map[*endpoint]bool{}, preparing: map[string]chan struct{}{}}
	m.root = newEndpoint(m, "", false)
	go m.read()
	return m
}

// read routes every message of the browser until the pipe ends.
func (m *cdpMux) read() {
	r := bufio.NewReaderSize(m.out, 64<<10)
	var err error
	for {
		var raw []byte
		raw, err = readMessage(r, maxBrowserMessage)
		if err != nil {
			break
		}
		// Routing reads the envelope only: a screenshot's megabytes are
		// passed on as they came, not copied.
		var head wireHead
		if json.Unmarshal(raw, &head) != nil {
			m.log.Warn("browser: unreadable CDP message dropped", "bytes", len(raw))
			continue
		}
		m.route(raw, head)
	}
	if errors.Is(err, io.EOF) {
		err = errPipeClosed
	}
	m.fail(err)
}

// readMessage reads one NUL-terminated message of at most max bytes.
func readMessage(r *bufio.Reader, max int) ([]byte, error) {
	var msg []byte
	for {
		chunk, err := r.ReadSlice(0)
		if len(msg)+len(chunk) > max+1 {
			return nil, fmt.Errorf("a message of the browser is over %d bytes", max)
		}
		msg = append(msg, chunk...)
		switch {
		case err == nil:
			return msg[:len(msg)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

func (m *cdpMux) route(raw []byte, msg wireHead) {
	m.mu.Lock()
	var to *endpoint
	if msg.SessionID == "" {
		if ch := m.pending[msg.ID]; msg.ID != 0 && ch != nil {
			delete(m.pending, msg.ID)
			m.mu.Unlock()
			var answer wireMsg
			_ = json.Unmarshal(raw, &answer)
			ch <- answer
			return
		}
		to = m.root
	} else {
		to = m.owners[msg.SessionID]
	}
	// A session the browser attaches belongs to whoever owns the session
	// it was attached on: a client's page sessions are the client's alone.
	switch msg.Method {
	case "Target.attachedToTarget":
		ev := attachEvent(raw)
		if ev.SessionID != "" && to != nil {
			m.owners[ev.SessionID] = to
		}
		if to == m.root && ev.WaitingForDebugger && ev.TargetInfo.TargetID != "" {
			m.preparing[ev.TargetInfo.TargetID] = make(chan struct{})
		}
	case "Target.detachedFromTarget":
		if child := eventSession(raw); child != "" {
			delete(m.owners, child)
		}
	}
	var gate <-chan struct{}
	if to != nil && to.client && msg.ID != 0 && msg.Method == "" && to.takeCreate(msg.ID) {
		gate = m.preparing[createdTarget(raw)]
	}
	m.mu.Unlock()
	if to == nil {
		return
	}
	if to.client && msg.SessionID == to.session {
		// The client speaks to its browser session as to a browser of its
		// own: without a session id.
		var full wireMsg
		if json.Unmarshal(raw, &full) != nil {
			return
		}
		full.SessionID = ""
		stripped, err := json.Marshal(full)
		if err != nil {
			return
		}
		raw = stripped
	}
	to.deliverGated(raw, gate)
}

// prepared says that the control has put the fingerprint on a target.
func (m *cdpMux) prepared(targetID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ch := m.preparing[targetID]; ch != nil {
		close(ch)
		delete(m.preparing, targetID)
	}
}

// attachedEvent is what routing reads of Target.attachedToTarget.
type attachedEvent struct {
	SessionID          string `json:"sessionId"`
	WaitingForDebugger bool   `json:"waitingForDebugger"`
	TargetInfo         struct {
		TargetID string `json:"targetId"`
	} `json:"targetInfo"`
}

func attachEvent(raw []byte) attachedEvent {
	var ev struct {
		Params attachedEvent `json:"params"`
	}
	_ = json.Unmarshal(raw, &ev) // a message that does not parse attaches nothing
	return ev.Params
}

// createdTarget is the targetId of Target.createTarget's answer.
func createdTarget(raw []byte) string {
	var a struct {
		Result struct {
			TargetID string `json:"targetId"`
		} `json:"result"`
	}
	_ = json.Unmarshal(raw, &a)
	return a.Result.TargetID
}

// eventSession is params.sessionId of a browser's message.
func eventSession(raw []byte) string {
	var ev struct {
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &ev) != nil {
		return ""
	}
	return ev.Params.SessionID
}

// childSession is the sessionId of a command's params.
func childSession(params json.RawMessage) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return p.SessionID
}

// write sends one message to the browser.
func (m *cdpMux) write(msg []byte) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	err := m.err
	m.mu.Unlock()
	if err != nil {
		return err
	}
	m.wbuf = append(append(m.wbuf[:0], msg...), 0)
	if err := m.in.SetWriteDeadline(time.Now().Add(pipeWriteTimeout)); err != nil {
		return err
	}
	_, err = m.in.Write(m.wbuf)
	if cap(m.wbuf) > 1<<20 {
		m.wbuf = nil
	}
	if err != nil {
		// Part of a message may have been written: nothing after it could
		// be read right.
		err = fmt.Errorf("write to the browser: %w", err)
		m.fail(err)
		return err
	}
	return nil
}

// call sends a command of the mux's own on the root session and waits for
// its answer.
func (m *cdpMux) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := m.ids.Add(1)
	ch := make(chan wireMsg, 1)
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return nil, m.err
	}
	m.pending[id] = ch
	m.mu.Unlock()
	forget := func() {
		m.mu.Lock()
		delete(m.pending, id)
		m.mu.Unlock()
	}
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			forget()
			return nil, err
		}
		raw = b
	}
	msg, err := json.Marshal(wireMsg{ID: id, Method: method, Params: raw})
	if err != nil {
		forget()
		return nil, err
	}
	if err := m.write(msg); err != nil {
		forget()
		return nil, err
	}
	select {
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case answer, ok := <-ch:
		if !ok {
			return nil, m.closedErr()
		}
		if len(answer.Error) > 0 {
			return nil, fmt.Errorf("%s: %s", method, answer.Error)
		}
		return answer.Result, nil
	}
}

func (m *cdpMux) closedErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// fail ends the mux: every endpoint and pending command learns err.
func (m *cdpMux) fail(err error) {
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = err
	pending := m.pending
	m.pending = map[int64]chan wireMsg{}
	all := []*endpoint{m.root}
	for e := range m.clients {
		all = append(all, e)
	}
	m.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	for _, e := range all {
		e.fail(err)
	}
}

// close ends the mux and closes the service's ends of the pipe.
func (m *cdpMux) close() {
	m.fail(errPipeClosed)
	m.wmu.Lock()
	m.in.Close()
	m.wmu.Unlock()
	m.out.Close()
}

// connect opens a client's connection: a session of its own on the
// browser target.
func (m *cdpMux) connect(ctx context.Context) (*endpoint, error) {
	m.mu.Lock()
	if len(m.clients)+m.connecting >= m.maxClients {
		m.mu.Unlock()
		return nil, domain.Unavailable("the session's browser has as many CDP clients as it may (" + strconv.Itoa(m.maxClients) + "); close one first")
	}
	m.connecting++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.connecting--
		m.mu.Unlock()
	}()
	res, err := m.call(ctx, "Target.attachToBrowserTarget", nil)
	if err != nil {
		return nil, err
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.SessionID == "" {
		return nil, fmt.Errorf("Target.attachToBrowserTarget answered %s", res)
	}
	e := newEndpoint(m, r.SessionID, true)
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return nil, m.err
	}
	m.owners[r.SessionID] = e
	m.clients[e] = true
	m.mu.Unlock()
	return e, nil
}

var _ ports.CDPConn = (*endpoint)(nil)

// endpoint is one party on the pipe: the control (the root session) or a
// client (its browser session and what was attached on it).
type endpoint struct {
	m       *cdpMux
	session string
	client  bool

	mu     sync.Mutex
	queue  []queued
	queued int
	err    error
	ready  chan struct{}
	once   sync.Once
	// creating are the ids of the client's Target.createTarget commands
	// not yet answered.
	creating map[int64]bool
}

// queued is a message that waits for its endpoint; one with a gate is not
// passed on before the gate closes (or prepareTimeout passes).
type queued struct {
	msg  []byte
	gate <-chan struct{}
}

func newEndpoint(m *cdpMux, session string, client bool) *endpoint {
	return &endpoint{m: m, session: session, client: client, ready: make(chan struct{}, 1), creating: map[int64]bool{}}
}

// deliver queues a message for the endpoint; it never blocks the reader.
func (e *endpoint) deliver(msg []byte) { e.deliverGated(msg, nil) }

// deliverGated queues a message that Receive holds until gate closes.
func (e *endpoint) deliverGated(msg []byte, gate <-chan struct{}) {
	e.mu.Lock()
	if e.err != nil {
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, queued{msg, gate})
	e.queued += len(msg)
	slow := e.client && e.queued > maxClientQueued
	e.mu.Unlock()
	if slow {
		e.m.log.Warn("browser: a CDP client that does not read is disconnected", "queued_bytes", maxClientQueued)
		e.fail(errTooSlow)
		go e.Close()
		return
	}
	select {
	case e.ready <- struct{}{}:
	default:
	}
}

func (e *endpoint) fail(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
		if errors.Is(err, errTooSlow) {
			e.queue, e.queued = nil, 0
		}
	}
	e.mu.Unlock()
	select {
	case e.ready <- struct{}{}:
	default:
	}
}

// Receive returns the next message for the endpoint.
func (e *endpoint) Receive(ctx context.Context) ([]byte, error) {
	for {
		e.mu.Lock()
		if len(e.queue) > 0 {
			q := e.queue[0]
			e.queue[0] = queued{}
			e.queue = e.queue[1:]
			e.queued -= len(q.msg)
			e.mu.Unlock()
			if q.gate != nil {
				wait := time.NewTimer(prepareTimeout)
				select {
				case <-q.gate:
				case <-wait.C:
				case <-ctx.Done():
					wait.Stop()
					return nil, ctx.Err()
				}
				wait.Stop()
			}
			return q.msg, nil
		}
		err := e.err
		e.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// clientCommand is a command as a client sends it.
type clientCommand struct {
	ID        *int64          `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
}

// Send checks a client's command and passes it to the browser on the
// client's session. A command that is refused is answered with a CDP
// error, as the browser answers one it does not accept; the connection
// goes on.
func (e *endpoint) Send(ctx context.Context, raw []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	err := e.err
	e.mu.Unlock()
	if err != nil {
		return err
	}
	var cmd clientCommand
	if err := json.Unmarshal(raw, &cmd); err != nil || cmd.ID == nil || cmd.Method == "" {
		var id int64
		if cmd.ID != nil {
			id = *cmd.ID
		}
		e.answer(id, cmd.SessionID, -32600, "Message must be a JSON object with an integer id and a method")
		return nil
	}
	session := cmd.SessionID
	if session == "" {
		session = e.session
	} else if !e.owns(session) {
		e.answer(*cmd.ID, cmd.SessionID, -32001, "Session with given id not found.")
		return nil
	}
	// Detaching names its session in the params: only one of the
	// client's own, never the control's (which holds the fingerprint's
	// overrides) nor another client's.
	if cmd.Method == "Target.detachFromTarget" {
		if named := childSession(cmd.Params); named != "" && !e.owns(named) {
			e.answer(*cmd.ID, cmd.SessionID, -32001, "Session with given id not found.")
			return nil
		}
	}
	params, err := checkCommand(cmd.Method, cmd.Params)
	if err != nil {
		e.answer(*cmd.ID, cmd.SessionID, -32000, err.Error())
		return nil
	}
	if cmd.Method == "Target.createTarget" {
		e.mu.Lock()
		e.creating[*cmd.ID] = true
		e.mu.Unlock()
	}
	if cmd.Method == "Browser.close" && e.m.beforeClose != nil {
		e.m.beforeClose()
	}
	out, err := json.Marshal(wireMsg{ID: *cmd.ID, Method: cmd.Method, SessionID: session, Params: params})
	if err != nil {
		return err
	}
	return e.m.write(out)
}

// takeCreate reports whether id is a Target.createTarget of the client's,
// and forgets it.
func (e *endpoint) takeCreate(id int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.creating[id] {
		return false
	}
	delete(e.creating, id)
	return true
}

func (e *endpoint) owns(session string) bool {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return e.m.owners[session] == e
}

// answer queues an error answer for the client, as the browser would give.
func (e *endpoint) answer(id int64, session string, code int, message string) {
	type cdpError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, err := json.Marshal(struct {
		ID        int64    `json:"id"`
		SessionID string   `json:"sessionId,omitempty"`
		Error     cdpError `json:"error"`
	}{id, session, cdpError{code, message}})
	if err == nil {
		e.deliver(b)
	}
}

// Close ends the client's session on the browser (and with it every
// session attached on it) and forgets the client.
func (e *endpoint) Close() error {
	if !e.client {
		return nil
	}
	e.once.Do(func() {
		m := e.m
		m.mu.Lock()
		for s, owner := range m.owners {
			if owner == e && s != e.session {
				delete(m.owners, s)
			}
		}
		delete(m.owners, e.session)
		delete(m.clients, e)
		live := m.err == nil
		m.mu.Unlock()
		e.fail(errClientClosed)
		if live {
			ctx, cancel := context.WithTimeout(context.Background(), detachTimeout)
			defer cancel()
			if _, err := m.call(ctx, "Target.detachFromTarget", map[string]string{"sessionId": e.session}); err != nil {
				m.log.Debug("browser: detaching a CDP client", "error", err)
			}
		}
	})
	return nil
}
