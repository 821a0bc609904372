package api_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
)

var invitationTokenPattern = regexp.MustCompile(`Invitation token: (\S+)`)

// invite invites email into the team of inviter with role, and returns the
// member id and the mailed token.
func (h *harness) invite(t *testing.T, inviter []string, email string, role team.Role) (string, string) {
	t.Helper()
	r := h.post("/api/v1/teams/invite", map[string]any{"email": email, "role": role}, inviter...)
	expect(t, r, http.StatusCreated)
	return str(r.data()["id"]), h.mailedToken(t, email, invitationTokenPattern)
}

// member makes a a member of owner's team through an invitation and returns
// the membership id.
func (h *harness) member(t *testing.T, owner, a account, role team.Role) string {
	t.Helper()
	id, token := h.invite(t, bearer(owner.access), a.email, role)
	expect(t, h.post("/api/v1/teams/invitations/accept", map[string]any{"token": token}, bearer(a.access)...), http.StatusOK)
	return id
}

func TestInvitationFlow(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		owner, bob := h.register(t), h.register(t)
		ownerAuth := bearer(owner.access)

		// An email without an account yet can be invited; it registers later.
		lateEmail := fmt.Sprintf("late%d@example.com", accountSeq.Add(1))
		lateID, lateToken := h.invite(t, ownerAuth, strings.ToUpper(lateEmail), team.RoleViewer)

		r := h.post("/api/v1/teams/invite", map[string]any{"email": bob.email, "role": "member"}, ownerAuth...)
		expect(t, r, http.StatusCreated)
		m := r.data()
		if m["status"] != "invited" || m["role"] != "member" || m["email"] != bob.email || m["userId"] != nil || m["name"] != nil || m["joinedAt"] != nil {
			t.Fatalf("invited member: %s", r.raw)
		}
		bobID := str(m["id"])
		token := h.mailedToken(t, bob.email, invitationTokenPattern)

		t.Run("an invited member has no access yet", func(t *testing.T) {
			expect(t, h.get("/api/v1/profiles", inTeam(bob, owner.teamID)...), http.StatusNotFound)
		})
		t.Run("only the invited email accepts", func(t *testing.T) {
			r := h.post("/api/v1/teams/invitations/accept", map[string]any{"token": token}, ownerAuth...)
			expect(t, r, http.StatusForbidden)
			r = h.post("/api/v1/teams/invitations/accept", map[string]any{"token": "inv_x.nope"}, bearer(bob.access)...)
			expect(t, r, http.StatusUnprocessableEntity)
		})

		r = h.post("/api/v1/teams/invitations/accept", map[string]any{"token": token}, bearer(bob.access)...)
		expect(t, r, http.StatusOK)
		if r.data()["id"] != owner.teamID || r.data()["role"] != "member" || r.data()["memberCount"].(float64) != 2 {
			t.Fatalf("accept: %s", r.raw)
		}
		expect(t, h.post("/api/v1/teams/invitations/accept", map[string]any{"token": token}, bearer(bob.access)...), http.StatusUnprocessableEntity)

		t.Run("X-Team-ID switches the acting team", func(t *testing.T) {
			r := h.get("/api/v1/me", inTeam(bob, owner.teamID)...)
			expect(t, r, http.StatusOK)
			if r.data()["team"].(map[string]any)["id"] != owner.teamID || r.data()["role"] != "member" {
				t.Fatalf("me in the other team: %s", r.raw)
			}
			pid := h.createProfile(t, account{access: bob.access}, nil) // in bob's own team
			expect(t, h.get("/api/v1/profiles/"+pid, inTeam(bob, owner.teamID)...), http.StatusNotFound)
			r = h.get("/api/v1/teams", bearer(bob.access)...)
			expect(t, r, http.StatusOK)
			var ids []string
			for _, item := range asList(r.env["data"]) {
				ids = append(ids, str(item.(map[string]any)["id"]))
			}
			if !slices.Contains(ids, owner.teamID) || !slices.Contains(ids, bob.teamID) || len(ids) != 2 {
				t.Fatalf("bob's teams: %s", r.raw)
			}
		})

		t.Run("inviting an active member is a conflict", func(t *testing.T) {
			r := h.post("/api/v1/teams/invite", map[string]any{"email": strings.ToUpper(bob.email), "role": "viewer"}, ownerAuth...)
			expect(t, r, http.StatusConflict)
		})
		t.Run("bad invitations name the field", func(t *testing.T) {
			r := h.post("/api/v1/teams/invite", map[string]any{"email": "nope", "role": "emperor"}, ownerAuth...)
			expect(t, r, http.StatusUnprocessableEntity)
			if f := r.errFields(); !slices.Contains(f, "email") || !slices.Contains(f, "role") {
				t.Fatalf("fields %v", f)
			}
		})
		t.Run("an account registered after the invitation accepts it", func(t *testing.T) {
			r := h.post("/api/v1/auth/register", map[string]any{"email": lateEmail, "password": "late but here", "name": "Late"})
			expect(t, r, http.StatusCreated)
			late := account{access: str(r.data()["accessToken"])}
			expect(t, h.post("/api/v1/teams/invitations/accept", map[string]any{"token": lateToken}, bearer(late.access)...), http.StatusOK)
		})

		r = h.get("/api/v1/teams/members?limit=2", ownerAuth...)
		expect(t, r, http.StatusOK)
		seen := map[string]map[string]any{}
		for {
			for _, item := range asList(r.env["data"]) {
				seen[str(item.(map[string]any)["id"])] = item.(map[string]any)
			}
			next := r.env["meta"].(map[string]any)["nextCursor"]
			if next == nil {
				break
			}
			r = h.get("/api/v1/teams/members?limit=2&cursor="+str(next), ownerAuth...)
			expect(t, r, http.StatusOK)
		}
		if len(seen) != 3 || seen[bobID]["status"] != "active" || seen[lateID]["name"] != "Late" || seen[lateID]["status"] != "active" {
			t.Fatalf("members: %v", seen)
		}

		r = h.patch("/api/v1/teams/members/"+bobID, map[string]any{"status": "removed"}, ownerAuth...)
		expect(t, r, http.StatusOK)
		var added, removed int
		for _, e := range h.events(t, event.TeamMemberAdded, event.TeamMemberRemoved) {
			d := eventData(t, e)
			tm, mm := d["team"].(map[string]any), d["member"].(map[string]any)
			if tm["id"] != owner.teamID || str(tm["name"]) == "" || str(mm["email"]) == "" || str(mm["role"]) == "" || len(mm) != 3 {
				t.Errorf("%s: %s", e.Type, e.Data)
			}
			if e.Type == event.TeamMemberAdded {
				added++
			} else if mm["id"] == bobID {
				removed++
			}
		}
		if added != 2 || removed != 1 {
			t.Fatalf("member_added %d (want 2), member_removed %d (want 1)", added, removed)
		}
	})
}

func TestRemovedMemberLosesAccessAtOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		owner, bob := h.register(t), h.register(t)
		bobID := h.member(t, owner, bob, team.RoleMember)
		r := h.post("/api/v1/api-keys", map[string]any{"name": "ci"}, inTeam(bob, owner.teamID)...)
		expect(t, r, http.StatusCreated)
		key := str(r.data()["key"])
		expect(t, h.get("/api/v1/profiles", "X-API-Key", key), http.StatusOK)
		expect(t, h.get("/api/v1/profiles", inTeam(bob, owner.teamID)...), http.StatusOK)

		expect(t, h.patch("/api/v1/teams/members/"+bobID, map[string]any{"status": "removed"}, bearer(owner.access)...), http.StatusOK)
		// The key died with the membership: a revoked credential.
		expect(t, h.get("/api/v1/profiles", "X-API-Key", key), http.StatusUnauthorized)
		expect(t, h.get("/api/v1/profiles", inTeam(bob, owner.teamID)...), http.StatusNotFound)
		// Their own team is untouched.
		expect(t, h.get("/api/v1/profiles", bearer(bob.access)...), http.StatusOK)
		// A removed member can be invited back.
		h.member(t, owner, bob, team.RoleViewer)
		expect(t, h.get("/api/v1/profiles", inTeam(bob, owner.teamID)...), http.StatusOK)
		// ...without bringing their old key back.
		expect(t, h.get("/api/v1/profiles", "X-API-Key", key), http.StatusUnauthorized)
	})
}

