//go:build unix

package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/profilesvc/profilesvc/tests/testenv"
)

// TestContainment attacks the service as a member of one team who may
// launch, with raw CDP through the relay and with page scripts, with
// ALLOW_PRIVATE_TARGETS unset; every attack must fail. It runs the service
// as the current user and, when that is root (as CI), also as an
// unprivileged one.
func TestContainment(t *testing.T) {
	chromium := chromiumOrSkip(t)
	t.Run("as the current user", func(t *testing.T) {
		testContainment(t, chromium, nil)
	})
	if os.Geteuid() == 0 {
		t.Run("as an unprivileged user", func(t *testing.T) {
			testContainment(t, chromium, &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}})
		})
	}
}

func testContainment(t *testing.T, chromium string, as *syscall.Credential) {
	dir := worldDir(t, as)
	dataDir := filepath.Join(dir, "data")
	hostDownloads := filepath.Join(dir, "downloads")
	for _, d := range []string{filepath.Join(dir, "tmp"), hostDownloads} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	// A loopback service that the browser must never reach.
	trap := newTrap(t)
	jwtSecret, secretKey := randomHex(t), randomHex(t)
	addr := freeAddr(t)
	base := "http://" + addr
	p := startProcessAs(t, dir, minimalEnv(
		"HTTP_ADDR="+addr, "DATA_DIR="+dataDir, "TMPDIR="+filepath.Join(dir, "tmp"), "LOG_LEVEL=warn",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH="+chromium, "JWT_SECRET="+jwtSecret, "SECRET_KEY="+secretKey,
	), addr, as)
	stopAtCleanup(t, p, dataDir)

	tokenA := register(t, base, "attacker@example.com")
	tokenB := register(t, base, "victim@example.com")
	profileA, profileB := createProfile(t, base, tokenA), createProfile(t, base, tokenB)
	// Team A's data carry an extension that would take every page off
	// the profile's proxy, installed the way a browser records one.
	ext := extensionArchive(t)
	if code, _, answer := putArchive(t, base, tokenA, profileA, bytes.NewReader(ext), int64(len(ext))); code != http.StatusOK {
		t.Fatalf("upload of the extension archive: %d %s", code, answer)
	}
	cdpA := launchHeadless(t, base, tokenA, profileA, p.output)
	cdpB := launchHeadless(t, base, tokenB, profileB, p.output)
	t.Cleanup(func() {
		for _, r := range []struct{ token, id string }{{tokenA, profileA}, {tokenB, profileB}} {
			_, _ = post(base, "/api/v1/profiles/"+r.id+"/release", r.token, map[string]any{}, nil)
		}
	})

	c := dialCDP(t, cdpA)
	page := c.newPage(t)

	t.Run("commands that name host paths or networks are refused", func(t *testing.T) {
		for _, cmd := range []struct {
			method string
			params any
			page   bool
		}{
			{"Page.navigate", map[string]any{"url": "file:///etc/passwd"}, true},
			{"Page.navigate", map[string]any{"url": "file://" + filepath.Join(dataDir, "profilesvc.db")}, true},
			{"Page.navigate", map[string]any{"url": "chrome://version"}, true},
			{"Target.createTarget", map[string]any{"url": "file:///etc/passwd"}, false},
			{"Target.createTarget", map[string]any{"url": "devtools://devtools/bundled/inspector.html"}, false},
			{"DOM.setFileInputFiles", map[string]any{"files": []string{"/etc/passwd"}, "nodeId": 1}, true},
			{"Target.createBrowserContext", map[string]any{"proxyServer": "direct://"}, false},
			{"Target.createBrowserContext", map[string]any{"proxyBypassList": "*"}, false},
			{"Network.loadNetworkResource", map[string]any{"url": "file:///etc/passwd", "options": map[string]any{"disableCache": true, "includeCredentials": false}}, true},
			{"Target.attachToTarget", map[string]any{"targetId": page.target, "flatten": false}, false},
			{"Target.sendMessageToTarget", map[string]any{"message": "{}", "targetId": page.target}, false},
			{"Target.exposeDevToolsProtocol", map[string]any{"targetId": page.target}, false},
			{"Extensions.loadUnpacked", map[string]any{"path": "/tmp"}, false},
		} {
			session := ""
			if cmd.page {
				session = page.session
			}
			res := c.call(t, session, cmd.method, cmd.params)
			if res.Error == nil {
				t.Errorf("%s %v was carried out: %s", cmd.method, cmd.params, res.Result)
			}
		}
	})

	t.Run("page scripts reach neither files nor loopback", func(t *testing.T) {
		// A page cannot read a file, whichever way it asks: neither the
		// host's users nor the service's database.
		db := "file://" + filepath.Join(dataDir, "profilesvc.db")
		if _, err := os.Stat(filepath.Join(dataDir, "profilesvc.db")); err != nil {
			t.Fatalf("the service's database is not where the attack looks: %v", err)
		}
		for _, f := range []struct{ url, mark string }{{"file:///etc/passwd", "root:"}, {db, "SQLite format"}} {
			for _, expr := range []string{
				`fetch(` + jsString(f.url) + `).then(r => r.text(), e => "failed: " + e)`,
				`new Promise(r => { const x = new XMLHttpRequest(); x.open("GET", ` + jsString(f.url) + `); x.onload = () => r(x.responseText); x.onerror = () => r("failed"); x.send(); })`,
			} {
				if text := c.evaluateString(t, page.session, expr); strings.Contains(text, f.mark) {
					t.Errorf("a page read %s with %s: %.200q", f.url, expr, text)
				}
			}
		}
		for _, target := range []string{"http://" + trap.addr() + "/", base + "/healthz", "http://localhost:" + trap.port() + "/"} {
			got := c.evaluateString(t, page.session, `fetch(`+jsString(target)+`, {mode: "no-cors"}).then(r => "reached " + r.status, e => "failed: " + e)`)
			if strings.HasPrefix(got, "reached") && !strings.HasPrefix(got, "reached 0") {
				t.Errorf("a page fetched %s: %s", target, got)
			}
		}
		// No DevTools port exists; a WebSocket to Chromium's usual one
		// finds nothing.
		got := c.evaluateString(t, page.session, `new Promise(r => { const ws = new WebSocket("ws://127.0.0.1:9222/json"); ws.onopen = () => r("open"); ws.onerror = () => r("error"); })`)
		if got != "error" {
			t.Errorf("a page opened a WebSocket to 127.0.0.1:9222: %s", got)
		}
		if n := trap.accepted.Load(); n != 0 {
			t.Errorf("the loopback trap accepted %d connections from the browser", n)
		}
	})

	t.Run("downloads stay in the sandbox", func(t *testing.T) {
		res := c.call(t, "", "Browser.setDownloadBehavior", map[string]any{"behavior": "allow", "downloadPath": hostDownloads, "eventsEnabled": true})
		if res.Error != nil {
			t.Fatalf("Browser.setDownloadBehavior: %s", res.Error)
		}
		c.evaluate(t, page.session, `(() => { const a = document.createElement("a"); a.href = URL.createObjectURL(new Blob(["escaped"])); a.download = "escape.txt"; document.body.appendChild(a); a.click(); return true })()`)
		c.waitEvent(t, "Browser.downloadProgress", `"state":"completed"`)
		if entries, _ := os.ReadDir(hostDownloads); len(entries) != 0 {
			t.Errorf("a download landed in the host's folder: %v", entries)
		}
	})

	t.Run("an extension in uploaded data neither stays nor runs", func(t *testing.T) {
		data, _ := downloadData(t, base, tokenA, profileA)
		for _, name := range archiveEntryNames(t, data) {
			if strings.Contains(name, "Extensions/") || strings.Contains(name, extensionID) {
				t.Errorf("the stored data keep %s", name)
			}
		}
		var prefs map[string]json.RawMessage
		if raw := archiveFile(t, data, "Default/Preferences"); raw != nil {
			if err := json.Unmarshal(raw, &prefs); err != nil {
				t.Fatalf("the stored Preferences: %v", err)
			}
		}
		for _, key := range []string{"extensions", "proxy"} {
			if _, ok := prefs[key]; ok {
				t.Errorf("the stored Preferences keep %q: %s", key, prefs[key])
			}
		}
		res := c.call(t, "", "Target.getTargets", nil)
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		if bytes.Contains(res.Result, []byte("chrome-extension://")) {
			t.Errorf("an extension runs in the browser: %s", res.Result)
		}
		// The forwarder refuses loopback (an opaque answer to a no-cors
		// fetch): the trap is the judge of whether anything got through.
		c.evaluateString(t, page.session, `fetch("http://localhost:`+trap.port()+`/", {mode: "no-cors"}).then(() => "answered", e => "failed")`)
		if n := trap.accepted.Load(); n != 0 {
			t.Errorf("a page reached loopback (%d connections) after an extension was uploaded", n)
		}
	})

	t.Run("another team's session is out of reach", func(t *testing.T) {
		u, err := url.Parse(cdpB)
		if err != nil {
			t.Fatal(err)
		}
		ua, _ := url.Parse(cdpA)
		q := u.Query()
		q.Set("token", ua.Query().Get("token"))
		u.RawQuery = q.Encode()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, res, err := websocket.Dial(ctx, u.String(), nil)
		if err == nil {
			conn.CloseNow()
			t.Fatal("team A's token opened team B's browser")
		}
		if res == nil || res.StatusCode != http.StatusUnauthorized {
			t.Errorf("team A's token on team B's session: %v, want 401", err)
		}
	})

	t.Run("the host sees a contained browser", func(t *testing.T) {
		browsers := sandboxedBrowsers(p.cmd.Process.Pid)
		if len(browsers) == 0 {
			t.Fatal("no browser process found under the service")
		}
		hostNet, err := os.Readlink("/proc/self/ns/net")
		if err != nil {
			t.Fatal(err)
		}
		hostListen := listeningInodes(t, "/proc/self/net")
		for _, pid := range browsers {
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err != nil {
				continue // ended since the listing
			}
			for _, secret := range []string{jwtSecret, secretKey, dataDir} {
				if bytes.Contains(environ, []byte(secret)) {
					t.Errorf("browser process %d has a secret of the service (or DATA_DIR) in its environment", pid)
				}
			}
			if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); ns == hostNet {
				t.Errorf("browser process %d runs in the host's network namespace", pid)
			}
			for inode := range socketInodes(pid) {
				if hostListen[inode] {
					t.Errorf("browser process %d listens on the host's network", pid)
				}
			}
			inner := listeningInodes(t, fmt.Sprintf("/proc/%d/net", pid))
			for inode := range socketInodes(pid) {
				if inner[inode] {
					t.Errorf("browser process %d listens on a port (a DevTools port?)", pid)
				}
			}
		}
		// The service listens on its own address only: the sessions'
		// forwarders are in the browsers' namespaces, out of reach of
		// every other process of the host.
		own := 0
		for inode := range socketInodes(p.cmd.Process.Pid) {
			if hostListen[inode] {
				own++
			}
		}
		if own != 1 {
			t.Errorf("the service listens on %d sockets of the host's network, want 1 (its HTTP address)", own)
		}
	})
}

