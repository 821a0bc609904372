package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

// consoleTeamEnv lets the service save and probe loopback proxies, and
// sends its checks to an IP echo service on loopback: no probe leaves the
// machine.
func consoleTeamEnv(t *testing.T) map[string]string {
	t.Helper()
	echo := conformance.StartIPEcho(t, conformance.IPEchoHandler("NL", "Amsterdam", "Europe/Amsterdam"))
	return map[string]string{"ALLOW_PRIVATE_TARGETS": "true", "PROXY_CHECK_URL": echo, "PROXY_CHECK_TIMEOUT": "5s"}
}

// consoleTeamBackends runs fn once per storage adapter, each service with
// consoleTeamEnv.
func consoleTeamBackends(t *testing.T, fn func(t *testing.T, h *harness)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			fn(t, start(t, options{databaseURL: b.url(t), env: consoleTeamEnv(t)}))
		})
	}
}

var (
	consoleInviteLink = regexp.MustCompile(`(http://\S+/app/invitations/accept\?token=\S+)`)
	proxyIDInPath     = regexp.MustCompile(`^/app/proxies/(prx_[0-9a-z]+)$`)
)

// nodeText is the visible text under n, its runs of space folded.
func nodeText(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// rowOf is the text of the page's table row that mentions needle.
func rowOf(p consolePage, needle string) string {
	var out string
	walk(p.doc, func(n *html.Node) {
		if n.Data == "tr" && strings.Contains(nodeText(n), needle) {
			out = nodeText(n)
		}
	})
	return out
}

// optionsOf lists the options of the page's select with id.
func optionsOf(p consolePage, id string) []string {
	var out []string
	walk(p.doc, func(n *html.Node) {
		if n.Data == "select" && attr(n, "id") == id {
			walk(n, func(o *html.Node) {
				if o.Data == "option" {
					out = append(out, nodeText(o))
				}
			})
		}
	})
	return out
}

// teamMembers reads the members of a's team through the API, by email.
func (h *harness) teamMembers(t *testing.T, a account, headers ...string) map[string]map[string]any {
	t.Helper()
	if headers == nil {
		headers = bearer(a.access)
	}
	r := h.get("/api/v1/teams/members?limit=100", headers...)
	expect(t, r, http.StatusOK)
	out := map[string]map[string]any{}
	for _, m := range asList(r.env["data"]) {
		m := m.(map[string]any)
		out[str(m["email"])] = m
	}
	return out
}

// inTeamOf makes u's console act in teamID.
func (u *consoleUser) inTeamOf(teamID string) {
	u.t.Helper()
	if p := u.post("/app/team/switch", url.Values{"team": {teamID}}); p.status != http.StatusSeeOther {
		u.t.Fatalf("switch: %d %s", p.status, text(p))
	}
}

// addProxy adds a proxy through the console's form and returns its id.
func (u *consoleUser) addProxy(form url.Values) string {
	u.t.Helper()
	p := u.post("/app/proxies/new", form)
	m := proxyIDInPath.FindStringSubmatch(p.location)
	if p.status != http.StatusSeeOther || m == nil {
		u.t.Fatalf("add proxy: status %d, location %q: %s", p.status, p.location, text(p))
	}
	return m[1]
}

const lastOwnerWords = "A team must keep at least one owner"

func TestConsoleTeamAndProxiesInviteChangeRoleAndRemove(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		owner, invitee, heir := h.register(t), h.register(t), h.register(t)
		u := h.console(t)
		u.signin(owner)

		first := u.get("/app/team")
		if first.status != http.StatusOK || !strings.Contains(rowOf(first, owner.email), "owner") || !strings.Contains(rowOf(first, owner.email), "active") {
			t.Fatalf("the team page: %d %s", first.status, text(first))
		}
		// The only owner's row says why it cannot be demoted or removed.
		if row := rowOf(first, owner.email); !strings.Contains(row, "The only owner") || !strings.Contains(row, "first make another member an owner") {
			t.Errorf("the sole owner's row has no hint: %s", row)
		}
		if got := optionsOf(first, "invite-role"); !slices.Equal(got, []string{"owner", "admin", "member", "viewer"}) {
			t.Errorf("an owner may invite %v", got)
		}

		// A refused invitation is said in words on the form, filled again.
		bad := u.post("/app/team/invite", url.Values{"email": {"not an email"}, "role": {"member"}})
		if bad.status != http.StatusUnprocessableEntity || !strings.Contains(text(bad), "Please check the form") || !strings.Contains(text(bad), "must be an email address") {
			t.Errorf("an invalid invitation: %d %s", bad.status, text(bad))
		}
		walk(bad.doc, func(n *html.Node) {
			if n.Data == "input" && attr(n, "name") == "email" && attr(n, "value") != "not an email" {
				t.Errorf("the refused form lost its email: %q", attr(n, "value"))
			}
		})

		// An invitation from the console shows as invited, and its mail
		// holds the console's link.
		sent := u.follow(u.post("/app/team/invite", url.Values{"email": {invitee.email}, "role": {"admin"}}))
		if !strings.Contains(text(sent), "Invitation sent to "+invitee.email+" as admin") {
			t.Errorf("after the invitation: %s", text(sent))
		}
		if row := rowOf(sent, invitee.email); !strings.Contains(row, "invited") || !strings.Contains(row, "admin") || !strings.Contains(row, "not yet") {
			t.Errorf("the invitee's row: %q", row)
		}
		if m := h.teamMembers(t, owner)[invitee.email]; str(m["status"]) != "invited" || str(m["role"]) != "admin" {
			t.Fatalf("the API reads the invitee as %v", m)
		}
		link := h.mailedToken(t, invitee.email, consoleInviteLink)
		iu := h.console(t)
		iu.signin(invitee)
		accept := iu.get(strings.TrimPrefix(link, h.base))
		var token string
		walk(accept.doc, func(n *html.Node) {
			if n.Data == "input" && attr(n, "name") == "token" {
				token = attr(n, "value")
			}
		})
		joined := iu.follow(iu.post("/app/invitations/accept", url.Values{"token": {token}}))
		if !strings.Contains(text(joined), "You joined") || !strings.Contains(text(joined), "as admin") {
			t.Fatalf("after accepting: %s", text(joined))
		}
		members := h.teamMembers(t, owner)
		inviteeID, ownerID := str(members[invitee.email]["id"]), str(members[owner.email]["id"])
		if str(members[invitee.email]["status"]) != "active" {
			t.Fatalf("the invitee after accepting: %v", members[invitee.email])
		}
		if row := rowOf(u.get("/app/team"), invitee.email); !strings.Contains(row, invitee.name) || !strings.Contains(row, "active") {
			t.Errorf("the joined member's row: %q", row)
		}

		// A change of role.
		changed := u.follow(u.post("/app/team/members/"+inviteeID+"/role", url.Values{"role": {"member"}}))
		if !strings.Contains(text(changed), invitee.name+" ("+invitee.email+") is now member") {
			t.Errorf("after the change of role: %s", text(changed))
		}
		if m := h.teamMembers(t, owner)[invitee.email]; str(m["role"]) != "member" {
			t.Errorf("the API reads %v after the change of role", m)
		}

		// The last owner can be neither demoted nor removed: the page says
		// why and how to proceed.
		for _, refused := range []consolePage{
			u.post("/app/team/members/"+ownerID+"/role", url.Values{"role": {"admin"}}),
			u.post("/app/team/members/"+ownerID+"/remove", url.Values{}),
		} {
			if refused.status != http.StatusConflict || !strings.Contains(text(refused), lastOwnerWords) ||
				!strings.Contains(text(refused), "first make another member an owner") {
				t.Errorf("the last owner's demotion or removal: %d %s", refused.status, text(refused))
			}
		}
		if confirm := u.get("/app/team/members/" + ownerID + "/remove"); !strings.Contains(text(confirm), "a team must keep at least one owner") {
			t.Errorf("the sole owner's removal page does not warn: %s", text(confirm))
		}
		if m := h.teamMembers(t, owner)[owner.email]; str(m["role"]) != "owner" || str(m["status"]) != "active" {
			t.Errorf("the refused changes changed the owner: %v", m)
		}

		// Removal, confirmed first.
		confirm := u.get("/app/team/members/" + inviteeID + "/remove")
		if confirm.status != http.StatusOK || !strings.Contains(text(confirm), "Remove "+invitee.email+" from the team?") ||
			!slices.Contains(actions(confirm), "POST /app/team/members/"+inviteeID+"/remove") {
			t.Errorf("the removal's confirmation: %d %s", confirm.status, text(confirm))
		}
		removed := u.follow(u.post("/app/team/members/"+inviteeID+"/remove", url.Values{}))
		if !strings.Contains(text(removed), invitee.name+" ("+invitee.email+") was removed from the team") {
			t.Errorf("after the removal: %s", text(removed))
		}
		if m := h.teamMembers(t, owner)[invitee.email]; str(m["status"]) != "removed" {
			t.Errorf("the API reads %v after the removal", m)
		}
		if row := rowOf(removed, invitee.email); !strings.Contains(row, "removed") {
			t.Errorf("the removed member's row: %q", row)
		}
		for _, act := range actions(removed) {
			if strings.Contains(act, inviteeID) {
				t.Errorf("a removed member still offers %s", act)
			}
		}
		if p := iu.get("/app/team"); strings.Contains(text(p), owner.email) {
			t.Errorf("the removed member still sees the team: %s", text(p))
		}

		// Handing the team over: make another member an owner, then the
		// first one may step down.
		h.member(t, owner, heir, team.RoleMember)
		heirID := str(h.teamMembers(t, owner)[heir.email]["id"])
		promoted := u.follow(u.post("/app/team/members/"+heirID+"/role", url.Values{"role": {"owner"}}))
		if !strings.Contains(text(promoted), "is now owner") || strings.Contains(text(promoted), "The only owner") {
			t.Errorf("after making a second owner: %s", text(promoted))
		}
		stepped := u.follow(u.post("/app/team/members/"+ownerID+"/role", url.Values{"role": {"admin"}}))
		if !strings.Contains(text(stepped), "is now admin") {
			t.Fatalf("the first owner stepping down: %s", text(stepped))
		}
		if m := h.teamMembers(t, heir, inTeam(heir, owner.teamID)...); str(m[owner.email]["role"]) != "admin" || str(m[heir.email]["role"]) != "owner" {
			t.Errorf("the API reads %v after the hand-over", m)
		}
		// Now an admin, the console offers nothing on the owner's row, and
		// no owner among the roles to invite.
		after := u.get("/app/team")
		for _, act := range actions(after) {
			if strings.Contains(act, heirID) {
				t.Errorf("an admin is offered %s on the owner's row", act)
			}
		}
		if got := optionsOf(after, "invite-role"); !slices.Equal(got, []string{"admin", "member", "viewer"}) {
			t.Errorf("an admin may invite %v", got)
		}
	})
}

