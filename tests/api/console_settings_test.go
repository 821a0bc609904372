package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// inputValue is the value of the page's input with id.
func inputValue(p consolePage, id string) string {
	var v string
	walk(p.doc, func(n *html.Node) {
		if n.Data == "input" && attr(n, "id") == id {
			v = attr(n, "value")
		}
	})
	return v
}

// copies reports whether the page offers a copy button for the field id.
func copies(p consolePage, id string) bool {
	found := false
	walk(p.doc, func(n *html.Node) {
		if n.Data == "button" && attr(n, "data-copy") == id {
			found = true
		}
	})
	return found
}

// problemFields are the fields a refusal names.
func problemFields(p consolePage) []string {
	var out []string
	walk(p.doc, func(n *html.Node) {
		if n.Data == "div" && strings.Contains(attr(n, "class"), "problem") {
			walk(n, func(s *html.Node) {
				if s.Data == "strong" && s.FirstChild != nil {
					out = append(out, s.FirstChild.Data)
				}
			})
		}
	})
	return out
}

// settingsTabs are the links of the page's settings sub-navigation.
func settingsTabs(p consolePage) []string {
	var out []string
	walk(p.doc, func(n *html.Node) {
		if n.Data != "nav" || !strings.Contains(attr(n, "class"), "subnav") {
			return
		}
		walk(n, func(a *html.Node) {
			if a.Data == "a" {
				out = append(out, attr(a, "href"))
			}
		})
	})
	return out
}

var wantSettingsTabs = []string{"/app/settings/api-keys", "/app/settings/webhooks", "/app/settings/webhooks/failed"}

// apiKeys lists the caller's API keys through the API.
func (h *harness) apiKeys(t *testing.T, a account) []map[string]any {
	t.Helper()
	r := h.get("/api/v1/api-keys", bearer(a.access)...)
	expect(t, r, http.StatusOK)
	var out []map[string]any
	for _, k := range asList(r.env["data"]) {
		out = append(out, k.(map[string]any))
	}
	return out
}

// endpoints lists the team's webhook endpoints through the API.
func (h *harness) endpoints(t *testing.T, a account) []map[string]any {
	t.Helper()
	r := h.get("/v1/webhooks", bearer(a.access)...)
	expect(t, r, http.StatusOK)
	var out []map[string]any
	for _, e := range asList(r.env["data"]) {
		out = append(out, e.(map[string]any))
	}
	return out
}

// switchTo makes the console act in the team id.
func (u *consoleUser) switchTo(id string) {
	u.t.Helper()
	if p := u.post("/app/team/switch", url.Values{"team": {id}}); p.status != http.StatusSeeOther {
		u.t.Fatalf("switch: %d %s", p.status, text(p))
	}
}

