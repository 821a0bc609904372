package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// liveRuntime is fakeRuntime whose browsers take CDP clients: each answers
// what the live view asks of a browser with one page, sends one frame once
// its screencast starts, and records the input it is sent.
type liveRuntime struct {
	*fakeRuntime
	mu    sync.Mutex
	input []string
}

func (rt *liveRuntime) Connect(_ context.Context, sessionID string) (ports.CDPConn, error) {
	rt.fakeRuntime.mu.Lock()
	_, ok := rt.running[sessionID]
	rt.fakeRuntime.mu.Unlock()
	if !ok {
		return rt.fakeRuntime.Connect(context.Background(), sessionID)
	}
	return &liveConn{rt: rt, out: make(chan []byte, 16), done: make(chan struct{})}, nil
}

func (rt *liveRuntime) inputs() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]string(nil), rt.input...)
}

type liveConn struct {
	rt   *liveRuntime
	out  chan []byte
	done chan struct{}
	once sync.Once
}

func (c *liveConn) Send(_ context.Context, msg []byte) error {
	var m struct {
		ID     int64           `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return err
	}
	reply := func(result string) { c.out <- []byte(`{"id":` + jsonNumber(m.ID) + `,"result":` + result + `}`) }
	switch m.Method {
	case "Target.getTargets":
		reply(`{"targetInfos":[{"targetId":"T1","type":"page","url":"https://shop.test/"}]}`)
	case "Target.attachToTarget":
		reply(`{"sessionId":"S1"}`)
	case "Page.startScreencast":
		reply(`{}`)
		c.out <- []byte(`{"method":"Page.screencastFrame","sessionId":"S1","params":{"data":"aGVsbG8=","metadata":{"deviceWidth":800,"deviceHeight":600},"sessionId":1}}`)
	case "Input.dispatchMouseEvent":
		c.rt.mu.Lock()
		c.rt.input = append(c.rt.input, m.Method+" "+string(m.Params))
		c.rt.mu.Unlock()
		reply(`{}`)
	default:
		reply(`{}`)
	}
	return nil
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

func (c *liveConn) Receive(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.out:
		return m, nil
	case <-c.done:
		return nil, context.Canceled
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *liveConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

// TestConsoleLiveViewThroughAnotherInstance: the browser runs on one
// instance and the viewer's request lands on another, which carries it
// there; a page of another site is refused before any hop.
func TestConsoleLiveViewThroughAnotherInstance(t *testing.T) {
	t.Parallel()
	dbURL := testenv.PostgresURL(t)
	rt := &liveRuntime{fakeRuntime: newFakeRuntime()}
	runs := start(t, options{databaseURL: dbURL, extra: []fx.Option{fx.Decorate(func() ports.BrowserRuntime { return rt })}})
	other := start(t, options{databaseURL: dbURL})

	a := runs.register(t)
	id := runs.createProfile(t, a, nil)
	expect(t, runs.post("/api/v1/profiles/"+id+"/launch", map[string]any{}, bearer(a.access)...), http.StatusOK)

	u := other.console(t)
	u.signin(a)
	base, _ := url.Parse(other.base)
	dial := func(origin string) (*websocket.Conn, *http.Response, error) {
		header := http.Header{"Origin": {origin}}
		for _, ck := range u.c.Jar.Cookies(&url.URL{Scheme: "http", Host: base.Host, Path: "/app/"}) {
			header.Add("Cookie", ck.Name+"="+ck.Value)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		return websocket.Dial(ctx, "ws://"+base.Host+"/app/profiles/"+id+"/live/ws", &websocket.DialOptions{HTTPHeader: header})
	}

	if ws, resp, err := dial("https://attacker.test"); err == nil {
		ws.CloseNow()
		t.Fatal("a live view from another site was carried to the browser's instance")
	} else if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a live view from another site: %v, %v", resp, err)
	}

	ws, _, err := dial(other.base)
	if err != nil {
		t.Fatalf("the live view through the other instance: %v", err)
	}
	defer ws.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < 2 {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("reading the live view: %v (got %v)", err, got)
		}
		got = append(got, string(msg))
	}
	if got[0] != `{"input":true,"type":"ready"}` || !strings.Contains(got[1], `"data":"aGVsbG8="`) || !strings.Contains(got[1], `"deviceWidth":800`) {
		t.Fatalf("the live view said %v", got)
	}
	click := `{"type":"mouse","event":"mousePressed","x":400,"y":300,"button":"left","clickCount":1}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(click)); err != nil {
		t.Fatal(err)
	}
	poll.Check(t, poll.Timeout, "the click at the browser", func() error {
		in := rt.inputs()
		if len(in) != 1 || !strings.Contains(in[0], `"type":"mousePressed"`) || !strings.Contains(in[0], `"x":400`) {
			return fmt.Errorf("the browser got %v", in)
		}
		return nil
	})
}