// extensionID names the uploaded extension (32 letters a-p, as Chromium's).
const extensionID = "abcdefghijklmnopabcdefghijklmnop"

// extensionArchive is browser data holding an unpacked extension that
// sets the proxy to direct, with the Preferences entry that enables it.
func extensionArchive(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	dir := "Default/Extensions/" + extensionID + "/1.0/"
	writeEntry(t, tw, dir+"manifest.json", []byte(`{"manifest_version":3,"name":"direct","version":"1.0","permissions":["proxy"],"background":{"service_worker":"bg.js"}}`))
	writeEntry(t, tw, dir+"bg.js", []byte(`chrome.proxy.settings.set({value: {mode: "direct"}, scope: "regular"});`))
	prefs, _ := json.Marshal(map[string]any{
		"extensions": map[string]any{"settings": map[string]any{extensionID: map[string]any{
			"location": 4, "path": extensionID + "/1.0", "state": 1, "manifest": map[string]any{"name": "direct", "version": "1.0"},
		}}},
		"proxy": map[string]any{"mode": "direct"},
	})
	writeEntry(t, tw, "Default/Preferences", prefs)
	closeArchive(t, tw, zw)
	return buf.Bytes()
}

// archiveEntryNames lists the names in a tar.gz.
func archiveEntryNames(t *testing.T, data []byte) []string {
	t.Helper()
	var names []string
	walkArchive(t, data, func(name string, _ io.Reader) { names = append(names, name) })
	return names
}