func TestConsoleSettingsAPIKeys(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		u := h.console(t)
		u.signin(a)

		list := u.get("/app/settings/api-keys")
		if list.status != http.StatusOK || !strings.Contains(text(list), "You hold no API key") {
			t.Fatalf("the first list: %d %s", list.status, text(list))
		}
		if tabs := settingsTabs(list); !slices.Equal(tabs, wantSettingsTabs) {
			t.Errorf("the settings sub-navigation links %v, want %v", tabs, wantSettingsTabs)
		}

		bad := u.post("/app/settings/api-keys", url.Values{"name": {"   "}})
		if bad.status != http.StatusUnprocessableEntity || !strings.Contains(text(bad), "Please check the form") || !slices.Equal(problemFields(bad), []string{"name"}) {
			t.Errorf("a key without a name: %d %s", bad.status, text(bad))
		}
		if len(h.apiKeys(t, a)) != 0 {
			t.Fatal("a refused create made a key")
		}

		created := u.post("/app/settings/api-keys", url.Values{"name": {"Deploy bot"}})
		key := inputValue(created, "api-key")
		if created.status != http.StatusOK || key == "" || !copies(created, "api-key") || !strings.Contains(text(created), "will not be shown again") {
			t.Fatalf("the create's answer: %d, key %q: %s", created.status, key, text(created))
		}
		if created.location != "" || strings.Contains(strings.Join(created.header.Values("Set-Cookie"), ";"), key) {
			t.Errorf("the key left the page: location %q, cookies %v", created.location, created.header.Values("Set-Cookie"))
		}

		// The key works against the API, as the user, in the team.
		me := h.get("/api/v1/me", "X-API-Key", key)
		expect(t, me, http.StatusOK)
		if str(me.data()["authMethod"]) != "api_key" || str(me.data()["user"].(map[string]any)["email"]) != a.email {
			t.Errorf("/me with the console's key: %s", me.raw)
		}

		keys := h.apiKeys(t, a)
		if len(keys) != 1 || str(keys[0]["name"]) != "Deploy bot" {
			t.Fatalf("the API lists %v", keys)
		}
		id, prefix := str(keys[0]["id"]), str(keys[0]["prefix"])
		var used time.Time
		poll.Until(t, "the key's use to be recorded", func() bool {
			k := h.apiKeys(t, a)[0]
			if ms, ok := k["lastUsedAt"].(float64); ok {
				used = time.UnixMilli(int64(ms)).UTC()
				return true
			}
			return false
		})
		after := u.get("/app/settings/api-keys")
		for _, want := range []string{"Deploy bot", prefix, used.Format("2006-01-02 15:04 UTC")} {
			if !strings.Contains(text(after), want) {
				t.Errorf("the list lacks %q: %s", want, text(after))
			}
		}
		if strings.Contains(after.body, key) || strings.Contains(after.body, strings.TrimPrefix(key, prefix)) {
			t.Error("the list shows the key again")
		}
		if !slices.Contains(actions(after), "GET /app/settings/api-keys/"+id+"/revoke") {
			t.Errorf("the list offers %v, no revoke", actions(after))
		}

		confirm := u.get("/app/settings/api-keys/" + id + "/revoke")
		if confirm.status != http.StatusOK || !strings.Contains(text(confirm), "Deploy bot") || !strings.Contains(text(confirm), "cannot be undone") ||
			!slices.Contains(actions(confirm), "POST /app/settings/api-keys/"+id+"/revoke") {
			t.Errorf("the revoke confirmation: %d %s", confirm.status, text(confirm))
		}
		if strings.Contains(confirm.body, key) {
			t.Error("the revoke confirmation shows the key")
		}
		revoked := u.follow(u.post("/app/settings/api-keys/"+id+"/revoke", url.Values{}))
		if !strings.Contains(text(revoked), "API key revoked") || strings.Contains(text(revoked), "Deploy bot") {
			t.Errorf("after the revoke: %s", text(revoked))
		}
		expect(t, h.get("/api/v1/me", "X-API-Key", key), http.StatusUnauthorized)
		if p := u.post("/app/settings/api-keys/"+id+"/revoke", url.Values{}); p.status != http.StatusNotFound {
			t.Errorf("revoking again: %d %s", p.status, text(p))
		}
	})
}

