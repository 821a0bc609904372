//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// pagesConfig is what pages.mjs reads: where the console is, who signs in
// and the ids of what the test arranged.
type pagesConfig struct {
	Base      string       `json:"base"`
	Owner     pagesAccount `json:"owner"`
	Viewer    pagesAccount `json:"viewer"`
	ClosedURL string       `json:"closedURL"`
	// ClosedPort is a loopback port nobody listens on: the webhook
	// endpoints and the tested proxy point there, so they fail.
	ClosedPort int               `json:"closedPort"`
	IDs        map[string]string `json:"ids"`
}

type pagesAccount struct {
	Name       string `json:"name"`
	Email      string `json:"email"`
	Password   string `json:"password"`
	Invitation string `json:"invitation,omitempty"`
}

// pagesReport is what pages.mjs printed.
type pagesReport struct {
	Screenshots  string        `json:"screenshots"`
	AxeInjection string        `json:"axeInjection"`
	Results      []pagesResult `json:"results"`
}

type pagesResult struct {
	Page        string         `json:"page"`
	As          string         `json:"as"`
	Width       int            `json:"width"`
	URL         string         `json:"url"`
	Status      int            `json:"status"`
	Violations  []axeViolation `json:"violations"`
	ScrollWidth int            `json:"scrollWidth"`
	ClientWidth int            `json:"clientWidth"`
	Overflowing []string       `json:"overflowing"`
	Error       string         `json:"error"`
}

type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  string `json:"target"`
		Impact  string `json:"impact"`
		Summary string `json:"summary"`
	} `json:"nodes"`
}

var invitationToken = regexp.MustCompile(`invitations/accept\?token=([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)`)

