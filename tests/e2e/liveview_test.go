//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/coder/websocket"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// liveTestPage is the page the automation client opens: a full-page button
// that turns the page green and says so when clicked, and a text field.
const liveTestPage = `data:text/html,<!doctype html><title>live</title>` +
	`<style>html,body{margin:0;height:100%}button{display:block;width:100%;height:70vh;font-size:40px;background:%23c00;color:white;border:0}` +
	`input{width:100%;height:20vh;font-size:40px}</style>` +
	`<button id=b onclick="document.body.dataset.clicked='yes';this.style.background='%2300c000';this.textContent='clicked'">click me</button>` +
	`<input id=t>`

// consoleClient is a browser of the dashboard as a form post sees it: a
// cookie jar, the console's own Origin on every request.
type consoleClient struct {
	base string
	c    *http.Client
}

func newConsoleClient(t *testing.T, base string) *consoleClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &consoleClient{base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// post sends a form and returns the status, the Location and the body.
func (cc *consoleClient) post(t *testing.T, path string, form url.Values) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, cc.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", cc.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := cc.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

// live opens the live view's WebSocket with the console's cookies, sent
// from origin.
func (cc *consoleClient) live(ctx context.Context, profileID, origin string) (*websocket.Conn, *http.Response, error) {
	u, _ := url.Parse(cc.base)
	header := http.Header{"Origin": {origin}}
	for _, ck := range cc.c.Jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/app/"}) {
		header.Add("Cookie", ck.Name+"="+ck.Value)
	}
	return websocket.Dial(ctx, "ws://"+u.Host+"/app/profiles/"+profileID+"/live/ws", &websocket.DialOptions{HTTPHeader: header})
}

// liveFrame is one screencast frame as the live view sends it.
type liveFrame struct {
	Type string `json:"type"`
	Data string `json:"data"`
	Meta struct {
		DeviceWidth  float64 `json:"deviceWidth"`
		DeviceHeight float64 `json:"deviceHeight"`
	} `json:"meta"`
	Input bool `json:"input"`
}

// centreColour decodes a frame and reads the colour of the test page's
// button, left of its label.
func (f liveFrame) centreColour(t *testing.T) (r, g, b uint32) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(f.Data)
	if err != nil {
		t.Fatalf("frame data: %v", err)
	}
	img, err := jpeg.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("frame is not a JPEG: %v", err)
	}
	bounds := img.Bounds()
	r, g, b, _ = img.At(bounds.Dx()/10, bounds.Dy()/3).RGBA()
	return r >> 8, g >> 8, b >> 8
}

// nextFrame reads the live view until a frame for which ok holds.
func nextFrame(ctx context.Context, t *testing.T, ws *websocket.Conn, what string, ok func(liveFrame) bool) liveFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		_, raw, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		var f liveFrame
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("a live view message is not JSON: %v", err)
		}
		if f.Type == "frame" && ok(f) {
			return f
		}
	}
}

func sendInput(ctx context.Context, t *testing.T, ws *websocket.Conn, events ...map[string]any) {
	t.Helper()
	for _, e := range events {
		raw, _ := json.Marshal(e)
		if err := ws.Write(ctx, websocket.MessageText, raw); err != nil {
			t.Fatalf("send input: %v", err)
		}
	}
}

func click(x, y float64) []map[string]any {
	return []map[string]any{
		{"type": "mouse", "event": "mousePressed", "x": x, "y": y, "button": "left", "clickCount": 1},
		{"type": "mouse", "event": "mouseReleased", "x": x, "y": y, "button": "left", "clickCount": 1},
	}
}

var cdpURLInPage = regexp.MustCompile(`id="cdp-url" readonly value="([^"]+)"`)

func isRed(r, g, b uint32) bool   { return r > 150 && g < 90 && b < 90 }
func isGreen(r, g, b uint32) bool { return g > 130 && r < 90 && b < 90 }