// archiveFile is the content of one file of a tar.gz, nil if it has none.
func archiveFile(t *testing.T, data []byte, want string) []byte {
	t.Helper()
	var out []byte
	walkArchive(t, data, func(name string, r io.Reader) {
		if name == want {
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			out = b
		}
	})
	return out
}

func walkArchive(t *testing.T, data []byte, fn func(name string, r io.Reader)) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(hdr.Name, tr)
	}
}

// worldDir is a directory for a service run as cred (nil: the current
// user), who owns it.
func worldDir(t *testing.T, cred *syscall.Credential) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "profilesvc-containment")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
		// The service's binary must be reachable by that user.
		if err := os.Chmod(filepath.Dir(binary), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func randomHex(t *testing.T) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func register(t *testing.T, base, email string) string {
	t.Helper()
	var res struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(base, "/api/v1/auth/register", "", map[string]string{
		"email": email, "password": "a long enough password", "name": "Member",
	}, &res); err != nil || code != http.StatusCreated {
		t.Fatalf("register %s: %d %v", email, code, err)
	}
	return res.AccessToken
}

func createProfile(t *testing.T, base, token string) string {
	t.Helper()
	var res struct {
		ID string `json:"id"`
	}
	if code, err := post(base, "/api/v1/profiles", token, map[string]any{"name": "Contained", "templateId": "tpl_chrome_win_us"}, &res); err != nil || code != http.StatusCreated {
		t.Fatalf("create profile: %d %v", code, err)
	}
	return res.ID
}

// trap is a loopback listener that counts the connections it accepts.
type trap struct {
	ln       net.Listener
	accepted atomic.Int64
}

func newTrap(t *testing.T) *trap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tr
}

