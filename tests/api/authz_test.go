package api_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/profilesvc/profilesvc/domain/team"
)

// authzFixture is a team with one account per role, and a stranger who is
// an owner of another team.
type authzFixture struct {
	h        *harness
	owner    account
	hookURL  string
	accounts map[string]account // by role name, plus "stranger"
}

// as returns the headers that make a the actor in the fixture's team.
func (f *authzFixture) as(a account) []string { return inTeam(a, f.owner.teamID) }

// authzCase builds the request one route answers for actor: whatever the
// route needs is set up first by the owner, or by the actor when the route
// acts on the actor's own things (sessions, API keys).
type authzCase struct {
	// min is the weakest role allowed; "" means any authenticated member.
	min team.Role
	// ok is the status an allowed role gets.
	ok    int
	build func(t *testing.T, f *authzFixture, actor account, role team.Role) req
}

var roleOrder = []team.Role{team.RoleViewer, team.RoleMember, team.RoleAdmin, team.RoleOwner}

// rank is the roles' order as API.md states it, written out here rather than
// asked of team.Role.Can, so that a wrong rule in the domain fails this test
// instead of moving its expectations along with it.
var rank = map[team.Role]int{team.RoleViewer: 1, team.RoleMember: 2, team.RoleAdmin: 3, team.RoleOwner: 4}

// allowed reports whether role may call a route whose weakest role is min.
func allowed(role, min team.Role) bool {
	return min == "" || (rank[role] > 0 && rank[role] >= rank[min])
}

// holder is who launches the session a session route acts on: the actor
// when the actor may launch (member and above), so members act on their own
// sessions.
func holder(f *authzFixture, actor account, role team.Role) account {
	if allowed(role, team.RoleMember) {
		return actor
	}
	return f.owner
}

func (f *authzFixture) profile(t *testing.T) string {
	return f.h.createProfile(t, f.owner, nil)
}

// profileWithData is a profile of the owner's with browser data stored.
func (f *authzFixture) profileWithData(t *testing.T) string {
	id := f.profile(t)
	expect(t, f.h.do(archiveReq(id, testArchive(t, archiveA), f.as(f.owner))), http.StatusOK)
	return id
}

// snapshot is a profile of the owner's and a snapshot of it.
func (f *authzFixture) snapshot(t *testing.T) (string, string) {
	id := f.profile(t)
	r := f.h.post("/api/v1/time-machine/"+id+"/snapshots", map[string]any{"label": "s"}, f.as(f.owner)...)
	expect(t, r, http.StatusCreated)
	return id, str(r.data()["id"])
}

func (f *authzFixture) launched(t *testing.T, by account) (string, string) {
	id := f.profile(t)
	r := f.h.post("/api/v1/profiles/"+id+"/launch", nil, f.as(by)...)
	expect(t, r, http.StatusOK)
	return id, str(r.data()["session"].(map[string]any)["id"])
}

// inviteSeq numbers the invited emails; the builders run from parallel tests.
var inviteSeq atomic.Int64

func (f *authzFixture) endpoint(t *testing.T) string {
	return f.h.subscribe(t, f.owner, f.hookURL)
}

// authzProxy is a proxy on a loopback port nothing listens on (private
// targets are allowed in the fixture's service): a test or check fails at
// once, without leaving the machine.
var authzProxy = map[string]any{"type": "http", "host": "127.0.0.1", "port": 9}

func (f *authzFixture) proxy(t *testing.T) string {
	r := f.h.post("/api/v1/proxies", authzProxy, f.as(f.owner)...)
	expect(t, r, http.StatusCreated)
	return str(r.data()["id"])
}

func (f *authzFixture) webhookReq(method, path string, body any, a account) req {
	return req{method: method, path: path, body: body, headers: pairs(f.as(a))}
}

