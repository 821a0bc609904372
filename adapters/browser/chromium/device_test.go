//go:build linux

package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
)

// deviceFingerprint is a whole device, every value unlike what the
// machine that runs the test has (2 cores, a SwiftShader GPU, no screen).
var deviceFingerprint = profile.Fingerprint{
	UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
	Platform:  "Win32", Locale: "fr-FR", Timezone: "Europe/Paris",
	Screen:      profile.Screen{Width: 1536, Height: 864, AvailWidth: 1536, AvailHeight: 816, ColorDepth: 30, PixelRatio: 1.25},
	Navigator:   profile.Navigator{HardwareConcurrency: 12, DeviceMemory: 8, Languages: []string{"fr-FR", "fr", "en-US", "en"}},
	ClientHints: profile.ClientHints{Platform: "Windows", PlatformVersion: "15.0.0", Architecture: "x86", Bitness: "64"},
	Window:      profile.Window{ChromeWidth: 16, ChromeHeight: 79},
	WebGL: profile.WebGL{
		Vendor: "Google Inc. (NVIDIA)", Renderer: "ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 (0x00002504) Direct3D11 vs_5_0 ps_5_0, D3D11)",
		MaxTextureSize: 16384, MaxRenderbufferSize: 16384, MaxViewportDims: [2]int{32767, 32767},
		AliasedLineWidthRange: [2]float64{1, 1}, AliasedPointSizeRange: [2]float64{1, 1024},
	},
	Fonts:        []string{"Calibri", "Segoe UI", "DejaVu Sans"},
	MediaDevices: profile.MediaDevices{AudioInputs: 2, VideoInputs: 1, AudioOutputs: 3},
	WebRTC:       profile.WebRTCProxyOnly,
	NoiseSeed:    "0123456789abcdef",
}

// deviceView is what a script reads of its device, in a page, a frame or
// a worker (which has no screen, window or media devices).
type deviceView struct {
	Platform            string   `json:"platform"`
	HardwareConcurrency int      `json:"hardwareConcurrency"`
	DeviceMemory        float64  `json:"deviceMemory"`
	Languages           []string `json:"languages"`
	Webdriver           bool     `json:"webdriver"`
	WebGLVendor         string   `json:"webglVendor"`
	WebGLRenderer       string   `json:"webglRenderer"`
	MaxTextureSize      int      `json:"maxTextureSize"`
	PointSizeRange      []int    `json:"pointSizeRange"`
	Screen              []int    `json:"screen,omitempty"`
	ColorDepth          int      `json:"colorDepth,omitempty"`
	PixelRatio          float64  `json:"pixelRatio,omitempty"`
	ChromeSize          []int    `json:"chromeSize,omitempty"`
	MaxTouchPoints      int      `json:"maxTouchPoints"`
	Media               []string `json:"media,omitempty"`
	Fonts               []string `json:"fonts,omitempty"`
	NativeLooking       []string `json:"nativeLooking"`
}

