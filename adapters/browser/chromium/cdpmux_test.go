//go:build linux

package chromium

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
)

// fakePipeBrowser is the browser's side of a CDP pipe: it reads the
// commands the mux writes and lets the test answer as the browser would.
type fakePipeBrowser struct {
	t        *testing.T
	commands chan wireMsg
	out      *os.File // the browser writes here
}

func newFakePipe(t *testing.T) (*cdpMux, *fakePipeBrowser) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &fakePipeBrowser{t: t, commands: make(chan wireMsg, 64), out: outW}
	go func() {
		r := bufio.NewReader(inR)
		for {
			raw, err := readMessage(r, maxBrowserMessage)
			if err != nil {
				close(b.commands)
				return
			}
			var m wireMsg
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Errorf("the mux wrote %q, not JSON", raw)
				continue
			}
			b.commands <- m
		}
	}()
	m := newCDPMux(inW, outR, 2, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		m.close()
		outW.Close()
		inR.Close()
	})
	return m, b
}

// next returns the next command the browser got.
func (b *fakePipeBrowser) next() wireMsg {
	b.t.Helper()
	select {
	case m, ok := <-b.commands:
		if !ok {
			b.t.Fatal("the pipe closed")
		}
		return m
	case <-time.After(10 * time.Second):
		b.t.Fatal("no command reached the browser")
	}
	return wireMsg{}
}

// send writes one message from the browser.
func (b *fakePipeBrowser) send(msg string) {
	b.t.Helper()
	if _, err := b.out.Write(append([]byte(msg), 0)); err != nil {
		b.t.Fatal(err)
	}
}

// connectClient connects a client and answers its attachToBrowserTarget
// with session.
func connectClient(t *testing.T, m *cdpMux, b *fakePipeBrowser, session string) *endpoint {
	t.Helper()
	got := make(chan *endpoint, 1)
	go func() {
		e, err := m.connect(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- e
	}()
	cmd := b.next()
	if cmd.Method != "Target.attachToBrowserTarget" || cmd.SessionID != "" {
		t.Fatalf("connect sent %+v, want Target.attachToBrowserTarget on the root session", cmd)
	}
	b.send(`{"id":` + itoa(cmd.ID) + `,"result":{"sessionId":"` + session + `"}}`)
	return <-got
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func receive(t *testing.T, e *endpoint) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := e.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return string(raw)
}

func TestMuxRoutesByCDPSession(t *testing.T) {
	m, b := newFakePipe(t)
	alice := connectClient(t, m, b, "S-ALICE")
	bob := connectClient(t, m, b, "S-BOB")
	ctx := context.Background()
	// The control's own page session, attached on the root session.
	b.send(`{"method":"Target.attachedToTarget","params":{"sessionId":"P-CONTROL","targetInfo":{"type":"page"}}}`)
	if raw, err := m.root.Receive(ctx); err != nil || !strings.Contains(string(raw), "P-CONTROL") {
		t.Fatalf("the control received %s, %v", raw, err)
	}

	// A command without a session goes on the client's own one, and its
	// answer comes back without it.
	if err := alice.Send(ctx, []byte(`{"id":1,"method":"Target.getTargets"}`)); err != nil {
		t.Fatal(err)
	}
	if cmd := b.next(); cmd.SessionID != "S-ALICE" || cmd.ID != 1 || cmd.Method != "Target.getTargets" {
		t.Fatalf("the browser got %+v, want Target.getTargets id 1 on S-ALICE", cmd)
	}
	b.send(`{"id":1,"result":{"targetInfos":[]},"sessionId":"S-ALICE"}`)
	if got := receive(t, alice); got != `{"id":1,"result":{"targetInfos":[]}}` {
		t.Errorf("alice received %s", got)
	}

	// A page attached on alice's session is alice's: its events reach
	// her alone, and bob may not name it.
	b.send(`{"method":"Target.attachedToTarget","params":{"sessionId":"P-ALICE","targetInfo":{"type":"page"}},"sessionId":"S-ALICE"}`)
	if got := receive(t, alice); !strings.Contains(got, `"P-ALICE"`) || strings.Contains(got, `"sessionId":"S-ALICE"`) {
		t.Errorf("alice received %s", got)
	}
	b.send(`{"method":"Page.loadEventFired","params":{},"sessionId":"P-ALICE"}`)
	if got := receive(t, alice); got != `{"method":"Page.loadEventFired","params":{},"sessionId":"P-ALICE"}` {
		t.Errorf("alice received %s", got)
	}
	if err := bob.Send(ctx, []byte(`{"id":5,"method":"Runtime.evaluate","params":{"expression":"1"},"sessionId":"P-ALICE"}`)); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, bob); got != `{"id":5,"sessionId":"P-ALICE","error":{"code":-32001,"message":"Session with given id not found."}}` {
		t.Errorf("bob naming alice's page received %s", got)
	}
	// Nor the control's root session, nor alice's browser session.
	if err := bob.Send(ctx, []byte(`{"id":6,"method":"Browser.getVersion","sessionId":"S-ALICE"}`)); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, bob); !strings.Contains(got, `-32001`) {
		t.Errorf("bob naming alice's browser session received %s", got)
	}

	// Nor detach it, nor a session of the control's.
	for _, named := range []string{"P-ALICE", "P-CONTROL"} {
		if err := bob.Send(ctx, []byte(`{"id":8,"method":"Target.detachFromTarget","params":{"sessionId":"`+named+`"}}`)); err != nil {
			t.Fatal(err)
		}
		if got := receive(t, bob); !strings.Contains(got, `-32001`) {
			t.Errorf("bob detaching %s received %s", named, got)
		}
	}

	// Once the page is detached, nobody reaches it.
	b.send(`{"method":"Target.detachedFromTarget","params":{"sessionId":"P-ALICE"},"sessionId":"S-ALICE"}`)
	receive(t, alice)
	if err := alice.Send(ctx, []byte(`{"id":7,"method":"Runtime.evaluate","sessionId":"P-ALICE"}`)); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, alice); !strings.Contains(got, `-32001`) {
		t.Errorf("alice naming her detached page received %s", got)
	}

	// Closing a client ends its session on the browser.
	go alice.Close()
	if cmd := b.next(); cmd.Method != "Target.detachFromTarget" || !strings.Contains(string(cmd.Params), `"S-ALICE"`) {
		t.Errorf("closing alice sent %+v, want Target.detachFromTarget of S-ALICE", cmd)
	}
}

