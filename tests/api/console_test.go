package api_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/profilesvc/profilesvc/domain/team"
)

// consoleUser is a browser of the dashboard: a cookie jar, no JavaScript.
// Its requests carry what a browser's own form posts carry (Origin of the
// console, Sec-Fetch-Site: same-origin), unless a test forges others.
type consoleUser struct {
	t *testing.T
	h *harness
	c *http.Client
}

func (h *harness) console(t *testing.T) *consoleUser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &consoleUser{t: t, h: h, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// consolePage is one answer of the console, its HTML parsed.
type consolePage struct {
	status   int
	header   http.Header
	location string
	body     string
	doc      *html.Node
}

func (u *consoleUser) do(method, path string, form url.Values, headers ...string) consolePage {
	u.t.Helper()
	if form == nil {
		return u.send(method, path, "", nil, headers...)
	}
	return u.send(method, path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), headers...)
}

// send sends a body of contentType ("" for none) as the console's own
// pages do (Origin of the console, Sec-Fetch-Site: same-origin), unless
// headers forge others.
func (u *consoleUser) send(method, path, contentType string, body io.Reader, headers ...string) consolePage {
	u.t.Helper()
	req, err := http.NewRequest(method, u.h.base+path, body)
	if err != nil {
		u.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Origin", u.h.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for k, v := range pairs(headers) {
		req.Header.Set(k, v)
	}
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		u.t.Fatal(err)
	}
	p := consolePage{status: resp.StatusCode, header: resp.Header, location: resp.Header.Get("Location"), body: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		if p.doc, err = html.Parse(strings.NewReader(p.body)); err != nil {
			u.t.Fatalf("%s %s: the page is not HTML: %v", method, path, err)
		}
	}
	return p
}

func (u *consoleUser) get(path string) consolePage {
	u.t.Helper()
	return u.do(http.MethodGet, path, nil)
}

func (u *consoleUser) post(path string, form url.Values, headers ...string) consolePage {
	u.t.Helper()
	return u.do(http.MethodPost, path, form, headers...)
}

// follow loads the page a 303 sends the browser to.
func (u *consoleUser) follow(p consolePage) consolePage {
	u.t.Helper()
	if p.status != http.StatusSeeOther && p.status != http.StatusFound {
		u.t.Fatalf("status %d, want a redirect: %s", p.status, text(p))
	}
	return u.get(p.location)
}

func (u *consoleUser) signup(a account) consolePage {
	u.t.Helper()
	p := u.post("/app/signup", url.Values{"name": {a.name}, "email": {a.email}, "password": {a.password}})
	if p.status != http.StatusSeeOther {
		u.t.Fatalf("sign-up: status %d: %s", p.status, text(p))
	}
	return p
}

func (u *consoleUser) signin(a account) {
	u.t.Helper()
	p := u.post("/app/signin", url.Values{"email": {a.email}, "password": {a.password}})
	if p.status != http.StatusSeeOther {
		u.t.Fatalf("sign-in: status %d: %s", p.status, text(p))
	}
}

var profileIDInPath = regexp.MustCompile(`/app/profiles/(prf_[0-9a-z]+)$`)

// createProfile creates a profile through the form and returns its id.
func (u *consoleUser) createProfile(name, tags string) string {
	u.t.Helper()
	p := u.post("/app/profiles/new", url.Values{"name": {name}, "template": {windowsTemplate}, "tags": {tags}, "notes": {"made in the console"}})
	m := profileIDInPath.FindStringSubmatch(p.location)
	if p.status != http.StatusSeeOther || m == nil {
		u.t.Fatalf("create: status %d, location %q: %s", p.status, p.location, text(p))
	}
	return m[1]
}

