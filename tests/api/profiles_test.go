package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/wiring"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

func (h *harness) patch(path string, body any, headers ...string) response {
	h.t.Helper()
	return h.do(req{method: http.MethodPatch, path: path, body: body, headers: pairs(headers)})
}

func (h *harness) delete(path string, headers ...string) response {
	h.t.Helper()
	return h.do(req{method: http.MethodDelete, path: path, headers: pairs(headers)})
}

const windowsTemplate = "tpl_chrome_win_us"

// createProfile creates a profile as a and returns its id.
func (h *harness) createProfile(t *testing.T, a account, body map[string]any) string {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if _, ok := body["name"]; !ok {
		body["name"] = "Profile"
	}
	if _, ok := body["templateId"]; !ok {
		body["templateId"] = windowsTemplate
	}
	r := h.post("/api/v1/profiles", body, bearer(a.access)...)
	expect(t, r, http.StatusCreated)
	return str(r.data()["id"])
}

// events returns the outbox's events of the given types, oldest first.
func (h *harness) events(t *testing.T, types ...event.Type) []event.Event {
	t.Helper()
	all, err := h.store.Outbox().ListAfter(context.Background(), "", 100000)
	if err != nil {
		t.Fatalf("outbox: %v", err)
	}
	var out []event.Event
	for _, e := range all {
		if len(types) == 0 || slices.Contains(types, e.Type) {
			out = append(out, e)
		}
	}
	return out
}

// eventData decodes an event's data.
func eventData(t *testing.T, e event.Event) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("event %s data: %v", e.ID, err)
	}
	return d
}

// join makes a registered account an active member of teamID with role,
// as the teams endpoints will once invitations exist.
func (h *harness) join(t *testing.T, a account, teamID string, role team.Role) {
	t.Helper()
	now := h.clock.Now()
	m := team.Member{ID: fmt.Sprintf("mem_%s_%s", a.userID, role), TeamID: teamID, UserID: a.userID, Email: a.email,
		Role: role, Status: team.StatusActive, InvitedAt: now, JoinedAt: &now}
	if err := h.store.Memberships().Create(context.Background(), m); err != nil {
		t.Fatalf("add member: %v", err)
	}
}

func inTeam(a account, teamID string) []string {
	return append(bearer(a.access), "X-Team-ID", teamID)
}

func TestTemplates(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://"})
	a := h.register(t)
	r := h.get("/api/v1/templates", bearer(a.access)...)
	expect(t, r, http.StatusOK)
	list := asList(r.env["data"])
	if len(list) < 8 {
		t.Fatalf("%d templates, want at least 8", len(list))
	}
	oses := map[string]bool{}
	for _, item := range list {
		tpl := item.(map[string]any)
		os, ua, platform := str(tpl["os"]), str(tpl["userAgent"]), str(tpl["platform"])
		oses[os] = true
		// A user agent that contradicts its platform is the first thing
		// fingerprinting scripts check.
		want := map[string][2]string{
			"windows": {"Windows NT", "Win32"},
			"macos":   {"Macintosh", "MacIntel"},
			"linux":   {"X11; Linux", "Linux x86_64"},
			"android": {"Android", "Linux armv81"},
		}[os]
		if !strings.Contains(ua, want[0]) || platform != want[1] {
			t.Errorf("template %s (%s): user agent %q and platform %q do not match", tpl["id"], os, ua, platform)
		}
		// The template's device: the fields above are its, and its GPU and
		// client hints are of its platform.
		fp, _ := tpl["fingerprint"].(map[string]any)
		renderer := str(fp["webgl"].(map[string]any)["renderer"])
		hints := fp["clientHints"].(map[string]any)
		gpu := map[string]string{"windows": "Direct3D11", "macos": "Apple M", "linux": "OpenGL", "android": ""}[os]
		if fp["userAgent"] != ua || fp["platform"] != platform || fp["locale"] != tpl["locale"] || fp["timezone"] != tpl["timezone"] ||
			!reflect.DeepEqual(fp["screen"], tpl["screen"]) || !strings.Contains(renderer, gpu) || (hints["mobile"] == true) != (os == "android") {
			t.Errorf("template %s: device %v", tpl["id"], fp)
		}
		if strings.Contains(str(tpl["name"]), "131") {
			t.Errorf("template %s names a browser version: %v", tpl["id"], tpl["name"])
		}
		if _, err := time.LoadLocation(str(tpl["timezone"])); err != nil {
			t.Errorf("template %s: timezone %v: %v", tpl["id"], tpl["timezone"], err)
		}
	}
	for _, os := range []string{"windows", "macos", "linux", "android"} {
		if !oses[os] {
			t.Errorf("no template for %s", os)
		}
	}
	r = h.get("/api/v1/templates/"+windowsTemplate, bearer(a.access)...)
	expect(t, r, http.StatusOK)
	if r.data()["id"] != windowsTemplate {
		t.Fatalf("read template: %s", r.raw)
	}
	expect(t, h.get("/api/v1/templates/tpl_nope", bearer(a.access)...), http.StatusNotFound)
	expect(t, h.get("/api/v1/templates"), http.StatusUnauthorized)
}