func TestConsoleSettingsWebhookEndpoints(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		u := h.console(t)
		u.signin(a)
		if p := u.get("/app/settings/webhooks"); p.status != http.StatusOK || !strings.Contains(text(p), "No webhook endpoints yet") ||
			!slices.Contains(actions(p), "GET /app/settings/webhooks/new") {
			t.Fatalf("the first list: %d %v %s", p.status, actions(p), text(p))
		}
		form := u.get("/app/settings/webhooks/new")
		for _, typ := range []string{"profile.created", "proxy.added", "team.member_removed"} {
			found := false
			walk(form.doc, func(n *html.Node) {
				if n.Data == "input" && attr(n, "type") == "checkbox" && attr(n, "name") == "events" && attr(n, "value") == typ {
					found = true
				}
			})
			if !found {
				t.Errorf("the form offers no checkbox for %s", typ)
			}
		}

		bad := u.post("/app/settings/webhooks/new", url.Values{"url": {"hooks"}, "secret": {"too short"}})
		if bad.status != http.StatusUnprocessableEntity || !strings.Contains(text(bad), "Please check the form") {
			t.Fatalf("an invalid endpoint: %d %s", bad.status, text(bad))
		}
		if got := problemFields(bad); !slices.Equal(got, []string{"url", "events", "secret"}) {
			t.Errorf("the refusal names the fields %v: %s", got, text(bad))
		}
		if len(h.endpoints(t, a)) != 0 {
			t.Fatal("a refused create made an endpoint")
		}

		target := "https://" + publicReceiver + "/console"
		created := u.post("/app/settings/webhooks/new", url.Values{"url": {target}, "events": {"profile.created", "proxy.added"}})
		secret := inputValue(created, "webhook-secret")
		if created.status != http.StatusOK || len(secret) < 32 || !copies(created, "webhook-secret") || !strings.Contains(text(created), "will not be shown again") {
			t.Fatalf("the create's answer: %d, secret %q: %s", created.status, secret, text(created))
		}
		eps := h.endpoints(t, a)
		if len(eps) != 1 || str(eps[0]["url"]) != target || eps[0]["enabled"] != true ||
			!slices.Equal([]any{"profile.created", "proxy.added"}, asList(eps[0]["events"])) {
			t.Fatalf("the API lists %v", eps)
		}
		id := str(eps[0]["id"])

		list := u.get("/app/settings/webhooks")
		for _, want := range []string{target, "profile.created, proxy.added", "enabled"} {
			if !strings.Contains(text(list), want) {
				t.Errorf("the list lacks %q: %s", want, text(list))
			}
		}
		if strings.Contains(list.body, secret) {
			t.Error("the list shows the secret again")
		}
		for _, want := range []string{"POST /app/settings/webhooks/" + id + "/test", "POST /app/settings/webhooks/" + id + "/enabled", "GET /app/settings/webhooks/" + id + "/delete"} {
			if !slices.Contains(actions(list), want) {
				t.Errorf("the list offers %v, not %s", actions(list), want)
			}
		}

		// Disable, enable.
		off := u.follow(u.post("/app/settings/webhooks/"+id+"/enabled", url.Values{"enabled": {"false"}}))
		if !strings.Contains(text(off), "disabled") || h.endpoints(t, a)[0]["enabled"] != false {
			t.Errorf("after disabling: %s, API %v", text(off), h.endpoints(t, a))
		}
		u.follow(u.post("/app/settings/webhooks/"+id+"/enabled", url.Values{"enabled": {"true"}}))
		if h.endpoints(t, a)[0]["enabled"] != true {
			t.Errorf("after enabling, the API reads %v", h.endpoints(t, a))
		}

		// A test event: the page says the event id the delivery carries.
		tested := u.follow(u.post("/app/settings/webhooks/"+id+"/test", url.Values{"event_type": {"proxy.added"}}))
		ds := h.deliveries(t, a, id, "")
		if len(ds) != 1 || str(ds[0]["eventType"]) != "proxy.added" {
			t.Fatalf("the test's deliveries: %v", ds)
		}
		if !strings.Contains(text(tested), "Test event "+str(ds[0]["eventId"])) {
			t.Errorf("after the test the page says %s, not event %v", text(tested), ds[0]["eventId"])
		}
		if p := u.post("/app/settings/webhooks/"+id+"/test", url.Values{"event_type": {"profile.exploded"}}); p.status != http.StatusUnprocessableEntity {
			t.Errorf("a test of an unknown event type: %d %s", p.status, text(p))
		}

		confirm := u.get("/app/settings/webhooks/" + id + "/delete")
		if !strings.Contains(text(confirm), target) || !strings.Contains(text(confirm), "cannot be undone") {
			t.Errorf("the delete confirmation: %s", text(confirm))
		}
		gone := u.follow(u.post("/app/settings/webhooks/"+id+"/delete", url.Values{}))
		if !strings.Contains(text(gone), "Webhook endpoint deleted") || strings.Contains(text(gone), target) {
			t.Errorf("after the delete: %s", text(gone))
		}
		if len(h.endpoints(t, a)) != 0 {
			t.Errorf("after the delete the API lists %v", h.endpoints(t, a))
		}
		if p := u.get("/app/settings/webhooks/" + id + "/delete"); p.status != http.StatusNotFound {
			t.Errorf("a deleted endpoint's page: %d", p.status)
		}
	})
}