// walk calls fn on every element of the page.
func walk(n *html.Node, fn func(*html.Node)) {
	if n == nil {
		return
	}
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// text is the page's visible text, its runs of space folded.
func text(p consolePage) string {
	if p.doc == nil {
		return p.body
	}
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style" || n.Data == "head") {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(p.doc)
	return strings.Join(strings.Fields(b.String()), " ")
}

// actions lists where the page's forms post and where its button-like
// links lead: what a user can do from it.
func actions(p consolePage) []string {
	var out []string
	walk(p.doc, func(n *html.Node) {
		switch {
		case n.Data == "form" && strings.EqualFold(attr(n, "method"), "post"):
			out = append(out, "POST "+attr(n, "action"))
		case n.Data == "a" && strings.Contains(attr(n, "class"), "button"):
			out = append(out, "GET "+attr(n, "href"))
		}
	})
	return out
}

func TestConsoleProfilesFromSignUpToDelete(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		u := h.console(t)
		a := account{email: "console-owner@example.com", password: "a console passphrase", name: "Console Owner"}
		home := u.follow(u.signup(a))
		if home.status != http.StatusSeeOther || home.location != "/app/profiles" {
			t.Fatalf("home: status %d, location %q", home.status, home.location)
		}
		list := u.follow(home)
		if !strings.Contains(text(list), "Welcome, Console Owner") || !strings.Contains(text(list), "No profiles yet") {
			t.Fatalf("first list: %s", text(list))
		}

		id := u.createProfile("Shop account", "shop, eu")
		u.createProfile("Other account", "us")
		show := u.get("/app/profiles/" + id)
		for _, want := range []string{"Shop account", "idle", "Fingerprint", "made in the console", "shop, eu", "Win32"} {
			if !strings.Contains(text(show), want) {
				t.Errorf("the profile page lacks %q: %s", want, text(show))
			}
		}

		// The filters are the API's: a name, a tag, a status.
		for query, want := range map[string][]string{
			"q=shop":         {"Shop account"},
			"tag=us":         {"Other account"},
			"status=running": {},
			"":               {"Shop account", "Other account"},
		} {
			page := u.get("/app/profiles?" + query)
			var names []string
			walk(page.doc, func(n *html.Node) {
				if n.Data == "a" && strings.HasPrefix(attr(n, "href"), "/app/profiles/prf_") && n.FirstChild != nil {
					names = append(names, n.FirstChild.Data)
				}
			})
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("list %q shows %v, want %v", query, names, want)
			}
		}

		// An edit sends the version it read: a change made meanwhile is
		// not overwritten unseen.
		edit := u.post("/app/profiles/"+id+"/edit", url.Values{"version": {"1"}, "name": {"Shop account 2"}, "template": {windowsTemplate}, "tags": {"shop"}, "notes": {"edited"}})
		if edit.status != http.StatusSeeOther {
			t.Fatalf("edit: status %d: %s", edit.status, text(edit))
		}
		stale := u.post("/app/profiles/"+id+"/edit", url.Values{"version": {"1"}, "name": {"Lost update"}, "template": {windowsTemplate}})
		if stale.status != http.StatusPreconditionFailed || !strings.Contains(text(stale), "Changed meanwhile") {
			t.Errorf("a stale edit: status %d: %s", stale.status, text(stale))
		}
		if r := h.get("/api/v1/profiles/"+id, bearer(h.login(t, a.email, a.password))...); str(r.data()["name"]) != "Shop account 2" || str(r.data()["notes"]) != "edited" {
			t.Errorf("the API reads %v after the edits", r.data())
		}

		// Refused input is said in words on the form, never as an envelope.
		bad := u.post("/app/profiles/new", url.Values{"name": {""}, "template": {"tpl_nope"}})
		if bad.status != http.StatusUnprocessableEntity || !strings.Contains(text(bad), "Please check the form") || !strings.Contains(text(bad), "templateId") {
			t.Errorf("an invalid profile: status %d: %s", bad.status, text(bad))
		}
		if strings.Contains(bad.body, `"error"`) || strings.Contains(bad.body, "goroutine") {
			t.Errorf("the refusal shows an envelope or a stack: %s", bad.body)
		}

		// Launch and release (sessions are leases here).
		launched := u.post("/app/profiles/"+id+"/launch", url.Values{"headless": {"on"}})
		if launched.status != http.StatusOK || !strings.Contains(text(launched), "Browser session") {
			t.Fatalf("launch: status %d: %s", launched.status, text(launched))
		}
		status := u.get("/app/profiles/status?id=" + id)
		if status.status != http.StatusOK || strings.TrimSpace(status.body) != `{"`+id+`":"running"}` {
			t.Errorf("status while running: %d %s", status.status, status.body)
		}
		if got := actions(u.get("/app/profiles/" + id)); slices.Contains(got, "GET /app/profiles/"+id+"/delete") || !slices.Contains(got, "POST /app/profiles/"+id+"/release") {
			t.Errorf("a running profile offers %v: release, and no delete", got)
		}
		released := u.follow(u.post("/app/profiles/"+id+"/release", url.Values{}))
		if !strings.Contains(text(released), "Browser released") || !strings.Contains(text(released), "idle") {
			t.Errorf("after release: %s", text(released))
		}

		confirm := u.get("/app/profiles/" + id + "/delete")
		if !strings.Contains(text(confirm), "cannot be undone") {
			t.Errorf("the delete confirmation: %s", text(confirm))
		}
		gone := u.follow(u.post("/app/profiles/"+id+"/delete", url.Values{}))
		if strings.Contains(text(gone), "Shop account") || !strings.Contains(text(gone), "Profile deleted") {
			t.Errorf("after delete: %s", text(gone))
		}
		if p := u.get("/app/profiles/" + id); p.status != http.StatusNotFound || !strings.Contains(text(p), "profile not found") {
			t.Errorf("a deleted profile's page: %d %s", p.status, text(p))
		}
	})
}