func TestOwnersAreProtected(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		owner, admin := h.register(t), h.register(t)
		ownerAuth := bearer(owner.access)
		adminID := h.member(t, owner, admin, team.RoleAdmin)
		ownerID := ""
		r := h.get("/api/v1/teams/members", ownerAuth...)
		for _, item := range asList(r.env["data"]) {
			if m := item.(map[string]any); m["userId"] == owner.userID {
				ownerID = str(m["id"])
			}
		}

		for name, body := range map[string]map[string]any{"demote": {"role": "admin"}, "remove": {"status": "removed"}} {
			t.Run("the last owner cannot "+name+" themselves", func(t *testing.T) {
				r := h.patch("/api/v1/teams/members/"+ownerID, body, ownerAuth...)
				expect(t, r, http.StatusConflict)
			})
		}
		t.Run("only an owner makes or removes owners", func(t *testing.T) {
			adminAuth := inTeam(admin, owner.teamID)
			expect(t, h.patch("/api/v1/teams/members/"+adminID, map[string]any{"role": "owner"}, adminAuth...), http.StatusForbidden)
			expect(t, h.patch("/api/v1/teams/members/"+ownerID, map[string]any{"status": "removed"}, adminAuth...), http.StatusForbidden)
			expect(t, h.post("/api/v1/teams/invite", map[string]any{"email": "new-owner@example.com", "role": "owner"}, adminAuth...), http.StatusForbidden)
		})

		// Two owners each step down at the same moment: the team lock lets
		// one through and the other sees it would leave no owner.
		expect(t, h.patch("/api/v1/teams/members/"+adminID, map[string]any{"role": "owner"}, ownerAuth...), http.StatusOK)
		for round := range 5 {
			var wg sync.WaitGroup
			statuses := make([]int, 2)
			for i, who := range []struct {
				a  account
				id string
			}{{owner, ownerID}, {admin, adminID}} {
				wg.Go(func() {
					statuses[i] = h.rawDo(http.MethodPatch, "/api/v1/teams/members/"+who.id, `{"role":"admin"}`, inTeam(who.a, owner.teamID)...)
				})
			}
			wg.Wait()
			slices.Sort(statuses)
			if !slices.Equal(statuses, []int{http.StatusOK, http.StatusConflict}) {
				t.Fatalf("round %d: statuses %v, want one 200 and one 409", round, statuses)
			}
			// Whoever is still owner promotes the other again.
			for _, who := range []account{owner, admin} {
				for _, id := range []string{ownerID, adminID} {
					h.rawDo(http.MethodPatch, "/api/v1/teams/members/"+id, `{"role":"owner"}`, inTeam(who, owner.teamID)...)
				}
			}
		}
	})
}

// TestTwoTeamIsolation: a user of team B, acting in B, never sees, reads,
// changes or learns of team A's resources: each is 404, as an id that does
// not exist would be, and no list shows them.
func TestTwoTeamIsolation(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a, b := h.register(t), h.register(t)
		aAuth, bAuth := bearer(a.access), bearer(b.access)
		profileID := h.createProfile(t, a, nil)
		r := h.post("/api/v1/api-keys", map[string]any{"name": "a"}, aAuth...)
		expect(t, r, http.StatusCreated)
		keyID := str(r.data()["id"])
		memberID, _ := h.invite(t, aAuth, "invitee@example.com", team.RoleMember)

		for _, tc := range []struct {
			name string
			r    req
		}{
			{"read profile", req{method: "GET", path: "/api/v1/profiles/" + profileID}},
			{"update profile", req{method: "PATCH", path: "/api/v1/profiles/" + profileID, body: map[string]any{"name": "x"}}},
			{"delete profile", req{method: "DELETE", path: "/api/v1/profiles/" + profileID}},
			{"launch profile", req{method: "POST", path: "/api/v1/profiles/" + profileID + "/launch"}},
			{"delete api key", req{method: "DELETE", path: "/api/v1/api-keys/" + keyID}},
			{"update member", req{method: "PATCH", path: "/api/v1/teams/members/" + memberID, body: map[string]any{"role": "viewer"}}},
		} {
			tc.r.headers = pairs(bAuth)
			got := h.do(tc.r)
			tc.r.path = strings.Replace(tc.r.path, "_", "_0", 1) // an id that does not exist
			missing := h.do(tc.r)
			if got.status != http.StatusNotFound || got.status != missing.status || got.errCode() != missing.errCode() {
				t.Errorf("%s: status %d (%s), for a missing id %d: %s", tc.name, got.status, got.errCode(), missing.status, got.raw)
			}
		}
		for _, path := range []string{"/api/v1/profiles", "/api/v1/api-keys", "/api/v1/teams/members"} {
			r := h.get(path, bAuth...)
			expect(t, r, http.StatusOK)
			for _, item := range asList(r.env["data"]) {
				id := str(item.(map[string]any)["id"])
				if id == profileID || id == keyID || id == memberID {
					t.Errorf("%s lists team A's %s", path, id)
				}
			}
		}
		// A's things are all still there.
		expect(t, h.get("/api/v1/profiles/"+profileID, aAuth...), http.StatusOK)
		expect(t, h.patch("/api/v1/teams/members/"+memberID, map[string]any{"role": "viewer"}, aAuth...), http.StatusOK)
		expect(t, h.do(req{method: "DELETE", path: "/api/v1/api-keys/" + keyID, headers: pairs(aAuth)}), http.StatusNoContent)
	})
}