func TestProfileLifecycle(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)

		// Exactly SPEC's request and response.
		r := h.post("/api/v1/profiles", map[string]any{"name": "Shop EU", "templateId": windowsTemplate, "proxy": nil}, auth...)
		expect(t, r, http.StatusCreated)
		d := r.data()
		id := str(d["id"])
		if r.env["success"] != true || !strings.HasPrefix(id, "prf_") || d["name"] != "Shop EU" || d["templateId"] != windowsTemplate {
			t.Fatalf("create: %s", r.raw)
		}
		if ms, ok := d["createdAt"].(float64); !ok || int64(ms) != h.clock.Now().UnixMilli() {
			t.Fatalf("createdAt = %v, want %d", d["createdAt"], h.clock.Now().UnixMilli())
		}
		fp := d["fingerprint"].(map[string]any)
		if fp["platform"] != "Win32" || fp["timezone"] != "America/New_York" || d["status"] != "idle" || d["version"].(float64) != 1 || d["proxy"] != nil {
			t.Fatalf("fingerprint not from the template: %s", r.raw)
		}
		if r.header.Get("ETag") != `"1"` {
			t.Fatalf("ETag = %q", r.header.Get("ETag"))
		}

		t.Run("fingerprint overrides are validated", func(t *testing.T) {
			r := h.post("/api/v1/profiles", map[string]any{"name": "DE", "templateId": windowsTemplate,
				"fingerprint": map[string]any{"locale": "de-DE", "timezone": "Europe/Berlin", "screen": map[string]any{"width": 1280, "height": 720}}}, auth...)
			expect(t, r, http.StatusCreated)
			fp := r.data()["fingerprint"].(map[string]any)
			if fp["locale"] != "de-DE" || fp["timezone"] != "Europe/Berlin" || fp["platform"] != "Win32" {
				t.Fatalf("overrides not applied over the template: %s", r.raw)
			}
			r = h.post("/api/v1/profiles", map[string]any{"name": "Bad", "templateId": windowsTemplate,
				"fingerprint": map[string]any{"locale": "german", "timezone": "Mars/Olympus", "platform": "Amiga", "screen": map[string]any{"width": 10, "height": 99999}}}, auth...)
			expect(t, r, http.StatusUnprocessableEntity)
			for _, f := range []string{"fingerprint.locale", "fingerprint.timezone", "fingerprint.platform", "fingerprint.screen.width", "fingerprint.screen.height"} {
				if !slices.Contains(r.errFields(), f) {
					t.Errorf("details do not name %s: %s", f, r.raw)
				}
			}
		})
		t.Run("bad create requests", func(t *testing.T) {
			for name, tc := range map[string]struct {
				body  map[string]any
				field string
			}{
				"unknown template": {map[string]any{"name": "x", "templateId": "tpl_nope"}, "templateId"},
				"empty name":       {map[string]any{"name": " ", "templateId": windowsTemplate}, "name"},
				"read-only id":     {map[string]any{"name": "x", "templateId": windowsTemplate, "id": "prf_mine"}, "id"},
				"read-only status": {map[string]any{"name": "x", "templateId": windowsTemplate, "status": "running"}, "status"},
				"unknown field":    {map[string]any{"name": "x", "templateId": windowsTemplate, "owner": "me"}, "owner"},
				"proxy shape":      {map[string]any{"name": "x", "templateId": windowsTemplate, "proxy": "socks5://h:1"}, "proxy"},
				"unknown proxy":    {map[string]any{"name": "x", "templateId": windowsTemplate, "proxy": map[string]any{"id": "prx_nope"}}, "proxy.id"},
			} {
				t.Run(name, func(t *testing.T) {
					r := h.post("/api/v1/profiles", tc.body, auth...)
					expect(t, r, http.StatusUnprocessableEntity)
					if !slices.Contains(r.errFields(), tc.field) {
						t.Fatalf("details do not name %s: %s", tc.field, r.raw)
					}
				})
			}
		})

		r = h.get("/api/v1/profiles/"+id, auth...)
		expect(t, r, http.StatusOK)
		if r.data()["name"] != "Shop EU" {
			t.Fatalf("read: %s", r.raw)
		}

		h.clock.Advance(time.Minute)
		r = h.patch("/api/v1/profiles/"+id, map[string]any{"name": "Shop DE", "tags": []string{"eu", "shop", "eu"}, "fingerprint": map[string]any{"locale": "de-DE"}}, append(auth, "If-Match", `"1"`)...)
		expect(t, r, http.StatusOK)
		d = r.data()
		if d["name"] != "Shop DE" || d["version"].(float64) != 2 || d["fingerprint"].(map[string]any)["locale"] != "de-DE" ||
			d["fingerprint"].(map[string]any)["timezone"] != "America/New_York" || len(asList(d["tags"])) != 2 || d["templateId"] != windowsTemplate {
			t.Fatalf("patch is not partial: %s", r.raw)
		}
		if int64(d["updatedAt"].(float64)) != h.clock.Now().UnixMilli() {
			t.Fatalf("updatedAt not moved: %s", r.raw)
		}

		t.Run("stale If-Match is 412 and changes nothing", func(t *testing.T) {
			r := h.patch("/api/v1/profiles/"+id, map[string]any{"name": "Lost update"}, append(auth, "If-Match", "1")...)
			expect(t, r, http.StatusPreconditionFailed)
			if r.errCode() != "precondition_failed" {
				t.Fatalf("code %q", r.errCode())
			}
			if got := h.get("/api/v1/profiles/"+id, auth...).data()["name"]; got != "Shop DE" {
				t.Fatalf("name = %v after a refused update", got)
			}
		})
		t.Run("read-only fields cannot be patched", func(t *testing.T) {
			for _, f := range []string{"version", "status", "session", "createdAt"} {
				r := h.patch("/api/v1/profiles/"+id, map[string]any{f: 1}, auth...)
				expect(t, r, http.StatusUnprocessableEntity)
				if !slices.Contains(r.errFields(), f) {
					t.Fatalf("%s: %s", f, r.raw)
				}
			}
		})
		t.Run("changing the template rebases the fingerprint", func(t *testing.T) {
			r := h.patch("/api/v1/profiles/"+id, map[string]any{"templateId": "tpl_chrome_mac_us"}, auth...)
			expect(t, r, http.StatusOK)
			fp := r.data()["fingerprint"].(map[string]any)
			if fp["platform"] != "MacIntel" || fp["locale"] != "en-US" {
				t.Fatalf("fingerprint not from the new template: %s", r.raw)
			}
		})

		expect(t, h.delete("/api/v1/profiles/"+id, auth...), http.StatusNoContent)
		expect(t, h.get("/api/v1/profiles/"+id, auth...), http.StatusNotFound)
		expect(t, h.delete("/api/v1/profiles/"+id, auth...), http.StatusNotFound)

		// Every change is in the outbox with SPEC's data.profile.
		var seen []event.Type
		for _, e := range h.events(t, event.ProfileCreated, event.ProfileUpdated, event.ProfileDeleted) {
			p := eventData(t, e)["profile"].(map[string]any)
			if p["id"] != id {
				continue
			}
			seen = append(seen, e.Type)
			if e.TeamID != a.teamID || p["browser"] != "chromium" || str(p["fingerprint_template"]) == "" {
				t.Errorf("event %s: %s", e.Type, e.Data)
			}
			if _, err := time.Parse(time.RFC3339, str(p["created_at"])); err != nil {
				t.Errorf("created_at is not ISO 8601: %v", p["created_at"])
			}
			if len(p) != 5 {
				t.Errorf("data.profile has %d fields, SPEC lists 5: %s", len(p), e.Data)
			}
		}
		want := []event.Type{event.ProfileCreated, event.ProfileUpdated, event.ProfileUpdated, event.ProfileDeleted}
		if !slices.Equal(seen, want) {
			t.Fatalf("events %v, want %v", seen, want)
		}
	})
}

