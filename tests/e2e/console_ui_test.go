//go:build linux

package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// consoleJourneyTimeout bounds one run of console.mjs: a journey waits at
// most 60 s for any one thing, and does a few dozen things.
const consoleJourneyTimeout = 5 * time.Minute

// consolePassword is every journey account's password.
const consolePassword = "a console journey passphrase"

// TestConsoleUI uses the dashboard in a real browser, driven by Playwright
// (tests/e2e/node/console.mjs) the way a person uses it, on SQLite and,
// when TEST_DATABASE_URL is set, on PostgreSQL:
//
//   - live: sign up, create a profile from a template (its fingerprint is
//     the API's), launch it (the cdpUrl and the three snippets, shown once),
//     click through the live view on the page an automation client opened
//     (the client sees the click, the frames show it), release it, and a
//     list left open in another tab comes to say idle by itself;
//   - webhooks: an endpoint made in Settings whose receiver fails, the
//     failed delivery listed with the schedule's attempts, and Retry once
//     the receiver answers, which delivers the event the page showed;
//   - viewer: an invitation as viewer sent from the Team page and accepted
//     through the mailed link, a team switch, no action offered that a
//     viewer may not take, and forged posts refused, creating nothing;
//   - keeper: a forgotten password reset through the mailed link (the old
//     one refused in words, the new one signing in), an API key shown once
//     and copied, which works on the API until it is revoked, a proxy on
//     loopback tested and added by its short form and checked (the exit IP
//     the echo service reported), and a profile's archive, cookies and
//     notes kept and brought back by the time machine.
//
// No page logs a JavaScript error or a Content-Security-Policy violation.
func TestConsoleUI(t *testing.T) {
	chromium, nodeDir := browserTools(t)
	t.Run("sqlite", func(t *testing.T) {
		testConsoleUI(t, chromium, nodeDir, "")
	})
	t.Run("postgres", func(t *testing.T) {
		testConsoleUI(t, chromium, nodeDir, testenv.PostgresURL(t))
	})
}

func testConsoleUI(t *testing.T, chromium, nodeDir, databaseURL string) {
	desk := newConsoleDesk(t)
	dir, dataDir, tmpDir := browserDirs(t)
	addr := freeAddr(t)
	base := "http://" + addr
	desk.base.Store(&base)
	// The proxy checks go through a SOCKS5 proxy on loopback to an IP echo
	// service on loopback: no probe leaves the machine.
	socks := conformance.StartSOCKS5Proxy(t, consoleProxyUser, consoleProxyPassword)
	echo := conformance.StartIPEcho(t, desk.echo(conformance.IPEchoHandler("PT", "Lisbon", "Europe/Lisbon")))
	env := []string{
		"HTTP_ADDR=" + addr, "DATA_DIR=" + dataDir, "TMPDIR=" + tmpDir, "LOG_LEVEL=info",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH=" + chromium, "ALLOW_PRIVATE_TARGETS=true",
		// Two attempts, one second apart: a failing delivery fails soon.
		"WEBHOOK_RETRY_SCHEDULE=0s,1s",
		"PROXY_CHECK_URL=" + echo, "PROXY_CHECK_TIMEOUT=10s",
	}
	if databaseURL != "" {
		env = append(env, "DATABASE_URL="+databaseURL)
	}
	p := startProcess(t, dir, minimalEnv(env...), addr)
	stopAtCleanup(t, p, dataDir)
	desk.output.Store(p.output)
	c := consoleRun{nodeDir: nodeDir, chromium: chromium, base: base, output: p.output}

	t.Run("live", c.live)
	t.Run("webhooks", func(t *testing.T) { c.webhooks(t, desk) })
	t.Run("viewer", func(t *testing.T) { c.viewer(t, desk) })
	t.Run("keeper", func(t *testing.T) { c.keeper(t, desk, socks) })
}

// consoleRun is one service the journeys use.
type consoleRun struct {
	nodeDir, chromium, base string
	output                  *testenv.Output
}

