//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
)

// readDevice reads what a script sees of its device; it runs as the first
// script of a document, in a frame, or in a worker (which has no screen or
// window).
const readDevice = `(() => {
	const gl = new OffscreenCanvas(8, 8).getContext('webgl');
	const d = {
		userAgent: navigator.userAgent,
		platform: navigator.platform,
		hardwareConcurrency: navigator.hardwareConcurrency,
		deviceMemory: navigator.deviceMemory,
		languages: [...navigator.languages],
		webdriver: navigator.webdriver,
		webglVendor: gl ? gl.getParameter(0x9245) : null,
		webglRenderer: gl ? gl.getParameter(0x9246) : null,
		maxTextureSize: gl ? gl.getParameter(gl.MAX_TEXTURE_SIZE) : null,
	};
	if (typeof window !== 'undefined') {
		d.maxTouchPoints = navigator.maxTouchPoints;
		d.screen = [screen.width, screen.height, screen.availWidth, screen.availHeight, screen.colorDepth];
		d.pixelRatio = devicePixelRatio;
		d.chrome = [outerWidth - innerWidth, outerHeight - innerHeight];
	}
	return d;
})()`

// seenDevice is what readDevice returns.
type seenDevice struct {
	UserAgent           string   `json:"userAgent"`
	Platform            string   `json:"platform"`
	HardwareConcurrency int      `json:"hardwareConcurrency"`
	DeviceMemory        float64  `json:"deviceMemory"`
	Languages           []string `json:"languages"`
	Webdriver           bool     `json:"webdriver"`
	WebGLVendor         string   `json:"webglVendor"`
	WebGLRenderer       string   `json:"webglRenderer"`
	MaxTextureSize      int      `json:"maxTextureSize"`
	MaxTouchPoints      *int     `json:"maxTouchPoints,omitempty"`
	Screen              []int    `json:"screen,omitempty"`
	PixelRatio          float64  `json:"pixelRatio,omitempty"`
	Chrome              []int    `json:"chrome,omitempty"`
}

// apiFingerprint is the fingerprint as GET /api/v1/profiles/:id shows it.
type apiFingerprint struct {
	UserAgent string `json:"userAgent"`
	Platform  string `json:"platform"`
	Screen    struct {
		Width, Height, AvailWidth, AvailHeight, ColorDepth int
		PixelRatio                                         float64
	} `json:"screen"`
	Navigator struct {
		HardwareConcurrency int      `json:"hardwareConcurrency"`
		DeviceMemory        float64  `json:"deviceMemory"`
		MaxTouchPoints      int      `json:"maxTouchPoints"`
		Languages           []string `json:"languages"`
	} `json:"navigator"`
	ClientHints struct {
		Platform        string `json:"platform"`
		PlatformVersion string `json:"platformVersion"`
		Architecture    string `json:"architecture"`
		Bitness         string `json:"bitness"`
		Model           string `json:"model"`
		Mobile          bool   `json:"mobile"`
	} `json:"clientHints"`
	Window struct {
		ChromeWidth  int `json:"chromeWidth"`
		ChromeHeight int `json:"chromeHeight"`
	} `json:"window"`
	WebGL struct {
		Vendor         string `json:"vendor"`
		Renderer       string `json:"renderer"`
		MaxTextureSize int    `json:"maxTextureSize"`
	} `json:"webgl"`
}

// expected is what a script must see of fp: in a window when window is
// set, else in a worker.
func (fp apiFingerprint) expected(window bool) seenDevice {
	s := seenDevice{
		UserAgent: fp.UserAgent, Platform: fp.Platform,
		HardwareConcurrency: fp.Navigator.HardwareConcurrency, DeviceMemory: fp.Navigator.DeviceMemory,
		Languages:   fp.Navigator.Languages,
		WebGLVendor: fp.WebGL.Vendor, WebGLRenderer: fp.WebGL.Renderer, MaxTextureSize: fp.WebGL.MaxTextureSize,
	}
	if window {
		touch := fp.Navigator.MaxTouchPoints
		s.MaxTouchPoints = &touch
		s.Screen = []int{fp.Screen.Width, fp.Screen.Height, fp.Screen.AvailWidth, fp.Screen.AvailHeight, fp.Screen.ColorDepth}
		s.PixelRatio = fp.Screen.PixelRatio
		s.Chrome = []int{fp.Window.ChromeWidth, fp.Window.ChromeHeight}
	}
	return s
}