func TestProfilesAreTeamScoped(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		owner, stranger, viewer, member := h.register(t), h.register(t), h.register(t), h.register(t)
		id := h.createProfile(t, owner, map[string]any{"name": "Private"})

		t.Run("another team's profile is 404 for every verb", func(t *testing.T) {
			auth := bearer(stranger.access)
			base := "/api/v1/profiles/" + id
			for _, r := range []response{
				h.get(base, auth...),
				h.patch(base, map[string]any{"name": "mine"}, auth...),
				h.delete(base, auth...),
				h.post(base+"/launch", map[string]any{}, auth...),
				h.post(base+"/heartbeat", map[string]any{"sessionId": "ses_x"}, auth...),
				h.post(base+"/release", map[string]any{}, auth...),
			} {
				expect(t, r, http.StatusNotFound)
			}
			r := h.get("/api/v1/profiles", auth...)
			expect(t, r, http.StatusOK)
			if len(asList(r.env["data"])) != 0 {
				t.Fatalf("stranger lists another team's profiles: %s", r.raw)
			}
			// Naming the team does not help a non-member either.
			expect(t, h.get(base, inTeam(stranger, owner.teamID)...), http.StatusNotFound)
		})

		h.join(t, viewer, owner.teamID, team.RoleViewer)
		h.join(t, member, owner.teamID, team.RoleMember)
		t.Run("a viewer reads but changes nothing", func(t *testing.T) {
			auth := inTeam(viewer, owner.teamID)
			base := "/api/v1/profiles/" + id
			expect(t, h.get(base, auth...), http.StatusOK)
			expect(t, h.get("/api/v1/profiles", auth...), http.StatusOK)
			for _, r := range []response{
				h.post("/api/v1/profiles", map[string]any{"name": "v", "templateId": windowsTemplate}, auth...),
				h.patch(base, map[string]any{"name": "v"}, auth...),
				h.post(base+"/launch", map[string]any{}, auth...),
				h.delete(base, auth...),
			} {
				expect(t, r, http.StatusForbidden)
			}
		})
		t.Run("a member releases only their own session", func(t *testing.T) {
			expect(t, h.post("/api/v1/profiles/"+id+"/launch", map[string]any{}, bearer(owner.access)...), http.StatusOK)
			expect(t, h.post("/api/v1/profiles/"+id+"/release", map[string]any{}, inTeam(member, owner.teamID)...), http.StatusForbidden)
			expect(t, h.delete("/api/v1/profiles/"+id, inTeam(member, owner.teamID)...), http.StatusForbidden)
			expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, bearer(owner.access)...), http.StatusOK)
		})
	})
}

