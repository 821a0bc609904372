//go:build linux

package main

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
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/coder/websocket"
)

// The live view figures: the console's live view of a running profile's
// browser while an automation client is connected to it through its
// cdpUrl, as a customer watches a job run. The service runs with Chromium;
// the bench signs up, creates and launches the profile through the
// console's forms, the automation client opens a page that animates on
// every frame, and the viewer counts the frames it gets and times clicks
// sent through the live view until a frame shows their effect.

// liveOptions say how long and how often the live view is measured.
type liveOptions struct {
	window time.Duration // frames are counted over this window
	clicks int           // clicks timed
}

// liveFigures are what the live view measured.
type liveFigures struct {
	window time.Duration
	frames int
	bytes  int64 // of the frames' base64 JSON as received
	// animated is the page's own requestAnimationFrame count over the
	// window, read by the automation client.
	animated int
	clicks   []time.Duration
	// seen is the clicks the page counted, read by the automation client
	// at the end.
	seen int
}

// livePage animates a counter and its colour on every animation frame, and
// toggles the colour of its top 70 % (red, green) on each click.
const livePage = `<!doctype html><title>live bench</title>
<style>html,body{margin:0;height:100%}#area{position:absolute;left:0;top:0;width:100%;height:70%;background:#c00000}
#n{position:absolute;left:0;top:70%;width:100%;height:30%;font-size:60px}</style>
<div id=area></div><div id=n>0</div>
<script>
let frames = 0, clicks = 0;
const n = document.getElementById('n'), area = document.getElementById('area');
function tick() { frames++; n.textContent = frames; n.style.background = 'hsl(' + (frames % 360) + ',80%,70%)'; requestAnimationFrame(tick); }
requestAnimationFrame(tick);
area.addEventListener('click', () => { clicks++; area.style.background = clicks % 2 ? '#00c000' : '#c00000'; });
</script>`

// liveFrame is a frame message of the live view, as it arrived.
type liveFrame struct {
	at   time.Time
	data string
	meta struct {
		DeviceWidth  float64 `json:"deviceWidth"`
		DeviceHeight float64 `json:"deviceHeight"`
	}
	size int
}

