package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/wiring"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// sideEffects is what a write route does besides its rows, as a client
// sees it: the webhooks it has delivered at once, and how a retry with its
// Idempotency-Key is answered. (That no read after it answers the old
// profile holds for every route, so it needs no entry.)
type sideEffects struct {
	// events are the types of the events its success emits, as a
	// subscriber of every event receives them, in any order.
	events []string
	// tested are the types of the test deliveries its success sends to
	// the endpoint it acts on, outside any subscription.
	tested []string
	// key is what a POST's retry with the same Idempotency-Key answers.
	key keyRetry
}

// keyRetry is what API.md says a retry with the same Idempotency-Key gets.
type keyRetry int

const (
	// firstResponse: the first response again, byte for byte, marked
	// Idempotent-Replayed: true; the work is not done again.
	firstResponse keyRetry = iota
	// shownOnce: the response carried credentials, which are not kept; a
	// retry is 409 saying they were shown once.
	shownOnce
	// keptNothing: the request changed nothing, so nothing was kept with
	// it; a retry runs again.
	keptNothing
)

// writeSideEffects has one entry per authenticated route that is not a
// GET, for the request its authzCases entry builds with the owner as the
// actor. A route without an entry fails TestEveryWriteHasItsSideEffects:
// every new write must state the events it emits.
var writeSideEffects = map[string]sideEffects{
	"api_keys.create":      {key: shownOnce},
	"api_keys.delete":      {},
	"profiles.create":      {events: []string{"profile.created"}},
	"profiles.update":      {events: []string{"profile.updated"}},
	"profiles.delete":      {events: []string{"profile.deleted"}},
	"profiles.launch":      {events: []string{"profile.launched"}},
	"profiles.heartbeat":   {},
	"profiles.release":     {events: []string{"profile.stopped"}},
	"teams.invite":         {events: []string{"team.member_added"}},
	"teams.accept":         {}, // the case's token is no invitation's: 422
	"teams.members.update": {}, // a change of role; a removal emits
	"webhooks.create":      {},
	"webhooks.update":      {},
	"webhooks.delete":      {},
	"webhooks.test":        {tested: []string{"profile.created"}},
	// The case's delivery is pending: 409, nothing is queued again.
	"webhooks.deliveries.retry": {},
	"proxies.add":               {events: []string{"proxy.added"}},
	"proxies.update":            {},
	"proxies.delete":            {},
	"proxies.test":              {key: keptNothing},
	// The case's proxy is a loopback port nothing listens on.
	"proxies.check":          {events: []string{"proxy.failed"}},
	"profiles.data.write":    {events: []string{"profile.updated"}},
	"profiles.data.delete":   {events: []string{"profile.updated"}},
	"profiles.cookies.write": {events: []string{"profile.updated"}},
	"snapshots.create":       {},
	"snapshots.delete":       {},
	"snapshots.restore":      {events: []string{"profile.updated"}},
}