// viewScript reads a deviceView; it runs in a window or a worker.
const deviceViewScript = `(async () => {
	const gl = new OffscreenCanvas(8, 8).getContext('webgl');
	const v = {
		platform: navigator.platform,
		hardwareConcurrency: navigator.hardwareConcurrency,
		deviceMemory: navigator.deviceMemory,
		languages: [...navigator.languages],
		webdriver: navigator.webdriver === true,
		webglVendor: gl.getParameter(0x9245),
		webglRenderer: gl.getParameter(0x9246),
		maxTextureSize: gl.getParameter(gl.MAX_TEXTURE_SIZE),
		pointSizeRange: [...gl.getParameter(gl.ALIASED_POINT_SIZE_RANGE)],
		maxTouchPoints: navigator.maxTouchPoints || 0,
		nativeLooking: [
			Function.prototype.toString.call(WebGLRenderingContext.prototype.getParameter),
			Function.prototype.toString.call(Object.getOwnPropertyDescriptor(Object.getPrototypeOf(navigator), 'hardwareConcurrency').get),
			Function.prototype.toString.call(Function.prototype.toString),
		],
	};
	if (typeof window !== 'undefined') {
		v.screen = [screen.width, screen.height, screen.availWidth, screen.availHeight];
		v.colorDepth = screen.colorDepth;
		v.pixelRatio = devicePixelRatio;
		v.chromeSize = [outerWidth - innerWidth, outerHeight - innerHeight];
		v.media = (await navigator.mediaDevices.enumerateDevices()).map(d => d.kind);
		// A family is there when text in it, with monospace after it, is
		// not as wide as in monospace alone.
		const width = (family) => {
			const s = document.createElement('span');
			s.style.cssText = 'font-size: 72px; position: absolute';
			s.style.fontFamily = family;
			s.textContent = 'mmmmmmmmmmlli';
			document.body.append(s);
			const w = s.offsetWidth;
			s.remove();
			return w;
		};
		const base = width('monospace');
		v.fonts = ['Calibri', 'Segoe UI', 'Century', 'Menlo'].filter((f) => width("'" + f + "', monospace") !== base);
	}
	return v;
})()`

