//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// detectSiteName is the detectors' site: a .test name only the test's proxy
// resolves, so the page is what a site behind the profile's proxy serves.
const detectSiteName = "detect.test"

// detectPage runs the open-source detectors a site would (BotD and
// FingerprintJS, as published on npm, with their usage reports off) and
// leaves their verdict in window.detect, a promise.
const detectPage = `<!doctype html>
<meta charset="utf-8">
<title>detect</title>
<script type="module">
import { load as loadBotd } from '/botd.esm.js';
import FingerprintJS from '/fp.esm.js';
window.detect = (async () => {
	const botd = await loadBotd({ monitoring: false });
	const verdict = botd.detect();
	const agent = await FingerprintJS.load({ monitoring: false });
	const fp = await agent.get();
	const components = {};
	for (const [name, component] of Object.entries(fp.components)) {
		components[name] = FingerprintJS.hashComponents({ [name]: component });
	}
	return {
		bot: verdict.bot,
		botKind: verdict.botKind || '',
		detections: JSON.stringify(botd.getDetections()),
		visitorId: fp.visitorId,
		components,
	};
})();
</script>
<p>detect</p>`

// detectorBundles are the files of the detectors the page imports, from
// tests/e2e/node/node_modules (package.json pins their versions).
var detectorBundles = map[string]string{
	"/botd.esm.js": "@fingerprintjs/botd/dist/botd.esm.js",
	"/fp.esm.js":   "@fingerprintjs/fingerprintjs/dist/fp.esm.js",
}

// detection is what the detectors said of one page.
type detection struct {
	Bot        bool              `json:"bot"`
	BotKind    string            `json:"botKind"`
	Detections string            `json:"detections"`
	VisitorID  string            `json:"visitorId"`
	Components map[string]string `json:"components"`
}

// newDetectSite serves the detectors' page and bundles.
func newDetectSite(t *testing.T, nodeDir string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(detectPage))
	})
	for path, file := range detectorBundles {
		full := filepath.Join(nodeDir, "node_modules", file)
		if _, err := os.Stat(full); err != nil {
			missingTool(t, "the detector test", "npm ci --prefix tests/e2e/node")(file + ": " + err.Error())
		}
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			http.ServeFile(w, r, full)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// detectorService runs the service with Chromium, an account and a
// proxy that reaches the detectors' site.
type detectorService struct {
	base, token, proxyID, pageURL string
	output                        *testenv.Output
}

func startDetectorService(t *testing.T) *detectorService {
	t.Helper()
	chromium, nodeDir := browserTools(t)
	site := newDetectSite(t, nodeDir)
	_, sitePort, err := net.SplitHostPort(site.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	siteHost := net.JoinHostPort(detectSiteName, sitePort)
	proxy := newJourneyProxy(t, map[string]string{siteHost: site.Listener.Addr().String()})
	d := startServiceWithProxy(t, chromium, proxy, "detect@example.com")
	d.pageURL = "http://" + siteHost + "/"
	return d
}

// startServiceWithProxy runs the service with Chromium and an account
// whose team has proxy as a stored proxy.
func startServiceWithProxy(t *testing.T, chromium string, proxy *journeyProxy, email string) *detectorService {
	t.Helper()
	dir, dataDir, tmpDir := browserDirs(t)
	addr := freeAddr(t)
	base := "http://" + addr
	p := startProcess(t, dir, minimalEnv(
		"HTTP_ADDR="+addr, "DATA_DIR="+dataDir, "TMPDIR="+tmpDir, "LOG_LEVEL=warn",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH="+chromium, "ALLOW_PRIVATE_TARGETS=true",
	), addr)
	stopAtCleanup(t, p, dataDir)

	var signIn struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(base, "/api/v1/auth/register", "", map[string]string{
		"email": email, "password": "a long enough password", "name": "Detect",
	}, &signIn); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, err)
	}
	var proxyRes struct {
		ID string `json:"id"`
	}
	_, proxyPort, _ := net.SplitHostPort(proxy.srv.Listener.Addr().String())
	port, _ := strconv.Atoi(proxyPort)
	if code, err := post(base, "/api/v1/proxies", signIn.AccessToken, map[string]any{
		"type": "http", "host": "127.0.0.1", "port": port, "username": journeyProxyUser, "password": journeyProxyPass,
	}, &proxyRes); err != nil || code != http.StatusCreated {
		t.Fatalf("add proxy: %d %v", code, err)
	}
	return &detectorService{base: base, token: signIn.AccessToken, proxyID: proxyRes.ID, output: p.output}
}

// templateIDs lists the service's built-in templates.
func (d *detectorService) templateIDs(t *testing.T) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, d.base+"/api/v1/templates", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("templates: %d %v", resp.StatusCode, err)
	}
	var ids []string
	for _, tpl := range env.Data {
		ids = append(ids, tpl.ID)
	}
	if len(ids) == 0 {
		t.Fatal("the service lists no templates")
	}
	return ids
}