// authzCases has one entry per authenticated route of the service. A route
// without an entry fails TestEveryRouteEnforcesRoles: every new endpoint
// must state who may call it.
var authzCases = map[string]authzCase{
	"me.read": {team.RoleViewer, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/me", headers: pairs(f.as(a))}
	}},
	"api_keys.list": {team.RoleViewer, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/api-keys", headers: pairs(f.as(a))}
	}},
	"api_keys.create": {team.RoleViewer, 201, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "POST", path: "/api/v1/api-keys", body: map[string]any{"name": "k"}, headers: pairs(f.as(a))}
	}},
	"api_keys.delete": {team.RoleAdmin, 204, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		// Another member's key: one's own is any role's to delete.
		r := f.h.post("/api/v1/api-keys", map[string]any{"name": "k"}, f.as(f.owner)...)
		expect(t, r, http.StatusCreated)
		return req{method: "DELETE", path: "/api/v1/api-keys/" + str(r.data()["id"]), headers: pairs(f.as(a))}
	}},
	"templates.list": {team.RoleViewer, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/templates", headers: pairs(f.as(a))}
	}},
	"templates.read": {team.RoleViewer, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/templates/" + windowsTemplate, headers: pairs(f.as(a))}
	}},
	"profiles.list": {team.RoleViewer, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/profiles", headers: pairs(f.as(a))}
	}},
	"profiles.read": {team.RoleViewer, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/profiles/" + f.profile(t), headers: pairs(f.as(a))}
	}},
	"profiles.create": {team.RoleMember, 201, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "POST", path: "/api/v1/profiles", body: map[string]any{"name": "p", "templateId": windowsTemplate, "proxy": nil}, headers: pairs(f.as(a))}
	}},
	"profiles.update": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "PATCH", path: "/api/v1/profiles/" + f.profile(t), body: map[string]any{"notes": "n"}, headers: pairs(f.as(a))}
	}},
	"profiles.delete": {team.RoleAdmin, 204, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "DELETE", path: "/api/v1/profiles/" + f.profile(t), headers: pairs(f.as(a))}
	}},
	"profiles.launch": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "POST", path: "/api/v1/profiles/" + f.profile(t) + "/launch", headers: pairs(f.as(a))}
	}},
	"profiles.heartbeat": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, role team.Role) req {
		id, sid := f.launched(t, holder(f, a, role))
		return req{method: "POST", path: "/api/v1/profiles/" + id + "/heartbeat", body: map[string]any{"sessionId": sid}, headers: pairs(f.as(a))}
	}},
	"profiles.release": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, role team.Role) req {
		id, _ := f.launched(t, holder(f, a, role))
		return req{method: "POST", path: "/api/v1/profiles/" + id + "/release", headers: pairs(f.as(a))}
	}},
	"teams.list": {team.RoleViewer, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/teams", headers: pairs(f.as(a))}
	}},
	"teams.invite": {team.RoleAdmin, 201, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "POST", path: "/api/v1/teams/invite", body: map[string]any{"email": fmt.Sprintf("authz%d@example.com", inviteSeq.Add(1)), "role": "member"}, headers: pairs(f.as(a))}
	}},
	// Accepting needs no role in the team (the invitee has none yet); a
	// token that is not one is refused alike for everyone in the team.
	"teams.accept": {"", 422, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "POST", path: "/api/v1/teams/invitations/accept", body: map[string]any{"token": "inv_x.y"}, headers: pairs(f.as(a))}
	}},
	"teams.members.list": {team.RoleViewer, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/teams/members", headers: pairs(f.as(a))}
	}},
	"webhooks.create": {team.RoleAdmin, 201, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return f.webhookReq("POST", "/v1/webhooks", map[string]any{"url": f.hookURL, "events": []string{"*"}, "secret": webhookSecret}, a)
	}},
	"fleet.read": {team.RoleAdmin, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/fleet", headers: pairs(f.as(a))}
	}},
	"webhooks.list": {team.RoleAdmin, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return f.webhookReq("GET", "/v1/webhooks", nil, a)
	}},
	"webhooks.read": {team.RoleAdmin, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return f.webhookReq("GET", "/v1/webhooks/"+f.endpoint(t), nil, a)
	}},
	"webhooks.update": {team.RoleAdmin, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return f.webhookReq("PATCH", "/v1/webhooks/"+f.endpoint(t), map[string]any{"enabled": false}, a)
	}},
	"webhooks.delete": {team.RoleAdmin, 204, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return f.webhookReq("DELETE", "/v1/webhooks/"+f.endpoint(t), nil, a)
	}},
	"webhooks.test": {team.RoleAdmin, 202, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return f.webhookReq("POST", "/v1/webhooks/"+f.endpoint(t)+"/test", map[string]any{"event_type": "profile.created"}, a)
	}},
	"webhooks.deliveries.list": {team.RoleAdmin, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return f.webhookReq("GET", "/v1/webhooks/"+f.endpoint(t)+"/deliveries", nil, a)
	}},
	// Retrying needs a failed delivery; a pending one answers 409 to those
	// allowed to retry, and 403 to the rest before its state is looked at.
	"webhooks.deliveries.retry": {team.RoleAdmin, 409, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		ep := f.endpoint(t)
		r := f.h.post("/v1/webhooks/"+ep+"/test", map[string]any{"event_type": "profile.created"}, f.as(f.owner)...)
		expect(t, r, http.StatusAccepted)
		return f.webhookReq("POST", "/v1/webhooks/"+ep+"/deliveries/"+str(r.data()["deliveryId"])+"/retry", nil, a)
	}},
	"proxies.list": {team.RoleViewer, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/proxies", headers: pairs(f.as(a))}
	}},
	"proxies.read": {team.RoleViewer, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/proxies/" + f.proxy(t), headers: pairs(f.as(a))}
	}},
	"proxies.add": {team.RoleMember, 201, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "POST", path: "/api/v1/proxies", body: authzProxy, headers: pairs(f.as(a))}
	}},
	"proxies.update": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "PATCH", path: "/api/v1/proxies/" + f.proxy(t), body: map[string]any{"name": "n"}, headers: pairs(f.as(a))}
	}},
	"proxies.delete": {team.RoleAdmin, 204, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "DELETE", path: "/api/v1/proxies/" + f.proxy(t), headers: pairs(f.as(a))}
	}},
	"proxies.test": {team.RoleMember, 200, func(_ *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "POST", path: "/api/v1/proxies/test", body: authzProxy, headers: pairs(f.as(a))}
	}},
	"proxies.check": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "POST", path: "/api/v1/proxies/" + f.proxy(t) + "/check", headers: pairs(f.as(a))}
	}},
	"profiles.data.read": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/profiles/" + f.profileWithData(t) + "/data", headers: pairs(f.as(a))}
	}},
	"profiles.data.write": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return archiveReq(f.profile(t), testArchive(t, archiveA), f.as(a))
	}},
	"profiles.data.delete": {team.RoleMember, 204, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "DELETE", path: "/api/v1/profiles/" + f.profileWithData(t) + "/data", headers: pairs(f.as(a))}
	}},
	"profiles.cookies.read": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/profiles/" + f.profile(t) + "/cookies", headers: pairs(f.as(a))}
	}},
	"profiles.cookies.write": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "PUT", path: "/api/v1/profiles/" + f.profile(t) + "/cookies", body: cookiesA, headers: pairs(f.as(a))}
	}},
	"snapshots.list": {team.RoleViewer, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "GET", path: "/api/v1/time-machine/" + f.profile(t) + "/snapshots", headers: pairs(f.as(a))}
	}},
	"snapshots.create": {team.RoleMember, 201, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		return req{method: "POST", path: "/api/v1/time-machine/" + f.profile(t) + "/snapshots", body: map[string]any{"label": "l"}, headers: pairs(f.as(a))}
	}},
	"snapshots.read": {team.RoleViewer, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		id, snap := f.snapshot(t)
		return req{method: "GET", path: "/api/v1/time-machine/" + id + "/snapshots/" + snap, headers: pairs(f.as(a))}
	}},
	"snapshots.delete": {team.RoleAdmin, 204, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		id, snap := f.snapshot(t)
		return req{method: "DELETE", path: "/api/v1/time-machine/" + id + "/snapshots/" + snap, headers: pairs(f.as(a))}
	}},
	"snapshots.restore": {team.RoleMember, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		id, snap := f.snapshot(t)
		return req{method: "POST", path: "/api/v1/time-machine/" + id + "/restore/" + snap, headers: pairs(f.as(a))}
	}},
	"teams.members.update": {team.RoleAdmin, 200, func(t *testing.T, f *authzFixture, a account, _ team.Role) req {
		r := f.h.post("/api/v1/teams/invite", map[string]any{"email": fmt.Sprintf("authz%d@example.com", inviteSeq.Add(1)), "role": "member"}, f.as(f.owner)...)
		expect(t, r, http.StatusCreated)
		return req{method: "PATCH", path: "/api/v1/teams/members/" + str(r.data()["id"]), body: map[string]any{"role": "viewer"}, headers: pairs(f.as(a))}
	}},
}