// devicePages serves the page whose first script reads the device, the
// frame that reads it when asked, and the worker.
func devicePages(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, body)
		}
	}
	mux.HandleFunc("GET /device", html(`<!doctype html><script>window.first = `+readDevice+`;</script><p>device</p>`))
	mux.HandleFunc("GET /frame", html(`<!doctype html><script>const first = `+readDevice+`;
		window.addEventListener('message', () => parent.postMessage(first, '*'));</script>`))
	mux.HandleFunc("GET /worker.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = io.WriteString(w, "const first = "+readDevice+";\nself.onmessage = () => self.postMessage(first);")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestEveryTemplateIsItsDeviceEverywhere launches a profile of every
// template and compares what the first script of a page, of a frame of
// another site and of a dedicated worker read with the fingerprint the API
// shows; the client hints and the engine agree with the user agent; and a
// page a raw client opens with Target.createTarget and reads at once is
// the same device.
func TestEveryTemplateIsItsDeviceEverywhere(t *testing.T) {
	chromium, _ := browserTools(t)
	pages := devicePages(t)
	_, port, _ := net.SplitHostPort(pages.Listener.Addr().String())
	// The page is on localhost and its frame on another site of it: secure
	// contexts, where pages read client hints and deviceMemory; both
	// through the profile's proxy.
	pageHost, frameHost := net.JoinHostPort("localhost", port), net.JoinHostPort("frame.localhost", port)
	proxy := newJourneyProxy(t, map[string]string{pageHost: pages.Listener.Addr().String(), frameHost: pages.Listener.Addr().String()})
	d := startServiceWithProxy(t, chromium, proxy, "device@example.com")

	for _, tpl := range d.templateIDs(t) {
		t.Run(tpl, func(t *testing.T) {
			s := d.newProfile(t, "Device "+tpl, tpl)
			var prof struct {
				Fingerprint apiFingerprint `json:"fingerprint"`
			}
			if code, err := getJSON(d.base, "/api/v1/profiles/"+s.profile, d.token, &prof); err != nil || code != http.StatusOK {
				t.Fatalf("get profile: %d %v", code, err)
			}
			fp := prof.Fingerprint
			cdpURL := s.launch(t)
			defer s.release(t)

			var page, frame, hidden, worker seenDevice
			var hints map[string]any
			var product string
			withTab(t, cdpURL, func(ctx context.Context) (err error) {
				if err := chromedp.Do(ctx, chromedp.Navigate("http://"+pageHost+"/device")); err != nil {
					return err
				}
				if page, err = chromedp.Run(ctx, chromedp.Evaluate[seenDevice]("window.first")); err != nil {
					return err
				}
				// A frame laid out, and one never laid out (0x0 inside).
				for _, f := range []struct {
					seen  *seenDevice
					style string
				}{{&frame, ""}, {&hidden, "display: none"}} {
					if *f.seen, err = chromedp.Run(ctx, chromedp.Evaluate[seenDevice](`new Promise((resolve) => {
						const f = document.createElement('iframe');
						f.src = 'http://`+frameHost+`/frame';
						f.style = '`+f.style+`';
						window.addEventListener('message', (e) => resolve(e.data), {once: true});
						f.onload = () => f.contentWindow.postMessage('read', '*');
						document.body.append(f);
					})`, chromedp.EvalAwaitPromise)); err != nil {
						return err
					}
				}
				if worker, err = chromedp.Run(ctx, chromedp.Evaluate[seenDevice](`new Promise((resolve) => {
					const w = new Worker('/worker.js');
					w.onmessage = (e) => resolve(e.data);
					w.postMessage('read');
				})`, chromedp.EvalAwaitPromise)); err != nil {
					return err
				}
				if hints, err = chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`navigator.userAgentData.getHighEntropyValues(
					['platform', 'platformVersion', 'architecture', 'bitness', 'model', 'fullVersionList']).then((v) => ({...v,
					brands: v.brands.map((b) => b.brand + '/' + b.version), fullVersionList: v.fullVersionList.map((b) => b.brand + '/' + b.version)}))`,
					chromedp.EvalAwaitPromise)); err != nil {
					return err
				}
				version, err := chromedp.CallBrowser(ctx, browser.GetVersion, cdp.Empty{})
				product = version.Product
				return err
			})
			for _, c := range []struct {
				where string
				got   seenDevice
				want  seenDevice
			}{{"the page's first script", page, fp.expected(true)}, {"a frame of another site", frame, fp.expected(true)}, {"a hidden frame of another site", hidden, fp.expected(true)}, {"a dedicated worker", worker, fp.expected(false)}} {
				g, _ := json.Marshal(c.got)
				w, _ := json.Marshal(c.want)
				if string(g) != string(w) {
					t.Errorf("%s sees\n%s\nthe API says\n%s", c.where, g, w)
				}
			}

			// The client hints are the device's, with the user agent's
			// version, which is the engine's.
			major := uaMajor(fp.UserAgent)
			_, engine, _ := strings.Cut(product, "/")
			if engineMajor, _, _ := strings.Cut(engine, "."); major == "" || engineMajor != major {
				t.Errorf("the user agent names Chrome %q, the engine is %s", major, product)
			}
			ch := fp.ClientHints
			want := map[string]any{"platform": ch.Platform, "platformVersion": ch.PlatformVersion, "architecture": ch.Architecture,
				"bitness": ch.Bitness, "model": ch.Model, "mobile": ch.Mobile}
			for k, v := range want {
				if hints[k] != v {
					t.Errorf("client hint %s is %v, the API says %v", k, hints[k], v)
				}
			}
			if brands := fmt.Sprint(hints["brands"]); !strings.Contains(brands, "Chromium/"+major+" ") && !strings.Contains(brands, "Chromium/"+major+"]") {
				t.Errorf("the client hints' brands %s do not name Chromium %s", brands, major)
			}
			if full := fmt.Sprint(hints["fullVersionList"]); !strings.Contains(full, "Chromium/"+engine) {
				t.Errorf("the client hints' full versions %s do not name Chromium %s", full, engine)
			}

			// A raw client's new page, read at once.
			raw := readNewTargetAtOnce(t, cdpURL)
			if want := fp.expected(true); raw.HardwareConcurrency != want.HardwareConcurrency || fmt.Sprint(raw.Screen) != fmt.Sprint(want.Screen) || raw.Platform != want.Platform {
				t.Errorf("a new target read at once sees %+v, want %+v", raw, want)
			}
		})
	}
}