func TestMuxChecksEveryClientCommand(t *testing.T) {
	m, b := newFakePipe(t)
	c := connectClient(t, m, b, "S-C")
	ctx := context.Background()
	for _, cmd := range []string{
		`{"id":1,"method":"DOM.setFileInputFiles","params":{"files":["/etc/passwd"],"nodeId":1}}`,
		`{"id":2,"method":"Page.navigate","params":{"url":"file:///etc/passwd"}}`,
		`{"id":3,"method":"Page.navigate","params":{"url":" FILE:///etc/passwd"}}`,
		`{"id":4,"method":"Target.createTarget","params":{"url":"chrome://settings"}}`,
		`{"id":5,"method":"Target.createBrowserContext","params":{"proxyServer":"direct://"}}`,
		`{"id":6,"method":"Network.loadNetworkResource","params":{"url":"http://127.0.0.1/"}}`,
		`{"id":7,"method":"Target.setAutoAttach","params":{"autoAttach":true,"waitForDebuggerOnStart":false}}`,
		`{"id":8,"method":"Target.sendMessageToTarget","params":{"message":"{}"}}`,
		`{"id":9,"method":"Extensions.loadUnpacked","params":{"path":"/tmp"}}`,
		`{"id":10,"method":"Fetch.continueRequest","params":{"requestId":"1","url":"file:///etc/shadow"}}`,
		`{"id":11,"method":"Input.dispatchDragEvent","params":{"type":"drop","x":1,"y":1,"data":{"items":[],"files":["/etc/passwd"],"dragOperationsMask":1}}}`,
		`{"id":12,"method":"PWA.install","params":{"manifestId":"x"}}`,
		`not json`,
		`{"method":"Browser.getVersion"}`,
	} {
		if err := c.Send(ctx, []byte(cmd)); err != nil {
			t.Fatal(err)
		}
		if got := receive(t, c); !strings.Contains(got, `"error"`) {
			t.Errorf("%s was answered %s, want an error", cmd, got)
		}
	}
	// Allowed commands pass, download paths pointed at the sandbox.
	for _, cmd := range []string{
		`{"id":20,"method":"Page.navigate","params":{"url":"https://example.com/"}}`,
		`{"id":21,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow","downloadPath":"/root"}}`,
	} {
		if err := c.Send(ctx, []byte(cmd)); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.next(); got.ID != 20 {
		t.Errorf("the browser got %+v, want the navigation", got)
	}
	if got := b.next(); got.ID != 21 || !strings.Contains(string(got.Params), `"downloadPath":"`+sandboxDownloads+`"`) {
		t.Errorf("the browser got %+v, want the download path %s", got, sandboxDownloads)
	}
}

func TestMuxEndsEveryEndpointWhenThePipeCloses(t *testing.T) {
	m, b := newFakePipe(t)
	c := connectClient(t, m, b, "S-C")
	b.out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Receive(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("a client's Receive after the browser's pipe closed: %v", err)
	}
	if _, err := m.root.Receive(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("the control's Receive after the browser's pipe closed: %v", err)
	}
	if _, err := m.connect(ctx); err == nil {
		t.Error("a client connected to a browser whose pipe is closed")
	}
}

func TestMuxBoundsItsClients(t *testing.T) {
	m, b := newFakePipe(t)
	connectClient(t, m, b, "S-1")
	second := connectClient(t, m, b, "S-2")
	if _, err := m.connect(context.Background()); !domain.IsKind(err, domain.KindUnavailable) {
		t.Fatalf("a third client of a mux that takes two: %v, want Unavailable", err)
	}
	go second.Close()
	b.next() // its detach
	connectClient(t, m, b, "S-3")
}