// devicePageServer serves a page whose iframe (at frameHost, another site
// than the page's, so in a process of its own) and dedicated worker read
// their device too.
func devicePageServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /worker.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = io.WriteString(w, "self.onmessage = async () => self.postMessage(await "+deviceViewScript+");")
	})
	mux.HandleFunc("GET /shared.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = io.WriteString(w, "self.onconnect = async (e) => e.ports[0].postMessage(await "+deviceViewScript+");")
	})
	mux.HandleFunc("GET /service.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = io.WriteString(w, "self.onmessage = async (e) => e.source.postMessage(await "+deviceViewScript+");")
	})
	mux.HandleFunc("GET /frame", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!doctype html><script>
			window.addEventListener('message', async () => parent.postMessage(await `+deviceViewScript+`, '*'));
		</script>`)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		// The button opens a popup and reads its first document at once,
		// as its opener may.
		_, _ = io.WriteString(w, `<!doctype html><title>device</title>
			<button id="popup" onclick="const w = window.open(''); window.popupSaw = [w.navigator.hardwareConcurrency, w.navigator.platform, Function.prototype.toString.call(w.HTMLCanvasElement.prototype.toDataURL)].join('|'); w.close();">popup</button>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestEveryScriptSeesTheDevice(t *testing.T) {
	rt := newRuntime(t, 1)
	srv := devicePageServer(t)
	spec := launchSpec("prf_device", "ses_device")
	spec.Profile.Fingerprint = deviceFingerprint
	if _, err := rt.Start(testContext(t), spec); err != nil {
		t.Fatal(err)
	}
	// The frame is on another site: localhost, where the page is on
	// 127.0.0.1.
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	frameURL := "http://localhost:" + port + "/frame"
	page := connect(t, relayURL(t, rt, "ses_device")).page(srv.URL + "/")

	want := deviceView{
		Platform: "Win32", HardwareConcurrency: 12, DeviceMemory: 8, Languages: []string{"fr-FR", "fr", "en-US", "en"},
		WebGLVendor: deviceFingerprint.WebGL.Vendor, WebGLRenderer: deviceFingerprint.WebGL.Renderer,
		MaxTextureSize: 16384, PointSizeRange: []int{1, 1024},
		NativeLooking: []string{
			"function getParameter() { [native code] }",
			"function get hardwareConcurrency() { [native code] }",
			"function toString() { [native code] }",
		},
	}
	wantWindow := want
	wantWindow.Screen = []int{1536, 864, 1536, 816}
	wantWindow.ColorDepth, wantWindow.PixelRatio = 30, 1.25
	wantWindow.ChromeSize = []int{16, 79}
	wantWindow.Media = []string{"audioinput", "audioinput", "videoinput", "audiooutput", "audiooutput", "audiooutput"}
	wantWindow.Fonts = []string{"Calibri", "Segoe UI"}

	check := func(where string, got, want deviceView) {
		t.Helper()
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("%s sees\n%s\nwant\n%s", where, g, w)
		}
	}
	check("the page", evaluate[deviceView](t, page, deviceViewScript), wantWindow)
	check("a cross-site frame", evaluate[deviceView](t, page, `new Promise((resolve) => {
		const f = document.createElement('iframe');
		f.src = `+quote(frameURL)+`;
		window.addEventListener('message', (e) => resolve(e.data), {once: true});
		f.onload = () => f.contentWindow.postMessage('read', '*');
		document.body.append(f);
	})`), wantWindow)
	// A frame of the page's origin: its functions read as native from the
	// page's realm, and the page's from its realm.
	crossRealm := evaluate[string](t, page, `(() => {
		const f = document.createElement('iframe');
		document.body.append(f);
		const w = f.contentWindow;
		return [
			Function.prototype.toString.call(w.HTMLCanvasElement.prototype.toDataURL),
			w.Function.prototype.toString.call(HTMLCanvasElement.prototype.toDataURL),
			String(w.navigator.hardwareConcurrency),
		].join('|');
	})()`)
	if want := "function toDataURL() { [native code] }|function toDataURL() { [native code] }|12"; crossRealm != want {
		t.Errorf("across the realms of a page and its frame: %q, want %q", crossRealm, want)
	}
	// A canvas exports the same noisy image twice, by toDataURL and by
	// toBlob, and the page's own createElement, wrapped to watch, sees
	// nothing of how.
	canvas := evaluate[string](t, page, `(async () => {
		let calls = 0;
		const create = document.createElement;
		document.createElement = function (...a) { calls++; return create.apply(this, a); };
		const c = create.call(document, 'canvas');
		c.width = 120; c.height = 40;
		const x = c.getContext('2d');
		x.font = '20px serif'; x.fillText('device', 5, 25); x.fillStyle = 'rgba(200,0,0,0.5)'; x.fillRect(30, 5, 60, 20);
		const a = c.toDataURL(), b = c.toDataURL();
		const blob = await new Promise((r) => c.toBlob(r));
		const fromBlob = await new Promise((r) => { const f = new FileReader(); f.onload = () => r(f.result); f.readAsDataURL(blob); });
		document.createElement = create;
		return [a === b, fromBlob === a, calls].join();
	})()`)
	if canvas != "true,true,0" {
		t.Errorf("a canvas's exports (same twice, toBlob as toDataURL, createElement calls seen by the page) = %s, want true,true,0", canvas)
	}
	if err := chromedp.Do(page, chromedp.Click("#popup")); err != nil {
		t.Fatal(err)
	}
	if popup, want := evaluate[string](t, page, "window.popupSaw"), "12|Win32|function toDataURL() { [native code] }"; popup != want {
		t.Errorf("the first document of a popup, read by its opener at once: %q, want %q", popup, want)
	}
	check("a dedicated worker", evaluate[deviceView](t, page, `new Promise((resolve) => {
		const w = new Worker('/worker.js');
		w.onmessage = (e) => resolve(e.data);
		w.postMessage('read');
	})`), want)
	check("a shared worker", evaluate[deviceView](t, page, `new Promise((resolve) => {
		const w = new SharedWorker('/shared.js');
		w.port.onmessage = (e) => resolve(e.data);
		w.port.start();
	})`), want)
	check("a service worker", evaluate[deviceView](t, page, `navigator.serviceWorker.register('/service.js').then(async (reg) => {
		const sw = reg.installing || reg.waiting || reg.active;
		return new Promise((resolve) => {
			navigator.serviceWorker.onmessage = (e) => resolve(e.data);
			sw.postMessage('read');
		});
	})`), want)
}

