//go:build linux

package chromium

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// relayURL serves the session's browser on a loopback WebSocket of the
// test's own, as the service's relay does, so that CDP clients of the
// tests (chromedp) connect as a customer's would.
func relayURL(t *testing.T, rt *Runtime, sessionID string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := rt.Connect(r.Context(), sessionID)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		defer conn.Close()
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(-1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			defer cancel()
			for {
				msg, err := conn.Receive(ctx)
				if err != nil {
					_ = ws.Close(websocket.StatusGoingAway, "browser gone")
					return
				}
				if ws.Write(ctx, websocket.MessageText, msg) != nil {
					return
				}
			}
		}()
		for {
			_, msg, err := ws.Read(ctx)
			if err != nil || conn.Send(ctx, msg) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws://" + srv.Listener.Addr().String() + "/devtools/browser/test"
}

// expectVersion checks that the session's browser answers CDP.
func expectVersion(t *testing.T, rt *Runtime, sessionID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := rt.Connect(ctx, sessionID)
	if err != nil {
		t.Fatalf("Connect %s: %v", sessionID, err)
	}
	defer conn.Close()
	if err := conn.Send(ctx, []byte(`{"id":1,"method":"Browser.getVersion"}`)); err != nil {
		t.Fatal(err)
	}
	raw, err := conn.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"product":"Chrome/`) {
		t.Fatalf("Browser.getVersion answered %s", raw)
	}
}
