package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// stoppedReasons are the reasons of the profile.stopped deliveries rc
// received, by profile id.
func stoppedReasons(rc *receiver) map[string]string {
	out := map[string]string{}
	for _, r := range rc.requests() {
		data, _ := r.payload["data"].(map[string]any)
		p, _ := data["profile"].(map[string]any)
		if str(r.payload["type"]) == "profile.stopped" {
			out[str(p["id"])] = str(data["reason"])
		}
	}
	return out
}

// carryOver gives the instance next what a persistent store would have
// kept for it from the stopped instance prev, whose memory store ended with
// it: the team's endpoint, and the profile.stopped events of the profile
// with their deliveries to it, as prev committed them.
func carryOver(t *testing.T, prev, next *harness, teamID, endpointID, profileID string) {
	t.Helper()
	ctx := context.Background()
	ep, err := prev.store.WebhookEndpoints().ByID(ctx, teamID, endpointID)
	if err != nil {
		t.Fatal(err)
	}
	if err := next.store.WebhookEndpoints().Create(ctx, ep); err != nil {
		t.Fatal(err)
	}
	ds, err := prev.store.Deliveries().List(ctx, teamID, endpointID, webhookstore.DeliveryFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range prev.events(t, event.ProfileStopped) {
		if eventData(t, e)["profile"].(map[string]any)["id"] != profileID {
			continue
		}
		if err := next.store.Outbox().Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.EventID == e.ID {
				if err := next.store.Deliveries().Create(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestEveryStopReasonIsEmittedAsDocumented makes the service end a session
// for each reason profile.stopped has, each through the service's own path,
// with a browser runtime whose browsers the test drives, and receives each
// profile.stopped at an endpoint, which checks it against the document.
func TestEveryStopReasonIsEmittedAsDocumented(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := b.url(t)
			rt := newFakeRuntime()
			o := webhookOptions(url)
			o.extra = append(o.extra, fastReaper, rt.option())
			h := start(t, o)
			rc := newReceiver(t, http.StatusOK)
			a := h.register(t)
			auth := bearer(a.access)
			endpoint := h.subscribe(t, a, rc.srv.URL, "profile.stopped")
			want := map[string]string{} // profile id -> the reason its session ends with
			launch := func(reason string, ttlSeconds int) (id, sessionID string) {
				t.Helper()
				id = h.createProfile(t, a, map[string]any{"name": "Ends " + reason})
				want[id] = reason
				r := h.post("/api/v1/profiles/"+id+"/launch", map[string]any{"ttlSeconds": ttlSeconds}, auth...)
				expect(t, r, http.StatusOK)
				return id, str(r.data()["session"].(map[string]any)["id"])
			}
			arrived := func(ids ...string) {
				t.Helper()
				poll.Until(t, "profile.stopped of "+strings.Join(ids, ", "), func() bool {
					got := stoppedReasons(rc)
					for _, id := range ids {
						if got[id] == "" {
							return false
						}
					}
					return true
				})
			}

			// released: the client releases the session.
			released, _ := launch("released", 3600)
			expect(t, h.post("/api/v1/profiles/"+released+"/release", nil, auth...), http.StatusOK)
			arrived(released)

			// expired: the lease runs out, and the reaper ends it.
			expired, _ := launch("expired", 60)
			h.clock.Advance(61 * time.Second)
			arrived(expired)

			// failed: the browser does not start.
			failed := h.createProfile(t, a, map[string]any{"name": "Ends failed"})
			want[failed] = "failed"
			rt.failStart(failed)
			expect(t, h.post("/api/v1/profiles/"+failed+"/launch", nil, auth...), http.StatusInternalServerError)

			// closed and crashed: the runtime reports the browser's end.
			closed, closedSession := launch("closed", 3600)
			rt.exit(closed, closedSession, profile.StopClosed)
			crashed, crashedSession := launch("crashed", 3600)
			rt.exit(crashed, crashedSession, profile.StopCrashed)
			arrived(failed, closed, crashed)

			// shutdown: the service stops while a browser runs. The event is
			// committed as the instance stops, after its dispatcher has; the
			// next instance on the store delivers it (on a memory store, from
			// what carryOver gives it).
			shutdown, _ := launch("shutdown", 3600)
			h.stop()
			next := start(t, webhookOptions(url))
			// The instances' clocks agree, as real ones do: the delivery
			// queued on the stopping instance is due on the next one.
			next.clock.Advance(h.clock.Now().Sub(next.clock.Now()))
			if b.name == "memory" {
				carryOver(t, h, next, a.teamID, endpoint, shutdown)
			}
			arrived(shutdown)

			got := stoppedReasons(rc)
			for id, reason := range want {
				if got[id] != reason {
					t.Errorf("profile %s: profile.stopped with reason %q, want %q", id, got[id], reason)
				}
			}
			reasons := map[string]bool{}
			for _, reason := range got {
				reasons[reason] = true
			}
			for _, reason := range []string{"released", "expired", "failed", "closed", "crashed", "shutdown"} {
				if !reasons[reason] {
					t.Errorf("no profile.stopped with reason %s was delivered (got %v)", reason, got)
				}
			}
		})
	}
}

// TestEventCheckRefusesUndeclaredValues shows that the check every
// receiver makes of a delivery fails on a value the document does not
// declare: a real delivery passes, and copies of it with an undeclared
// reason or event type are refused, naming the path and the value.
func TestEventCheckRefusesUndeclaredValues(t *testing.T) {
	t.Parallel()
	h := start(t, webhookOptions("memory://"))
	rc := newReceiver(t, http.StatusOK)
	a := h.register(t)
	auth := bearer(a.access)
	h.subscribe(t, a, rc.srv.URL, "profile.stopped")
	id := h.createProfile(t, a, nil)
	expect(t, h.post("/api/v1/profiles/"+id+"/launch", nil, auth...), http.StatusOK)
	expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)
	real := rc.waitFor(1)[0]
	if mismatches, err := eventMismatches(real.header, real.body); err != nil || len(mismatches) != 0 {
		t.Fatalf("the real delivery does not pass: %v %v", mismatches, err)
	}

	for name, tc := range map[string]struct {
		change func(payload map[string]any, header http.Header)
		path   string
		value  string
	}{
		"data.reason": {
			change: func(p map[string]any, _ http.Header) { p["data"].(map[string]any)["reason"] = "vanished" },
			path:   "$.data.reason", value: `"vanished"`,
		},
		"type": {
			change: func(p map[string]any, h http.Header) {
				p["type"] = "profile.vanished"
				h.Set("X-Service-Event-Type", "profile.vanished")
			},
			path: "$.type", value: `"profile.vanished"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			var payload map[string]any
			if err := json.Unmarshal(real.body, &payload); err != nil {
				t.Fatal(err)
			}
			header := real.header.Clone()
			tc.change(payload, header)
			body, err := json.Marshal(payload)
			if err != nil {
				t.Fatal(err)
			}
			mismatches, err := eventMismatches(header, body)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, m := range mismatches {
				found = found || strings.Contains(m, tc.path+" = "+tc.value)
			}
			if !found {
				t.Fatalf("a delivery with %s %s is not refused at %s: %q", name, tc.value, tc.path, mismatches)
			}
		})
	}
}