// A headed browser gets a display of its own in its sandbox, of the
// device's screen, and pages there see the same device.
func TestAHeadedBrowserHasADisplayOfItsOwn(t *testing.T) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no Xvfb: CI installs xvfb")
		}
		t.Skip("no Xvfb on PATH: install xvfb (apt-get install xvfb) to run headed browsers")
	}
	t.Setenv("DISPLAY", "")
	rt := newRuntime(t, 1)
	srv := devicePageServer(t)
	spec := launchSpec("prf_headed", "ses_headed")
	spec.Profile.Fingerprint = deviceFingerprint
	spec.Headless = false
	if _, err := rt.Start(testContext(t), spec); err != nil {
		t.Fatal(err)
	}
	page := connect(t, relayURL(t, rt, "ses_headed")).page(srv.URL + "/")
	got := evaluate[deviceView](t, page, deviceViewScript)
	if got.Webdriver || got.HardwareConcurrency != 12 || got.WebGLRenderer != deviceFingerprint.WebGL.Renderer ||
		fmt.Sprint(got.Screen) != "[1536 864 1536 816]" || got.ColorDepth != 30 || got.PixelRatio != 1.25 {
		t.Errorf("a headed page sees %+v", got)
	}
	// The window is a real one: the browser's own chrome above the page.
	if len(got.ChromeSize) != 2 || got.ChromeSize[1] < 30 {
		t.Errorf("a headed window's chrome (outer - inner) is %v, want a toolbar's height", got.ChromeSize)
	}
	if ua := evaluate[string](t, page, "navigator.userAgent"); strings.Contains(ua, "Headless") {
		t.Errorf("a headed browser says %q", ua)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A page that a raw client opens with Target.createTarget and reads at
// once, in its first document, already presents the device.
func TestANewTargetIsTheDeviceFromItsFirstScript(t *testing.T) {
	rt := newRuntime(t, 1)
	spec := launchSpec("prf_raw", "ses_raw")
	spec.Profile.Fingerprint = deviceFingerprint
	ctx := testContext(t)
	if _, err := rt.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	conn, err := rt.Connect(ctx, "ses_raw")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := &rawClient{t: t, ctx: ctx, conn: conn}
	created := c.call("", "Target.createTarget", `{"url":"about:blank"}`)
	var target struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(created, &target)
	attached := c.call("", "Target.attachToTarget", `{"targetId":`+quote(target.TargetID)+`,"flatten":true}`)
	var session struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(attached, &session)
	res := c.call(session.SessionID, "Runtime.evaluate", `{"expression":"[screen.width, screen.availHeight, navigator.hardwareConcurrency, outerHeight - innerHeight].join()","returnByValue":true}`)
	var out struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	_ = json.Unmarshal(res, &out)
	if out.Result.Value != "1536,816,12,79" {
		t.Errorf("a new target read at once: screen width, available height, cores, chrome height = %q, want 1536,816,12,79", out.Result.Value)
	}
}

// rawClient speaks CDP over a runtime connection, one command at a time.
type rawClient struct {
	t    *testing.T
	ctx  context.Context
	conn ports.CDPConn
	id   int
}

func (c *rawClient) call(session, method, params string) json.RawMessage {
	c.t.Helper()
	c.id++
	msg := fmt.Sprintf(`{"id":%d,"method":%q,"params":%s`, c.id, method, params)
	if session != "" {
		msg += `,"sessionId":` + quote(session)
	}
	if err := c.conn.Send(c.ctx, []byte(msg+"}")); err != nil {
		c.t.Fatal(err)
	}
	for {
		raw, err := c.conn.Receive(c.ctx)
		if err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		var answer struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(raw, &answer) != nil || answer.ID != c.id {
			continue
		}
		if len(answer.Error) > 0 {
			c.t.Fatalf("%s: %s", method, answer.Error)
		}
		return answer.Result
	}
}
