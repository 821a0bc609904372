//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// walkthroughHeading opens the README section that TestReadmeWalkthrough
// runs.
const walkthroughHeading = "## Walkthrough: from `make run` to a profile driven by Playwright"

// What the walkthrough's commands name, which the test checks the service
// for afterwards.
const (
	walkthroughEmail    = "grace@example.com"
	walkthroughPassword = "a long walkthrough passphrase"
	walkthroughTemplate = "tpl_chrome_mac_fr"
	walkthroughSnapshot = "after the first visit"
	walkthroughSite     = "walkthrough.test"
)

// walkthroughTimeout bounds the whole walkthrough, building its example
// programs included.
const walkthroughTimeout = 5 * time.Minute

// walkthrough is the README section, split as a user follows it.
type walkthrough struct {
	// serviceEnv are the variables the section starts `make run` with.
	serviceEnv []string
	// script is the steps' commands, in order, each step announced.
	script string
}

// clientView is the JSON line drive.mjs and the chromedp example print.
type clientView struct {
	Client    string `json:"client"`
	Title     string `json:"title"`
	UserAgent string `json:"userAgent"`
	Language  string `json:"language"`
	Timezone  string `json:"timezone"`
	Cookies   string `json:"cookies"`
	Visits    string `json:"visits"`
}

// receivedEvent is what the tests read of a webhook event: a JSON line of
// the example receiver (an event whose signature it verified), or a
// delivery's body.
type receivedEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		Reason  string `json:"reason"`
		Profile struct {
			ID string `json:"id"`
		} `json:"profile"`
	} `json:"data"`
}

