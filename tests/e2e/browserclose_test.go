//go:build unix

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// TestBrowserCloseByTheClientKeepsTheLastCookie has the client end the
// session itself right after a page set a cookie: Puppeteer's
// browser.close(), and the Browser.close it sends, raw. The session ends
// by itself (reason closed) and the cookie is in the profile's cookies.
func TestBrowserCloseByTheClientKeepsTheLastCookie(t *testing.T) {
	chromium := chromiumOrSkip(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<title>site</title>"))
	}))
	t.Cleanup(site.Close)
	dir, dataDir, tmpDir := browserDirs(t)
	addr := freeAddr(t)
	base := "http://" + addr
	p := startProcess(t, dir, minimalEnv(
		"HTTP_ADDR="+addr, "DATA_DIR="+dataDir, "TMPDIR="+tmpDir, "LOG_LEVEL=warn",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH="+chromium, "ALLOW_PRIVATE_TARGETS=true",
	), addr)
	stopAtCleanup(t, p, dataDir)
	token := register(t, base, "closer@example.com")

	t.Run("raw Browser.close", func(t *testing.T) {
		id := createProfile(t, base, token)
		c := dialCDP(t, launchHeadless(t, base, token, id, p.output))
		page := c.newPage(t)
		if res := c.call(t, page.session, "Page.navigate", map[string]any{"url": site.URL + "/"}); res.Error != nil {
			t.Fatalf("Page.navigate: %s", res.Error)
		}
		c.evaluate(t, page.session, `new Promise(r => { const go = () => { document.cookie = "last=written-before-close; max-age=3600; path=/"; r(true) }; document.readyState === "complete" ? go() : addEventListener("load", go) })`)
		// The browser closes itself and the connection with it: the
		// answer may not come.
		if err := c.ws.Write(c.ctx, websocket.MessageText, []byte(`{"id":999,"method":"Browser.close"}`)); err != nil {
			t.Fatal(err)
		}
		expectClosedWithCookie(t, base, token, id, p.output)
	})

	t.Run("puppeteer browser.close()", func(t *testing.T) {
		nodeDir, err := filepath.Abs("node")
		if err != nil {
			t.Fatal(err)
		}
		missing := missingTool(t, "Puppeteer's browser.close()", "npm ci --prefix tests/e2e/node")
		if _, err := exec.LookPath("node"); err != nil {
			missing("Node.js: " + err.Error())
		}
		if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "puppeteer-core", "package.json")); err != nil {
			missing("puppeteer-core in tests/e2e/node/node_modules: " + err.Error())
		}
		id := createProfile(t, base, token)
		cdpURL := launchHeadless(t, base, token, id, p.output)
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", "close.mjs", cdpURL, site.URL+"/")
		cmd.Dir = nodeDir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("close.mjs: %v\n%s", err, out.String())
		}
		expectClosedWithCookie(t, base, token, id, p.output)
	})
}

// expectClosedWithCookie waits for the profile's session to end and finds
// the cookie the last page set in its cookies.
func expectClosedWithCookie(t *testing.T, base, token, id string, output *testenv.Output) {
	t.Helper()
	poll.Check(t, 30*time.Second, "the session to end after the client closed the browser", func() error {
		var prof struct {
			Session *struct {
				ID string `json:"id"`
			} `json:"session"`
		}
		if code := getData(t, base+"/api/v1/profiles/"+id, token, &prof); code != http.StatusOK {
			t.Fatalf("GET profile: %d", code)
		}
		if prof.Session != nil {
			return fmt.Errorf("it still runs\n%s", output)
		}
		return nil
	})
	var cookies []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	if code := getData(t, base+"/api/v1/profiles/"+id+"/cookies", token, &cookies); code != http.StatusOK {
		t.Fatalf("GET cookies: %d", code)
	}
	for _, ck := range cookies {
		if ck.Name == "last" && ck.Value == "written-before-close" {
			return
		}
	}
	t.Errorf("the profile's cookies after the client closed the browser are %+v, want last=written-before-close", cookies)
}