// consoleActions are the console's state-changing requests, each with a
// form that would succeed for an owner.
func consoleActions(profileID string) map[string]url.Values {
	return map[string]url.Values{
		"/app/profiles/new":                       {"name": {"Forged"}, "template": {windowsTemplate}},
		"/app/profiles/" + profileID + "/edit":    {"version": {"1"}, "name": {"Forged"}, "template": {windowsTemplate}},
		"/app/profiles/" + profileID + "/launch":  {},
		"/app/profiles/" + profileID + "/release": {},
		"/app/profiles/" + profileID + "/delete":  {},
		"/app/team/switch":                        {"team": {"tea_forged"}},
		"/app/invitations/accept":                 {"token": {"inv_forged.secret"}},
		"/app/signout":                            {},
		"/app/signin":                             {"email": {"forged@example.com"}, "password": {"forged password"}},
		"/app/signup":                             {"email": {"forged@example.com"}, "password": {"forged password"}, "name": {"Forged"}},
		"/app/forgot-password":                    {"email": {"forged@example.com"}},
		"/app/reset-password":                     {"token": {"rst_forged.secret"}, "password": {"forged password"}, "confirm": {"forged password"}},
	}
}

func TestConsoleRefusesCrossSiteRequests(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	u := h.console(t)
	a := account{email: "csrf-owner@example.com", password: "a console passphrase", name: "Owner"}
	u.signup(a)
	id := u.createProfile("Target", "")

	forged := map[string][]string{
		"a page of another site":         {"Origin", "https://attacker.test", "Sec-Fetch-Site", "cross-site"},
		"a sibling site":                 {"Origin", "https://evil.localhost", "Sec-Fetch-Site", "same-site"},
		"an old browser, another origin": {"Origin", "https://attacker.test", "Sec-Fetch-Site", ""},
	}
	for path, form := range consoleActions(id) {
		for how, headers := range forged {
			p := u.post(path, form, headers...)
			if p.status != http.StatusForbidden || !strings.Contains(text(p), "came from another site") {
				t.Errorf("POST %s from %s: status %d: %s", path, how, p.status, text(p))
			}
		}
	}
	// Nothing changed: still one profile, idle, named Target, and the
	// session still works.
	r := h.get("/api/v1/profiles?limit=10", bearer(h.login(t, a.email, a.password))...)
	items := asList(r.env["data"])
	if len(items) != 1 || str(items[0].(map[string]any)["name"]) != "Target" || str(items[0].(map[string]any)["status"]) != "idle" {
		t.Errorf("after the forged requests the team has %v", items)
	}
	if p := u.get("/app/profiles"); p.status != http.StatusOK || !strings.Contains(text(p), "Target") {
		t.Errorf("the session after the forged requests: %d %s", p.status, text(p))
	}
}