// journey runs console.mjs's journey with args and decodes what it saw
// into out; it fails the test when a page logged an error.
func (c consoleRun) journey(t *testing.T, name string, args map[string]any, out any) {
	t.Helper()
	args["base"] = c.base
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), consoleJourneyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "console.mjs", name, string(raw))
	cmd.Dir = c.nodeDir
	cmd.Env = append(os.Environ(), "CHROMIUM_PATH="+c.chromium)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node console.mjs %s after %s: %v\n%s\nservice output:\n%s", name, time.Since(start).Round(time.Second), err, stderr.String(), tail(c.output.String(), 40))
	}
	t.Logf("journey %s took %s", name, time.Since(start).Round(100*time.Millisecond))
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := []byte(lines[len(lines)-1])
	var seen struct {
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal(last, &seen); err != nil {
		t.Fatalf("node console.mjs %s printed %q: %v", name, stdout, err)
	}
	for _, p := range seen.Problems {
		t.Errorf("the person's browser logged: %s", p)
	}
	if err := json.Unmarshal(last, out); err != nil {
		t.Fatalf("node console.mjs %s printed %q: %v", name, stdout, err)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// signIn signs email in through the API and returns its access token.
func (c consoleRun) signIn(t *testing.T, email string) string {
	t.Helper()
	token, code, err := c.signInWith(email, consolePassword)
	if err != nil || code != http.StatusOK {
		t.Fatalf("API sign-in of %s: %d %v", email, code, err)
	}
	return token
}

// signInWith signs email in through the API with password, answering the
// access token and the status.
func (c consoleRun) signInWith(email, password string) (string, int, error) {
	var s struct {
		AccessToken string `json:"accessToken"`
	}
	code, err := post(c.base, "/api/v1/auth/login", "", map[string]string{"email": email, "password": password}, &s)
	if code != 0 && code != http.StatusOK {
		// A refusal carries no data to decode.
		return "", code, nil
	}
	return s.AccessToken, code, err
}

// apiProfile is a profile as the API answers it.
type apiProfile struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	TemplateID  string `json:"templateId"`
	Status      string `json:"status"`
	Fingerprint struct {
		UserAgent string `json:"userAgent"`
		Platform  string `json:"platform"`
		Locale    string `json:"locale"`
		Timezone  string `json:"timezone"`
		Screen    struct {
			Width  int `json:"width"`
			Height int `json:"height"`
		} `json:"screen"`
	} `json:"fingerprint"`
}

func (c consoleRun) profiles(t *testing.T, token string) []apiProfile {
	t.Helper()
	var list []apiProfile
	if code, err := getJSON(c.base, "/api/v1/profiles", token, &list); err != nil || code != http.StatusOK {
		t.Fatalf("API profile list: %d %v", code, err)
	}
	return list
}

type liveSeen struct {
	Welcome, EmptyList, ProfileID, Created, Heading, StatusBefore string
	Fingerprint                                                   map[string]string
	CDPURL                                                        string `json:"cdpUrl"`
	Snippets                                                      map[string]string
	LaunchStatus, ListStatusRunning                               string
	ProfilePageCdpFields                                          int
	ProfilePageText                                               string
	Before, After                                                 struct{ R, G, B int }
	FramesBeforeClick, FramesAfterClick                           int
	LiveState                                                     string
	AutomationSees                                                struct{ Clicked, Label string }
	SrcChanged                                                    bool
	Released, ProfileStatusAfter                                  string
	LaunchAgain                                                   int
	ListStatusAfter                                               string
	ListNotReloaded                                               bool
}

func (c consoleRun) live(t *testing.T) {
	const email, name = "live@example.com", "Watched"
	var s liveSeen
	c.journey(t, "live", map[string]any{
		"owner":    map[string]string{"name": "Liv", "email": email, "password": consolePassword},
		"profile":  name,
		"template": "Chrome on macOS (France)",
	}, &s)

	if !strings.HasPrefix(s.Welcome, "Welcome, Liv.") || s.EmptyList == "" {
		t.Errorf("after sign-up the page says %q and %q", s.Welcome, s.EmptyList)
	}
	token := c.signIn(t, email)
	var prof apiProfile
	if code, err := getJSON(c.base, "/api/v1/profiles/"+s.ProfileID, token, &prof); err != nil || code != http.StatusOK {
		t.Fatalf("API read of the profile %q the page created: %d %v", s.ProfileID, code, err)
	}
	if prof.Name != name || prof.TemplateID != "tpl_chrome_mac_fr" || s.Heading != name || s.Created != "Profile "+name+" created." {
		t.Errorf("the page created %+v and shows heading %q, flash %q", prof, s.Heading, s.Created)
	}
	fp := prof.Fingerprint
	for term, want := range map[string]string{
		"User agent": fp.UserAgent, "Platform": fp.Platform, "Locale": fp.Locale, "Time zone": fp.Timezone,
	} {
		if got := s.Fingerprint[term]; got != want || want == "" {
			t.Errorf("the profile page shows %s %q, the API %q", term, got, want)
		}
	}
	if screen := fmt.Sprintf("%d×%d,", fp.Screen.Width, fp.Screen.Height); !strings.HasPrefix(s.Fingerprint["Screen"], screen) {
		t.Errorf("the profile page shows screen %q, the API %s", s.Fingerprint["Screen"], screen)
	}
	if s.StatusBefore != "idle" || s.LaunchStatus != "running" || s.ListStatusRunning != "running" {
		t.Errorf("statuses before, at and after launch: %q %q %q", s.StatusBefore, s.LaunchStatus, s.ListStatusRunning)
	}

	// The cdpUrl with its token, once, and in every snippet.
	u, err := url.Parse(s.CDPURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.RawQuery == "" {
		t.Errorf("the launch page's cdpUrl %q is not a ws URL with its token", s.CDPURL)
	}
	for _, lib := range []string{"playwright", "puppeteer", "chromedp"} {
		if !strings.Contains(s.Snippets[lib], `"`+s.CDPURL+`"`) {
			t.Errorf("the %s snippet does not hold the cdpUrl: %q", lib, s.Snippets[lib])
		}
	}
	if s.ProfilePageCdpFields != 0 || (u != nil && u.RawQuery != "" && strings.Contains(s.ProfilePageText, u.RawQuery)) {
		t.Errorf("the profile page shows the token again: %d cdpUrl fields, text %q", s.ProfilePageCdpFields, s.ProfilePageText)
	}

	// The live view: the click reached the page and the frames showed it.
	if s.AutomationSees.Clicked != "yes" || s.AutomationSees.Label != "clicked" {
		t.Errorf("the automation client sees %+v after the click in the live view", s.AutomationSees)
	}
	if s.FramesBeforeClick < 1 || s.FramesAfterClick <= s.FramesBeforeClick || !s.SrcChanged || s.LiveState != "Live." {
		t.Errorf("frames %d before and %d after the click, picture changed %v, state %q", s.FramesBeforeClick, s.FramesAfterClick, s.SrcChanged, s.LiveState)
	}
	t.Logf("the button in the live view: rgb%v before the click, rgb%v after", s.Before, s.After)

	// Released; the list left open says so by itself.
	if s.Released != "Browser released; its data are saved." || s.ProfileStatusAfter != "idle" || s.LaunchAgain != 1 {
		t.Errorf("after Release the page says %q, status %q, %d Launch buttons", s.Released, s.ProfileStatusAfter, s.LaunchAgain)
	}
	if s.ListStatusAfter != "idle" || !s.ListNotReloaded {
		t.Errorf("the list tab shows %q (not reloaded: %v)", s.ListStatusAfter, s.ListNotReloaded)
	}
	if code, err := getJSON(c.base, "/api/v1/profiles/"+s.ProfileID, token, &prof); err != nil || code != http.StatusOK || prof.Status != "idle" {
		t.Errorf("the API reads the released profile as %q: %d %v", prof.Status, code, err)
	}
}

type webhooksSeen struct {
	NoEndpoints, Secret string
	Endpoint            map[string]string
	ProfileID           string
	Hint                string
	Delivery            map[string]string
	Attempts            [][]string
	Retried             string
	FailedAfterRetry    int
}

func (c consoleRun) webhooks(t *testing.T, desk *consoleDesk) {
	const email = "hooks@example.com"
	var s webhooksSeen
	c.journey(t, "webhooks", map[string]any{
		"owner":    map[string]string{"name": "Hooks", "email": email, "password": consolePassword},
		"profile":  "Hooked",
		"receiver": desk.srv.URL + "/hook",
		"accept":   desk.srv.URL + "/hook/accept",
	}, &s)

	if s.Endpoint["URL"] != desk.srv.URL+"/hook" || s.Endpoint["Events"] != "profile.created" || !strings.HasPrefix(s.Secret, "whsec_") {
		t.Errorf("the created endpoint shows %v and secret %q", s.Endpoint, s.Secret)
	}
	eventID := s.Delivery["Event id"]
	if eventID == "" || s.Delivery["Event type"] != "profile.created" || s.Delivery["Endpoint"] != desk.srv.URL+"/hook" {
		t.Fatalf("the failed delivery shows %v", s.Delivery)
	}
	// WEBHOOK_RETRY_SCHEDULE=0s,1s: two attempts, both answered 500.
	if len(s.Attempts) != 2 {
		t.Errorf("the failed delivery lists %d attempts, want 2: %v", len(s.Attempts), s.Attempts)
	}
	for i, a := range s.Attempts {
		// #, time, status, what the receiver said (its answer as one
		// line), how long it took.
		if len(a) != 5 || a[0] != fmt.Sprint(i+1) || !strings.HasPrefix(a[2], "HTTP 500") || a[3] != "desk closed: back at nine" {
			t.Errorf("attempt row %d reads %q", i+1, a)
		}
	}
	if !strings.Contains(s.Hint, "its 2 attempts") {
		t.Errorf("the failed deliveries page says %q; the schedule has 2 attempts", s.Hint)
	}
	if !strings.Contains(s.Retried, eventID) || s.FailedAfterRetry != 0 {
		t.Errorf("after Retry the page says %q and lists the delivery %d times", s.Retried, s.FailedAfterRetry)
	}

	// The receiver got the event the page showed: refused twice, then
	// accepted, signed with the secret the page showed.
	var got []hookRequest
	poll.Check(t, 60*time.Second, "the retried delivery of "+eventID+" to reach the receiver", func() error {
		got = desk.requestsFor(eventID)
		if slices.ContainsFunc(got, func(r hookRequest) bool { return r.Answered == http.StatusOK }) {
			return nil
		}
		return fmt.Errorf("the receiver saw %d requests for it: %+v", len(got), got)
	})
	if len(got) != 3 || got[0].Answered != 500 || got[1].Answered != 500 || got[2].Answered != 200 {
		t.Errorf("the receiver answered the event's requests %+v, want 500, 500, 200", got)
	}
	for _, r := range got {
		if r.Type != "profile.created" || r.ProfileID != s.ProfileID {
			t.Errorf("the receiver got %+v, want profile.created of %s", r, s.ProfileID)
		}
		m := hmac.New(sha256.New, []byte(s.Secret))
		m.Write(r.Body)
		if want := hex.EncodeToString(m.Sum(nil)); r.Signature != want {
			t.Errorf("a request of event %s is signed %q, want %q with the secret the page showed", eventID, r.Signature, want)
		}
	}

	// The API sees it delivered.
	token := c.signIn(t, email)
	var deliveries []struct {
		EventID string `json:"eventId"`
		Status  string `json:"status"`
	}
	poll.Check(t, 60*time.Second, "the API to read the delivery as succeeded", func() error {
		code, err := getJSON(c.base, "/v1/webhooks/"+s.Endpoint["Id"]+"/deliveries", token, &deliveries)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("%d %v", code, err)
		}
		for _, d := range deliveries {
			if d.EventID == eventID && d.Status == "succeeded" {
				return nil
			}
		}
		return fmt.Errorf("deliveries %+v", deliveries)
	})
}

type viewerSeen struct {
	OwnerTeam, ProfileID, Invited, MemberRow, Link string
	TokenPrefilled                                 bool
	Joined                                         string
	TeamOptions                                    []string
	SwitchedOwn, SwitchedShared                    string
	OwnList, SharedList                            map[string]int
	ProfileButtons                                 map[string]int
	Forged                                         map[string]struct {
		Status  int
		Heading string
	}
}

func (c consoleRun) viewer(t *testing.T, desk *consoleDesk) {
	const ownerEmail, viewerEmail, shared = "owner@example.com", "viewer@example.com", "Shared"
	var s viewerSeen
	c.journey(t, "viewer", map[string]any{
		"owner":   map[string]string{"name": "Olga", "email": ownerEmail, "password": consolePassword},
		"viewer":  map[string]string{"name": "Vic", "email": viewerEmail, "password": consolePassword},
		"profile": shared,
		"mail":    desk.srv.URL + "/mail?" + url.Values{"to": {viewerEmail}}.Encode(),
	}, &s)

	ownerTeam, _, _ := strings.Cut(s.OwnerTeam, " · ")
	if s.Invited != "Invitation sent to "+viewerEmail+" as viewer. They join once they accept the link in the mail." ||
		!strings.Contains(s.MemberRow, "viewer invited") {
		t.Errorf("after the invitation the page says %q, and the member row reads %q", s.Invited, s.MemberRow)
	}
	if !strings.HasPrefix(s.Link, c.base+"/app/invitations/accept?token=") || !s.TokenPrefilled {
		t.Errorf("the mailed link %q (token prefilled on the page: %v)", s.Link, s.TokenPrefilled)
	}
	if s.Joined != "You joined "+ownerTeam+" as viewer." {
		t.Errorf("after accepting the page says %q, want it to name %q", s.Joined, ownerTeam)
	}
	if len(s.TeamOptions) != 2 || !slices.Contains(s.TeamOptions, ownerTeam+" (viewer)") {
		t.Errorf("the team switch offers %q", s.TeamOptions)
	}
	if !strings.HasPrefix(s.SwitchedOwn, "You are now working in ") || s.OwnList["profileLinks"] != 0 || s.OwnList["newProfile"] != 1 {
		t.Errorf("in the viewer's own team the page says %q and shows %v", s.SwitchedOwn, s.OwnList)
	}
	if s.SwitchedShared != "You are now working in "+ownerTeam+"." || s.SharedList["profileLinks"] != 1 ||
		s.SharedList["newProfile"] != 0 || s.SharedList["createFirst"] != 0 {
		t.Errorf("in the owner's team the page says %q and shows %v", s.SwitchedShared, s.SharedList)
	}
	for name, n := range s.ProfileButtons {
		if n != 0 {
			t.Errorf("the viewer is offered %d %s controls on the profile page", n, name)
		}
	}
	if len(s.ProfileButtons) != 4 {
		t.Errorf("profile page controls read: %v", s.ProfileButtons)
	}
	for _, action := range []string{"create", "launch", "edit", "remove"} {
		if f, ok := s.Forged[action]; !ok || f.Status != http.StatusForbidden || f.Heading != "Not allowed" {
			t.Errorf("the viewer's forged %s post was answered %+v, want 403 Not allowed", action, f)
		}
	}

	// Nothing changed: the owner's team holds the one profile, idle and
	// as it was created.
	list := c.profiles(t, c.signIn(t, ownerEmail))
	if len(list) != 1 || list[0].ID != s.ProfileID || list[0].Name != shared || list[0].Status != "idle" {
		t.Errorf("after the viewer's forged posts the owner's team holds %+v, want only %s (%s), idle", list, shared, s.ProfileID)
	}
	if t.Failed() {
		t.Logf("mail to the viewer: %s", desk.mailTo(viewerEmail))
	}
}

// The keeper journey's proxy account, and its archive's files and cookies.
const consoleProxyUser, consoleProxyPassword = "kim", "loopback-proxy-secret"

var (
	keeperFiles = map[string]string{
		"Default/Preferences": `{"profile":{"name":"kept by the console"}}`,
		"Default/Bookmarks":   `{"roots":{"bookmark_bar":{"children":[],"name":"Bookmarks bar","type":"folder"}},"version":1}`,
	}
	keeperCookies = []map[string]any{
		{"name": "sid", "value": "a-kept-session", "domain": ".shop.example", "path": "/", "expires": 1900000000, "httpOnly": true, "secure": true, "sameSite": "Lax"},
		{"name": "pref", "value": "dark", "domain": "shop.example", "path": "/account", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Strict"},
	}
)

type keeperSeen struct {
	SignedOut, ResetAsked, ResetLink, ResetHeading string
	ResetTokenPrefilled                            bool
	ResetDone, OldPasswordRefused, EmailKept       string
	SignedInAs                                     string

	NoKeys, KeyHeading, KeyWarning, Key, Copied string
	KeyDetails                                  map[string]string
	KeyListHoldsKey                             bool
	KeyRows                                     [][]string
	RevokeHeading, Revoked, KeysAfterRevoke     string

	TestHeading                       string
	Tested                            map[string]string
	TestShowsPassword                 bool
	TestPasswordWarning, TestKeptName string
	ProxyID, ProxyAdded               string
	ProxySettings                     map[string]string
	ProxyStatusBefore, Checked        string
	ProxyStatusAfter                  string
	LastCheck                         map[string]string
	ProxyPageShowsPassword            bool
	ProxyRow                          string
	ProfileID, NoData, Uploaded       string
	Stored                            map[string]string
	StoredSha, CookiesImported        string
	ExportName                        string
	Exported                          []map[string]any
	NoSnapshots, SnapshotTaken        string
	SnapshotRows                      [][]string
	NotesInForm, Saved, NotesShown    string
	RestoreHeading                    string
	Changes                           [][]string
	Restored                          string
	SnapshotRowsAfter                 [][]string
	NotesAfterRestore                 string
}

func (c consoleRun) keeper(t *testing.T, desk *consoleDesk, socks *conformance.TestProxy) {
	const (
		email, newPassword   = "keeper@example.com", "a new passphrase for the keeper"
		keyName, proxyName   = "ci", "Loopback"
		profileName, label   = "Kept", "before the move"
		notesBefore          = "Orders ship from Lisbon."
		notesAfter           = "Orders ship from Porto now."
		exitIP               = "127.0.0.1"
		noKeys               = "You hold no API key in this team."
		restoredFlash        = "Snapshot restored. The state before it was kept as an automatic snapshot: restore that one to undo."
		proxyPasswordWarning = "The password is not shown again: type it again to test or add the proxy."
	)
	dir := t.TempDir()
	archive, cookies := filepath.Join(dir, "kept.tar.gz"), filepath.Join(dir, "cookies.json")
	if err := os.WriteFile(archive, testenv.TarGz(t, keeperFiles), 0o600); err != nil {
		t.Fatal(err)
	}
	cookieFile, err := json.Marshal(keeperCookies)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cookies, cookieFile, 0o600); err != nil {
		t.Fatal(err)
	}
	proxyAddr := fmt.Sprintf("%s:%d", socks.Host, socks.Port)
	var s keeperSeen
	c.journey(t, "keeper", map[string]any{
		"owner":         map[string]string{"name": "Kay", "email": email, "password": consolePassword},
		"newPassword":   newPassword,
		"mail":          desk.srv.URL + "/mail?" + url.Values{"to": {email}, "link": {"reset"}}.Encode(),
		"keyName":       keyName,
		"keyCheck":      desk.srv.URL + "/apikey",
		"proxyName":     proxyName,
		"proxyUrl":      "socks5://" + consoleProxyUser + ":" + consoleProxyPassword + "@" + proxyAddr,
		"proxyPassword": consoleProxyPassword,
		"profile":       profileName,
		"notesBefore":   notesBefore,
		"notesAfter":    notesAfter,
		"archive":       archive,
		"cookies":       cookies,
		"snapshotLabel": label,
	}, &s)

	// 1. The reset through the mail: the old password is refused, on the
	// page and by the API, and the new one signs in.
	if s.SignedOut != "You are signed out." ||
		s.ResetAsked != "If an account has that email, a message with a link to choose a new password is on its way. The link works for one hour." {
		t.Errorf("signed out, the page says %q; asked for the link, %q", s.SignedOut, s.ResetAsked)
	}
	if !strings.HasPrefix(s.ResetLink, c.base+"/app/reset-password?token=") || s.ResetHeading != "Choose a new password" || !s.ResetTokenPrefilled {
		t.Errorf("the mailed link %q opens %q (token prefilled: %v)", s.ResetLink, s.ResetHeading, s.ResetTokenPrefilled)
	}
	if s.ResetDone != "Your password is changed, and every session was signed out. Sign in with the new password." {
		t.Errorf("after the reset the page says %q", s.ResetDone)
	}
	if s.OldPasswordRefused != "Please sign in invalid email or password" || s.EmailKept != email {
		t.Errorf("the old password is answered %q, the email field keeps %q", s.OldPasswordRefused, s.EmailKept)
	}
	if s.SignedInAs != "Sign out Kay" {
		t.Errorf("signed in with the new password, the header offers %q", s.SignedInAs)
	}
	if _, code, err := c.signInWith(email, consolePassword); err != nil || code != http.StatusUnauthorized {
		t.Errorf("the API answers the old password %d %v, want 401", code, err)
	}
	token, code, err := c.signInWith(email, newPassword)
	if err != nil || code != http.StatusOK {
		t.Fatalf("the API answers the new password %d %v", code, err)
	}

	// 2. The API key: shown once, copied, working until revoked.
	prefix := s.KeyDetails["Prefix"]
	if s.NoKeys != noKeys || s.KeyHeading != "API key "+keyName+" created" || !strings.HasPrefix(s.KeyWarning, "This is the only time the key is shown") {
		t.Errorf("the key pages say %q, %q, %q", s.NoKeys, s.KeyHeading, s.KeyWarning)
	}
	if s.Key == "" || s.Copied != s.Key || prefix == "" || !strings.HasPrefix(s.Key, prefix) {
		t.Errorf("the page shows a key with prefix %q; the Copy button copied %d characters of %d", prefix, len(s.Copied), len(s.Key))
	}
	uses, echoed := desk.seen()
	if len(uses) != 1 || uses[0].Key != s.Key {
		t.Fatalf("the journey had %d keys used, want the one it was shown", len(uses))
	}
	if u := uses[0]; u.Me != http.StatusOK || u.Email != email || u.AuthMethod != "api_key" ||
		len(u.Keys) != 1 || u.Keys[0].Name != keyName || u.Keys[0].Prefix != prefix {
		t.Errorf("GET /api/v1/me with the key answered %d as %q by %q; it lists keys %+v", u.Me, u.Email, u.AuthMethod, u.Keys)
	}
	// The list names the key by its prefix, and shows it used (the first
	// use is recorded as the request is answered), never the key itself.
	if s.KeyListHoldsKey || len(s.KeyRows) != 1 || len(s.KeyRows[0]) != 5 || s.KeyRows[0][0] != keyName || s.KeyRows[0][1] != prefix ||
		s.KeyRows[0][3] == "never" || s.KeyRows[0][4] != "Revoke "+keyName {
		t.Errorf("the key list shows the key: %v; its rows read %q", s.KeyListHoldsKey, s.KeyRows)
	}
	if s.RevokeHeading != "Revoke API key "+keyName+"?" || s.Revoked != "API key revoked: requests that present it are refused from now on." || s.KeysAfterRevoke != noKeys {
		t.Errorf("revoking, the pages say %q, %q, %q", s.RevokeHeading, s.Revoked, s.KeysAfterRevoke)
	}
	if code := desk.apiKeyGet(s.Key, "/api/v1/me", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/me with the revoked key answered %d, want 401", code)
	}

	// 3. The proxy: tested, added by its short form, checked; its exit IP
	// is the one the echo service reported, and no page shows its password.
	if len(echoed) < 2 || slices.ContainsFunc(echoed, func(ip string) bool { return ip != exitIP }) {
		t.Errorf("the echo service answered %q, want %s for the test and the check", echoed, exitIP)
	}
	if socks.Tunnels() < 2 {
		t.Errorf("the proxy opened %d tunnels, want one for the test and one for the check", socks.Tunnels())
	}
	if s.TestHeading != "Test of socks5://"+proxyAddr+": it works" || s.TestShowsPassword || s.TestPasswordWarning != proxyPasswordWarning || s.TestKeptName != proxyName {
		t.Errorf("the test's answer: %q (password shown: %v), %q, name kept %q", s.TestHeading, s.TestShowsPassword, s.TestPasswordWarning, s.TestKeptName)
	}
	place := map[string]string{"Result": "ok", "Exit IP": exitIP, "Country": "PT", "City": "Lisbon", "Time zone": "Europe/Lisbon"}
	for term, want := range place {
		if s.Tested[term] != want || s.LastCheck[term] != want {
			t.Errorf("%s: the test shows %q, the check %q, want %q", term, s.Tested[term], s.LastCheck[term], want)
		}
	}
	if s.ProxyAdded != "Proxy "+proxyName+" added. Check it to see where it leads." || s.ProxyStatusBefore != "unknown" {
		t.Errorf("after adding, the page says %q with status %q", s.ProxyAdded, s.ProxyStatusBefore)
	}
	for term, want := range map[string]string{"Type": "socks5", "Address": proxyAddr, "Username": consoleProxyUser, "Password": "set (never shown)"} {
		if s.ProxySettings[term] != want {
			t.Errorf("the proxy page shows %s %q, want %q", term, s.ProxySettings[term], want)
		}
	}
	if !strings.HasPrefix(s.Checked, "Check passed in ") || !strings.HasSuffix(s.Checked, " ms: the proxy leads out at "+exitIP+" (Lisbon, PT).") ||
		s.ProxyStatusAfter != "ok" || s.ProxyPageShowsPassword {
		t.Errorf("after the check the page says %q with status %q (password shown: %v)", s.Checked, s.ProxyStatusAfter, s.ProxyPageShowsPassword)
	}
	if !strings.Contains(s.ProxyRow, "ok") || !strings.Contains(s.ProxyRow, "exit IP "+exitIP+", PT, Lisbon") {
		t.Errorf("the proxy list's row reads %q", s.ProxyRow)
	}
	var px struct {
		Type, Host, Status, Username string
		Port                         int
		HasPassword                  bool
		LastCheck                    *struct {
			OK     bool   `json:"ok"`
			ExitIP string `json:"exitIp"`
			City   string `json:"city"`
		}
	}
	if code, err := getJSON(c.base, "/api/v1/proxies/"+s.ProxyID, token, &px); err != nil || code != http.StatusOK {
		t.Fatalf("API read of the proxy %q: %d %v", s.ProxyID, code, err)
	}
	if px.Type != "socks5" || px.Host != socks.Host || px.Port != socks.Port || px.Username != consoleProxyUser || !px.HasPassword ||
		px.Status != "ok" || px.LastCheck == nil || !px.LastCheck.OK || px.LastCheck.ExitIP != s.LastCheck["Exit IP"] || px.LastCheck.City != "Lisbon" {
		t.Errorf("the API reads the proxy as %+v (last check %+v)", px, px.LastCheck)
	}

	// 4. The archive, as the API has it.
	var prof struct {
		Notes string `json:"notes"`
		Data  *struct {
			SizeBytes int64  `json:"sizeBytes"`
			SHA256    string `json:"sha256"`
		} `json:"data"`
	}
	if code, err := getJSON(c.base, "/api/v1/profiles/"+s.ProfileID, token, &prof); err != nil || code != http.StatusOK || prof.Data == nil {
		t.Fatalf("API read of the profile %q: %d %v, data %v", s.ProfileID, code, err, prof.Data)
	}
	sum, size := prof.Data.SHA256, prof.Data.SizeBytes
	if s.NoData != "No browser data saved yet." || len(sum) != 64 || size <= 0 || size >= 1024 {
		t.Fatalf("before the upload the page says %q; the API reports %d bytes, sha256 %q (the page's sizes under 1 KiB are in bytes)", s.NoData, size, sum)
	}
	if s.Uploaded != fmt.Sprintf("Browser data stored: %d B, sha256 %s.", size, sum[:12]) ||
		s.Stored["Size"] != fmt.Sprintf("%d B", size) || s.Stored["sha256"] != sum[:12]+"…" || s.StoredSha != sum {
		t.Errorf("the data page says %q and shows %v (full sha256 %q); the API reports %d bytes, sha256 %s", s.Uploaded, s.Stored, s.StoredSha, size, sum)
	}
	if files := testenv.Untar(t, c.apiBytes(t, "/api/v1/profiles/"+s.ProfileID+"/data", token)); !reflect.DeepEqual(files, keeperFiles) {
		t.Errorf("the API's archive holds %v, want %v", files, keeperFiles)
	}

	// The cookies: imported from the file, exported as the API lists them.
	var apiCookies, sent []map[string]any
	if err := json.Unmarshal(c.apiBytes(t, "/api/v1/profiles/"+s.ProfileID+"/cookies", token), &struct {
		Data *[]map[string]any `json:"data"`
	}{&apiCookies}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(cookieFile, &sent); err != nil {
		t.Fatal(err)
	}
	if s.CookiesImported != "2 cookies stored." || s.ExportName != s.ProfileID+"-cookies.json" {
		t.Errorf("the import says %q, the export is named %q", s.CookiesImported, s.ExportName)
	}
	if !reflect.DeepEqual(s.Exported, apiCookies) || !reflect.DeepEqual(apiCookies, sent) {
		t.Errorf("the exported cookies are %v, the API lists %v, the imported file held %v", s.Exported, apiCookies, sent)
	}

	// The time machine: the snapshot keeps the notes, the restore brings
	// them back and keeps the state it replaced.
	if s.NoSnapshots != "No snapshots yet." || s.SnapshotTaken != `Snapshot "`+label+`" taken.` {
		t.Errorf("the time machine says %q, then %q", s.NoSnapshots, s.SnapshotTaken)
	}
	if len(s.SnapshotRows) != 1 || len(s.SnapshotRows[0]) != 5 || s.SnapshotRows[0][0] != label || s.SnapshotRows[0][1] != "manual" ||
		s.SnapshotRows[0][3] != fmt.Sprintf("%d B", size) {
		t.Errorf("the snapshot list reads %q", s.SnapshotRows)
	}
	if s.NotesInForm != notesBefore || s.Saved != "Profile saved." || s.NotesShown != notesAfter {
		t.Errorf("the edit form held notes %q; saved, the page says %q and shows notes %q", s.NotesInForm, s.Saved, s.NotesShown)
	}
	if !strings.HasPrefix(s.RestoreHeading, "Restore “"+label+"” of ") {
		t.Errorf("the restore confirmation is headed %q", s.RestoreHeading)
	}
	if want := [][]string{{"Notes", notesAfter, notesBefore}}; !reflect.DeepEqual(s.Changes, want) {
		t.Errorf("the restore confirmation lists changes %q, want %q", s.Changes, want)
	}
	if s.Restored != restoredFlash || s.NotesAfterRestore != notesBefore {
		t.Errorf("after the restore the page says %q and the profile shows notes %q", s.Restored, s.NotesAfterRestore)
	}
	kinds := []string{}
	for _, r := range s.SnapshotRowsAfter {
		if len(r) > 1 {
			kinds = append(kinds, r[1])
		}
	}
	if slices.Sort(kinds); !slices.Equal(kinds, []string{"auto", "manual"}) {
		t.Errorf("after the restore the snapshot list reads %q", s.SnapshotRowsAfter)
	}
	if code, err := getJSON(c.base, "/api/v1/profiles/"+s.ProfileID, token, &prof); err != nil || code != http.StatusOK {
		t.Fatalf("API read of the restored profile: %d %v", code, err)
	}
	if prof.Notes != notesBefore || prof.Data == nil || prof.Data.SHA256 != sum {
		t.Errorf("the API reads the restored profile with notes %q and data %+v, want %q and sha256 %s", prof.Notes, prof.Data, notesBefore, sum)
	}
	var snaps []apiSnapshot
	if code, err := getJSON(c.base, "/api/v1/time-machine/"+s.ProfileID+"/snapshots?limit=100", token, &snaps); err != nil || code != http.StatusOK {
		t.Fatalf("API list of the snapshots: %d %v", code, err)
	}
	auto := slices.IndexFunc(snaps, func(sn apiSnapshot) bool { return sn.Kind == "auto" })
	if len(snaps) != 2 || auto < 0 || snaps[auto].Profile.Notes != notesAfter || snaps[1-auto].Kind != "manual" ||
		snaps[1-auto].Label != label || snaps[1-auto].Profile.Notes != notesBefore {
		t.Errorf("the API lists snapshots %+v, want the manual %q with the old notes and an auto one with the notes it replaced", snaps, label)
	}
}

// apiSnapshot is a snapshot as the API lists it.
type apiSnapshot struct {
	Label, Kind string
	Profile     struct {
		Notes string `json:"notes"`
	} `json:"profile"`
}

// apiBytes is the body of a GET of path with the access token.
func (c consoleRun) apiBytes(t *testing.T, path, token string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %s", path, resp.StatusCode, err, body)
	}
	return body
}

// consoleDesk is the Go test's side of the journeys: a webhook receiver
// that answers 500 until it is told to accept, the mail the service wrote
// to its output, the use of an API key a journey was shown, and what the
// IP echo service answered the proxy checks.
type consoleDesk struct {
	srv    *httptest.Server
	output atomic.Pointer[testenv.Output]
	base   atomic.Pointer[string]
	accept atomic.Bool

	mu       sync.Mutex
	requests []hookRequest
	keyUses  []keyUse
	echoed   []string
}

// keyUse is what the API answered a request that presented an API key.
type keyUse struct {
	Key        string
	Me         int
	Email      string
	AuthMethod string
	Keys       []apiKey
}

// apiKey is an API key as the API lists it.
type apiKey struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Prefix string `json:"prefix"`
}