func TestConsoleSettingsFailedDeliveriesRetry(t *testing.T) {
	t.Parallel()
	eachWebhookBackend(t, func(t *testing.T, h *harness) {
		rc := newReceiver(t, 503)
		a := h.register(t)
		u := h.console(t)
		u.signin(a)
		target := rc.srv.URL + "/hook"
		created := u.post("/app/settings/webhooks/new", url.Values{"url": {target}, "events": {"profile.created"}, "secret": {webhookSecret}})
		if created.status != http.StatusOK || inputValue(created, "webhook-secret") != webhookSecret {
			t.Fatalf("create: %d %s", created.status, text(created))
		}
		ep := str(h.endpoints(t, a)[0]["id"])

		if p := u.get("/app/settings/webhooks/failed"); p.status != http.StatusOK || !strings.Contains(text(p), "No failed deliveries") {
			t.Errorf("before any failure: %d %s", p.status, text(p))
		}
		h.createProfile(t, a, nil)
		h.waitDelivery(t, a, ep, "pending", 1)
		for i, gap := range []time.Duration{5 * time.Second, 25 * time.Second} {
			h.clock.Advance(gap)
			h.waitDelivery(t, a, ep, "pending", i+2)
		}
		h.clock.Advance(125 * time.Second)
		d := h.waitDelivery(t, a, ep, "failed", 4)
		dlv, evt := str(d["id"]), str(d["eventId"])

		retry := "POST /app/settings/webhooks/" + ep + "/deliveries/" + dlv + "/retry"
		for _, path := range []string{"/app/settings/webhooks/failed", "/app/settings/webhooks/failed?endpoint=" + ep} {
			p := u.get(path)
			if p.status != http.StatusOK || !slices.Contains(actions(p), retry) {
				t.Fatalf("%s: %d %v %s", path, p.status, actions(p), text(p))
			}
			for _, want := range []string{target, "profile.created", evt, "HTTP 503", "receiver says 503"} {
				if !strings.Contains(text(p), want) {
					t.Errorf("%s lacks %q: %s", path, want, text(p))
				}
			}
			rows := 0
			walk(p.doc, func(n *html.Node) {
				if n.Data == "tr" && n.Parent != nil && n.Parent.Data == "tbody" {
					rows++
				}
			})
			if rows != 4 {
				t.Errorf("%s shows %d attempts, want 4", path, rows)
			}
		}

		rc.setScript(200)
		after := u.post("/app/settings/webhooks/"+ep+"/deliveries/"+dlv+"/retry", url.Values{})
		if after.status != http.StatusSeeOther || after.location != "/app/settings/webhooks/failed" {
			t.Fatalf("retry: %d %q %s", after.status, after.location, text(after))
		}
		if p := u.get(after.location); !strings.Contains(text(p), "queued again") || !strings.Contains(text(p), evt) {
			t.Errorf("after the retry: %s", text(p))
		}
		got := rc.waitFor(1)
		if got[0].payload["id"] != evt || !got[0].validMAC {
			t.Errorf("the retry delivered %v (signature valid: %v)", got[0].payload["id"], got[0].validMAC)
		}
		h.waitDelivery(t, a, ep, "succeeded", 5)
		if p := u.get("/app/settings/webhooks/failed"); strings.Contains(text(p), evt) || !strings.Contains(text(p), "No failed deliveries") {
			t.Errorf("after a successful retry: %s", text(p))
		}
		if p := u.post("/app/settings/webhooks/"+ep+"/deliveries/"+dlv+"/retry", url.Values{}); p.status != http.StatusConflict {
			t.Errorf("retrying a delivered one: %d %s", p.status, text(p))
		}
	})
}

// settingsActions are the Settings pages' state-changing requests, each
// with a form that would succeed for an owner of the team of endpoint ep,
// delivery dlv and the owner's API key key.
func settingsActions(ep, dlv, key string) map[string]url.Values {
	return map[string]url.Values{
		"/app/settings/api-keys":                                         {"name": {"Forged"}},
		"/app/settings/api-keys/" + key + "/revoke":                      {},
		"/app/settings/webhooks/new":                                     {"url": {"https://" + publicReceiver + "/forged"}, "events": {"*"}},
		"/app/settings/webhooks/" + ep + "/enabled":                      {"enabled": {"false"}},
		"/app/settings/webhooks/" + ep + "/test":                         {"event_type": {"profile.created"}},
		"/app/settings/webhooks/" + ep + "/delete":                       {},
		"/app/settings/webhooks/" + ep + "/deliveries/" + dlv + "/retry": {},
	}
}