// TestEveryWriteHasItsSideEffects sends every write of the route table, as
// an owner, to an instance whose dispatcher looks for work once an hour,
// and checks what the write does besides its rows:
//   - a POST's Idempotency-Key is kept with its effect: a retry with the
//     key answers as API.md says, and does not do the work again;
//   - the events it emits reach a subscriber of every event at once (only
//     a wake-up of the dispatcher delivers them within the hour), and no
//     others;
//   - a read of the profile it acts on, cached before the write, answers
//     after it what an instance without a cache reads from the database.
//
// The routes run one after another in one team; the fake clock moves a
// second before each request (and before its case sets it up), so an
// event belongs to the request whose time it bears.
func TestEveryWriteHasItsSideEffects(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	o := options{
		databaseURL: url,
		// One attempt: a delivery that fails once has failed, and can be
		// retried without the schedule's later attempts.
		env:   map[string]string{"ALLOW_PRIVATE_TARGETS": "true", "QUOTA_WEBHOOK_ENDPOINTS": "100", "WEBHOOK_RETRY_SCHEDULE": "0s"},
		extra: []fx.Option{fx.Decorate(func() wiring.DispatcherPoll { return wiring.DispatcherPoll(time.Hour) })},
	}
	if redisURL := os.Getenv(testenv.RedisURLVariable); redisURL != "" {
		o.redisURL = redisURL
		o.env["PROFILE_CACHE"] = "redis"
		o.env["REDIS_KEY_PREFIX"] = testenv.RedisKeyPrefix(t, testenv.RedisClient(t), "sideeffects")
	} else {
		// PostgreSQL alone has no profile cache (a local one is refused).
		t.Log(testenv.RedisURLVariable + " is not set: no profile cache, so its drops are not exercised")
	}
	h := start(t, o)
	// The judge of reads shares the database, with no cache and no
	// dispatcher: what it answers is what the database holds.
	judge := start(t, options{databaseURL: url, env: map[string]string{"WEBHOOK_DELIVERY": "off"}})

	// Endpoints that cases create (and test, change, delete) send to
	// their own receiver; the subscriber the test checks is never touched.
	everything, theirs := newReceiver(t, http.StatusOK), newReceiver(t, http.StatusOK)
	f := &authzFixture{h: h, owner: h.register(t), hookURL: theirs.srv.URL}
	h.subscribe(t, f.owner, everything.srv.URL)
	owner := f.as(f.owner)

	var sent []sentWrite
	covered := 0
	for _, route := range h.routes {
		if route.Public || route.Method == http.MethodGet {
			continue
		}
		want, ok := writeSideEffects[route.Name]
		if !ok {
			t.Errorf("route %s %s (%s) has no entry in writeSideEffects: state the events it emits", route.Method, route.Path, route.Name)
			continue
		}
		covered++
		c, ok := authzCases[route.Name]
		if !ok {
			t.Errorf("route %s has no case in authzCases to build its request", route.Name)
			continue
		}
		t.Run(route.Name, func(t *testing.T) {
			h.clock.Advance(time.Second)
			r := c.build(t, f, f.owner, team.RoleOwner)
			profilePath := profileOf(route.Path, r.path)
			if profilePath != "" {
				// Read once, so that the cache holds the profile.
				expect(t, h.get(profilePath, owner...), http.StatusOK)
			}
			h.clock.Advance(time.Second)
			w := sentWrite{route: route.Name, at: h.clock.Now(), want: want}
			sent = append(sent, w)

			sendWithKey(t, h, route.Method, r, c.ok, want.key)
			poll.Check(t, poll.Timeout, "the webhooks of "+route.Name, func() error { return w.delivered(everything, theirs) })
			if profilePath != "" {
				sameAsTheDatabase(t, h, judge, route.Name, profilePath, owner)
			}
		})
	}
	// Two routes whose cases above are refused, as they succeed.
	t.Run("teams.accept of an invitation", func(t *testing.T) {
		invitee := h.register(t)
		h.clock.Advance(time.Second)
		_, token := h.invite(t, owner, invitee.email, team.RoleMember)
		h.clock.Advance(time.Second)
		r := req{method: http.MethodPost, path: "/api/v1/teams/invitations/accept", body: map[string]any{"token": token}, headers: pairs(bearer(invitee.access))}
		sendWithKey(t, h, r.method, r, http.StatusOK, firstResponse)
	})
	t.Run("webhooks.deliveries.retry of a failed delivery", func(t *testing.T) {
		failing := newReceiver(t, http.StatusServiceUnavailable)
		ep := h.subscribe(t, f.owner, failing.srv.URL, "proxy.assigned")
		h.clock.Advance(time.Second)
		tested := h.post("/v1/webhooks/"+ep+"/test", map[string]any{"event_type": "proxy.assigned"}, owner...)
		expect(t, tested, http.StatusAccepted)
		h.waitDelivery(t, f.owner, ep, "failed", 1)
		failing.setScript(http.StatusOK)
		h.clock.Advance(time.Second)
		r := req{method: http.MethodPost, path: "/v1/webhooks/" + ep + "/deliveries/" + str(tested.data()["deliveryId"]) + "/retry", headers: pairs(owner)}
		sendWithKey(t, h, r.method, r, http.StatusAccepted, firstResponse)
		// Only a wake-up of the dispatcher delivers it within the hour.
		h.waitDelivery(t, f.owner, ep, "succeeded", 2)
	})
	if covered != len(writeSideEffects) {
		t.Errorf("writeSideEffects has %d entries, the route table %d authenticated writes: remove the entries of routes that are gone", len(writeSideEffects), covered)
	}
	// An event that came after its route's check passed is still one too
	// many.
	for _, w := range sent {
		if err := w.delivered(everything, theirs); err != nil {
			t.Errorf("%s, once every write was sent: %v", w.route, err)
		}
	}
}

// sentWrite is a write sent at a time of the fake clock that nothing else
// shares, and the side effects it must have.
type sentWrite struct {
	route string
	at    time.Time
	want  sideEffects
}

// delivered checks that the deliveries of events that occurred at the
// write's time are those it must cause: to the subscriber of every event
// (all), its events; to the endpoints the cases made (theirs), besides the
// same events, its test deliveries.
func (w sentWrite) delivered(all, theirs *receiver) error {
	events := eventsAt(all, w.at)
	tested := eventsAt(theirs, w.at)
	for id := range events {
		delete(tested, id)
	}
	if got, want := sortedTypes(events), slices.Sorted(slices.Values(w.want.events)); !slices.Equal(got, want) {
		return fmt.Errorf("the subscriber of every event received %v, want %v", got, want)
	}
	if got, want := sortedTypes(tested), slices.Sorted(slices.Values(w.want.tested)); !slices.Equal(got, want) {
		return fmt.Errorf("the endpoint acted on received the test deliveries %v, want %v", got, want)
	}
	return nil
}