// TestInvitationRevealsNoAccount: before acceptance, an invited member
// shows neither user id nor name, whether or not the email has an account:
// the answers for both are alike but for the email and ids.
func TestInvitationRevealsNoAccount(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		owner, bob := h.register(t), h.register(t)
		nobody := fmt.Sprintf("nobody%d@example.com", accountSeq.Add(1))
		shape := func(m map[string]any) string {
			return fmt.Sprintf("userId=%v name=%v status=%v role=%v joinedAt=%v", m["userId"], m["name"], m["status"], m["role"], m["joinedAt"])
		}
		withAccount := h.post("/api/v1/teams/invite", map[string]any{"email": bob.email, "role": "member"}, bearer(owner.access)...)
		expect(t, withAccount, http.StatusCreated)
		without := h.post("/api/v1/teams/invite", map[string]any{"email": nobody, "role": "member"}, bearer(owner.access)...)
		expect(t, without, http.StatusCreated)
		if a, b := shape(withAccount.data()), shape(without.data()); a != b || withAccount.data()["userId"] != nil || withAccount.data()["name"] != nil {
			t.Fatalf("invitation of an account: %s; of an email without one: %s; want both without user id and name", a, b)
		}
		r := h.get("/api/v1/teams/members?limit=100", bearer(owner.access)...)
		expect(t, r, http.StatusOK)
		for _, item := range asList(r.env["data"]) {
			m := item.(map[string]any)
			if m["status"] == "invited" && (m["userId"] != nil || m["name"] != nil) {
				t.Fatalf("listed invited member shows who they are: %v", m)
			}
		}
	})
}

// TestInvitationQuotas: one membership gets a bounded number of
// invitations a day, a team a bounded number in all; the refusals are 429
// naming the quota, and the day's window frees them.
func TestInvitationQuotas(t *testing.T) {
	t.Parallel()
	eachBackendEnv(t, map[string]string{"QUOTA_INVITATIONS_PER_DAY": "4", "QUOTA_INVITATION_RESENDS_PER_DAY": "2"}, func(t *testing.T, h *harness) {
		owner := h.register(t)
		auth := bearer(owner.access)
		// The fake clock outruns access tokens: sign in again after moving it.
		signIn := func() {
			r := h.post("/api/v1/auth/login", map[string]any{"email": owner.email, "password": owner.password})
			expect(t, r, http.StatusOK)
			auth = bearer(str(r.data()["accessToken"]))
		}
		invite := func(email string) response {
			return h.post("/api/v1/teams/invite", map[string]any{"email": email, "role": "member"}, auth...)
		}
		same := fmt.Sprintf("again%d@example.com", accountSeq.Add(1))
		expect(t, invite(same), http.StatusCreated)
		expect(t, invite(same), http.StatusCreated)
		r := invite(same)
		expect(t, r, http.StatusTooManyRequests)
		if !strings.Contains(string(r.raw), "2 invitations") || r.header.Get("Retry-After") == "" {
			t.Fatalf("re-send refusal: %s %v", r.raw, r.header)
		}
		expect(t, invite(fmt.Sprintf("third%d@example.com", accountSeq.Add(1))), http.StatusCreated)
		h.clock.Advance(time.Hour)
		signIn()
		expect(t, invite(fmt.Sprintf("fourth%d@example.com", accountSeq.Add(1))), http.StatusCreated)
		r = invite(fmt.Sprintf("fifth%d@example.com", accountSeq.Add(1)))
		expect(t, r, http.StatusTooManyRequests)
		if !strings.Contains(string(r.raw), "4 invitations") {
			t.Fatalf("daily refusal does not name the quota: %s", r.raw)
		}
		if got := r.header.Get("Retry-After"); got != "82800" {
			t.Fatalf("Retry-After %q, want 82800 (the oldest invitation leaves the day in 23 h)", got)
		}
		got := h.race(6, http.MethodPost, "/api/v1/teams/invite", `{"email":"race@example.com","role":"member"}`, auth...)
		if got[http.StatusTooManyRequests] != 6 {
			t.Fatalf("concurrent invitations over the quota answered %v, want 6 x 429", got)
		}
		h.clock.Advance(23 * time.Hour)
		signIn()
		got = h.race(6, http.MethodPost, "/api/v1/teams/invite", `{"email":"race@example.com","role":"member"}`, auth...)
		if got[http.StatusCreated] != 2 || got[http.StatusTooManyRequests] != 4 {
			t.Fatalf("concurrent invitations of one email a day later answered %v, want 2 x 201 (its re-send bound) and 4 x 429", got)
		}
	})
}