// TestReadmeWalkthrough runs the README's walkthrough as a user pastes it:
// the service is a fresh process started as the section starts `make run`,
// and the steps' shell blocks, taken from README.md, run in order with bash
// (stopping at the first command that fails), with only the service's
// address and two free ports set through the variables the section
// defaults. Then the output and the service must show that every step did
// its work: the page came through the example proxy with the profile's
// fingerprint, Playwright's cookie and localStorage survived a release, a
// snapshot and a restore into chromedp's session, the receiver verified
// the launch and the release, and refused a forged delivery.
func TestReadmeWalkthrough(t *testing.T) {
	chromium := walkthroughTools(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	w := readWalkthrough(t, filepath.Join(root, "README.md"))

	dir, dataDir, tmpDir := browserDirs(t)
	addr := freeAddr(t)
	base := "http://" + addr
	p := startProcess(t, dir, minimalEnv(append(w.serviceEnv,
		"HTTP_ADDR="+addr, "DATA_DIR="+dataDir, "TMPDIR="+tmpDir, "LOG_LEVEL=warn",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH="+chromium,
	)...), addr)
	stopAtCleanup(t, p, dataDir)

	out := runWalkthrough(t, root, w.script, append(os.Environ(),
		"BASE="+base, "PROXY_ADDR="+freeAddr(t), "RECEIVER_ADDR="+freeAddr(t), "TMPDIR="+tmpDir,
	))

	// What the walkthrough printed.
	views := map[string]clientView{}
	var events []receivedEvent
	for line := range strings.Lines(out) {
		var v clientView
		if json.Unmarshal([]byte(line), &v) == nil && v.Client != "" {
			views[v.Client] = v
		}
		var ev receivedEvent
		if json.Unmarshal([]byte(line), &ev) == nil && strings.HasPrefix(ev.ID, "evt_") {
			events = append(events, ev)
		}
	}

	// The service's state, read as the walkthrough's user.
	var signIn struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(base, "/api/v1/auth/login", "", map[string]string{"email": walkthroughEmail, "password": walkthroughPassword}, &signIn); err != nil || code != http.StatusOK {
		t.Fatalf("login as the walkthrough's user: %d %v", code, err)
	}
	token := signIn.AccessToken
	var template struct {
		UserAgent string `json:"userAgent"`
		Locale    string `json:"locale"`
		Timezone  string `json:"timezone"`
	}
	if code := getData(t, base+"/api/v1/templates/"+walkthroughTemplate, token, &template); code != http.StatusOK {
		t.Fatalf("template %s: %d", walkthroughTemplate, code)
	}
	var profiles []struct {
		ID         string          `json:"id"`
		TemplateID string          `json:"templateId"`
		Status     string          `json:"status"`
		Session    json.RawMessage `json:"session"`
		Data       json.RawMessage `json:"data"`
		Proxy      *struct {
			Type string `json:"type"`
			Host string `json:"host"`
		} `json:"proxy"`
	}
	if code := getData(t, base+"/api/v1/profiles", token, &profiles); code != http.StatusOK || len(profiles) != 1 {
		t.Fatalf("profiles: %d, %d of them, want the walkthrough's one", code, len(profiles))
	}
	prof := profiles[0]
	if prof.TemplateID != walkthroughTemplate || prof.Status != "idle" || !isNull(prof.Session) || isNull(prof.Data) ||
		prof.Proxy == nil || prof.Proxy.Type != "socks5" || prof.Proxy.Host != "127.0.0.1" {
		t.Errorf("the profile is %+v (proxy %+v), want %s, released with data, behind the local socks5 proxy", prof, prof.Proxy, walkthroughTemplate)
	}

	t.Run("playwright", func(t *testing.T) {
		// The page is served only through the proxy, under a name only
		// the proxy resolves, and sees the profile's fingerprint.
		v, ok := views["playwright"]
		want := clientView{Client: "playwright", Title: walkthroughSite, UserAgent: template.UserAgent, Language: template.Locale, Timezone: template.Timezone}
		if !ok || v != want {
			t.Errorf("drive.mjs printed %+v, want %+v", v, want)
		}
		if !strings.Contains(out, "carrying a connection to "+walkthroughSite+":80 for walkthrough") {
			t.Error("the proxy's log shows no connection to the site carried for the walkthrough's user")
		}
	})

	t.Run("chromedp after the restore", func(t *testing.T) {
		// The second browser starts from the restored snapshot: the
		// cookie and localStorage entry Playwright left, cleared and
		// restored since.
		v, ok := views["chromedp"]
		want := clientView{Client: "chromedp", Title: walkthroughSite, UserAgent: template.UserAgent, Language: template.Locale, Timezone: template.Timezone,
			Cookies: "playwright=visited", Visits: "playwright"}
		if !ok || v != want {
			t.Errorf("the chromedp example printed %+v, want %+v", v, want)
		}
		// Its release stored both clients' cookies as the profile's.
		var cookies []struct {
			Name   string `json:"name"`
			Value  string `json:"value"`
			Domain string `json:"domain"`
		}
		if code := getData(t, base+"/api/v1/profiles/"+prof.ID+"/cookies", token, &cookies); code != http.StatusOK {
			t.Fatalf("cookies: %d", code)
		}
		got := map[string]string{}
		for _, c := range cookies {
			if c.Domain == walkthroughSite {
				got[c.Name] = c.Value
			}
		}
		if len(got) != 2 || got["playwright"] != "visited" || got["chromedp"] != "visited" {
			t.Errorf("the profile's cookies are %+v, want playwright and chromedp on %s", cookies, walkthroughSite)
		}
	})

	t.Run("snapshots", func(t *testing.T) {
		var snaps []struct {
			Label string `json:"label"`
			Kind  string `json:"kind"`
		}
		if code := getData(t, base+"/api/v1/time-machine/"+prof.ID+"/snapshots", token, &snaps); code != http.StatusOK {
			t.Fatalf("snapshots: %d", code)
		}
		kinds := map[string]string{}
		for _, s := range snaps {
			kinds[s.Kind] = s.Label
		}
		if len(snaps) != 2 || kinds["manual"] != walkthroughSnapshot || kinds["auto"] == "" {
			t.Errorf("snapshots %+v, want the walkthrough's and the one its restore took", snaps)
		}
	})

	t.Run("webhooks", func(t *testing.T) {
		// The receiver printed the events it verified, each once.
		seen := map[string]bool{}
		verified := map[string]string{} // event type of the profile -> event id
		sample := false
		for _, ev := range events {
			if seen[ev.ID] {
				t.Errorf("the receiver printed %s twice", ev.ID)
			}
			seen[ev.ID] = true
			switch {
			case ev.Type == "profile.updated" && ev.Data.Profile.ID == "prf_sample":
				sample = true
			case ev.Data.Profile.ID == prof.ID && (ev.Type == "profile.launched" || (ev.Type == "profile.stopped" && ev.Data.Reason == "released")):
				verified[ev.Type] = ev.ID
			}
		}
		if !sample || verified["profile.launched"] == "" || verified["profile.stopped"] == "" {
			t.Fatalf("the receiver verified %+v, want the sample event and the profile's launch and release", events)
		}
		// The service counts as delivered what the receiver answered 200.
		var endpoints []struct {
			ID string `json:"id"`
		}
		if code := getData(t, base+"/v1/webhooks", token, &endpoints); code != http.StatusOK || len(endpoints) != 1 {
			t.Fatalf("webhook endpoints: %d, %d of them, want the walkthrough's one", code, len(endpoints))
		}
		// The receiver prints an event before it answers, and the service
		// records the answer after: poll.
		var deliveries []struct {
			EventID string `json:"eventId"`
		}
		poll.Check(t, 30*time.Second, "the verified launch and release events among the succeeded deliveries", func() error {
			if code := getData(t, base+"/v1/webhooks/"+endpoints[0].ID+"/deliveries?status=succeeded", token, &deliveries); code != http.StatusOK {
				t.Fatalf("deliveries: %d", code)
			}
			succeeded := map[string]bool{}
			for _, d := range deliveries {
				succeeded[d.EventID] = true
			}
			if succeeded[verified["profile.launched"]] && succeeded[verified["profile.stopped"]] {
				return nil
			}
			return fmt.Errorf("verified %v, succeeded %+v", verified, deliveries)
		})
		if !strings.Contains(out, "a forged delivery: 401") {
			t.Error("the receiver did not answer the forged delivery 401")
		}
	})
}

// walkthroughTools finds what the walkthrough needs, or skips the test
// saying what is missing; with CI set, a missing piece fails it instead.
// It returns Chromium's path.
func walkthroughTools(t *testing.T) string {
	t.Helper()
	missing := missingTool(t, "the README walkthrough", "apt-get install chromium bubblewrap curl jq; npm ci --no-audit --no-fund --prefix tests/examples/playwright")
	chromium := os.Getenv("CHROMIUM_PATH")
	if chromium == "" {
		chromium = "chromium"
	}
	path, err := exec.LookPath(chromium)
	if err != nil {
		missing("Chromium: " + err.Error())
	}
	for _, tool := range []string{"bwrap", "bash", "curl", "jq", "node", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(tool + ": " + err.Error())
		}
	}
	if _, err := os.Stat(filepath.Join("..", "examples", "playwright", "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core in tests/examples/playwright/node_modules: " + err.Error())
	}
	return path
}

