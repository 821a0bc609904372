//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/profilesvc/profilesvc/tests/testenv"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// crashWebhookSecret signs the deliveries of the crash test's endpoint.
const crashWebhookSecret = "whsec-crash-0123456789abcdef0123456789abcd"

// crashCookieName is the cookie each page sets; its name is stored as it
// is in the browser's Cookies database (the value is encrypted).
const crashCookieName = "crashcookie"

// TestKill9EndsTheSessionsAsCrashedAtRestart runs the service with two
// Chromium browsers whose pages wrote a cookie and a localStorage value,
// waits until both are on disk, and kills the service with SIGKILL.
// Started again on the same data directory and address, the service shows
// both profiles idle, has delivered one profile.stopped with reason crashed
// for each, counts no running session, stores in each profile's data the
// browser's directory as it was left, and launches each at once into a
// browser that finds its values.
func TestKill9EndsTheSessionsAsCrashedAtRestart(t *testing.T) {
	chromium := chromiumOrSkip(t)
	t.Run("sqlite and files", func(t *testing.T) {
		t.Parallel()
		dir, dataDir, tmpDir := browserDirs(t)
		testKill9WithBrowsers(t, chromium, dir, dataDir, tmpDir, filesBackend(dataDir))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dir, dataDir, tmpDir := browserDirs(t)
		testKill9WithBrowsers(t, chromium, dir, dataDir, tmpDir, postgresBackend(t, dataDir))
	})
}

func testKill9WithBrowsers(t *testing.T, chromium, dir, dataDir, tmpDir string, backend dataBackend) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>crash</title><p>crash</p>")
	}))
	t.Cleanup(page.Close)
	hooks := newStoppedReceiver(t)

	// The same address before and after the kill: without NODE_URL it is
	// the instance's node, by which it knows its sessions.
	addr := freeAddr(t)
	base := "http://" + addr
	env := minimalEnv(append([]string{
		"HTTP_ADDR=" + addr, "TMPDIR=" + tmpDir, "LOG_LEVEL=warn",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH=" + chromium, "ALLOW_PRIVATE_TARGETS=true",
	}, backend.env...)...)
	p := startProcess(t, dir, env, addr)

	var signIn struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(base, "/api/v1/auth/register", "", map[string]string{
		"email": "crash@example.com", "password": "a long enough password", "name": "Crash",
	}, &signIn); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %v\n%s", code, err, p.output)
	}
	token := signIn.AccessToken
	if code, err := post(base, "/v1/webhooks", token, map[string]any{
		"url": hooks.srv.URL, "events": []string{"profile.stopped"}, "secret": crashWebhookSecret,
	}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("subscribe to profile.stopped: %d %v\n%s", code, err, p.output)
	}

	type written struct{ storage, cookie string }
	values := map[string]written{}  // profile id -> what its page wrote
	sessions := map[string]string{} // profile id -> its session before the kill
	var ids []string
	for _, name := range []string{"First", "Second"} {
		var prof struct {
			ID string `json:"id"`
		}
		if code, err := post(base, "/api/v1/profiles", token, map[string]any{"name": name, "templateId": "tpl_chrome_win_us"}, &prof); err != nil || code != http.StatusCreated {
			t.Fatalf("create profile %s: %d %v\n%s", name, code, err, p.output)
		}
		ids = append(ids, prof.ID)
		values[prof.ID] = written{storage: "survives kill -9: " + name, cookie: "kept-" + strings.ToLower(name)}
	}
	for _, id := range ids {
		cdpURL := launchHeadless(t, base, token, id, p.output)
		sessions[id] = sessionOfCDPURL(t, cdpURL)
		withTab(t, cdpURL, func(ctx context.Context) error {
			return chromedp.Do(ctx,
				chromedp.Navigate(page.URL+"/"),
				chromedp.Evaluate[chromedp.Void](`document.cookie = `+jsString(crashCookieName+"="+values[id].cookie+"; path=/; expires=Fri, 31 Dec 2060 23:59:59 GMT")+`;
					localStorage.setItem('k', `+jsString(values[id].storage)+`)`),
			)
		})
	}
	// Chromium writes local storage and cookies to disk a little later;
	// what is not on disk when the process dies is lost, so the kill waits
	// for both, in each session's directory.
	for _, id := range ids {
		profileDir := filepath.Join(dataDir, "browsers", sessions[id], "profile", "Default")
		waitOnDisk(t, "the localStorage value of "+id, profileDir, func(rel string) bool {
			return strings.HasPrefix(rel, "Local Storage/leveldb/")
		}, values[id].storage)
		// Committed: in the database file, and then no transaction under
		// way that SQLite would roll back at the next open (a journal is
		// hot before the file is written, until the commit).
		poll.Within(t, 90*time.Second, "the committed cookie of "+id+" under "+profileDir, func() bool {
			committed := false
			_ = filepath.WalkDir(profileDir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != "Cookies" {
					return nil
				}
				b, err := os.ReadFile(p)
				committed = committed || (err == nil && bytes.Contains(b, []byte(crashCookieName)) && !hotJournal(p+"-journal"))
				return nil
			})
			return committed
		})
	}

	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	// The browsers die with the service.
	waitNoProcessMentions(t, dataDir)
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()

	p = startProcess(t, dir, env, addr)
	stopAtCleanup(t, p, dataDir)
	for _, id := range ids {
		var prof struct {
			Status  string `json:"status"`
			Session *struct {
				ID string `json:"id"`
			} `json:"session"`
		}
		if code := getData(t, base+"/api/v1/profiles/"+id, token, &prof); code != http.StatusOK {
			t.Fatalf("get %s after the restart: %d\n%s", id, code, p.output)
		}
		if prof.Status != "idle" || prof.Session != nil {
			t.Errorf("after the restart %s is %s with session %+v, want idle with none", id, prof.Status, prof.Session)
		}
	}
	if n := metricValue(t, addr, "profilesvc_sessions_running"); n != 0 {
		t.Errorf("profilesvc_sessions_running after the restart: %v, want 0", n)
	}
	if left, err := os.ReadDir(filepath.Join(dataDir, "browsers")); err != nil || len(left) != 0 {
		t.Errorf("after the restart the browsers' directory holds %v (%v), want nothing", left, err)
	}
	want := []string{ids[0] + " crashed", ids[1] + " crashed"}
	sort.Strings(want)
	hooks.waitFor(t, want)

	// The data are the directories as they were left: the localStorage
	// database holds the value, and the cookie database is there.
	for _, id := range ids {
		archive, _ := downloadData(t, base, token, id)
		files := testenv.Untar(t, archive)
		storage, cookies := false, false
		for name, content := range files {
			if strings.HasPrefix(name, "Default/Local Storage/leveldb/") && strings.Contains(content, values[id].storage) {
				storage = true
			}
			if path.Base(name) == "Cookies" && strings.Contains(content, crashCookieName) {
				cookies = true
			}
		}
		if !storage || !cookies {
			t.Errorf("the data of %s after the restart: localStorage value found %t, cookie found %t; the archive holds %v", id, storage, cookies, sortedNames(files))
		}
	}

	// Each profile launches at once, into a browser that finds its values.
	for _, id := range ids {
		cdpURL := launchHeadless(t, base, token, id, p.output)
		var got crashPageState
		withTab(t, cdpURL, func(ctx context.Context) (err error) {
			if err := chromedp.Do(ctx, chromedp.Navigate(page.URL+"/")); err != nil {
				return err
			}
			got, err = chromedp.Run(ctx, chromedp.Evaluate[crashPageState](`({storage: localStorage.getItem('k') || '', cookie: document.cookie})`))
			return err
		})
		if code, err := post(base, "/api/v1/profiles/"+id+"/release", token, map[string]any{}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("release %s: %d %v\n%s", id, code, err, p.output)
		}
		if wantCookie := crashCookieName + "=" + values[id].cookie; got.Storage != values[id].storage || got.Cookie != wantCookie {
			t.Errorf("after the crash a launch of %s finds localStorage k=%q and cookies %q, want %q and %q", id, got.Storage, got.Cookie, values[id].storage, wantCookie)
		}
	}
}