func TestConsoleCannotBeFramedAndRunsNoInlineScript(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	u := h.console(t)
	u.signup(account{email: "frame@example.com", password: "a console passphrase", name: "Framed"})
	id := u.createProfile("Framed", "")
	for _, path := range []string{"/app/signin", "/app/signup", "/app/forgot-password", "/app/reset-password", "/app/profiles", "/app/profiles/new", "/app/profiles/" + id, "/app/profiles/" + id + "/edit", "/app/profiles/" + id + "/delete", "/app/invitations/accept", "/app/profiles/prf_missing"} {
		checkConsolePage(t, "GET "+path, u.get(path))
	}
	checkConsolePage(t, "POST launch", u.post("/app/profiles/"+id+"/launch", url.Values{}))
}

// checkConsolePage checks what every answer of the console carries: no
// framing (frame-ancestors 'none' and X-Frame-Options), only its own
// scripts (no inline script, style or handler, nothing unsafe in the
// policy), no sniffing, and on a page a label for every field.
func checkConsolePage(t *testing.T, name string, p consolePage) {
	t.Helper()
	csp := p.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors 'none'") || p.header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("%s may be framed: CSP %q, X-Frame-Options %q", name, csp, p.header.Get("X-Frame-Options"))
	}
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("%s: CSP %q allows scripts it should not", name, csp)
	}
	if p.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s may be sniffed", name)
	}
	labelled := map[string]bool{}
	walk(p.doc, func(n *html.Node) {
		if n.Data == "label" {
			labelled[attr(n, "for")] = true
		}
	})
	walk(p.doc, func(n *html.Node) {
		if n.Data == "script" && (attr(n, "src") == "" || n.FirstChild != nil) {
			t.Errorf("%s has an inline script", name)
		}
		if n.Data == "style" || attr(n, "style") != "" {
			t.Errorf("%s has an inline style on <%s>", name, n.Data)
		}
		for _, at := range n.Attr {
			if strings.HasPrefix(at.Key, "on") {
				t.Errorf("%s has an inline handler %s on <%s>", name, at.Key, n.Data)
			}
		}
		if (n.Data == "input" && attr(n, "type") != "hidden") || n.Data == "select" || n.Data == "textarea" {
			if id := attr(n, "id"); (id == "" || !labelled[id]) && !insideLabel(n) {
				t.Errorf("%s: a <%s name=%q> has no label", name, n.Data, attr(n, "name"))
			}
		}
	})
}

func insideLabel(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && p.Data == "label" {
			return true
		}
	}
	return false
}

func TestConsoleSessionCookie(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		publicURL string
		secure    bool
	}{"http": {"", false}, "https": {"https://console.test", true}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := start(t, options{databaseURL: "memory://", env: map[string]string{"PUBLIC_URL": c.publicURL}})
			u := h.console(t)
			p := u.signup(account{email: "cookie@example.com", password: "a console passphrase", name: "Cookie"})
			var session *http.Cookie
			for _, ck := range (&http.Response{Header: p.header}).Cookies() {
				if ck.Name == "psvc_session" {
					session = ck
				}
			}
			if session == nil {
				t.Fatal("no session cookie was set")
			}
			if !session.HttpOnly || session.SameSite != http.SameSiteLaxMode || session.Secure != c.secure || session.Path != "/app" {
				t.Errorf("session cookie %+v: want HttpOnly, SameSite=Lax, Secure=%v, Path=/app", session, c.secure)
			}
		})
	}
}

func TestConsoleSignOutEndsTheSession(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	u := h.console(t)
	a := account{email: "signout@example.com", password: "a console passphrase", name: "Leaving"}
	u.signup(a)
	// A copy of the cookie, as a thief of it would hold.
	base, _ := url.Parse(h.base + "/app/")
	stolen := h.console(t)
	stolen.c.Jar.SetCookies(base, u.c.Jar.Cookies(base))
	if p := stolen.get("/app/profiles"); p.status != http.StatusOK {
		t.Fatalf("the copied cookie does not open the console: %d", p.status)
	}
	out := u.follow(u.post("/app/signout", url.Values{}))
	if !strings.Contains(text(out), "You are signed out") {
		t.Errorf("after sign-out: %s", text(out))
	}
	for _, who := range []*consoleUser{u, stolen} {
		if p := who.get("/app/profiles"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/app/signin?next=") {
			t.Errorf("after sign-out the console answers %d %q", p.status, p.location)
		}
	}
	if p := stolen.post("/app/profiles/new", url.Values{"name": {"After"}, "template": {windowsTemplate}}); p.status != http.StatusUnauthorized {
		t.Errorf("an action with the signed-out cookie: %d %s", p.status, text(p))
	}

	// Signing in over a session ends the one the browser held.
	u.signin(a)
	copied := h.console(t)
	copied.c.Jar.SetCookies(base, u.c.Jar.Cookies(base))
	u.signin(a)
	if p := copied.get("/app/profiles"); p.status != http.StatusSeeOther {
		t.Errorf("the session signed in over still opens the console: %d", p.status)
	}
	if p := u.get("/app/profiles"); p.status != http.StatusOK {
		t.Errorf("the new session: %d", p.status)
	}
}