// settingsFixture is an owner's team with an endpoint, a delivery to it
// and an API key of the owner's.
type settingsFixture struct {
	owner               account
	ep, dlv, keyID, key string
}

func newSettingsFixture(t *testing.T, h *harness) settingsFixture {
	t.Helper()
	f := settingsFixture{owner: h.register(t)}
	f.ep = h.subscribe(t, f.owner, "https://"+publicReceiver+"/owner", "proxy.added")
	r := h.post("/v1/webhooks/"+f.ep+"/test", map[string]any{"event_type": "proxy.added"}, bearer(f.owner.access)...)
	expect(t, r, http.StatusAccepted)
	f.dlv = str(r.data()["deliveryId"])
	r = h.post("/api/v1/api-keys", map[string]any{"name": "Owner's key"}, bearer(f.owner.access)...)
	expect(t, r, http.StatusCreated)
	f.keyID, f.key = str(r.data()["id"]), str(r.data()["key"])
	return f
}

// unchanged fails t unless the fixture is as it was made: one endpoint,
// enabled, with its one delivery; the owner's one key, working.
func (f settingsFixture) unchanged(t *testing.T, h *harness) {
	t.Helper()
	eps := h.endpoints(t, f.owner)
	if len(eps) != 1 || str(eps[0]["id"]) != f.ep || eps[0]["enabled"] != true {
		t.Errorf("the team's endpoints changed: %v", eps)
	}
	if ds := h.deliveries(t, f.owner, f.ep, ""); len(ds) != 1 || str(ds[0]["id"]) != f.dlv {
		t.Errorf("the endpoint's deliveries changed: %v", ds)
	}
	if keys := h.apiKeys(t, f.owner); len(keys) != 1 || str(keys[0]["id"]) != f.keyID {
		t.Errorf("the owner's keys changed: %v", keys)
	}
	expect(t, h.get("/api/v1/me", "X-API-Key", f.key), http.StatusOK)
}

func TestConsoleSettingsMembersAndViewersSeeNoAdminAction(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		f := newSettingsFixture(t, h)
		for _, role := range []team.Role{team.RoleMember, team.RoleViewer} {
			t.Run(string(role), func(t *testing.T) {
				a := h.register(t)
				h.member(t, f.owner, a, role)
				u := h.console(t)
				u.signin(a)
				u.switchTo(f.owner.teamID)

				for _, path := range []string{"/app/settings/webhooks", "/app/settings/webhooks/failed", "/app/settings/webhooks/failed?endpoint=" + f.ep} {
					p := u.get(path)
					if p.status != http.StatusForbidden || !strings.Contains(text(p), "admins and owners") || strings.Contains(text(p), publicReceiver) {
						t.Errorf("%s: %d %s", path, p.status, text(p))
					}
					if tabs := settingsTabs(p); !slices.Equal(tabs, wantSettingsTabs) {
						t.Errorf("%s: the settings sub-navigation links %v", path, tabs)
					}
					for _, act := range actions(p) {
						if act != "POST /app/signout" && act != "POST /app/team/switch" {
							t.Errorf("%s offers the %s %s", path, role, act)
						}
					}
				}
				for _, path := range []string{"/app/settings/webhooks/new", "/app/settings/webhooks/" + f.ep + "/delete"} {
					if p := u.get(path); p.status != http.StatusForbidden || strings.Contains(text(p), publicReceiver) {
						t.Errorf("GET %s: %d %s", path, p.status, text(p))
					}
				}
				// Every role holds API keys of its own (the API's rule):
				// the page offers the form, and no key of the owner's.
				keys := u.get("/app/settings/api-keys")
				if keys.status != http.StatusOK || !slices.Contains(actions(keys), "POST /app/settings/api-keys") || strings.Contains(text(keys), "Owner's key") {
					t.Errorf("the %s's API keys page: %d %v %s", role, keys.status, actions(keys), text(keys))
				}
				if p := u.get("/app/settings/api-keys/" + f.keyID + "/revoke"); p.status != http.StatusNotFound {
					t.Errorf("the owner's key's revoke page: %d %s", p.status, text(p))
				}

				for path, form := range settingsActions(f.ep, f.dlv, f.keyID) {
					if path == "/app/settings/api-keys" {
						continue
					}
					p := u.post(path, form)
					if p.status != http.StatusForbidden || !strings.Contains(text(p), "Not allowed") {
						t.Errorf("the %s's POST %s: %d %s", role, path, p.status, text(p))
					}
				}
				f.unchanged(t, h)
			})
		}
	})
}