func TestConsoleTeamAndProxiesShowEachRoleOnlyItsActions(t *testing.T) {
	t.Parallel()
	consoleTeamBackends(t, func(t *testing.T, h *harness) {
		owner, admin, member, viewer := h.register(t), h.register(t), h.register(t), h.register(t)
		h.member(t, owner, admin, team.RoleAdmin)
		h.member(t, owner, member, team.RoleMember)
		h.member(t, owner, viewer, team.RoleViewer)
		proxyID := str(h.addProxy(t, owner, map[string]any{"name": "Shared", "type": "socks5", "host": "127.0.0.1", "port": 1080, "username": "sam", "password": proxyPassword})["id"])
		before := h.teamMembers(t, owner)
		ids := map[string]string{}
		for email, m := range before {
			ids[email] = str(m["id"])
		}
		unchanged := func(who string) {
			t.Helper()
			if after := h.teamMembers(t, owner); len(after) != len(before) {
				t.Errorf("%s's refused requests changed the members: %v", who, after)
			} else {
				for email, m := range before {
					if str(after[email]["role"]) != str(m["role"]) || str(after[email]["status"]) != str(m["status"]) {
						t.Errorf("%s's refused requests changed %s: %v", who, email, after[email])
					}
				}
			}
			r := h.get("/api/v1/proxies?limit=100", bearer(owner.access)...)
			items := asList(r.env["data"])
			if len(items) != 1 {
				t.Fatalf("%s's refused requests left the proxies %v", who, items)
			}
			p := items[0].(map[string]any)
			if str(p["name"]) != "Shared" || p["lastCheck"] != nil || p["hasPassword"] != true || str(p["host"]) != "127.0.0.1" {
				t.Errorf("%s's refused requests changed the proxy: %v", who, p)
			}
		}
		forge := func(u *consoleUser, who, path string, form url.Values) {
			t.Helper()
			if p := u.post(path, form); p.status != http.StatusForbidden || !strings.Contains(text(p), "Not allowed") {
				t.Errorf("%s's POST %s: %d %s", who, path, p.status, text(p))
			}
		}
		pages := []string{"/app/team", "/app/proxies", "/app/proxies/" + proxyID}
		teamPosts := map[string]url.Values{
			"/app/team/invite": {"email": {"forged-invite@example.com"}, "role": {"viewer"}},
			"/app/team/members/" + ids[member.email] + "/role":   {"role": {"viewer"}},
			"/app/team/members/" + ids[member.email] + "/remove": {},
		}
		proxyWrites := map[string]url.Values{
			"/app/proxies/new":                                {"url": {"socks5://sam:" + proxyPassword + "@127.0.0.1:1081"}},
			"/app/proxies/test":                               {"url": {"socks5://sam:" + proxyPassword + "@127.0.0.1:1081"}},
			"/app/proxies/" + proxyID + "/check":              {},
			"/app/proxies/" + proxyID + "/edit":               {"name": {"Forged"}, "type": {"http"}, "host": {"127.0.0.1"}, "port": {"8080"}},
			"/app/proxies/" + proxyID + "/delete":             {},
			"/app/team/members/" + ids[owner.email] + "/role": {"role": {"admin"}},
		}

		t.Run("viewer", func(t *testing.T) {
			u := h.console(t)
			u.signin(viewer)
			u.inTeamOf(owner.teamID)
			for _, path := range pages {
				p := u.get(path)
				if p.status != http.StatusOK || (path != "/app/team" && !strings.Contains(text(p), "Shared")) {
					t.Fatalf("%s: %d %s", path, p.status, text(p))
				}
				for _, act := range actions(p) {
					if act != "POST /app/signout" && act != "POST /app/team/switch" {
						t.Errorf("%s offers the viewer %s", path, act)
					}
				}
			}
			for _, path := range []string{"/app/proxies/new", "/app/proxies/" + proxyID + "/edit", "/app/proxies/" + proxyID + "/delete", "/app/team/members/" + ids[member.email] + "/remove"} {
				if p := u.get(path); p.status != http.StatusForbidden {
					t.Errorf("the viewer's GET %s: %d %s", path, p.status, text(p))
				}
			}
			for path, form := range teamPosts {
				forge(u, "the viewer", path, form)
			}
			for path, form := range proxyWrites {
				forge(u, "the viewer", path, form)
			}
			unchanged("the viewer")
		})

		t.Run("member", func(t *testing.T) {
			u := h.console(t)
			u.signin(member)
			u.inTeamOf(owner.teamID)
			teamPage := u.get("/app/team")
			for _, act := range actions(teamPage) {
				if act != "POST /app/signout" && act != "POST /app/team/switch" {
					t.Errorf("the team page offers a member %s", act)
				}
			}
			// A member adds, tests, checks and edits proxies, but deletes
			// none.
			show := u.get("/app/proxies/" + proxyID)
			got := actions(show)
			for _, want := range []string{"POST /app/proxies/" + proxyID + "/check", "GET /app/proxies/" + proxyID + "/edit"} {
				if !slices.Contains(got, want) {
					t.Errorf("the proxy page offers a member %v, without %s", got, want)
				}
			}
			if slices.Contains(got, "GET /app/proxies/"+proxyID+"/delete") {
				t.Errorf("the proxy page offers a member its deletion: %v", got)
			}
			if !slices.Contains(actions(u.get("/app/proxies")), "GET /app/proxies/new") {
				t.Errorf("the proxy list offers a member no way to add one")
			}
			if p := u.get("/app/proxies/" + proxyID + "/delete"); p.status != http.StatusForbidden {
				t.Errorf("the member's GET of the delete page: %d", p.status)
			}
			for path, form := range teamPosts {
				forge(u, "the member", path, form)
			}
			forge(u, "the member", "/app/proxies/"+proxyID+"/delete", url.Values{})
			unchanged("the member")
		})

		t.Run("admin", func(t *testing.T) {
			u := h.console(t)
			u.signin(admin)
			u.inTeamOf(owner.teamID)
			page := u.get("/app/team")
			got := actions(page)
			for _, want := range []string{"POST /app/team/invite", "POST /app/team/members/" + ids[member.email] + "/role", "GET /app/team/members/" + ids[member.email] + "/remove"} {
				if !slices.Contains(got, want) {
					t.Errorf("the team page offers an admin %v, without %s", got, want)
				}
			}
			for _, act := range got {
				if strings.Contains(act, ids[owner.email]) {
					t.Errorf("the team page offers an admin %s on the owner", act)
				}
			}
			if roles := optionsOf(page, "invite-role"); slices.Contains(roles, "owner") {
				t.Errorf("an admin may invite %v", roles)
			}
			if roles := optionsOf(page, "role-"+ids[member.email]); slices.Contains(roles, "owner") || len(roles) != 3 {
				t.Errorf("an admin may give a member %v", roles)
			}
			if p := u.get("/app/team/members/" + ids[owner.email] + "/remove"); p.status != http.StatusForbidden {
				t.Errorf("an admin's GET of the owner's removal: %d", p.status)
			}
			// Only an owner makes or removes owners.
			forge(u, "the admin", "/app/team/invite", url.Values{"email": {"forged-owner@example.com"}, "role": {"owner"}})
			forge(u, "the admin", "/app/team/members/"+ids[member.email]+"/role", url.Values{"role": {"owner"}})
			forge(u, "the admin", "/app/team/members/"+ids[owner.email]+"/role", url.Values{"role": {"viewer"}})
			forge(u, "the admin", "/app/team/members/"+ids[owner.email]+"/remove", url.Values{})
			unchanged("the admin")
		})
	})
}