// crashPageState is what a page finds of what an earlier page wrote.
type crashPageState struct {
	Storage string `json:"storage"`
	Cookie  string `json:"cookie"`
}

// sessionOfCDPURL is the session id in a cdpUrl
// (ws://<host>/api/v1/sessions/<id>/cdp?token=...).
func sessionOfCDPURL(t *testing.T, cdpURL string) string {
	t.Helper()
	u, err := url.Parse(cdpURL)
	if err != nil {
		t.Fatalf("cdpUrl %q: %v", cdpURL, err)
	}
	rest, ok := strings.CutPrefix(u.Path, "/api/v1/sessions/")
	id, ok2 := strings.CutSuffix(rest, "/cdp")
	if !ok || !ok2 || id == "" || strings.Contains(id, "/") {
		t.Fatalf("cdpUrl %q names no session", cdpURL)
	}
	return id
}

// waitOnDisk waits until a file under dir that keep accepts (by its path
// relative to dir, with "/") holds want.
func waitOnDisk(t *testing.T, what, dir string, keep func(rel string) bool, want string) {
	t.Helper()
	poll.Within(t, 90*time.Second, what+" on disk under "+dir, func() bool {
		found := false
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || found {
				return nil
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil || !keep(filepath.ToSlash(rel)) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil && bytes.Contains(b, []byte(want)) {
				found = true
			}
			return nil
		})
		return found
	})
}

// hotJournal reports whether the SQLite rollback journal at p may hold a
// transaction under way: it exists and begins with the journal's magic
// number (https://sqlite.org/fileformat.html, "the rollback journal"). A
// journal that is absent, empty or zeroed is not hot.
func hotJournal(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 8)
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return bytes.Equal(head, []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7})
}

// metricValue reads a metric without labels from the process's /metrics.
func metricValue(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s %q: %v", name, v, err)
			}
			return n
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

func sortedNames(files map[string]string) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