// measureLive starts a service with Chromium and takes the live view
// figures.
func measureLive(ctx context.Context, bin, dir, chromiumPath, bwrapPath string, o liveOptions) (*liveFigures, error) {
	env := map[string]string{
		"DATABASE_URL": "sqlite://{data}/bench.db", "BROWSER_RUNTIME": "chromium",
		"CHROMIUM_PATH": chromiumPath, "BWRAP_PATH": bwrapPath, "BROWSERS_MAX": "2",
	}
	in, err := launch(ctx, bin, dir, backend{key: "live", name: "SQLite, Chromium, live view", env: env}, nil, 0)
	if err != nil {
		return nil, err
	}
	defer in.proc.stop()
	base := "http://" + in.addr

	// The console, as a browser uses it: a cookie jar, forms sent from the
	// console's own origin.
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	console := &http.Client{Jar: jar, Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, form url.Values) (int, string, string, error) {
		req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
		if err != nil {
			return 0, "", "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := console.Do(req)
		if err != nil {
			return 0, "", "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(body), err
	}
	if code, _, body, err := post("/app/signup", url.Values{"name": {"Live bench"}, "email": {"live@example.com"}, "password": {"a live bench passphrase"}}); err != nil || code != http.StatusSeeOther {
		return nil, fmt.Errorf("console sign-up: %d %v %.200s", code, err, body)
	}
	code, loc, body, err := post("/app/profiles/new", url.Values{"name": {"Watched"}, "template": {"tpl_chrome_win_us"}})
	id := strings.TrimPrefix(loc, "/app/profiles/")
	if err != nil || code != http.StatusSeeOther || !strings.HasPrefix(id, "prf_") {
		return nil, fmt.Errorf("console create: %d %q %v %.200s", code, loc, err, body)
	}
	code, _, body, err = post("/app/profiles/"+id+"/launch", url.Values{"headless": {"on"}})
	m := regexp.MustCompile(`id="cdp-url" readonly value="([^"]+)"`).FindStringSubmatch(body)
	if err != nil || code != http.StatusOK || m == nil {
		return nil, fmt.Errorf("console launch: %d %v %.200s (%s)", code, err, body, in.proc.tail())
	}
	cdpURL := strings.ReplaceAll(m[1], "&amp;", "&")
	defer func() { _, _, _, _ = post("/app/profiles/"+id+"/release", url.Values{}) }()

	// The automation client opens the animated page and stays connected.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := remote.NewAllocator(ctx, cdpURL, remote.NoModifyURL)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	if err := chromedp.Do(tab, chromedp.Navigate("data:text/html,"+url.PathEscape(livePage))); err != nil {
		return nil, fmt.Errorf("the automation client's page: %w", err)
	}
	// The viewer.
	ws, _, err := websocket.Dial(ctx, "ws://"+in.addr+"/app/profiles/"+id+"/live/ws", &websocket.DialOptions{
		HTTPClient: &http.Client{Jar: jar}, HTTPHeader: http.Header{"Origin": {base}},
	})
	if err != nil {
		return nil, fmt.Errorf("live view: %w", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(16 << 20)
	frames := make(chan liveFrame, 1024)
	readErr := make(chan error, 1)
	go func() {
		defer close(frames)
		for {
			_, raw, err := ws.Read(ctx)
			if err != nil {
				readErr <- err
				return
			}
			var f struct {
				Type string          `json:"type"`
				Data string          `json:"data"`
				Meta json.RawMessage `json:"meta"`
			}
			if json.Unmarshal(raw, &f) != nil || f.Type != "frame" {
				continue
			}
			lf := liveFrame{at: time.Now(), data: f.Data, size: len(raw)}
			_ = json.Unmarshal(f.Meta, &lf.meta)
			select {
			case frames <- lf:
			default: // the bench fell behind: a frame it does not need
			}
		}
	}()
	next := func(limit time.Duration) (liveFrame, error) {
		select {
		case f, ok := <-frames:
			if !ok {
				return liveFrame{}, fmt.Errorf("the live view ended: %v", <-readErr)
			}
			return f, nil
		case <-time.After(limit):
			return liveFrame{}, fmt.Errorf("no frame for %v", limit)
		}
	}

	// A first frame of the page, then a warm-up second.
	var first liveFrame
	for {
		if first, err = next(30 * time.Second); err != nil {
			return nil, err
		}
		if c, err := first.colour(); err != nil {
			return nil, err
		} else if c == "red" {
			break
		}
	}
	for warm := time.Now().Add(time.Second); time.Now().Before(warm); {
		if _, err := next(10 * time.Second); err != nil {
			return nil, err
		}
	}

	// (a) Frames over the window, and the page's own animation frames.
	f := &liveFigures{window: o.window}
	before, err := chromedp.Run(tab, chromedp.Evaluate[int]("frames"))
	if err != nil {
		return nil, fmt.Errorf("the automation client beside the live view: %w", err)
	}
	for end := time.Now().Add(o.window); ; {
		fr, err := next(10 * time.Second)
		if err != nil {
			return nil, err
		}
		if fr.at.After(end) {
			break
		}
		f.frames++
		f.bytes += int64(fr.size)
	}
	after, err := chromedp.Run(tab, chromedp.Evaluate[int]("frames"))
	if err != nil {
		return nil, fmt.Errorf("the automation client beside the live view: %w", err)
	}
	f.animated = after - before

	// (b) Clicks: from sending one to the first frame that shows the area
	// in its other colour.
	w, h := first.meta.DeviceWidth, first.meta.DeviceHeight
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("frame metadata %+v", first.meta)
	}
	want := "green"
	for range o.clicks {
		sent := time.Now()
		for _, ev := range []string{"mousePressed", "mouseReleased"} {
			msg, _ := json.Marshal(map[string]any{"type": "mouse", "event": ev, "x": w / 2, "y": h * 0.35, "button": "left", "clickCount": 1})
			if err := ws.Write(ctx, websocket.MessageText, msg); err != nil {
				return nil, fmt.Errorf("click: %w", err)
			}
		}
		for {
			fr, err := next(10 * time.Second)
			if err != nil {
				return nil, fmt.Errorf("waiting for a %s frame: %w", want, err)
			}
			if fr.at.Before(sent) {
				continue
			}
			c, err := fr.colour()
			if err != nil {
				return nil, err
			}
			if c == want {
				f.clicks = append(f.clicks, fr.at.Sub(sent))
				break
			}
		}
		want = map[string]string{"green": "red", "red": "green"}[want]
	}
	if f.seen, err = chromedp.Run(tab, chromedp.Evaluate[int]("clicks")); err != nil {
		return nil, fmt.Errorf("the automation client after the clicks: %w", err)
	}
	return f, nil
}

// colour decodes the frame and names the colour of the page's clickable
// area: red, green or other.
func (f liveFrame) colour() (string, error) {
	raw, err := base64.StdEncoding.DecodeString(f.data)
	if err != nil {
		return "", fmt.Errorf("frame data: %w", err)
	}
	img, err := jpeg.Decode(bytes.NewReader(raw))
	if err != nil {
		return "", fmt.Errorf("a frame is not a JPEG: %w", err)
	}
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Min.X+b.Dx()/2, b.Min.Y+b.Dy()/3).RGBA()
	r, g, bl = r>>8, g>>8, bl>>8
	switch {
	case r > 150 && g < 90 && bl < 90:
		return "red", nil
	case g > 130 && r < 90 && bl < 90:
		return "green", nil
	}
	return "other", nil
}

// liveSection renders the live view figures, or why there are none.
func (r *report) liveSection(p func(format string, args ...any)) {
	if r.liveSkipped != "" {
		p("\n## Live view\n\n%s\n", r.liveSkipped)
		return
	}
	f := r.live
	if f == nil {
		return
	}
	p("\n## Live view\n\nThe console's live view of a running profile (service: SQLite, BROWSER_RUNTIME=chromium, headless, sandboxed) while an automation client "+
		"(chromedp through the cdpUrl) stays connected to the same browser. Sign-up, create and launch through the console's forms; the automation client opens a data: page "+
		"whose counter and its colour change on every requestAnimationFrame, and whose top 70 %% toggles red/green on a click; the viewer opens "+
		"/app/profiles/{id}/live/ws with the console's cookie and reads every message at once. Frames: those received over %v after a warm-up second, beside the page's "+
		"own animation frames over the same window as the automation client reads them. Click: mousePressed and mouseReleased sent through the live view, "+
		"until the first frame received whose pixel in the area (decoded JPEG) shows the other colour; %d clicks in a row.\n\n", f.window, len(f.clicks))
	p("| figure | value |\n|---|---|\n")
	secs := f.window.Seconds()
	p("| frames per second received by the viewer | %.1f |\n", float64(f.frames)/secs)
	p("| the page's animation frames per second (requestAnimationFrame) | %.1f |\n", float64(f.animated)/secs)
	p("| mean frame message size | %.1f KB |\n", safeDiv(float64(f.bytes), float64(f.frames))/1024)
	p("| click to first frame showing it, p50 | %.1f ms |\n", pct(f.clicks, 50))
	p("| click to first frame showing it, p95 | %.1f ms |\n", pct(f.clicks, 95))
	p("| click to first frame showing it, max | %.1f ms |\n", pct(f.clicks, 100))
	p("| clicks the page counted (automation client) | %d of %d |\n", f.seen, len(f.clicks))
}