func TestConsoleTeamAndProxiesAddTestCheckAndDelete(t *testing.T) {
	t.Parallel()
	consoleTeamBackends(t, func(t *testing.T, h *harness) {
		socks := conformance.StartSOCKS5Proxy(t, "frank", proxyPassword)
		owner := h.register(t)
		u := h.console(t)
		u.signin(owner)
		port := strconv.Itoa(socks.Port)
		good := fmt.Sprintf("socks5://frank:%s@%s:%d", proxyPassword, socks.Host, socks.Port)
		wrong := fmt.Sprintf("socks5://frank:wrong-%s@%s:%d", proxyPassword, socks.Host, socks.Port)
		// noSecret fails when a console answer holds the password, in
		// its body or its headers.
		noSecret := func(p consolePage, what string) consolePage {
			t.Helper()
			if strings.Contains(p.body, proxyPassword) || strings.Contains(fmt.Sprint(p.header), proxyPassword) {
				t.Errorf("%s shows the proxy password", what)
			}
			return p
		}

		if p := noSecret(u.get("/app/proxies"), "the empty list"); !strings.Contains(text(p), "No proxies yet") || !slices.Contains(actions(p), "GET /app/proxies/new") {
			t.Errorf("the empty list: %s", text(p))
		}
		// By the form's fields and by the short form url.
		byForm := u.addProxy(url.Values{"name": {"By form"}, "type": {"socks5"}, "host": {socks.Host}, "port": {port}, "username": {"frank"}, "password": {proxyPassword}})
		byURL := u.addProxy(url.Values{"name": {"By url"}, "url": {good}})
		for _, id := range []string{byForm, byURL} {
			r := h.get("/api/v1/proxies/"+id, bearer(owner.access)...)
			expect(t, r, http.StatusOK)
			d := r.data()
			if d["hasPassword"] != true || str(d["username"]) != "frank" || str(d["type"]) != "socks5" || str(d["host"]) != socks.Host ||
				d["port"] != float64(socks.Port) || str(d["status"]) != "unknown" {
				t.Errorf("the API reads %v", d)
			}
			if _, ok := d["password"]; ok || strings.Contains(string(r.raw), proxyPassword) {
				t.Errorf("the API shows a password: %s", r.raw)
			}
		}
		shown := noSecret(u.get("/app/proxies/"+byURL), "the proxy page")
		for _, want := range []string{"By url", "socks5", socks.Host + ":" + port, "frank", "set (never shown)", "Never checked"} {
			if !strings.Contains(text(shown), want) {
				t.Errorf("the proxy page lacks %q: %s", want, text(shown))
			}
		}
		list := noSecret(u.get("/app/proxies"), "the list")
		for _, id := range []string{byForm, byURL} {
			if !slices.Contains(actions(list), "POST /app/proxies/"+id+"/check") {
				t.Errorf("the list offers no check of %s: %v", id, actions(list))
			}
		}
		if row := rowOf(list, "By form"); !strings.Contains(row, socks.Host+":"+port) || !strings.Contains(row, "frank") || !strings.Contains(row, "set") || !strings.Contains(row, "unknown") {
			t.Errorf("the list's row: %q", row)
		}

		// Both forms at once are refused in words, and the password is not
		// shown again.
		both := noSecret(u.post("/app/proxies/new", url.Values{"url": {good}, "host": {socks.Host}, "port": {port}}), "a refused add")
		if both.status != http.StatusUnprocessableEntity || !strings.Contains(text(both), "give either url or type, host and port, not both") ||
			!strings.Contains(text(both), "The password is not shown again") {
			t.Errorf("url and fields together: %d %s", both.status, text(both))
		}
		bad := noSecret(u.post("/app/proxies/new", url.Values{"type": {"socks5"}, "host": {socks.Host}, "port": {"many"}, "password": {proxyPassword}}), "a bad port")
		if bad.status != http.StatusUnprocessableEntity || !strings.Contains(text(bad), "port") {
			t.Errorf("a bad port: %d %s", bad.status, text(bad))
		}

		// A test answers with what the probe saw and stores nothing.
		tested := noSecret(u.post("/app/proxies/test", url.Values{"url": {good}}), "a test's answer")
		for _, want := range []string{"Test of socks5://" + socks.Host + ":" + port + ": it works", "127.0.0.1", "NL", "Amsterdam", "Europe/Amsterdam", "Nothing was stored"} {
			if tested.status != http.StatusOK || !strings.Contains(text(tested), want) {
				t.Errorf("the test's answer lacks %q: %d %s", want, tested.status, text(tested))
			}
		}
		failed := noSecret(u.post("/app/proxies/test", url.Values{"type": {"socks5"}, "host": {socks.Host}, "port": {port}, "username": {"frank"}, "password": {"wrong-" + proxyPassword}}), "a failed test")
		if failed.status != http.StatusOK || !strings.Contains(text(failed), "it failed") || !strings.Contains(text(failed), "Error") {
			t.Errorf("a failed test: %d %s", failed.status, text(failed))
		}
		if r := h.get("/api/v1/proxies?limit=100", bearer(owner.access)...); len(asList(r.env["data"])) != 2 {
			t.Errorf("the tests stored proxies: %s", r.raw)
		}

		// A check stores its result, which the proxy's page shows.
		checked := noSecret(u.follow(u.post("/app/proxies/"+byForm+"/check", url.Values{})), "a check's answer")
		for _, want := range []string{"Check passed", "127.0.0.1", "Amsterdam, NL", "Result ok", "Europe/Amsterdam"} {
			if !strings.Contains(text(checked), want) {
				t.Errorf("after the check, the page lacks %q: %s", want, text(checked))
			}
		}
		r := h.get("/api/v1/proxies/"+byForm, bearer(owner.access)...)
		if lc, _ := r.data()["lastCheck"].(map[string]any); str(r.data()["status"]) != "ok" || lc == nil || str(lc["exitIp"]) != "127.0.0.1" || str(lc["city"]) != "Amsterdam" {
			t.Errorf("the API reads %v after the check", r.data())
		}
		if row := rowOf(u.get("/app/proxies"), "By form"); !strings.Contains(row, "ok") || !strings.Contains(row, "exit IP 127.0.0.1") {
			t.Errorf("the list's row after the check: %q", row)
		}
		broken := u.addProxy(url.Values{"name": {"Broken"}, "url": {wrong}})
		brokenPage := noSecret(u.follow(u.post("/app/proxies/"+broken+"/check", url.Values{})), "a failed check")
		if !strings.Contains(text(brokenPage), "Check failed") || !strings.Contains(text(brokenPage), "Result failed") {
			t.Errorf("a failed check: %s", text(brokenPage))
		}
		if r := h.get("/api/v1/proxies?status=failed", bearer(owner.access)...); len(asList(r.env["data"])) != 1 {
			t.Errorf("failed proxies: %s", r.raw)
		}
		if p := u.get("/app/proxies?status=failed"); !strings.Contains(text(p), "Broken") || strings.Contains(text(p), "By form") {
			t.Errorf("the list of failed proxies: %s", text(p))
		}

		// An edit keeps the password unless a new one is typed.
		edit := noSecret(u.get("/app/proxies/"+byURL+"/edit"), "the edit form")
		if !strings.Contains(text(edit), "a password is set; leave empty to keep it") {
			t.Errorf("the edit form: %s", text(edit))
		}
		saved := u.follow(u.post("/app/proxies/"+byURL+"/edit", url.Values{"name": {"Renamed"}, "type": {"socks5"}, "host": {socks.Host}, "port": {port}, "username": {"frank"}, "password": {""}}))
		if !strings.Contains(text(saved), "Proxy saved") || !strings.Contains(text(saved), "Renamed") {
			t.Errorf("after the edit: %s", text(saved))
		}
		if r := h.get("/api/v1/proxies/"+byURL, bearer(owner.access)...); str(r.data()["name"]) != "Renamed" || r.data()["hasPassword"] != true {
			t.Errorf("the API reads %v after the edit", r.data())
		}

		// A proxy a profile uses is not deleted; the page says why.
		profileID := h.createProfile(t, owner, map[string]any{"name": "Behind", "proxy": map[string]any{"id": byForm}})
		confirm := u.get("/app/proxies/" + byForm + "/delete")
		if !strings.Contains(text(confirm), "cannot be undone") || !slices.Contains(actions(confirm), "POST /app/proxies/"+byForm+"/delete") {
			t.Errorf("the delete confirmation: %s", text(confirm))
		}
		inUse := u.post("/app/proxies/"+byForm+"/delete", url.Values{})
		if inUse.status != http.StatusConflict || !strings.Contains(text(inUse), "in use by a profile") || !strings.Contains(text(inUse), "give it another proxy, or none") {
			t.Errorf("deleting a proxy in use: %d %s", inUse.status, text(inUse))
		}
		expect(t, h.get("/api/v1/proxies/"+byForm, bearer(owner.access)...), http.StatusOK)
		expect(t, h.patch("/api/v1/profiles/"+profileID, map[string]any{"proxy": nil}, bearer(owner.access)...), http.StatusOK)
		gone := u.follow(u.post("/app/proxies/"+byForm+"/delete", url.Values{}))
		if !strings.Contains(text(gone), "Proxy By form deleted") || strings.Contains(rowOf(gone, "By form"), "socks5") {
			t.Errorf("after the delete: %s", text(gone))
		}
		expect(t, h.get("/api/v1/proxies/"+byForm, bearer(owner.access)...), http.StatusNotFound)
		if p := u.get("/app/proxies/" + byForm); p.status != http.StatusNotFound || !strings.Contains(text(p), "not found") {
			t.Errorf("a deleted proxy's page: %d %s", p.status, text(p))
		}
	})
}