// hookRequest is one webhook request the receiver got.
type hookRequest struct {
	EventID, Type, ProfileID, Signature string
	Body                                []byte `json:"-"`
	Answered                            int
}

// mailLinks are the links the journeys follow from their mail.
var mailLinks = map[string]*regexp.Regexp{
	"invitation": regexp.MustCompile(`https?://[^\s"]+/app/invitations/accept\?token=[A-Za-z0-9_]+\.[0-9a-f]+`),
	"reset":      regexp.MustCompile(`https?://[^\s"]+/app/reset-password\?token=[A-Za-z0-9_]+\.[0-9a-f]+`),
}

func newConsoleDesk(t *testing.T) *consoleDesk {
	d := &consoleDesk{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Profile struct {
					ID string `json:"id"`
				} `json:"profile"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &p)
		code := http.StatusInternalServerError
		if d.accept.Load() {
			code = http.StatusOK
		}
		d.mu.Lock()
		d.requests = append(d.requests, hookRequest{
			EventID: r.Header.Get("X-Service-Event-Id"), Type: p.Type, ProfileID: p.Data.Profile.ID,
			Signature: r.Header.Get("X-Service-Signature"), Body: body, Answered: code,
		})
		d.mu.Unlock()
		w.WriteHeader(code)
		if code != http.StatusOK {
			_, _ = io.WriteString(w, "desk closed:\n\tback at nine")
		}
	})
	mux.HandleFunc("POST /hook/accept", func(w http.ResponseWriter, r *http.Request) {
		d.accept.Store(true)
	})
	mux.HandleFunc("GET /mail", func(w http.ResponseWriter, r *http.Request) {
		kind := r.URL.Query().Get("link")
		if kind == "" {
			kind = "invitation"
		}
		re := mailLinks[kind]
		if re == nil {
			http.Error(w, "no such link", http.StatusBadRequest)
			return
		}
		link := re.FindString(d.mailTo(r.URL.Query().Get("to")))
		if link == "" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, link)
	})
	// The key a journey was shown is used at once, while it lives: who
	// the API says it is and which keys it lists.
	mux.HandleFunc("POST /apikey", func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		use := d.useKey(strings.TrimSpace(string(raw)))
		d.mu.Lock()
		d.keyUses = append(d.keyUses, use)
		d.mu.Unlock()
	})
	d.srv = httptest.NewServer(mux)
	t.Cleanup(d.srv.Close)
	return d
}

// apiKeyGet reads path of the service with the API key, decoding its data
// into out when it answers 200.
func (d *consoleDesk) apiKeyGet(key, path string, out any) int {
	req, err := http.NewRequest(http.MethodGet, *d.base.Load()+path, nil)
	if err != nil {
		return 0
	}
	req.Header.Set("X-API-Key", key)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && out != nil {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&env) != nil || json.Unmarshal(env.Data, out) != nil {
			return -resp.StatusCode
		}
	}
	return resp.StatusCode
}

// useKey presents key to GET /api/v1/me and GET /api/v1/api-keys.
func (d *consoleDesk) useKey(key string) keyUse {
	var me struct {
		User struct {
			Email string `json:"email"`
		} `json:"user"`
		AuthMethod string `json:"authMethod"`
	}
	u := keyUse{Key: key, Me: d.apiKeyGet(key, "/api/v1/me", &me)}
	u.Email, u.AuthMethod = me.User.Email, me.AuthMethod
	d.apiKeyGet(key, "/api/v1/api-keys", &u.Keys)
	return u
}

// echo wraps an IP echo handler, keeping the addresses it answered.
func (d *consoleDesk) echo(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		d.mu.Lock()
		d.echoed = append(d.echoed, host)
		d.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// seen copies what the desk saw of API keys and proxy checks.
func (d *consoleDesk) seen() ([]keyUse, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.keyUses), slices.Clone(d.echoed)
}

// mailTo is the text of the last mail the log transport wrote to to.
func (d *consoleDesk) mailTo(to string) string {
	out := d.output.Load()
	if out == nil {
		return ""
	}
	text := ""
	for line := range strings.SplitSeq(out.String(), "\n") {
		var entry struct {
			Msg  string `json:"msg"`
			To   string `json:"to"`
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "mail (log transport)" && entry.To == to {
			text = entry.Text
		}
	}
	return text
}

// requestsFor are the requests of event id the receiver got, in order.
func (d *consoleDesk) requestsFor(id string) []hookRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []hookRequest
	for _, r := range d.requests {
		if r.EventID == id {
			out = append(out, r)
		}
	}
	return out
}