func TestProfileListFilters(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		shop := h.createProfile(t, a, map[string]any{"name": "Shop 100%", "tags": []string{"shop", "eu"}})
		ads := h.createProfile(t, a, map[string]any{"name": "Ads_US", "tags": []string{"ads"}})
		h.createProfile(t, a, map[string]any{"name": "Social"})
		expect(t, h.post("/api/v1/profiles/"+ads+"/launch", nil, auth...), http.StatusOK)

		ids := func(path string) []string {
			t.Helper()
			r := h.get(path, auth...)
			expect(t, r, http.StatusOK)
			var out []string
			for _, item := range asList(r.env["data"]) {
				out = append(out, str(item.(map[string]any)["id"]))
			}
			return out
		}
		for path, want := range map[string][]string{
			"/api/v1/profiles?q=SHOP":                  {shop},
			"/api/v1/profiles?q=100%25":                {shop}, // % is a literal, not a wildcard
			"/api/v1/profiles?q=_":                     {ads},  // so is _
			"/api/v1/profiles?tag=eu":                  {shop},
			"/api/v1/profiles?tag=e":                   nil,
			"/api/v1/profiles?status=running":          {ads},
			"/api/v1/profiles?status=idle&tag=shop":    {shop},
			"/api/v1/profiles?status=running&tag=shop": nil,
		} {
			if got := ids(path); !slices.Equal(got, want) {
				t.Errorf("%s = %v, want %v", path, got, want)
			}
		}
		for _, path := range []string{"/api/v1/profiles?status=sleeping", "/api/v1/profiles?limit=0", "/api/v1/profiles?limit=101", "/api/v1/profiles?cursor=garbage"} {
			r := h.get(path, auth...)
			expect(t, r, http.StatusBadRequest)
		}
	})
}