func TestConsoleSignInSendsBackOnlyToItsOwnPages(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	for next, want := range map[string]string{
		"/app/profiles?tag=x":    "/app/profiles?tag=x",
		"https://attacker.test/": "/app/",
		"//attacker.test/app/":   "/app/",
		"/app/\\\\attacker.test": "/app/",
		"/docs":                  "/app/",
		"/app/../api/v1/me":      "/app/",
	} {
		u := h.console(t)
		p := u.post("/app/signin", url.Values{"email": {a.email}, "password": {a.password}, "next": {next}})
		if p.status != http.StatusSeeOther || p.location != want {
			t.Errorf("next %q: status %d, location %q, want %q", next, p.status, p.location, want)
		}
	}
	u := h.console(t)
	if p := u.post("/app/signin", url.Values{"email": {a.email}, "password": {"wrong password!"}}); p.status != http.StatusUnauthorized || !strings.Contains(text(p), "invalid email or password") {
		t.Errorf("a wrong password: %d %s", p.status, text(p))
	}
}

func TestConsoleViewerSeesNoActionAndIsRefusedAnyway(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		owner, viewer := h.register(t), h.register(t)
		h.member(t, owner, viewer, team.RoleViewer)
		id := h.createProfile(t, owner, map[string]any{"name": "Watched"})

		u := h.console(t)
		u.signin(viewer)
		// The viewer's console acts in the owner's team.
		if p := u.post("/app/team/switch", url.Values{"team": {owner.teamID}}); p.status != http.StatusSeeOther {
			t.Fatalf("switch: %d %s", p.status, text(p))
		}
		for _, path := range []string{"/app/profiles", "/app/profiles/" + id} {
			p := u.get(path)
			if !strings.Contains(text(p), "Watched") {
				t.Fatalf("%s: the viewer does not see the team's profile: %s", path, text(p))
			}
			for _, act := range actions(p) {
				if act != "POST /app/signout" && act != "POST /app/team/switch" {
					t.Errorf("%s offers the viewer %s", path, act)
				}
			}
		}
		for path, form := range consoleActions(id) {
			if !strings.HasPrefix(path, "/app/profiles") {
				continue
			}
			p := u.post(path, form)
			if p.status != http.StatusForbidden || !strings.Contains(text(p), "Not allowed") {
				t.Errorf("the viewer's POST %s: %d %s", path, p.status, text(p))
			}
		}
		r := h.get("/api/v1/profiles/"+id, bearer(owner.access)...)
		if str(r.data()["name"]) != "Watched" || str(r.data()["status"]) != "idle" || r.data()["version"] != float64(1) {
			t.Errorf("the viewer's refused actions changed the profile: %v", r.data())
		}
	})
}