func TestConsoleTeamAndProxiesCannotReachAnotherTeam(t *testing.T) {
	t.Parallel()
	consoleTeamBackends(t, func(t *testing.T, h *harness) {
		victim, colleague, attacker := h.register(t), h.register(t), h.register(t)
		memberID := h.member(t, victim, colleague, team.RoleMember)
		proxyID := str(h.addProxy(t, victim, map[string]any{"name": "Secret proxy", "type": "http", "host": "127.0.0.1", "port": 3128})["id"])
		u := h.console(t)
		u.signin(attacker)

		for _, path := range []string{"/app/proxies/" + proxyID, "/app/proxies/" + proxyID + "/edit", "/app/proxies/" + proxyID + "/delete", "/app/team/members/" + memberID + "/remove"} {
			if p := u.get(path); p.status != http.StatusNotFound || strings.Contains(text(p), "Secret proxy") || strings.Contains(text(p), colleague.email) {
				t.Errorf("GET %s: %d %s", path, p.status, text(p))
			}
		}
		for path, form := range map[string]url.Values{
			"/app/proxies/" + proxyID + "/check":        {},
			"/app/proxies/" + proxyID + "/edit":         {"name": {"Taken"}, "type": {"http"}, "host": {"127.0.0.1"}, "port": {"3129"}},
			"/app/proxies/" + proxyID + "/delete":       {},
			"/app/team/members/" + memberID + "/role":   {"role": {"viewer"}},
			"/app/team/members/" + memberID + "/remove": {},
		} {
			if p := u.post(path, form); p.status != http.StatusNotFound {
				t.Errorf("POST %s: %d %s", path, p.status, text(p))
			}
		}
		// Nor are the victim's members or proxies on the attacker's pages.
		for _, path := range []string{"/app/team", "/app/proxies"} {
			if p := u.get(path); strings.Contains(text(p), "Secret proxy") || strings.Contains(text(p), colleague.email) || strings.Contains(text(p), victim.email) {
				t.Errorf("%s shows the other team: %s", path, text(p))
			}
		}
		r := h.get("/api/v1/proxies/"+proxyID, bearer(victim.access)...)
		if str(r.data()["name"]) != "Secret proxy" || r.data()["port"] != float64(3128) || r.data()["lastCheck"] != nil {
			t.Errorf("the victim's proxy changed: %v", r.data())
		}
		if m := h.teamMembers(t, victim)[colleague.email]; str(m["role"]) != "member" || str(m["status"]) != "active" {
			t.Errorf("the victim's member changed: %v", m)
		}
	})
}