// TestPagingSurvivesInserts pages through 1,000 profiles, 100 at a time,
// while another writer keeps creating profiles: each original profile must
// come back exactly once.
func TestPagingSurvivesInserts(t *testing.T) {
	t.Parallel()
	// Ten pages of profiles, and the inserts between pages.
	eachBackendEnv(t, map[string]string{"QUOTA_PROFILES": "2000"}, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		const n, limit = 250, 25
		originals := map[string]bool{}
		for i := range n {
			originals[h.createProfile(t, a, map[string]any{"name": fmt.Sprintf("p%04d", i)})] = true
		}
		seen := map[string]int{}
		cursor := ""
		inserted := 0
		var prev string
		for pages := 0; ; pages++ {
			if pages > 2*n/limit {
				t.Fatal("paging does not end")
			}
			path := fmt.Sprintf("/api/v1/profiles?limit=%d", limit)
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			r := h.get(path, auth...)
			expect(t, r, http.StatusOK)
			for _, item := range asList(r.env["data"]) {
				id := str(item.(map[string]any)["id"])
				if prev != "" && id >= prev {
					t.Fatalf("not newest first: %s after %s", id, prev)
				}
				prev = id
				seen[id]++
			}
			// Inserts between pages land before the cursor and must not
			// shift what the next page holds.
			for range 7 {
				h.createProfile(t, a, map[string]any{"name": "late"})
				inserted++
			}
			meta := r.env["meta"].(map[string]any)
			if meta["nextCursor"] == nil {
				break
			}
			cursor = str(meta["nextCursor"])
		}
		for id := range originals {
			if seen[id] != 1 {
				t.Errorf("profile %s seen %d times", id, seen[id])
			}
		}
		for id, c := range seen {
			if !originals[id] {
				t.Errorf("a profile inserted while paging showed up: %s", id)
			}
			if c != 1 {
				t.Errorf("%s seen %d times", id, c)
			}
		}
		t.Logf("paged %d profiles while %d were inserted", len(seen), inserted)
	})
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a, other := h.register(t), h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)
		base := "/api/v1/profiles/" + id

		// No body is fine: every field has a default.
		r := h.do(req{method: http.MethodPost, path: base + "/launch", headers: pairs(auth)})
		expect(t, r, http.StatusOK)
		sess := r.data()["session"].(map[string]any)
		sid := str(sess["id"])
		now := h.clock.Now()
		if !strings.HasPrefix(sid, "ses_") || sess["launchedBy"] != a.userID || sess["cdpUrl"] != nil {
			t.Fatalf("launch: %s", r.raw)
		}
		if int64(sess["expiresAt"].(float64)) != now.Add(time.Hour).UnixMilli() {
			t.Fatalf("expiresAt = %v, want now + SESSION_TTL_DEFAULT (1h)", sess["expiresAt"])
		}
		p := h.get(base, auth...).data()
		if p["status"] != "running" || p["session"].(map[string]any)["id"] != sid {
			t.Fatalf("profile after launch: %v", p)
		}

		h.join(t, other, a.teamID, team.RoleAdmin)
		r = h.post(base+"/launch", map[string]any{}, inTeam(other, a.teamID)...)
		expect(t, r, http.StatusConflict)
		if !strings.Contains(string(r.raw), a.email) || !strings.Contains(string(r.raw), sid) {
			t.Fatalf("409 does not name the holder: %s", r.raw)
		}
		expect(t, h.delete(base, auth...), http.StatusConflict)

		h.clock.Advance(10 * time.Minute)
		r = h.post(base+"/heartbeat", map[string]any{"sessionId": sid, "ttlSeconds": 120}, auth...)
		expect(t, r, http.StatusOK)
		if got := int64(r.data()["session"].(map[string]any)["expiresAt"].(float64)); got != h.clock.Now().Add(2*time.Minute).UnixMilli() {
			t.Fatalf("heartbeat expiresAt = %d", got)
		}
		expect(t, h.post(base+"/heartbeat", map[string]any{"sessionId": "ses_other"}, auth...), http.StatusConflict)
		r = h.post(base+"/heartbeat", map[string]any{}, auth...)
		expect(t, r, http.StatusUnprocessableEntity)

		for _, ttl := range []int{0, -5, 24*3600 + 1} {
			r := h.post(base+"/heartbeat", map[string]any{"sessionId": sid, "ttlSeconds": ttl}, auth...)
			expect(t, r, http.StatusUnprocessableEntity)
			if !slices.Contains(r.errFields(), "ttlSeconds") {
				t.Fatalf("ttl %d: %s", ttl, r.raw)
			}
		}

		r = h.post(base+"/release", nil, auth...)
		expect(t, r, http.StatusOK)
		if r.data()["status"] != "idle" || r.data()["session"] != nil {
			t.Fatalf("release: %s", r.raw)
		}
		expect(t, h.post(base+"/release", nil, auth...), http.StatusConflict)
		expect(t, h.post(base+"/heartbeat", map[string]any{"sessionId": sid}, auth...), http.StatusConflict)

		r = h.post(base+"/launch", map[string]any{"ttlSeconds": 0}, auth...)
		expect(t, r, http.StatusUnprocessableEntity)
		r = h.post(base+"/launch", map[string]any{"ttlSeconds": 30, "headless": true}, auth...)
		expect(t, r, http.StatusOK)
		if r.data()["session"].(map[string]any)["headless"] != true {
			t.Fatalf("headless not kept: %s", r.raw)
		}
		// An admin may release another member's session.
		expect(t, h.post(base+"/release", nil, inTeam(other, a.teamID)...), http.StatusOK)

		var kinds []string
		for _, e := range h.events(t, event.ProfileLaunched, event.ProfileStopped) {
			d := eventData(t, e)
			if d["profile"].(map[string]any)["id"] != id {
				continue
			}
			k := string(e.Type)
			if e.Type == event.ProfileStopped {
				k += ":" + str(d["reason"])
			}
			kinds = append(kinds, k)
		}
		want := []string{"profile.launched", "profile.stopped:released", "profile.launched", "profile.stopped:released"}
		if !slices.Equal(kinds, want) {
			t.Fatalf("session events %v, want %v", kinds, want)
		}
	})
}