func TestConsoleSettingsCannotReachAnotherTeam(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		f := newSettingsFixture(t, h)
		attacker := h.register(t)
		u := h.console(t)
		u.signin(attacker)

		for _, path := range []string{"/app/settings/webhooks/" + f.ep + "/delete", "/app/settings/webhooks/failed?endpoint=" + f.ep, "/app/settings/api-keys/" + f.keyID + "/revoke"} {
			if p := u.get(path); p.status != http.StatusNotFound || strings.Contains(text(p), publicReceiver) || strings.Contains(text(p), "Owner's key") {
				t.Errorf("GET %s: %d %s", path, p.status, text(p))
			}
		}
		for _, path := range []string{"/app/settings/webhooks", "/app/settings/webhooks/failed", "/app/settings/api-keys"} {
			if p := u.get(path); p.status != http.StatusOK || strings.Contains(text(p), publicReceiver) || strings.Contains(text(p), "Owner's key") {
				t.Errorf("the attacker's %s: %d %s", path, p.status, text(p))
			}
		}
		for path, form := range settingsActions(f.ep, f.dlv, f.keyID) {
			if !strings.Contains(path, f.ep) && !strings.Contains(path, f.keyID) {
				continue
			}
			if p := u.post(path, form); p.status != http.StatusNotFound {
				t.Errorf("POST %s: %d %s", path, p.status, text(p))
			}
		}
		// The victim's delivery named under the attacker's own endpoint.
		own := h.subscribe(t, attacker, "https://"+publicReceiver+"/attacker")
		if p := u.post("/app/settings/webhooks/"+own+"/deliveries/"+f.dlv+"/retry", url.Values{}); p.status != http.StatusNotFound {
			t.Errorf("retrying the victim's delivery under one's own endpoint: %d %s", p.status, text(p))
		}
		f.unchanged(t, h)
	})
}

func TestConsoleSettingsRefusesCrossSiteRequests(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	f := newSettingsFixture(t, h)
	u := h.console(t)
	u.signin(f.owner)
	forged := map[string][]string{
		"a page of another site":         {"Origin", "https://attacker.test", "Sec-Fetch-Site", "cross-site"},
		"a sibling site":                 {"Origin", "https://evil.localhost", "Sec-Fetch-Site", "same-site"},
		"an old browser, another origin": {"Origin", "https://attacker.test", "Sec-Fetch-Site", ""},
	}
	for path, form := range settingsActions(f.ep, f.dlv, f.keyID) {
		for how, headers := range forged {
			p := u.post(path, form, headers...)
			if p.status != http.StatusForbidden || !strings.Contains(text(p), "came from another site") {
				t.Errorf("POST %s from %s: %d %s", path, how, p.status, text(p))
			}
		}
	}
	f.unchanged(t, h)
}

func TestConsoleSettingsCannotBeFramedAndRunsNoInlineScript(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	f := newSettingsFixture(t, h)
	u := h.console(t)
	u.signin(f.owner)
	pages := map[string]consolePage{}
	for _, path := range []string{
		"/app/settings/api-keys", "/app/settings/api-keys/" + f.keyID + "/revoke", "/app/settings/webhooks", "/app/settings/webhooks/new",
		"/app/settings/webhooks/" + f.ep + "/delete", "/app/settings/webhooks/failed", "/app/settings/webhooks/failed?endpoint=" + f.ep,
		"/app/settings/webhooks/whk_missing/delete",
	} {
		pages["GET "+path] = u.get(path)
	}
	// The answers that show a secret once are pages too.
	pages["POST /app/settings/api-keys"] = u.post("/app/settings/api-keys", url.Values{"name": {"Framed"}})
	pages["POST /app/settings/webhooks/new"] = u.post("/app/settings/webhooks/new", url.Values{"url": {"https://" + publicReceiver + "/framed"}, "events": {"*"}})
	for name, p := range pages {
		if p.doc == nil {
			t.Errorf("%s is not a page: %d %s", name, p.status, p.body)
			continue
		}
		checkConsolePage(t, name, p)
	}
}