func TestConsoleTeamAndProxiesRefuseCrossSiteRequests(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", env: consoleTeamEnv(t)})
	owner, colleague := h.register(t), h.register(t)
	memberID := h.member(t, owner, colleague, team.RoleMember)
	proxyID := str(h.addProxy(t, owner, map[string]any{"name": "Kept", "type": "socks5", "host": "127.0.0.1", "port": 1080})["id"])
	u := h.console(t)
	u.signin(owner)

	for path, form := range map[string]url.Values{
		"/app/team/invite":                          {"email": {"forged@example.com"}, "role": {"admin"}},
		"/app/team/members/" + memberID + "/role":   {"role": {"owner"}},
		"/app/team/members/" + memberID + "/remove": {},
		"/app/proxies/new":                          {"url": {"socks5://127.0.0.1:1081"}},
		"/app/proxies/test":                         {"url": {"socks5://127.0.0.1:1081"}},
		"/app/proxies/" + proxyID + "/check":        {},
		"/app/proxies/" + proxyID + "/edit":         {"name": {"Forged"}, "type": {"http"}, "host": {"127.0.0.1"}, "port": {"8080"}},
		"/app/proxies/" + proxyID + "/delete":       {},
	} {
		p := u.post(path, form, "Origin", "https://attacker.test", "Sec-Fetch-Site", "cross-site")
		if p.status != http.StatusForbidden || !strings.Contains(text(p), "came from another site") {
			t.Errorf("POST %s from another site: %d %s", path, p.status, text(p))
		}
	}
	members := h.teamMembers(t, owner)
	if len(members) != 2 || str(members[colleague.email]["role"]) != "member" || str(members[colleague.email]["status"]) != "active" {
		t.Errorf("after the forged requests the members are %v", members)
	}
	r := h.get("/api/v1/proxies?limit=100", bearer(owner.access)...)
	items := asList(r.env["data"])
	if len(items) != 1 || str(items[0].(map[string]any)["name"]) != "Kept" || items[0].(map[string]any)["lastCheck"] != nil {
		t.Errorf("after the forged requests the proxies are %v", items)
	}
}