// readWalkthrough takes the walkthrough section apart: its shell blocks
// before the first step are what a user runs first, once (installing, not
// run here) and in another terminal (`make run`, whose variables the
// service gets); the shell blocks of its "### " steps are the script.
func readWalkthrough(t *testing.T, readme string) walkthrough {
	t.Helper()
	raw, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(raw), "\n"+walkthroughHeading+"\n")
	if !found {
		t.Fatalf("README.md has no section %q", walkthroughHeading)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var w walkthrough
	var script strings.Builder
	step, announced, block, inBlock, runs := "", "", []string(nil), false, false
	for line := range strings.Lines(section) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case inBlock && line == "```":
			inBlock = false
			text := strings.Join(block, "\n")
			switch fields := strings.Fields(text); {
			case step != "":
				if step != announced {
					script.WriteString("printf '\\n== %s\\n' " + shellQuote(step) + "\n")
					announced = step
				}
				script.WriteString(text + "\n")
			case len(block) == 1 && strings.HasSuffix(text, " make run"):
				if runs {
					t.Fatal("the walkthrough starts `make run` twice")
				}
				runs = true
				w.serviceEnv = slices.Clone(fields[:len(fields)-2])
			}
		case inBlock:
			block = append(block, line)
		case line == "```sh":
			inBlock, block = true, nil
		case strings.HasPrefix(line, "### "):
			step = strings.TrimPrefix(line, "### ")
		}
	}
	if !runs || script.Len() == 0 {
		t.Fatalf("the walkthrough has no `make run` block before its steps, or no steps")
	}
	for _, v := range w.serviceEnv {
		if !strings.Contains(v, "=") {
			t.Fatalf("the walkthrough starts the service with %q before `make run`, not a variable", v)
		}
	}
	if !strings.Contains(strings.Join(w.serviceEnv, " "), "ALLOW_PRIVATE_TARGETS=true") {
		t.Fatalf("the walkthrough starts the service with %q, without ALLOW_PRIVATE_TARGETS=true, which its local proxy and receiver need", w.serviceEnv)
	}
	for _, s := range []string{walkthroughEmail, walkthroughPassword, walkthroughTemplate, walkthroughSnapshot, walkthroughSite} {
		if !strings.Contains(script.String(), s) {
			t.Fatalf("the walkthrough's steps do not mention %q, which the test checks for", s)
		}
	}
	w.script = script.String()
	return w
}

// shellQuote is s in single quotes, for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runWalkthrough runs script with bash in dir, stopping at the first
// command that fails, and returns what it printed. The programs the script
// leaves running in the background end with it.
func runWalkthrough(t *testing.T, dir, script string, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), walkthroughTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-u", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, which its background jobs share: ending the
	// group ends them all, also when a step failed before it stopped them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what a failed step left running
	t.Logf("the walkthrough ran in %s:\n%s", time.Since(start).Round(time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("the walkthrough failed: %v (its output is above)", err)
	}
	return out.String()
}