// eventsAt returns, by event id, the types of the events rc received that
// occurred at at: within half a second, as a store may keep times to the
// microsecond, a retry comes a tenth of a second later, and the clock
// moves a second before each request and each case.
func eventsAt(rc *receiver, at time.Time) map[string]string {
	out := map[string]string{}
	for _, r := range rc.requests() {
		occurred, err := time.Parse(time.RFC3339Nano, str(r.payload["created_at"]))
		if err != nil {
			continue // checkDelivery has failed the test for it
		}
		if d := occurred.Sub(at); d > -time.Second/2 && d < time.Second/2 {
			// By id: the same event can arrive more than once.
			out[str(r.payload["id"])] = str(r.payload["type"])
		}
	}
	return out
}

func sortedTypes(byID map[string]string) []string { return slices.Sorted(maps.Values(byID)) }

// sendWithKey sends r, a POST with an Idempotency-Key of its own, and
// expects status ok; a POST that succeeded is sent again with the same key
// and must be answered as rule says.
func sendWithKey(t *testing.T, h *harness, method string, r req, ok int, rule keyRetry) {
	t.Helper()
	if method != http.MethodPost {
		// API.md: the key applies to POST requests alone.
		if got := h.do(r); got.status != ok {
			t.Fatalf("status %d, want %d: %s", got.status, ok, truncate(got.raw))
		}
		return
	}
	r.headers["Idempotency-Key"] = testenv.UniqueName("side-effects-")
	first := h.do(r)
	if first.status != ok {
		t.Fatalf("status %d, want %d: %s", first.status, ok, truncate(first.raw))
	}
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the first request with its key is marked as replayed: %v", first.header)
	}
	if first.status/100 != 2 {
		return
	}
	// A little later, so that work done again (a lease extended, an
	// expiry) answers with other times, whatever the marker says.
	h.clock.Advance(time.Second / 10)
	again := h.do(r)
	switch rule {
	case firstResponse:
		if again.status != first.status || !bytes.Equal(again.raw, first.raw) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("a retry with the same Idempotency-Key answered %d %s (Idempotent-Replayed: %q), want the first response %d %s again: was the key kept with the write?",
				again.status, truncate(again.raw), again.header.Get("Idempotent-Replayed"), first.status, truncate(first.raw))
		}
	case shownOnce:
		if again.status != http.StatusConflict || !strings.Contains(errMessage(again), "shown once") {
			t.Fatalf("a retry with the same Idempotency-Key answered %d %s, want 409 saying the credentials were shown once: was the key kept with the write?",
				again.status, truncate(again.raw))
		}
	case keptNothing:
		if again.status != first.status || again.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("a retry of a request that changed nothing answered %d (Idempotent-Replayed: %q), want %d run again",
				again.status, again.header.Get("Idempotent-Replayed"), first.status)
		}
	}
}

// profileOf returns the path of the profile a request to a route of
// template acts on (/api/v1/profiles/{id}..., /api/v1/time-machine/
// {profileId}/...), or "" when it acts on none.
func profileOf(template, path string) string {
	parts := strings.Split(path, "/")
	for i, seg := range strings.Split(template, "/") {
		if i < len(parts) && (seg == "{profileId}" || (seg == "{id}" && strings.HasPrefix(template, "/api/v1/profiles/"))) {
			return "/api/v1/profiles/" + parts[i]
		}
	}
	return ""
}

// sameAsTheDatabase reads the profile at path on h and on judge, an
// instance without a cache: both must answer alike.
func sameAsTheDatabase(t *testing.T, h, judge *harness, route, path string, headers []string) {
	t.Helper()
	mine, db := h.get(path, headers...), judge.get(path, headers...)
	switch {
	case mine.status != db.status:
		t.Errorf("after %s, GET %s answers %d %s, while the database holds %d %s: the write left the profile's old copy in the cache",
			route, path, mine.status, truncate(mine.raw), db.status, truncate(db.raw))
	case !reflect.DeepEqual(mine.env, db.env):
		t.Errorf("after %s, GET %s answers what the database no longer holds (%s): the write left the profile's old copy in the cache",
			route, path, strings.Join(differences(mine.data(), db.data()), "; "))
	}
}

// differences names the fields of the profile whose values differ, with
// both values as JSON.
func differences(cached, stored map[string]any) []string {
	keys := map[string]bool{}
	for k := range cached {
		keys[k] = true
	}
	for k := range stored {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !reflect.DeepEqual(cached[k], stored[k]) {
			a, _ := json.Marshal(cached[k])
			b, _ := json.Marshal(stored[k])
			out = append(out, fmt.Sprintf("%s is %s, the database's %s", k, a, b))
		}
	}
	return out
}