func TestConsoleTeamAndProxiesCannotBeFramedAndRunNoInlineScript(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", env: consoleTeamEnv(t)})
	owner, colleague := h.register(t), h.register(t)
	memberID := h.member(t, owner, colleague, team.RoleMember)
	proxyID := str(h.addProxy(t, owner, map[string]any{"name": "Framed", "type": "socks5", "host": "127.0.0.1", "port": 1080})["id"])
	u := h.console(t)
	u.signin(owner)
	for _, path := range []string{"/app/team", "/app/team/members/" + memberID + "/remove", "/app/team/members/mem_missing/remove",
		"/app/proxies", "/app/proxies?status=ok", "/app/proxies/new", "/app/proxies/" + proxyID, "/app/proxies/" + proxyID + "/edit",
		"/app/proxies/" + proxyID + "/delete", "/app/proxies/prx_missing"} {
		p := u.get(path)
		if p.doc == nil {
			t.Errorf("%s: %d is no page", path, p.status)
			continue
		}
		checkConsolePage(t, "GET "+path, p)
	}
	// The answers of the test and a refused add are pages too.
	checkConsolePage(t, "POST /app/proxies/test", u.post("/app/proxies/test", url.Values{"type": {"http"}, "host": {"127.0.0.1"}, "port": {strconv.Itoa(conformance.ClosedPort(t).Port)}}))
	checkConsolePage(t, "POST /app/proxies/new", u.post("/app/proxies/new", url.Values{"type": {"nope"}}))
}

