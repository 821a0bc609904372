//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// shutdownWebhookSecret signs the deliveries of the shutdown test's
// endpoint.
const shutdownWebhookSecret = "whsec-shutdown-0123456789abcdef0123456789"

// TestSIGTERMSavesEveryRunningBrowser runs the service with two Chromium
// browsers, each with a value in its page's localStorage, one of them with
// a client still connected, and sends it SIGTERM. The service drains (for
// DRAIN_TIMEOUT, 1 s here, its browsers go on), then exits 0 with
// no Chromium process of its data directory left, and started again on the
// same directory it shows both profiles idle with their data stored,
// delivers profile.stopped with reason shutdown for each, and a new launch
// of each finds its value.
func TestSIGTERMSavesEveryRunningBrowser(t *testing.T) {
	chromium := chromiumOrSkip(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>shutdown</title><p>shutdown</p>")
	}))
	t.Cleanup(page.Close)
	hooks := newStoppedReceiver(t)

	dir, dataDir, tmpDir := browserDirs(t)
	env := func(addr string) []string {
		return minimalEnv(
			"HTTP_ADDR="+addr, "DATA_DIR="+dataDir, "TMPDIR="+tmpDir, "LOG_LEVEL=warn",
			"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH="+chromium, "ALLOW_PRIVATE_TARGETS=true", "DRAIN_TIMEOUT=1s",
		)
	}
	addr := freeAddr(t)
	p := startProcess(t, dir, env(addr), addr)
	t.Cleanup(func() { waitNoProcessMentions(t, dataDir) })
	base := "http://" + addr

	var signIn struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(base, "/api/v1/auth/register", "", map[string]string{
		"email": "shutdown@example.com", "password": "a long enough password", "name": "Shutdown",
	}, &signIn); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %v\n%s", code, err, p.output)
	}
	token := signIn.AccessToken
	if code, err := post(base, "/v1/webhooks", token, map[string]any{
		"url": hooks.srv.URL, "events": []string{"profile.stopped"}, "secret": shutdownWebhookSecret,
	}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("subscribe to profile.stopped: %d %v\n%s", code, err, p.output)
	}

	values := map[string]string{} // profile id -> its page's localStorage value
	var ids []string
	for _, name := range []string{"First", "Second"} {
		var prof struct {
			ID string `json:"id"`
		}
		if code, err := post(base, "/api/v1/profiles", token, map[string]any{"name": name, "templateId": "tpl_chrome_win_us"}, &prof); err != nil || code != http.StatusCreated {
			t.Fatalf("create profile %s: %d %v\n%s", name, code, err, p.output)
		}
		ids = append(ids, prof.ID)
		values[prof.ID] = "kept by " + name
	}

	// The first browser's client stays connected, with its tab open,
	// through the shutdown; the second's has closed its tab and left.
	for i, id := range ids {
		cdpURL := launchHeadless(t, base, token, id, p.output)
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		allocCtx, cancelAlloc := remote.NewAllocator(ctx, cdpURL, remote.NoModifyURL)
		tabCtx, cancelTab := chromedp.NewContext(allocCtx)
		drop := func() { cancelTab(); cancelAlloc(); cancel() }
		err := chromedp.Do(tabCtx,
			chromedp.Navigate(page.URL+"/"),
			chromedp.Evaluate[chromedp.Void]("localStorage.setItem('k', "+jsString(values[id])+")"),
		)
		if err != nil {
			drop()
			t.Fatalf("set localStorage in the browser of %s: %v", id, err)
		}
		if i == 0 {
			t.Cleanup(drop)
		} else {
			drop()
		}
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.output)
	}
	// The service waited for its browsers: none runs once it has exited.
	if left := processesMentioning(t, dataDir); len(left) != 0 {
		t.Fatalf("processes of %s still run after the service exited:\n%s\n%s", dataDir, strings.Join(left, "\n"), p.output)
	}

	addr = freeAddr(t)
	p = startProcess(t, dir, env(addr), addr)
	stopAtCleanup(t, p, dataDir)
	base = "http://" + addr
	for _, id := range ids {
		var prof struct {
			Status  string          `json:"status"`
			Session json.RawMessage `json:"session"`
			Data    json.RawMessage `json:"data"`
		}
		if code := getData(t, base+"/api/v1/profiles/"+id, token, &prof); code != http.StatusOK {
			t.Fatalf("get %s after the restart: %d\n%s", id, code, p.output)
		}
		if prof.Status != "idle" || !isNull(prof.Session) || isNull(prof.Data) {
			t.Errorf("after the restart %s is %s with session %s and data %s, want idle with no session and its data", id, prof.Status, prof.Session, prof.Data)
		}
	}
	want := []string{ids[0] + " shutdown", ids[1] + " shutdown"}
	sort.Strings(want)
	hooks.waitFor(t, want)

	for _, id := range ids {
		cdpURL := launchHeadless(t, base, token, id, p.output)
		var value string
		withTab(t, cdpURL, func(ctx context.Context) (err error) {
			if err := chromedp.Do(ctx, chromedp.Navigate(page.URL+"/")); err != nil {
				return err
			}
			value, err = chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem('k') || ''`))
			return err
		})
		if code, err := post(base, "/api/v1/profiles/"+id+"/release", token, map[string]any{}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("release %s: %d %v\n%s", id, code, err, p.output)
		}
		if value != values[id] {
			t.Errorf("after the shutdown a launch of %s finds localStorage k=%q, want %q", id, value, values[id])
		}
	}
}

// chromiumOrSkip finds Chromium and bubblewrap, or skips the test; with CI
// set, a missing one fails it instead.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	chromium := os.Getenv("CHROMIUM_PATH")
	if chromium == "" {
		chromium = "chromium"
	}
	missing := missingTool(t, "the test", "apt-get install chromium bubblewrap")
	path, err := exec.LookPath(chromium)
	if err != nil {
		missing("Chromium: " + err.Error())
	}
	// Every browser runs in its bubblewrap sandbox.
	if _, err := exec.LookPath("bwrap"); err != nil {
		missing("bubblewrap: " + err.Error())
	}
	return path
}

// launchHeadless launches profile id headless and returns its cdpUrl.
func launchHeadless(t *testing.T, base, token, id string, output io.Writer) string {
	t.Helper()
	var res struct {
		Session struct {
			CDPURL *string `json:"cdpUrl"`
		} `json:"session"`
	}
	code, err := post(base, "/api/v1/profiles/"+id+"/launch", token, map[string]any{"headless": true}, &res)
	if err != nil || code != http.StatusOK || res.Session.CDPURL == nil {
		t.Fatalf("launch %s: %d %v, cdpUrl %v\n%s", id, code, err, res.Session.CDPURL, output)
	}
	return *res.Session.CDPURL
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// stoppedReceiver is a webhook endpoint that records, for each
// profile.stopped it receives, "<profile id> <reason>".
type stoppedReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string]bool // event id -> seen, as a delivery may repeat
	all []string
}

func newStoppedReceiver(t *testing.T) *stoppedReceiver {
	t.Helper()
	rc := &stoppedReceiver{got: map[string]bool{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev receivedEvent
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil || ev.Type != "profile.stopped" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		if !rc.got[ev.ID] {
			rc.got[ev.ID] = true
			rc.all = append(rc.all, ev.Data.Profile.ID+" "+ev.Data.Reason)
		}
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// waitFor waits until the receiver has got exactly want (sorted), and
// fails on anything else once the deadline has passed.
func (rc *stoppedReceiver) waitFor(t *testing.T, want []string) {
	t.Helper()
	poll.Check(t, 30*time.Second, "the profile.stopped deliveries", func() error {
		rc.mu.Lock()
		got := append([]string(nil), rc.all...)
		rc.mu.Unlock()
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			return fmt.Errorf("deliveries %q, want %q", got, want)
		}
		return nil
	})
}