// uaMajor is the Chrome major version a user agent names.
func uaMajor(ua string) string {
	_, rest, ok := strings.Cut(ua, "Chrome/")
	if !ok {
		return ""
	}
	major, _, _ := strings.Cut(rest, ".")
	return major
}

// readNewTargetAtOnce opens about:blank with a raw Target.createTarget
// through cdpURL and reads the device in it at once.
func readNewTargetAtOnce(t *testing.T, cdpURL string) seenDevice {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, cdpURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(16 << 20)
	id := 0
	call := func(session, method string, params any) json.RawMessage {
		id++
		msg := map[string]any{"id": id, "method": method, "params": params}
		if session != "" {
			msg["sessionId"] = session
		}
		raw, _ := json.Marshal(msg)
		if err := ws.Write(ctx, websocket.MessageText, raw); err != nil {
			t.Fatal(err)
		}
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			var answer struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(data, &answer) != nil || answer.ID != id {
				continue
			}
			if len(answer.Error) > 0 {
				t.Fatalf("%s: %s", method, answer.Error)
			}
			return answer.Result
		}
	}
	var created struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(call("", "Target.createTarget", map[string]any{"url": "about:blank"}), &created)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(call("", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}), &attached)
	var res struct {
		Result struct {
			Value seenDevice `json:"value"`
		} `json:"result"`
	}
	_ = json.Unmarshal(call(attached.SessionID, "Runtime.evaluate", map[string]any{"expression": readDevice, "returnByValue": true}), &res)
	call("", "Target.closeTarget", map[string]any{"targetId": created.TargetID})
	return res.Result.Value
}

// getJSON sends a GET and decodes the data of the answer.
func getJSON(base, path, token string, out any) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, json.Unmarshal(env.Data, out)
}

// tabSizes is what a page reads of its window: inside, then outside.
type tabSizes struct {
	Inner [2]int `json:"inner"`
	Outer [2]int `json:"outer"`
}

// near reports whether every size of s is within one CSS pixel of o's.
func (s tabSizes) near(o tabSizes) bool {
	for i := range 2 {
		if max(s.Inner[i]-o.Inner[i], o.Inner[i]-s.Inner[i]) > 1 || max(s.Outer[i]-o.Outer[i], o.Outer[i]-s.Outer[i]) > 1 {
			return false
		}
	}
	return true
}