func TestConsoleTeamAndProxiesPageThroughLongLists(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", env: consoleTeamEnv(t)})
	owner := h.register(t)
	for i := range 30 {
		expect(t, h.post("/api/v1/teams/invite", map[string]any{"email": fmt.Sprintf("paged%d@example.com", i), "role": "viewer"}, bearer(owner.access)...), http.StatusCreated)
		h.addProxy(t, owner, map[string]any{"name": fmt.Sprintf("Paged %d", i), "type": "http", "host": "127.0.0.1", "port": 3000 + i})
	}
	u := h.console(t)
	u.signin(owner)
	// Every member and every proxy shows once over the pages, each page
	// linking the next.
	for path, want := range map[string]func(i int) string{
		"/app/team":    func(i int) string { return fmt.Sprintf("paged%d@example.com", i) },
		"/app/proxies": func(i int) string { return fmt.Sprintf("127.0.0.1:%d", 3000+i) },
	} {
		seen, pages := "", 0
		for next := path; next != ""; pages++ {
			p := u.get(next)
			if p.status != http.StatusOK || pages > 5 {
				t.Fatalf("%s: %d %s", next, p.status, text(p))
			}
			seen += text(p) + "\n"
			next = ""
			walk(p.doc, func(n *html.Node) {
				if n.Data == "a" && attr(n, "rel") == "next" {
					next = attr(n, "href")
				}
			})
		}
		if pages != 2 {
			t.Errorf("%s: %d pages, want 2", path, pages)
		}
		for i := range 30 {
			if n := strings.Count(seen, want(i)+" "); n != 1 {
				t.Errorf("%s shows %s %d times", path, want(i), n)
			}
		}
	}
}
