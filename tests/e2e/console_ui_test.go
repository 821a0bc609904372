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
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
//     viewer may not take, and forged posts refused, creating nothing.
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
	env := []string{
		"HTTP_ADDR=" + addr, "DATA_DIR=" + dataDir, "TMPDIR=" + tmpDir, "LOG_LEVEL=info",
		"BROWSER_RUNTIME=chromium", "CHROMIUM_PATH=" + chromium, "ALLOW_PRIVATE_TARGETS=true",
		// Two attempts, one second apart: a failing delivery fails soon.
		"WEBHOOK_RETRY_SCHEDULE=0s,1s",
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
	var s struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(c.base, "/api/v1/auth/login", "", map[string]string{"email": email, "password": consolePassword}, &s); err != nil || code != http.StatusOK {
		t.Fatalf("API sign-in of %s: %d %v", email, code, err)
	}
	return s.AccessToken
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
		if len(a) != 4 || a[0] != fmt.Sprint(i+1) || !strings.HasPrefix(a[2], "HTTP 500") {
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

// consoleDesk is the Go test's side of the journeys: a webhook receiver
// that answers 500 until it is told to accept, and the mail the service
// wrote to its output.
type consoleDesk struct {
	srv    *httptest.Server
	output atomic.Pointer[testenv.Output]
	accept atomic.Bool

	mu       sync.Mutex
	requests []hookRequest
}

// hookRequest is one webhook request the receiver got.
type hookRequest struct {
	EventID, Type, ProfileID, Signature string
	Body                                []byte `json:"-"`
	Answered                            int
}

var invitationLink = regexp.MustCompile(`https?://[^\s"]+/app/invitations/accept\?token=[A-Za-z0-9_]+\.[0-9a-f]+`)

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
	})
	mux.HandleFunc("POST /hook/accept", func(w http.ResponseWriter, r *http.Request) {
		d.accept.Store(true)
	})
	mux.HandleFunc("GET /mail", func(w http.ResponseWriter, r *http.Request) {
		link := invitationLink.FindString(d.mailTo(r.URL.Query().Get("to")))
		if link == "" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, link)
	})
	d.srv = httptest.NewServer(mux)
	t.Cleanup(d.srv.Close)
	return d
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