// TestConsolePages visits every page of the console with a real browser
// (pages.mjs): signed out, as the team's owner with profiles (one of them
// running, with its live view), snapshots, API keys, webhooks with a failed
// delivery, an invited member and a proxy, and as a viewer. Each page, at
// 1280 and 390 pixels wide, must have no serious or critical axe-core
// violation, and at 390 pixels no horizontal overflow. The screenshots go
// to SCREENSHOTS_DIR when it is set.
func TestConsolePages(t *testing.T) {
	chromium, nodeDir := browserTools(t)
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "axe-core", "axe.min.js")); err != nil {
		missingTool(t, "the console pages test", "npm ci --prefix tests/e2e/node")("axe-core in tests/e2e/node/node_modules: " + err.Error())
	}
	dir, dataDir, tmpDir := browserDirs(t)
	addr := freeAddr(t)
	base := "http://" + addr
	closedAddr := freeAddr(t)
	_, closedPortText, _ := net.SplitHostPort(closedAddr)
	closedPort, err := strconv.Atoi(closedPortText)
	if err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, dir, minimalEnv(
		"HTTP_ADDR="+addr, "DATA_DIR="+dataDir, "TMPDIR="+tmpDir, "LOG_LEVEL=info",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH="+chromium, "ALLOW_PRIVATE_TARGETS=true",
		"WEBHOOK_RETRY_SCHEDULE=0s,0s", "MAIL_TRANSPORT=log",
	), addr)
	stopAtCleanup(t, p, dataDir)

	cfg := pagesConfig{
		Base:       base,
		Owner:      pagesAccount{Name: "Olivia Owner", Email: "owner@example.com", Password: "an owner's long passphrase"},
		Viewer:     pagesAccount{Name: "Victor Viewer", Email: "viewer@example.com", Password: "a viewer's long passphrase"},
		ClosedURL:  "http://" + closedAddr,
		ClosedPort: closedPort,
		IDs:        map[string]string{},
	}
	register := func(a pagesAccount) string {
		var res struct {
			AccessToken string `json:"accessToken"`
		}
		if code, err := post(base, "/api/v1/auth/register", "", map[string]string{"email": a.Email, "password": a.Password, "name": a.Name}, &res); err != nil || code != http.StatusCreated {
			t.Fatalf("register %s: %d %v", a.Email, code, err)
		}
		return res.AccessToken
	}
	token := register(cfg.Owner)
	register(cfg.Viewer)
	create := func(what, path string, body any) string {
		t.Helper()
		var res struct {
			ID string `json:"id"`
		}
		if code, err := post(base, path, token, body, &res); err != nil || code != http.StatusCreated || res.ID == "" {
			t.Fatalf("%s: %d %v\n%s", what, code, err, p.output)
		}
		return res.ID
	}

	// The webhook endpoint comes first, so the profiles' events fail to
	// reach it.
	cfg.IDs["webhook"] = create("webhook", "/v1/webhooks", map[string]any{"url": cfg.ClosedURL + "/hooks/profilesvc", "events": []string{"profile.created"}, "secret": "a signing secret of at least 32 characters"})
	cfg.IDs["apiKey"] = create("API key", "/api/v1/api-keys", map[string]string{"name": "CI runner"})
	cfg.IDs["proxy"] = create("proxy", "/api/v1/proxies", map[string]any{"name": "Office proxy", "type": "http", "host": "127.0.0.1", "port": closedPort, "username": "office"})
	cfg.IDs["alpha"] = create("profile Alpha", "/api/v1/profiles", map[string]any{
		"name": "Alpha shop account", "templateId": "tpl_chrome_win_us", "tags": []string{"work", "shop"},
		"notes": "Signed in to the shop.\nKeep the cart.",
	})
	cfg.IDs["beta"] = create("profile Beta", "/api/v1/profiles", map[string]any{
		"name": "Beta research", "templateId": "tpl_chrome_win_us", "tags": []string{"research"},
		"proxy": map[string]string{"id": cfg.IDs["proxy"]},
	})
	cfg.IDs["runner"] = create("profile Runner", "/api/v1/profiles", map[string]any{"name": "Runner", "templateId": "tpl_chrome_win_us"})

	// Alpha gets browser data (a launch and a release), a snapshot, and a
	// change after it, so its restore page has differences to show.
	alpha := &journeySession{base: base, token: token, profile: cfg.IDs["alpha"], output: p.output}
	alpha.launch(t)
	alpha.release(t)
	cfg.IDs["snapshot"] = create("snapshot", "/api/v1/time-machine/"+cfg.IDs["alpha"]+"/snapshots", map[string]string{"label": "Before the sale"})
	if code := pagesCall(t, http.MethodPatch, base+"/api/v1/profiles/"+cfg.IDs["alpha"], token, map[string]any{
		"tags": []string{"work", "shop", "sale"}, "notes": "Signed in to the shop.\nThe cart is empty now.",
	}); code != http.StatusOK {
		t.Fatalf("update Alpha: %d", code)
	}

	// Two invitations: the viewer accepts theirs in the browser, the
	// other stays pending.
	cfg.IDs["viewerMember"] = create("invite the viewer", "/api/v1/teams/invite", map[string]string{"email": cfg.Viewer.Email, "role": "viewer"})
	cfg.IDs["pendingMember"] = create("invite a member", "/api/v1/teams/invite", map[string]string{"email": "pending.member@example.com", "role": "member"})
	poll.Check(t, 20*time.Second, "the viewer's invitation in the mail log", func() error {
		for _, line := range strings.Split(p.output.String(), "\n") {
			if strings.Contains(line, cfg.Viewer.Email) {
				if m := invitationToken.FindStringSubmatch(line); m != nil {
					cfg.Viewer.Invitation = m[1]
					return nil
				}
			}
		}
		return fmt.Errorf("no invitation mailed to %s yet", cfg.Viewer.Email)
	})

	poll.Check(t, 60*time.Second, "a failed webhook delivery", func() error {
		var failed []json.RawMessage
		if code := getData(t, base+"/v1/webhooks/"+cfg.IDs["webhook"]+"/deliveries?status=failed", token, &failed); code != http.StatusOK {
			return fmt.Errorf("deliveries: %d", code)
		}
		if len(failed) == 0 {
			return fmt.Errorf("no failed delivery yet")
		}
		return nil
	})

	// The browser launches the runner; it is released before the service
	// stops.
	t.Cleanup(func() {
		pagesCall(t, http.MethodPost, base+"/api/v1/profiles/"+cfg.IDs["runner"]+"/release", token, map[string]any{})
	})

	raw, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(t.TempDir(), "pages.json")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("SCREENSHOTS_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "pages.mjs", cfgPath)
	cmd.Dir = nodeDir
	cmd.Env = append(os.Environ(), "CHROMIUM_PATH="+chromium, "SCREENSHOTS_DIR="+shots)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node pages.mjs: %v\n%s\n%s", err, stderr.String(), p.output)
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	var report pagesReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &report); err != nil {
		t.Fatalf("node pages.mjs printed %q: %v", stdout, err)
	}
	t.Logf("%d page views audited (axe injected by %s); screenshots in %s", len(report.Results), report.AxeInjection, report.Screenshots)

	var failures, overflows, minor, broken []string
	seen := map[string]map[int]bool{}
	for _, r := range report.Results {
		where := fmt.Sprintf("%s (%s) at %d px", r.Page, r.As, r.Width)
		if r.Error != "" {
			broken = append(broken, fmt.Sprintf("%s, %s: %s", where, r.URL, r.Error))
			continue
		}
		if seen[r.Page] == nil {
			seen[r.Page] = map[int]bool{}
		}
		seen[r.Page][r.Width] = true
		for _, v := range r.Violations {
			for _, n := range v.Nodes {
				line := fmt.Sprintf("%s: %s (%s) at %s: %s", where, v.ID, v.Impact, n.Target, v.Help)
				if v.Impact == "serious" || v.Impact == "critical" {
					failures = append(failures, line)
				} else {
					minor = append(minor, line)
				}
			}
		}
		if r.Width == 390 && r.ScrollWidth > r.ClientWidth {
			overflows = append(overflows, fmt.Sprintf("%s: scrollWidth %d > clientWidth %d; beyond the edge: %s", where, r.ScrollWidth, r.ClientWidth, strings.Join(r.Overflowing, ", ")))
		}
	}
	for page, widths := range seen {
		if !widths[1280] || !widths[390] {
			broken = append(broken, fmt.Sprintf("%s was audited at %v only", page, widths))
		}
	}
	if len(seen) < 40 {
		broken = append(broken, fmt.Sprintf("only %d pages were audited", len(seen)))
	}
	for _, list := range [][]string{failures, overflows, minor, broken} {
		sort.Strings(list)
	}
	if len(minor) > 0 {
		t.Logf("moderate and minor axe findings (not failures):\n%s", strings.Join(minor, "\n"))
	}
	if len(broken) > 0 {
		t.Errorf("pages that could not be audited:\n%s", strings.Join(broken, "\n"))
	}
	if len(failures) > 0 {
		t.Errorf("%d serious or critical axe-core violations:\n%s", len(failures), strings.Join(failures, "\n"))
	}
	if len(overflows) > 0 {
		t.Errorf("pages wider than a 390 px screen:\n%s", strings.Join(overflows, "\n"))
	}
}

// pagesCall sends a JSON request with the bearer token and returns the
// answer's status.
func pagesCall(t *testing.T, method, url, token string, body any) int {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(method, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