// fastReaper makes the reaper look every few milliseconds, so tests see it
// act on a fake-clock expiry promptly.
var fastReaper = fx.Decorate(func() wiring.ReaperInterval { return wiring.ReaperInterval(5 * time.Millisecond) })

func TestReaperEndsExpiredSessions(t *testing.T) {
	t.Parallel()
	eachBackendWith(t, []fx.Option{fastReaper}, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)
		r := h.post("/api/v1/profiles/"+id+"/launch", map[string]any{"ttlSeconds": 60}, auth...)
		expect(t, r, http.StatusOK)
		sid := str(r.data()["session"].(map[string]any)["id"])

		stopped := func() []event.Event {
			var out []event.Event
			for _, e := range h.events(t, event.ProfileStopped) {
				if eventData(t, e)["profile"].(map[string]any)["id"] == id {
					out = append(out, e)
				}
			}
			return out
		}
		h.clock.Advance(59 * time.Second)
		if got := h.get("/api/v1/profiles/"+id, auth...).data()["status"]; got != "running" {
			t.Fatalf("status %v before expiry", got)
		}
		h.clock.Advance(time.Second)
		poll.Until(t, "the reaper to end the session", func() bool {
			return h.get("/api/v1/profiles/"+id, auth...).data()["status"] == "idle"
		})
		evs := stopped()
		if len(evs) != 1 {
			t.Fatalf("%d profile.stopped events, want 1", len(evs))
		}
		d := eventData(t, evs[0])
		if d["reason"] != "expired" || d["session"].(map[string]any)["id"] != sid {
			t.Fatalf("stopped event: %s", evs[0].Data)
		}
		expect(t, h.post("/api/v1/profiles/"+id+"/heartbeat", map[string]any{"sessionId": sid}, auth...), http.StatusConflict)
		expect(t, h.post("/api/v1/profiles/"+id+"/launch", nil, auth...), http.StatusOK)
	})
}