const readSizes = `({inner: [innerWidth, innerHeight], outer: [outerWidth, outerHeight]})`

// TestEveryTemplatesFirstTabIsItsDevice launches a profile of every
// template, headless and headed, and opens the device's page in the tab
// the browser starts with, which a client that connects finds as its
// first page (Playwright's contexts()[0].pages()[0]): the tab is the only
// page a client finds, it is the device as the API shows it, and its
// window is the one a tab the client opens itself gets, not a strip.
func TestEveryTemplatesFirstTabIsItsDevice(t *testing.T) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		missingTool(t, "the first tab test", "apt-get install xvfb")("Xvfb: " + err.Error())
	}
	chromium, _ := browserTools(t)
	pages := devicePages(t)
	_, port, _ := net.SplitHostPort(pages.Listener.Addr().String())
	pageHost := net.JoinHostPort("localhost", port)
	proxy := newJourneyProxy(t, map[string]string{pageHost: pages.Listener.Addr().String()})
	d := startServiceWithProxy(t, chromium, proxy, "first-tab@example.com")
	pageURL := "http://" + pageHost + "/device"

	for _, tpl := range d.templateIDs(t) {
		s := d.newProfile(t, "First tab "+tpl, tpl)
		var prof struct {
			Fingerprint apiFingerprint `json:"fingerprint"`
		}
		if code, err := getJSON(d.base, "/api/v1/profiles/"+s.profile, d.token, &prof); err != nil || code != http.StatusOK {
			t.Fatalf("get profile: %d %v", code, err)
		}
		fp := prof.Fingerprint
		for _, headless := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/headless=%v", tpl, headless), func(t *testing.T) {
				cdpURL := s.launchAs(t, headless)
				defer s.release(t)
				var first, opened seenDevice
				var firstSizes, openedSizes tabSizes
				withTab(t, cdpURL, func(ctx context.Context) error {
					targets, err := chromedp.Targets(ctx)
					if err != nil {
						return err
					}
					var tabs []*target.Info
					for _, info := range targets {
						if info.Type == "page" {
							tabs = append(tabs, info)
						}
					}
					if len(tabs) != 1 {
						return fmt.Errorf("a client finds %d pages at launch, want the browser's one tab:%s", len(tabs), describeTargets(targets))
					}
					// The tab the browser started with, as a client that
					// takes it finds it.
					tabCtx, cancelTab := chromedp.NewContext(ctx, chromedp.WithTargetID(tabs[0].TargetID))
					defer cancelTab()
					if err := chromedp.Do(tabCtx, chromedp.Navigate(pageURL)); err != nil {
						return fmt.Errorf("the first tab: %w", err)
					}
					if first, err = chromedp.Run(tabCtx, chromedp.Evaluate[seenDevice]("window.first")); err != nil {
						return err
					}
					if firstSizes, err = chromedp.Run(tabCtx, chromedp.Evaluate[tabSizes](readSizes)); err != nil {
						return err
					}
					// A tab of the client's own.
					if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
						return fmt.Errorf("a new tab: %w", err)
					}
					if opened, err = chromedp.Run(ctx, chromedp.Evaluate[seenDevice]("window.first")); err != nil {
						return err
					}
					openedSizes, err = chromedp.Run(ctx, chromedp.Evaluate[tabSizes](readSizes))
					return err
				})
				want, _ := json.Marshal(fp.expected(true))
				for _, c := range []struct {
					where string
					got   seenDevice
				}{{"the first tab", first}, {"a new tab", opened}} {
					if g, _ := json.Marshal(c.got); string(g) != string(want) {
						t.Errorf("%s sees\n%s\nthe API says\n%s", c.where, g, want)
					}
				}
				// The same window, give or take the one CSS pixel that a
				// fractional pixel ratio rounds either way.
				if !firstSizes.near(openedSizes) {
					t.Errorf("the first tab's window is %+v, a new tab's %+v", firstSizes, openedSizes)
				}
				// A page, not a strip: at least half of the screen's
				// available part inside, either way.
				if in := firstSizes.Inner; 2*in[0] < fp.Screen.AvailWidth || 2*in[1] < fp.Screen.AvailHeight {
					t.Errorf("the first tab is %dx%d inside, on a screen of %dx%d available", in[0], in[1], fp.Screen.AvailWidth, fp.Screen.AvailHeight)
				}
			})
		}
	}
}