func TestConsoleCannotReachAnotherTeam(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		victim, attacker := h.register(t), h.register(t)
		id := h.createProfile(t, victim, map[string]any{"name": "Secret"})
		u := h.console(t)
		u.signin(attacker)

		// The victim's team named in the team cookie is not the attacker's
		// to act in: the console falls back to the attacker's own team.
		base, _ := url.Parse(h.base + "/app/")
		u.c.Jar.SetCookies(base, []*http.Cookie{{Name: "psvc_team", Value: victim.teamID, Path: "/app"}})
		if p := u.get("/app/profiles"); p.status != http.StatusOK || strings.Contains(text(p), "Secret") {
			t.Errorf("with the victim's team in the cookie: %d %s", p.status, text(p))
		}
		if p := u.post("/app/team/switch", url.Values{"team": {victim.teamID}}); p.status != http.StatusNotFound {
			t.Errorf("switching to the victim's team: %d %s", p.status, text(p))
		}
		for _, path := range []string{"/app/profiles/" + id, "/app/profiles/" + id + "/edit", "/app/profiles/" + id + "/delete"} {
			if p := u.get(path); p.status != http.StatusNotFound || strings.Contains(text(p), "Secret") {
				t.Errorf("GET %s: %d %s", path, p.status, text(p))
			}
		}
		for path, form := range consoleActions(id) {
			if !strings.Contains(path, id) {
				continue
			}
			if p := u.post(path, form); p.status != http.StatusNotFound {
				t.Errorf("POST %s: %d %s", path, p.status, text(p))
			}
		}
		if s := u.get("/app/profiles/status?id=" + id); strings.TrimSpace(s.body) != "{}" {
			t.Errorf("the status of another team's profile: %s", s.body)
		}
		r := h.get("/api/v1/profiles/"+id, bearer(victim.access)...)
		if str(r.data()["name"]) != "Secret" || str(r.data()["status"]) != "idle" {
			t.Errorf("the victim's profile changed: %v", r.data())
		}
	})
}

func TestConsolePasswordResetAndInvitationLinks(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		u := h.console(t)
		u.signin(a)
		other := h.console(t)

		sent := other.post("/app/forgot-password", url.Values{"email": {a.email}})
		if sent.status != http.StatusOK || !strings.Contains(text(sent), "If an account has that email") {
			t.Fatalf("forgot: %d %s", sent.status, text(sent))
		}
		link := h.mailedToken(t, a.email, regexp.MustCompile(`(http://\S+/app/reset-password\?token=\S+)`))
		page := other.get(strings.TrimPrefix(link, h.base))
		var token string
		walk(page.doc, func(n *html.Node) {
			if n.Data == "input" && attr(n, "name") == "token" {
				token = attr(n, "value")
			}
		})
		if token == "" || !strings.HasSuffix(link, token) {
			t.Fatalf("the reset page does not hold the link's token (%q): %s", token, text(page))
		}
		if p := other.post("/app/reset-password", url.Values{"token": {token}, "password": {"a new console password"}, "confirm": {"another one entirely"}}); p.status != http.StatusUnprocessableEntity {
			t.Errorf("differing passwords: %d %s", p.status, text(p))
		}
		done := other.follow(other.post("/app/reset-password", url.Values{"token": {token}, "password": {"a new console password"}, "confirm": {"a new console password"}}))
		if !strings.Contains(text(done), "Your password is changed") {
			t.Errorf("after the reset: %s", text(done))
		}
		// The reset signed out the console session that was open.
		if p := u.get("/app/profiles"); p.status != http.StatusSeeOther {
			t.Errorf("the session from before the reset still opens the console: %d", p.status)
		}
		a.password = "a new console password"
		u.signin(a)

		// An invitation's link opens the console's accept page.
		invitee := h.register(t)
		h.invite(t, bearer(h.login(t, a.email, a.password)), invitee.email, team.RoleMember)
		invite := h.mailedToken(t, invitee.email, regexp.MustCompile(`(http://\S+/app/invitations/accept\?token=\S+)`))
		iu := h.console(t)
		first := iu.get(strings.TrimPrefix(invite, h.base))
		if first.status != http.StatusSeeOther || !strings.HasPrefix(first.location, "/app/signin?next=") {
			t.Fatalf("the invitation link signed out: %d %q", first.status, first.location)
		}
		next, _ := url.Parse(first.location)
		signin := iu.post("/app/signin", url.Values{"email": {invitee.email}, "password": {invitee.password}, "next": {next.Query().Get("next")}})
		acceptPage := iu.follow(signin)
		var inviteToken string
		walk(acceptPage.doc, func(n *html.Node) {
			if n.Data == "input" && attr(n, "name") == "token" {
				inviteToken = attr(n, "value")
			}
		})
		joined := iu.follow(iu.post("/app/invitations/accept", url.Values{"token": {inviteToken}}))
		if !strings.Contains(text(joined), "You joined") || !strings.Contains(text(joined), "as member") {
			t.Errorf("after accepting: %s", text(joined))
		}
	})
}

