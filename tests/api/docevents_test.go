package api_test

import (
	"net/http"
	"slices"
	"sort"
	"testing"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// keyPaths adds to into the keys of object, and those of the objects in
// it at every depth, as dotted paths ("data.profile.id").
func keyPaths(prefix string, object map[string]any, into map[string]bool) {
	for k, v := range object {
		into[prefix+k] = true
		if nested, ok := v.(map[string]any); ok {
			keyPaths(prefix+k+".", nested, into)
		}
	}
}

// sortedKeyPaths is keyPaths of object from its top, sorted.
func sortedKeyPaths(object map[string]any) []string {
	set := map[string]bool{}
	keyPaths("", object, set)
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// missing lists the elements of want that got lacks.
func missing(want, got []string) []string {
	var out []string
	for _, k := range want {
		if !slices.Contains(got, k) {
			out = append(out, k)
		}
	}
	return out
}

// documentedEvent is one example of the top-level webhooks entry of
// openapi.yaml.
type documentedEvent struct {
	name string
	keys []string
}

// documentedEvents reads the document's examples of webhook events, by
// event type.
func documentedEvents(t *testing.T) map[string][]documentedEvent {
	t.Helper()
	doc := parseOpenAPI(t)
	media := doc.at(t, "#/webhooks/event/post/requestBody/content/application~1json")
	examples, _ := media["examples"].(map[string]any)
	out := map[string][]documentedEvent{}
	for name, ex := range examples {
		value, _ := doc.deref(t, ex)["value"].(map[string]any)
		typ := str(value["type"])
		out[typ] = append(out[typ], documentedEvent{name: name, keys: sortedKeyPaths(value)})
	}
	return out
}

// The document's example of each webhook event has the keys that the
// service sends: with every event type made to happen, each delivery has,
// at every depth, the keys of the example of its type, no more and no
// fewer.
func TestWebhookEventExamplesHaveTheKeysSent(t *testing.T) {
	t.Parallel()
	shown := documentedEvents(t)
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			pr := newFakeProber()
			o := webhookOptions(b.url(t))
			o.extra = append(o.extra, fx.Decorate(func() ports.ProxyProber { return pr }))
			h := start(t, o)
			rc := newReceiver(t, http.StatusOK)
			owner, invitee := h.register(t), h.register(t)
			auth := bearer(owner.access)
			h.subscribe(t, owner, rc.srv.URL)

			// proxy.added; profile.created and proxy.assigned; profile.updated;
			// profile.launched; profile.stopped; profile.deleted; proxy.failed;
			// team.member_added; team.member_removed.
			px := str(h.addProxy(t, owner, map[string]any{"name": "Office", "type": "socks5", "host": "proxy.example.com", "port": 1080})["id"])
			id := h.createProfile(t, owner, map[string]any{"proxy": map[string]any{"id": px}})
			expect(t, h.patch("/api/v1/profiles/"+id, map[string]any{"notes": "2FA on"}, auth...), http.StatusOK)
			expect(t, h.post("/api/v1/profiles/"+id+"/launch", nil, auth...), http.StatusOK)
			expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)
			expect(t, h.delete("/api/v1/profiles/"+id, auth...), http.StatusNoContent)
			pr.set(ports.ProbeResult{Error: "proxy authentication failed"})
			expect(t, h.post("/api/v1/proxies/"+px+"/check", nil, auth...), http.StatusOK)
			mem := h.member(t, owner, invitee, team.RoleMember)
			expect(t, h.patch("/api/v1/teams/members/"+mem, map[string]any{"status": "removed"}, auth...), http.StatusOK)

			sent := byType(t, rc)
			checkEventKeys(t, shown, sent)

			// A test event (POST /v1/webhooks/{id}/test) has the body of a real
			// one. Its endpoint is created once every real event has been fanned
			// out and delivered, so it receives the test events alone.
			tests := newReceiver(t, http.StatusOK)
			ep := h.subscribe(t, owner, tests.srv.URL)
			for _, typ := range event.Types {
				expect(t, h.post("/v1/webhooks/"+ep+"/test", map[string]any{"event_type": string(typ)}, auth...), http.StatusAccepted)
			}
			checkEventKeys(t, shown, byType(t, tests))
		})
	}
}

// byType waits for rc to receive an event of every type and returns what
// it received, by event type.
func byType(t *testing.T, rc *receiver) map[string][]received {
	t.Helper()
	sent := map[string][]received{}
	poll.Until(t, "a delivery of every event type", func() bool {
		clear(sent)
		for _, r := range rc.requests() {
			sent[str(r.payload["type"])] = append(sent[str(r.payload["type"])], r)
		}
		for _, typ := range event.Types {
			if len(sent[string(typ)]) == 0 {
				return false
			}
		}
		return true
	})
	return sent
}

// checkEventKeys checks that every event sent has, at every depth, the keys
// of each example of its type that the document shows.
func checkEventKeys(t *testing.T, shown map[string][]documentedEvent, sent map[string][]received) {
	t.Helper()
	for _, typ := range event.Types {
		if len(shown[string(typ)]) == 0 {
			t.Errorf("openapi.yaml shows no example of %s", typ)
		}
		for _, r := range sent[string(typ)] {
			keys := sortedKeyPaths(r.payload)
			for _, ex := range shown[string(typ)] {
				if !slices.Equal(keys, ex.keys) {
					t.Errorf("%s: the example %q in openapi.yaml lacks the keys %v and has the keys %v that the service does not send (body sent: %s)",
						typ, ex.name, missing(keys, ex.keys), missing(ex.keys, keys), r.body)
				}
			}
		}
	}
}