// newProfile creates a profile of template behind the test's proxy.
func (d *detectorService) newProfile(t *testing.T, name, template string) *journeySession {
	t.Helper()
	var prof struct {
		ID string `json:"id"`
	}
	if code, err := post(d.base, "/api/v1/profiles", d.token, map[string]any{
		"name": name, "templateId": template, "proxy": map[string]string{"id": d.proxyID},
	}, &prof); err != nil || code != http.StatusCreated {
		t.Fatalf("create a profile of %s: %d %v", template, code, err)
	}
	return &journeySession{base: d.base, token: d.token, profile: prof.ID, output: d.output}
}

// detect opens the detectors' page in a new tab of the browser at cdpURL
// and returns their verdict.
func (d *detectorService) detect(t *testing.T, cdpURL string) detection {
	t.Helper()
	var got detection
	withTab(t, cdpURL, func(ctx context.Context) (err error) {
		if err := chromedp.Do(ctx, chromedp.Navigate(d.pageURL)); err != nil {
			return err
		}
		got, err = chromedp.Run(ctx, chromedp.Evaluate[detection]("window.detect", chromedp.EvalAwaitPromise))
		return err
	})
	return got
}

// TestDetectorsSeeNoAutomatedBrowser launches a profile of every built-in
// template, headless and headed (on the display of its own sandbox), and
// runs BotD and FingerprintJS in a page behind its proxy, as a site would:
// BotD finds no bot.
func TestDetectorsSeeNoAutomatedBrowser(t *testing.T) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		missingTool(t, "the detector test", "apt-get install xvfb")("Xvfb: " + err.Error())
	}
	d := startDetectorService(t)
	for _, tpl := range d.templateIDs(t) {
		s := d.newProfile(t, "Detect "+tpl, tpl)
		for _, headless := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/headless=%v", tpl, headless), func(t *testing.T) {
				got := d.detect(t, s.launchAs(t, headless))
				s.release(t)
				if got.Bot {
					t.Errorf("BotD: bot %q; detections %s", got.BotKind, got.Detections)
				}
				if got.VisitorID == "" || len(got.Components) == 0 {
					t.Errorf("FingerprintJS answered no visitor: %+v", got)
				}
			})
		}
	}
}

// TestEveryProfileIsADeviceOfItsOwn launches five profiles of every
// template and reads them with FingerprintJS: every profile is a visitor
// of its own, the same one on every launch, and what a platform decides
// (GPU, fonts, screen, cores, canvas, audio) is not one value for all.
func TestEveryProfileIsADeviceOfItsOwn(t *testing.T) {
	const perTemplate = 5
	d := startDetectorService(t)
	type seen struct {
		template, profile string
		got               detection
	}
	var all []seen
	first := map[string]*journeySession{}
	for _, tpl := range d.templateIDs(t) {
		for i := range perTemplate {
			s := d.newProfile(t, fmt.Sprintf("Device %s %d", tpl, i), tpl)
			got := d.detect(t, s.launch(t))
			s.release(t)
			if got.Bot {
				t.Errorf("%s: BotD: bot %q; detections %s", tpl, got.BotKind, got.Detections)
			}
			all = append(all, seen{tpl, s.profile, got})
			if i == 0 {
				first[tpl] = s
			}
		}
	}
	visitors := map[string]string{}
	for _, s := range all {
		if other, dup := visitors[s.got.VisitorID]; dup {
			t.Errorf("profiles %s and %s are one visitor to FingerprintJS (%s)", other, s.profile, s.got.VisitorID)
		}
		visitors[s.got.VisitorID] = s.profile
	}
	// One profile is one device, launch after launch.
	for tpl, s := range first {
		again := d.detect(t, s.launch(t))
		s.release(t)
		var before detection
		for _, x := range all {
			if x.profile == s.profile {
				before = x.got
			}
		}
		if again.VisitorID != before.VisitorID {
			t.Errorf("%s: profile %s is visitor %s, then %s on its next launch; changed components: %v",
				tpl, s.profile, before.VisitorID, again.VisitorID, changedComponents(before.Components, again.Components))
		}
	}
	for _, name := range []string{"canvas", "audio", "webGlBasics", "webGlExtensions", "fonts", "hardwareConcurrency", "screenResolution", "screenFrame"} {
		values := map[string]bool{}
		for _, s := range all {
			values[s.got.Components[name]] = true
		}
		if len(values) < 2 {
			t.Errorf("FingerprintJS's %s is one value for all %d profiles", name, len(all))
		}
	}
	// What the README reports: how many values each component took.
	distinct := map[string]map[string]bool{}
	for _, s := range all {
		for name, v := range s.got.Components {
			if distinct[name] == nil {
				distinct[name] = map[string]bool{}
			}
			distinct[name][v] = true
		}
	}
	names := make([]string, 0, len(distinct))
	for name := range distinct {
		names = append(names, name)
	}
	sort.Strings(names)
	var counts []string
	for _, name := range names {
		counts = append(counts, fmt.Sprintf("%s %d", name, len(distinct[name])))
	}
	t.Logf("%d profiles, %d visitors; distinct values per component: %s", len(all), len(visitors), strings.Join(counts, ", "))
}

// changedComponents names the components whose values differ.
func changedComponents(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	return out
}