// TestConsoleLiveView launches a profile from the dashboard, opens its
// page with an automation client (chromedp through cdpUrl) and watches it
// in the live view while that client stays connected: the frames show the
// page, a click sent through the live view changes it (seen by the client
// and in the next frames), typing reaches its field, and a page of another
// site cannot open the live view. (A viewer's input being dropped, and a
// slow viewer never holding the browser up, are shown with a fake browser
// in adapters/web.)
func TestConsoleLiveView(t *testing.T) {
	chromium, _ := browserTools(t)
	dir, dataDir, tmpDir := browserDirs(t)
	addr := freeAddr(t)
	base := "http://" + addr
	p := startProcess(t, dir, minimalEnv(
		"HTTP_ADDR="+addr, "DATA_DIR="+dataDir, "TMPDIR="+tmpDir, "LOG_LEVEL=warn",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH="+chromium,
	), addr)
	stopAtCleanup(t, p, dataDir)

	owner := newConsoleClient(t, base)
	if code, _, body := owner.post(t, "/app/signup", url.Values{"name": {"Live"}, "email": {"live@example.com"}, "password": {"a live view passphrase"}}); code != http.StatusSeeOther {
		t.Fatalf("sign-up: %d %s", code, body)
	}
	code, loc, body := owner.post(t, "/app/profiles/new", url.Values{"name": {"Watched"}, "template": {"tpl_chrome_win_us"}})
	id := strings.TrimPrefix(loc, "/app/profiles/")
	if code != http.StatusSeeOther || !strings.HasPrefix(id, "prf_") {
		t.Fatalf("create: %d %q %s", code, loc, body)
	}
	code, _, body = owner.post(t, "/app/profiles/"+id+"/launch", url.Values{"headless": {"on"}})
	m := cdpURLInPage.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("launch: %d %s", code, body)
	}
	cdpURL := strings.ReplaceAll(m[1], "&amp;", "&")
	t.Cleanup(func() { owner.post(t, "/app/profiles/"+id+"/release", url.Values{}) })

	// The automation client opens the test page and stays connected.
	ctx, cancel := context.WithTimeout(context.Background(), 4*stepTimeout)
	defer cancel()
	allocCtx, cancelAlloc := remote.NewAllocator(ctx, cdpURL, remote.NoModifyURL)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	if err := chromedp.Do(tab, chromedp.Navigate(liveTestPage)); err != nil {
		t.Fatalf("the automation client's page: %v", err)
	}

	// A page of another site cannot open the live view with the cookie.
	if ws, resp, err := owner.live(ctx, id, "https://attacker.test"); err == nil {
		ws.CloseNow()
		t.Fatal("a cross-site live view was accepted")
	} else if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site live view: %v %v", resp, err)
	}

	ws, _, err := owner.live(ctx, id, base)
	if err != nil {
		t.Fatalf("live view: %v", err)
	}
	defer ws.CloseNow()
	before := nextFrame(ctx, t, ws, "a frame of the red button", func(f liveFrame) bool { return isRed(f.centreColour(t)) })
	w, h := before.Meta.DeviceWidth, before.Meta.DeviceHeight
	if w <= 0 || h <= 0 {
		t.Fatalf("frame metadata %+v", before.Meta)
	}

	sendInput(ctx, t, ws, click(w/2, h/3)...)
	nextFrame(ctx, t, ws, "a frame of the page after the click", func(f liveFrame) bool { return isGreen(f.centreColour(t)) })
	if clicked, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.dataset.clicked || ''`)); err != nil || clicked != "yes" {
		t.Fatalf("the automation client sees clicked=%q (%v)", clicked, err)
	}

	// Typing: a click on the field, then keys and text.
	sendInput(ctx, t, ws, click(w/2, h*0.85)...)
	sendInput(ctx, t, ws,
		map[string]any{"type": "key", "event": "keyDown", "key": "a", "code": "KeyA", "text": "a"},
		map[string]any{"type": "key", "event": "keyUp", "key": "a", "code": "KeyA"},
		map[string]any{"type": "text", "text": "bc"},
		map[string]any{"type": "key", "event": "keyDown", "key": "Backspace", "code": "Backspace"},
		map[string]any{"type": "key", "event": "keyUp", "key": "Backspace", "code": "Backspace"},
	)
	poll.Check(t, stepTimeout, "the typed text in the field", func() error {
		v, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById('t').value`))
		if err != nil {
			return err
		}
		if v != "ab" {
			return fmt.Errorf("field holds %q, want %q", v, "ab")
		}
		return nil
	})

	// The automation client goes on working beside the live view.
	if err := chromedp.Do(tab, chromedp.SendKeys("#t", "d")); err != nil {
		t.Fatalf("the automation client after the live view's input: %v", err)
	}
	if v, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById('t').value`)); err != nil || v != "abd" {
		t.Errorf("the automation client's typing: field holds %q (%v), want abd", v, err)
	}
	if title, err := chromedp.Run(tab, chromedp.Title()); err != nil || title != "live" {
		t.Errorf("the automation client reads title %q (%v)", title, err)
	}
}