func (tr *trap) addr() string { return tr.ln.Addr().String() }
func (tr *trap) port() string {
	_, port, _ := net.SplitHostPort(tr.addr())
	return port
}

// cdpConn is a raw CDP client of the relay.
type cdpConn struct {
	ws     *websocket.Conn
	ctx    context.Context
	next   int64
	events []string
}

type cdpAnswer struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func dialCDP(t *testing.T, cdpURL string) *cdpConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	t.Cleanup(cancel)
	ws, _, err := websocket.Dial(ctx, cdpURL, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", cdpURL, err)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { ws.CloseNow() })
	return &cdpConn{ws: ws, ctx: ctx}
}

// call sends one command and returns its answer, keeping the events that
// came before it.
func (c *cdpConn) call(t *testing.T, session, method string, params any) cdpAnswer {
	t.Helper()
	c.next++
	msg := map[string]any{"id": c.next, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, _ := json.Marshal(msg)
	if err := c.ws.Write(c.ctx, websocket.MessageText, raw); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		_, data, err := c.ws.Read(c.ctx)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var a cdpAnswer
		if err := json.Unmarshal(data, &a); err != nil {
			t.Fatalf("%s: unreadable message %s", method, data)
		}
		if a.ID == c.next {
			return a
		}
		if a.Method != "" {
			c.events = append(c.events, string(data))
		}
	}
}

// waitEvent reads until an event of method whose text holds want arrives.
func (c *cdpConn) waitEvent(t *testing.T, method, want string) {
	t.Helper()
	for _, e := range c.events {
		if strings.Contains(e, `"method":"`+method+`"`) && strings.Contains(e, want) {
			return
		}
	}
	for {
		_, data, err := c.ws.Read(c.ctx)
		if err != nil {
			t.Fatalf("waiting for %s with %s: %v", method, want, err)
		}
		if bytes.Contains(data, []byte(`"method":"`+method+`"`)) && bytes.Contains(data, []byte(want)) {
			return
		}
	}
}

type cdpPage struct{ target, session string }

func (c *cdpConn) newPage(t *testing.T) cdpPage {
	t.Helper()
	res := c.call(t, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	var created struct {
		TargetID string `json:"targetId"`
	}
	if res.Error != nil || json.Unmarshal(res.Result, &created) != nil {
		t.Fatalf("Target.createTarget: %s %s", res.Error, res.Result)
	}
	res = c.call(t, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true})
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if res.Error != nil || json.Unmarshal(res.Result, &attached) != nil {
		t.Fatalf("Target.attachToTarget: %s %s", res.Error, res.Result)
	}
	return cdpPage{target: created.TargetID, session: attached.SessionID}
}

func (c *cdpConn) evaluate(t *testing.T, session, expr string) json.RawMessage {
	t.Helper()
	res := c.call(t, session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	if res.Error != nil {
		t.Fatalf("Runtime.evaluate %s: %s", expr, res.Error)
	}
	return res.Result
}

func (c *cdpConn) evaluateString(t *testing.T, session, expr string) string {
	t.Helper()
	var out struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	raw := c.evaluate(t, session, expr)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("Runtime.evaluate %s: %s", expr, raw)
	}
	return out.Result.Value
}

// sandboxedBrowsers lists the descendants of pid whose program is not
// bwrap: the browsers and their helpers.
func sandboxedBrowsers(pid int) []int {
	var out []int
	for _, p := range testenv.Descendants(pid) {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p)); !strings.HasSuffix(exe, "/bwrap") {
			out = append(out, p)
		}
	}
	return out
}

// listeningInodes are the socket inodes in state LISTEN of a network
// namespace's /proc/<pid>/net.
func listeningInodes(t *testing.T, netDir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range []string{"tcp", "tcp6"} {
		file, err := os.Open(filepath.Join(netDir, f))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) > 9 && fields[3] == "0A" {
				out[fields[9]] = true
			}
		}
		file.Close()
	}
	return out
}

// socketInodes are the inodes of the sockets pid holds.
func socketInodes(pid int) map[string]bool {
	out := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			out[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return out
}