// TestConsoleSettingsFailedDeliveriesPage: the page shows a few failed
// deliveries of each endpoint and links to the older ones, a page at a
// time; a retry from there comes back to it.
func TestConsoleSettingsFailedDeliveriesPage(t *testing.T) {
	t.Parallel()
	h := start(t, webhookOptions("memory://"))
	rc := newReceiver(t, 500)
	a := h.register(t)
	u := h.console(t)
	u.signin(a)
	ep := h.subscribe(t, a, rc.srv.URL+"/hook", "profile.created")
	quiet := h.subscribe(t, a, "https://"+publicReceiver+"/quiet", "proxy.added")
	const n = 12
	for range n {
		h.createProfile(t, a, nil)
	}
	settled := func(status string, attempts int) func() bool {
		return func() bool {
			got := 0
			for _, d := range h.deliveries(t, a, ep, status) {
				if len(asList(d["attempts"])) == attempts {
					got++
				}
			}
			return got == n
		}
	}
	poll.Until(t, "every first attempt", settled("pending", 1))
	for i, gap := range []time.Duration{5 * time.Second, 25 * time.Second} {
		h.clock.Advance(gap)
		poll.Until(t, "every next attempt", settled("pending", i+2))
	}
	h.clock.Advance(125 * time.Second)
	poll.Until(t, "every delivery failed", settled("failed", 4))
	var failed []string
	for _, d := range h.deliveries(t, a, ep, "failed") {
		failed = append(failed, str(d["eventId"]))
	}

	shown := func(p consolePage) []string {
		var out []string
		for _, evt := range failed {
			if strings.Contains(text(p), evt) {
				out = append(out, evt)
			}
		}
		return out
	}
	first := u.get("/app/settings/webhooks/failed")
	if got := shown(first); len(got) != 10 || !slices.Equal(got, failed[:10]) {
		t.Fatalf("the first page shows %d of the newest failed deliveries: %v", len(got), got)
	}
	if strings.Contains(text(first), publicReceiver) {
		t.Errorf("the endpoint without failures is listed: %s", text(first))
	}
	var more string
	walk(first.doc, func(n *html.Node) {
		if n.Data == "a" && attr(n, "rel") == "next" {
			more = attr(n, "href")
		}
	})
	if !strings.HasPrefix(more, "/app/settings/webhooks/failed?") {
		t.Fatalf("no link to the older failed deliveries: %s", text(first))
	}
	older := u.get(more)
	if got := shown(older); !slices.Equal(got, failed[10:]) {
		t.Errorf("the older page shows %v, want %v", got, failed[10:])
	}
	if p := u.get("/app/settings/webhooks/failed?endpoint=" + quiet); p.status != http.StatusOK || !strings.Contains(text(p), "No failed deliveries") {
		t.Errorf("the endpoint without failures: %d %s", p.status, text(p))
	}
	if p := u.get("/app/settings/webhooks/failed?endpoint=" + ep + "&cursor=nonsense"); p.status != http.StatusBadRequest {
		t.Errorf("a cursor of nothing: %d %s", p.status, text(p))
	}

	// A retry from one endpoint's page comes back to it.
	var dlv string
	for _, d := range h.deliveries(t, a, ep, "failed") {
		if str(d["eventId"]) == failed[n-1] {
			dlv = str(d["id"])
		}
	}
	back := u.post("/app/settings/webhooks/"+ep+"/deliveries/"+dlv+"/retry", url.Values{"endpoint": {ep}})
	if back.status != http.StatusSeeOther || back.location != "/app/settings/webhooks/failed?endpoint="+ep {
		t.Errorf("a retry from the endpoint's page: %d %q", back.status, back.location)
	}
}