// TestEveryRouteEnforcesRoles calls every authenticated route of the route
// table as each role of a team and as a stranger naming that team: roles
// below the route's minimum get 403, the others the route's success, and the
// stranger 404 (the team's existence is not revealed).
func TestEveryRouteEnforcesRoles(t *testing.T) {
	t.Parallel()
	h := start(t, webhookOptions("memory://"))
	f := &authzFixture{h: h, owner: h.register(t), accounts: map[string]account{}, hookURL: newReceiver(t, 200).srv.URL}
	f.accounts[string(team.RoleOwner)] = f.owner
	for _, role := range []team.Role{team.RoleViewer, team.RoleMember, team.RoleAdmin} {
		a := h.register(t)
		h.member(t, f.owner, a, role)
		f.accounts[string(role)] = a
	}
	f.accounts["stranger"] = h.register(t)

	covered := 0
	for _, route := range h.routes {
		if route.Public {
			continue
		}
		c, ok := authzCases[route.Name]
		if !ok {
			t.Errorf("route %s %s (%s) has no authorisation rule in authzCases", route.Method, route.Path, route.Name)
			continue
		}
		covered++
		t.Run(route.Name, func(t *testing.T) {
			for _, role := range append(roleOrder, "stranger") {
				a := f.accounts[string(role)]
				want := http.StatusForbidden
				switch {
				case role == "stranger":
					want = http.StatusNotFound
				case allowed(role, c.min):
					want = c.ok
				}
				r := h.do(c.build(t, f, a, role))
				if r.status != want {
					t.Errorf("%s as %s: status %d, want %d: %s", route.Name, role, r.status, want, truncate(r.raw))
				}
			}
		})
	}
	if covered != len(authzCases) {
		t.Errorf("authzCases has %d entries, the route table %d authenticated routes: remove rules of routes that are gone", len(authzCases), covered)
	}
}