func TestConsoleProfileFormAssignsAStoredProxy(t *testing.T) {
	t.Parallel()
	eachProxyBackend(t, nil, func(t *testing.T, h *harness, _ *fakeProber, _ string) {
		a := h.register(t)
		px := str(h.addProxy(t, a, map[string]any{"name": "Office", "type": "socks5", "host": "proxy.example.com", "port": 1080})["id"])
		u := h.console(t)
		u.signin(a)
		form := u.get("/app/profiles/new")
		var options []string
		walk(form.doc, func(n *html.Node) {
			if n.Data == "option" && n.Parent != nil && attr(n.Parent, "name") == "proxy" {
				options = append(options, attr(n, "value"))
			}
		})
		if !slices.Equal(options, []string{"", px}) {
			t.Fatalf("the proxy choices are %v, want none and %s", options, px)
		}
		p := u.post("/app/profiles/new", url.Values{"name": {"Proxied"}, "template": {windowsTemplate}, "proxy": {px}})
		id := profileIDInPath.FindStringSubmatch(p.location)
		if id == nil {
			t.Fatalf("create: %d %s", p.status, text(p))
		}
		r := h.get("/api/v1/profiles/"+id[1], bearer(a.access)...)
		if proxy, _ := r.data()["proxy"].(map[string]any); str(proxy["id"]) != px {
			t.Fatalf("the created profile's proxy is %v, want %s", r.data()["proxy"], px)
		}
		// Edit: "none" removes it; a proxy of another team is not found.
		stranger := h.register(t)
		theirs := str(h.addProxy(t, stranger, map[string]any{"name": "Theirs", "type": "socks5", "host": "proxy.example.com", "port": 1081})["id"])
		if p := u.post("/app/profiles/"+id[1]+"/edit", url.Values{"version": {"1"}, "name": {"Proxied"}, "template": {windowsTemplate}, "proxy": {theirs}}); p.status != http.StatusNotFound && p.status != http.StatusUnprocessableEntity {
			t.Errorf("another team's proxy: %d %s", p.status, text(p))
		}
		if p := u.post("/app/profiles/"+id[1]+"/edit", url.Values{"version": {"1"}, "name": {"Proxied"}, "template": {windowsTemplate}, "proxy": {""}}); p.status != http.StatusSeeOther {
			t.Fatalf("removing the proxy: %d %s", p.status, text(p))
		}
		if r := h.get("/api/v1/profiles/"+id[1], bearer(a.access)...); r.data()["proxy"] != nil {
			t.Errorf("after removing, the profile's proxy is %v", r.data()["proxy"])
		}
	})
}

// TestEveryConsoleActionRefusesAnotherSite walks the route table: every
// state-changing route of the console, present and future, refuses a
// request that a page of another site sends, before it reads anything.
func TestEveryConsoleActionRefusesAnotherSite(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	u := h.console(t)
	u.signup(account{email: "walk@example.com", password: "a console passphrase", name: "Walker"})
	id := u.createProfile("Walked", "")
	ids := strings.NewReplacer("{id}", id, "{snapshotId}", "snp_x", "{delivery}", "dlv_x", "{name}", "x")
	actions := 0
	for _, route := range h.routes {
		if !strings.HasPrefix(route.Name, "console ") || route.Method == http.MethodGet {
			continue
		}
		actions++
		path := ids.Replace(route.Path)
		for how, headers := range map[string][]string{
			"cross-site":                        {"Origin", "https://attacker.test", "Sec-Fetch-Site", "cross-site"},
			"same-site":                         {"Origin", "https://evil.localhost", "Sec-Fetch-Site", "same-site"},
			"another origin, no fetch metadata": {"Origin", "https://attacker.test", "Sec-Fetch-Site", ""},
		} {
			p := u.do(route.Method, path, url.Values{}, headers...)
			if p.status != http.StatusForbidden || !strings.Contains(text(p), "came from another site") {
				t.Errorf("%s %s from %s: %d %s", route.Method, path, how, p.status, text(p))
			}
		}
	}
	if actions < 30 {
		t.Errorf("only %d console actions in the route table", actions)
	}
	if r := h.get("/api/v1/profiles/"+id, bearer(h.login(t, "walk@example.com", "a console passphrase"))...); r.status != http.StatusOK || r.data()["version"] != float64(1) {
		t.Errorf("the profile after the forged requests: %d %v", r.status, r.data())
	}
}