// TestReaperRunsAfterRestart stops the service while a session is live and
// starts it again after the lease has run out: the new process ends it.
func TestReaperRunsAfterRestart(t *testing.T) {
	t.Parallel()
	for _, b := range backends()[1:] { // memory keeps nothing across restarts
		t.Run(b.name, func(t *testing.T) {
			url := b.url(t)
			first := start(t, options{databaseURL: url})
			a := first.register(t)
			id := first.createProfile(t, a, nil)
			expect(t, first.post("/api/v1/profiles/"+id+"/launch", map[string]any{"ttlSeconds": 30}, bearer(a.access)...), http.StatusOK)
			launchedAt := first.clock.Now()
			first.stop()

			second := start(t, options{databaseURL: url, extra: []fx.Option{fastReaper}})
			second.clock.Set(launchedAt.Add(31 * time.Second))
			poll.Until(t, "the restarted service to end the expired session", func() bool {
				return second.get("/api/v1/profiles/"+id, bearer(a.access)...).data()["status"] == "idle"
			})
			n := 0
			for _, e := range second.events(t, event.ProfileStopped) {
				if eventData(t, e)["reason"] == "expired" {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d expired events, want 1", n)
			}
		})
	}
}

// TestConcurrentLaunchAcrossInstances fires 50 launches of one profile at
// two service instances sharing one PostgreSQL database: the lease lives in
// the database, so exactly one launch wins.
func TestConcurrentLaunchAcrossInstances(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	one := start(t, options{databaseURL: url})
	two := start(t, options{databaseURL: url})
	a := one.register(t)
	id := one.createProfile(t, a, nil)

	const n = 50
	statuses := make([]int, n)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := range n {
		h := one
		if i%2 == 1 {
			h = two
		}
		wg.Go(func() {
			<-ready
			statuses[i] = h.rawDo(http.MethodPost, "/api/v1/profiles/"+id+"/launch", "", bearer(a.access)...)
		})
	}
	close(ready)
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	if counts[http.StatusOK] != 1 || counts[http.StatusConflict] != n-1 {
		t.Fatalf("statuses %v, want one 200 and %d × 409", counts, n-1)
	}
	expect(t, two.post("/api/v1/profiles/"+id+"/release", nil, bearer(a.access)...), http.StatusOK)
	expect(t, two.post("/api/v1/profiles/"+id+"/launch", nil, bearer(a.access)...), http.StatusOK)
	if got := len(one.events(t, event.ProfileLaunched)); got != 2 {
		t.Fatalf("%d profile.launched events, want 2", got)
	}
}

// TestProfileQuota: concurrent creates at the bound leave exactly the
// bound, the rest are refused naming the quota.
func TestProfileQuota(t *testing.T) {
	t.Parallel()
	eachBackendEnv(t, map[string]string{"QUOTA_PROFILES": "4"}, func(t *testing.T, h *harness) {
		a := h.register(t)
		h.createProfile(t, a, nil)
		body := `{"name":"Race","templateId":"` + windowsTemplate + `"}`
		got := h.race(12, http.MethodPost, "/api/v1/profiles", body, bearer(a.access)...)
		if got[http.StatusCreated] != 3 || got[http.StatusUnprocessableEntity] != 9 {
			t.Fatalf("12 concurrent creates with 1 of 4 profiles answered %v, want 3 x 201 and 9 x 422", got)
		}
		r := h.get("/api/v1/profiles?limit=100", bearer(a.access)...)
		expect(t, r, http.StatusOK)
		if n := len(asList(r.env["data"])); n != 4 {
			t.Fatalf("the team holds %d profiles, want the quota of 4", n)
		}
		r = h.post("/api/v1/profiles", map[string]any{"name": "Over", "templateId": windowsTemplate}, bearer(a.access)...)
		expect(t, r, http.StatusUnprocessableEntity)
		if !slices.Contains(r.errFields(), "quota") || !strings.Contains(string(r.raw), "4 profiles") {
			t.Fatalf("the refusal does not name the quota: %s", r.raw)
		}
		h.createProfile(t, h.register(t), nil)
	})
}
