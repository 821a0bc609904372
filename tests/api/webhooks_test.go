package api_test

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/adapters/wiring"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
	"github.com/profilesvc/profilesvc/tests/poll"
)

const webhookSecret = "whsec-0123456789abcdef0123456789abcdef"

// receiver is a customer's webhook server: it checks every signature with
// its own HMAC code, fails its test for every delivery that does not match
// the document's webhooks entry (checkDelivery), and answers with the next
// status of its script (the last one repeats).
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	script []int
	got    []received
	// block, when set, holds each request until the client gives up.
	block bool
	// gate, when set, holds each request until it is closed.
	gate chan struct{}
}

type received struct {
	body     []byte
	payload  map[string]any
	header   http.Header
	validMAC bool
}

func newReceiver(t *testing.T, script ...int) *receiver {
	rc := &receiver{t: t, script: script}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		checkDelivery(t, r.Header, body)
		mac := hmac.New(sha256.New, []byte(webhookSecret))
		mac.Write(body)
		want := hex.EncodeToString(mac.Sum(nil))
		got, _ := hex.DecodeString(r.Header.Get("X-Service-Signature"))
		wantRaw, _ := hex.DecodeString(want)
		rec := received{body: body, header: r.Header.Clone(), validMAC: hmac.Equal(got, wantRaw)}
		_ = json.Unmarshal(body, &rec.payload)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, rec)
		status := rc.script[min(n, len(rc.script)-1)]
		block, gate := rc.block, rc.gate
		rc.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
			}
		}
		if block {
			select {
			case <-time.After(6 * time.Second):
			case <-r.Context().Done():
			}
		}
		if !rec.validMAC {
			status = http.StatusUnauthorized
		}
		if status == http.StatusFound {
			w.Header().Set("Location", rc.srv.URL+"/elsewhere")
		}
		w.WriteHeader(status)
		if status >= 400 {
			_, _ = fmt.Fprintf(w, "receiver says %d\n", status)
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) setScript(script ...int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.script, rc.got = script, nil
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

func (rc *receiver) waitFor(n int) []received {
	rc.t.Helper()
	poll.Until(rc.t, strconv.Itoa(n)+" deliveries at the receiver", func() bool { return len(rc.requests()) >= n })
	return rc.requests()
}

// webhookOptions lets the service deliver to a local receiver over http,
// and has its dispatcher look for due work every few milliseconds, so that
// moving the fake clock is enough to trigger the next attempt. Suites that
// register an endpoint per case in one team get room beyond the default
// quota.
func webhookOptions(url string) options {
	return options{
		databaseURL: url,
		env:         map[string]string{"ALLOW_PRIVATE_TARGETS": "true", "QUOTA_WEBHOOK_ENDPOINTS": "100"},
		extra:       []fx.Option{fx.Decorate(func() wiring.DispatcherPoll { return wiring.DispatcherPoll(5 * time.Millisecond) })},
	}
}

func eachWebhookBackend(t *testing.T, fn func(t *testing.T, h *harness)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { fn(t, start(t, webhookOptions(b.url(t)))) })
	}
}

func (h *harness) subscribe(t *testing.T, a account, url string, events ...string) string {
	t.Helper()
	if len(events) == 0 {
		events = []string{"*"}
	}
	r := h.post("/v1/webhooks", map[string]any{"url": url, "events": events, "secret": webhookSecret}, bearer(a.access)...)
	expect(t, r, http.StatusCreated)
	return str(r.data()["id"])
}

// deliveries lists an endpoint's deliveries.
func (h *harness) deliveries(t *testing.T, a account, endpoint, status string) []map[string]any {
	t.Helper()
	path := "/v1/webhooks/" + endpoint + "/deliveries"
	if status != "" {
		path += "?status=" + status
	}
	r := h.get(path, bearer(a.access)...)
	expect(t, r, http.StatusOK)
	var out []map[string]any
	for _, item := range asList(r.env["data"]) {
		out = append(out, item.(map[string]any))
	}
	return out
}

func (h *harness) waitDelivery(t *testing.T, a account, endpoint, status string, attempts int) map[string]any {
	t.Helper()
	var found map[string]any
	poll.Until(t, "a "+status+" delivery with "+strconv.Itoa(attempts)+" attempts", func() bool {
		for _, d := range h.deliveries(t, a, endpoint, status) {
			if len(asList(d["attempts"])) == attempts {
				found = d
				return true
			}
		}
		return false
	})
	return found
}

func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		r := h.post("/v1/webhooks", map[string]any{"url": "https://hooks.example.test/in", "events": []string{"profile.created", "team.member_added"}, "secret": webhookSecret}, auth...)
		expect(t, r, http.StatusCreated)
		id := str(r.data()["id"])
		if r.data()["enabled"] != true || len(asList(r.data()["events"])) != 2 {
			t.Fatalf("create: %s", r.raw)
		}
		for name, tc := range map[string]struct {
			body  map[string]any
			field string
		}{
			"http":                 {map[string]any{"url": "http://hooks.example.test", "events": []string{"*"}, "secret": webhookSecret}, "url"},
			"not a url":            {map[string]any{"url": "hooks", "events": []string{"*"}, "secret": webhookSecret}, "url"},
			"unknown event":        {map[string]any{"url": "https://hooks.example.test", "events": []string{"profile.exploded"}, "secret": webhookSecret}, "events"},
			"no events":            {map[string]any{"url": "https://hooks.example.test", "events": []string{}, "secret": webhookSecret}, "events"},
			"short secret":         {map[string]any{"url": "https://hooks.example.test", "events": []string{"*"}, "secret": "31-characters-is-not-enough-xxx"}, "secret"},
			"loopback":             {map[string]any{"url": "https://127.0.0.1/hook", "events": []string{"*"}, "secret": webhookSecret}, "url"},
			"private":              {map[string]any{"url": "https://10.0.0.1/hook", "events": []string{"*"}, "secret": webhookSecret}, "url"},
			"metadata":             {map[string]any{"url": "https://169.254.169.254/latest", "events": []string{"*"}, "secret": webhookSecret}, "url"},
			"resolves to loopback": {map[string]any{"url": "https://localhost:8443/hook", "events": []string{"*"}, "secret": webhookSecret}, "url"},
		} {
			t.Run(name, func(t *testing.T) {
				r := h.post("/v1/webhooks", tc.body, auth...)
				expect(t, r, http.StatusUnprocessableEntity)
				if !slices.Contains(r.errFields(), tc.field) {
					t.Fatalf("details do not name %s: %s", tc.field, r.raw)
				}
			})
		}
		r = h.patch("/v1/webhooks/"+id, map[string]any{"events": []string{"*"}, "enabled": false}, auth...)
		expect(t, r, http.StatusOK)
		if r.data()["enabled"] != false || asList(r.data()["events"])[0] != "*" {
			t.Fatalf("patch: %s", r.raw)
		}
		r = h.get("/v1/webhooks", auth...)
		expect(t, r, http.StatusOK)
		if len(asList(r.env["data"])) != 1 {
			t.Fatalf("list: %s", r.raw)
		}
		expect(t, h.get("/v1/webhooks/"+id, bearer(h.register(t).access)...), http.StatusNotFound)
		expect(t, h.delete("/v1/webhooks/"+id, auth...), http.StatusNoContent)
		expect(t, h.get("/v1/webhooks/"+id, auth...), http.StatusNotFound)
	})
}

// TestWebhookRetriesOnSchedule: the receiver answers 500 twice, then 200.
// Attempts come at the schedule's gaps (driven by the fake clock), with the
// same event id and a valid signature each time.
func TestWebhookRetriesOnSchedule(t *testing.T) {
	t.Parallel()
	eachWebhookBackend(t, func(t *testing.T, h *harness) {
		rc := newReceiver(t, 500, 500, 200)
		a := h.register(t)
		ep := h.subscribe(t, a, rc.srv.URL+"/hook")
		h.createProfile(t, a, nil)

		// Each attempt is recorded before the clock moves on.
		h.waitDelivery(t, a, ep, "pending", 1)
		h.clock.Advance(5 * time.Second)
		h.waitDelivery(t, a, ep, "pending", 2)
		h.clock.Advance(25 * time.Second)
		got := rc.waitFor(3)
		d := h.waitDelivery(t, a, ep, "succeeded", 3)

		var ats []int64
		for i, at := range asList(d["attempts"]) {
			at := at.(map[string]any)
			ats = append(ats, int64(at["at"].(float64)))
			if int(at["n"].(float64)) != i+1 {
				t.Errorf("attempt %d numbered %v", i+1, at["n"])
			}
		}
		if ats[1]-ats[0] != 5000 || ats[2]-ats[1] != 25000 {
			t.Fatalf("attempt gaps %d ms and %d ms, want 5000 and 25000", ats[1]-ats[0], ats[2]-ats[1])
		}
		for i, req := range got[:3] {
			if !req.validMAC {
				t.Errorf("attempt %d: signature does not verify", i+1)
			}
			if req.payload["id"] != d["eventId"] || req.header.Get("X-Service-Event-Id") != d["eventId"] {
				t.Errorf("attempt %d: event id %v, want %v", i+1, req.payload["id"], d["eventId"])
			}
			if req.header.Get("X-Service-Delivery-Attempt") != strconv.Itoa(i+1) || req.header.Get("X-Service-Event-Type") != "profile.created" {
				t.Errorf("attempt %d headers: %v", i+1, req.header)
			}
			if string(req.body) != string(got[0].body) {
				t.Errorf("attempt %d: body changed between attempts", i+1)
			}
		}
	})
}

// TestWebhookFailsAfterFourAttempts: a receiver that always fails gets
// exactly four attempts; the delivery is listed as failed; a manual retry
// delivers it once the receiver is fixed.
func TestWebhookFailsAfterFourAttempts(t *testing.T) {
	t.Parallel()
	eachWebhookBackend(t, func(t *testing.T, h *harness) {
		rc := newReceiver(t, 503)
		a := h.register(t)
		ep := h.subscribe(t, a, rc.srv.URL, "profile.created")
		h.createProfile(t, a, nil)
		h.waitDelivery(t, a, ep, "pending", 1)
		for i, gap := range []time.Duration{5 * time.Second, 25 * time.Second} {
			h.clock.Advance(gap)
			h.waitDelivery(t, a, ep, "pending", i+2)
		}
		h.clock.Advance(125 * time.Second)
		d := h.waitDelivery(t, a, ep, "failed", 4)
		// Well past any schedule (within the access token's lifetime): once
		// the dispatcher has delivered something due later, it has passed
		// over the failed delivery.
		h.clock.Advance(10 * time.Minute)
		probe := newReceiver(t, 200)
		r := h.post("/v1/webhooks/"+h.subscribe(t, a, probe.srv.URL, "proxy.added")+"/test", map[string]any{"event_type": "proxy.added"}, bearer(a.access)...)
		expect(t, r, http.StatusAccepted)
		probe.waitFor(1)
		if n := len(rc.requests()); n != 4 {
			t.Fatalf("%d attempts after the schedule ended, want 4", n)
		}
		if d["nextAttemptAt"] != nil {
			t.Fatalf("a failed delivery has a next attempt: %v", d)
		}
		if len(h.deliveries(t, a, ep, "pending")) != 0 || len(h.deliveries(t, a, ep, "succeeded")) != 0 {
			t.Fatal("the failed delivery is listed under another status")
		}

		rc.setScript(200)
		r = h.post("/v1/webhooks/"+ep+"/deliveries/"+str(d["id"])+"/retry", nil, bearer(a.access)...)
		expect(t, r, http.StatusAccepted)
		rc.waitFor(1)
		h.waitDelivery(t, a, ep, "succeeded", 5)
		expect(t, h.post("/v1/webhooks/"+ep+"/deliveries/"+str(d["id"])+"/retry", nil, bearer(a.access)...), http.StatusConflict)
	})
}

// TestOnlyStatus200Succeeds: 201, 204 and 302 (not followed) are failed
// attempts, and so is a receiver that does not answer within 5 s.
func TestOnlyStatus200Succeeds(t *testing.T) {
	t.Parallel()
	h := start(t, webhookOptions("memory://"))
	a := h.register(t)
	for _, status := range []int{201, 204, 302} {
		rc := newReceiver(t, status)
		ep := h.subscribe(t, a, rc.srv.URL, "profile.updated")
		id := h.createProfile(t, a, nil)
		expect(t, h.patch("/api/v1/profiles/"+id, map[string]any{"notes": "x"}, bearer(a.access)...), http.StatusOK)
		d := h.waitDelivery(t, a, ep, "pending", 1)
		at := asList(d["attempts"])[0].(map[string]any)
		if int(at["statusCode"].(float64)) != status {
			t.Fatalf("status %d: attempt %v", status, at)
		}
		if got := len(rc.requests()); got != 1 {
			t.Fatalf("status %d: receiver saw %d requests (a redirect must not be followed)", status, got)
		}
		expect(t, h.delete("/v1/webhooks/"+ep, bearer(a.access)...), http.StatusNoContent)
	}

	rc := newReceiver(t, 200)
	rc.block = true
	ep := h.subscribe(t, a, rc.srv.URL, "profile.created")
	h.createProfile(t, a, nil)
	d := h.waitDelivery(t, a, ep, "pending", 1)
	at := asList(d["attempts"])[0].(map[string]any)
	if at["statusCode"] != nil || str(at["error"]) == "" || at["latencyMs"].(float64) < 4900 {
		t.Fatalf("a receiver that takes 6 s: attempt %v, want a time-out error after 5 s", at)
	}
}

// TestEveryEventReachesStarSubscriber drives every event the service emits
// today and checks each payload has SPEC's shape.
func TestEveryEventReachesStarSubscriber(t *testing.T) {
	t.Parallel()
	eachWebhookBackend(t, func(t *testing.T, h *harness) {
		rc := newReceiver(t, 200)
		a, b := h.register(t), h.register(t)
		h.subscribe(t, a, rc.srv.URL)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)
		expect(t, h.patch("/api/v1/profiles/"+id, map[string]any{"name": "Renamed"}, auth...), http.StatusOK)
		expect(t, h.post("/api/v1/profiles/"+id+"/launch", nil, auth...), http.StatusOK)
		expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, auth...), http.StatusOK)
		expect(t, h.delete("/api/v1/profiles/"+id, auth...), http.StatusNoContent)
		mem := h.member(t, a, b, team.RoleViewer)
		expect(t, h.patch("/api/v1/teams/members/"+mem, map[string]any{"status": "removed"}, auth...), http.StatusOK)
		r := h.post("/v1/webhooks/"+h.subscribe(t, a, rc.srv.URL, "proxy.failed")+"/test", map[string]any{"event_type": "proxy.failed"}, auth...)
		expect(t, r, http.StatusAccepted)

		want := []string{"profile.created", "profile.updated", "profile.launched", "profile.stopped", "profile.deleted", "team.member_added", "team.member_removed", "proxy.failed"}
		got := rc.waitFor(len(want))
		types := map[string]bool{}
		for _, req := range got {
			p := req.payload
			typ := str(p["type"])
			types[typ] = true
			if len(p) != 4 || !req.validMAC || str(p["id"]) == "" {
				t.Errorf("%s: payload %s", typ, req.body)
			}
			if _, err := time.Parse(time.RFC3339, str(p["created_at"])); err != nil {
				t.Errorf("%s: created_at %v is not ISO 8601", typ, p["created_at"])
			}
			data := p["data"].(map[string]any)
			switch {
			case typ[:8] == "profile.":
				pr := data["profile"].(map[string]any)
				for _, k := range []string{"id", "name", "browser", "fingerprint_template", "created_at"} {
					if _, ok := pr[k]; !ok {
						t.Errorf("%s: data.profile lacks %s", typ, k)
					}
				}
			case typ[:5] == "team.":
				if data["team"] == nil || data["member"] == nil {
					t.Errorf("%s: data %v", typ, data)
				}
			case typ[:6] == "proxy.":
				if str(data["proxy"].(map[string]any)["host"]) == "" {
					t.Errorf("%s: data %v", typ, data)
				}
			}
		}
		for _, typ := range want {
			if !types[typ] {
				t.Errorf("no %s delivery", typ)
			}
		}
	})
}

// TestSlowReceiverDoesNotHoldUpOthers: one endpoint's receiver holds every
// request; it gets no more at once than its maxInFlight, and another
// endpoint of the same team still gets all its deliveries.
func TestSlowReceiverDoesNotHoldUpOthers(t *testing.T) {
	t.Parallel()
	h := start(t, webhookOptions("memory://"))
	a := h.register(t)
	slow, fast := newReceiver(t, 200), newReceiver(t, 200)
	slow.gate = make(chan struct{})
	defer close(slow.gate)
	slowID := h.subscribe(t, a, slow.srv.URL, "profile.created")
	expect(t, h.patch("/v1/webhooks/"+slowID, map[string]any{"maxInFlight": 4}, bearer(a.access)...), http.StatusOK)
	h.subscribe(t, a, fast.srv.URL, "profile.created")
	const n = 30
	for range n {
		h.createProfile(t, a, nil)
	}
	fast.waitFor(n)
	if got := len(slow.requests()); got > 4 {
		t.Fatalf("%d requests in flight to the slow receiver, want at most the endpoint's maxInFlight of 4", got)
	}

	// The pipeline's figures are on /metrics.
	r := h.do(req{method: http.MethodGet, path: "/metrics"})
	expect(t, r, http.StatusOK)
	for _, metric := range []string{`profilesvc_webhook_attempts_total{outcome="succeeded"}`, "profilesvc_webhook_attempt_duration_seconds_bucket", "profilesvc_webhook_oldest_pending_seconds"} {
		if !strings.Contains(string(r.raw), metric) {
			t.Errorf("/metrics lacks %s", metric)
		}
	}
}

// race sends n requests at once and counts the answers by status. The
// OpenAPI validator is not safe for concurrent use: the requests go out
// unchecked, and their responses pass through the validating transport one
// at a time afterwards.
func (h *harness) race(n int, method, path, body string, headers ...string) map[int]int {
	h.t.Helper()
	type answer struct {
		req  *http.Request
		resp *http.Response
		body []byte
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
		if err != nil {
			h.t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range pairs(headers) {
			req.Header.Set(k, v)
		}
		wg.Go(func() {
			<-start
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				return
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers[i] = answer{req: req, resp: resp, body: raw}
		})
	}
	close(start)
	wg.Wait()
	out := map[int]int{}
	for _, a := range answers {
		if a.resp == nil {
			out[0]++
			continue
		}
		out[a.resp.StatusCode]++
		check := &validatingTransport{h: h, next: replay{a.resp, a.body}}
		if _, err := check.RoundTrip(a.req); err != nil {
			h.t.Fatal(err)
		}
	}
	return out
}

// replay answers with a response already received.
type replay struct {
	resp *http.Response
	body []byte
}

func (r replay) RoundTrip(*http.Request) (*http.Response, error) {
	resp := *r.resp
	resp.Body = io.NopCloser(bytes.NewReader(r.body))
	return &resp, nil
}

// eachBackendEnv starts a service per store with env added.
func eachBackendEnv(t *testing.T, env map[string]string, fn func(t *testing.T, h *harness)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			o := webhookOptions(b.url(t))
			for k, v := range env {
				o.env[k] = v
			}
			fn(t, start(t, o))
		})
	}
}

// TestWebhookEndpointQuota: concurrent creates at the bound leave exactly
// the bound, the rest are refused naming the quota, and another team is
// not affected.
func TestWebhookEndpointQuota(t *testing.T) {
	t.Parallel()
	eachBackendEnv(t, map[string]string{"QUOTA_WEBHOOK_ENDPOINTS": "3"}, func(t *testing.T, h *harness) {
		a := h.register(t)
		h.subscribe(t, a, "https://hooks.example.test/first")
		body := `{"url":"https://hooks.example.test/in","events":["*"],"secret":"` + webhookSecret + `"}`
		got := h.race(12, http.MethodPost, "/v1/webhooks", body, bearer(a.access)...)
		if got[http.StatusCreated] != 2 || got[http.StatusUnprocessableEntity] != 10 {
			t.Fatalf("12 concurrent creates with 1 of 3 endpoints answered %v, want 2 x 201 and 10 x 422", got)
		}
		r := h.get("/v1/webhooks?limit=100", bearer(a.access)...)
		expect(t, r, http.StatusOK)
		if n := len(asList(r.env["data"])); n != 3 {
			t.Fatalf("the team holds %d endpoints, want the quota of 3", n)
		}
		r = h.post("/v1/webhooks", map[string]any{"url": "https://hooks.example.test/in", "events": []string{"*"}, "secret": webhookSecret}, bearer(a.access)...)
		expect(t, r, http.StatusUnprocessableEntity)
		if !slices.Contains(r.errFields(), "quota") || !strings.Contains(string(r.raw), "3 webhook endpoints") {
			t.Fatalf("the refusal does not name the quota: %s", r.raw)
		}
		h.subscribe(t, h.register(t), "https://hooks.example.test/other-team")
	})
}

// TestAttemptLostWithItsInstanceCounts: an instance claims the second
// attempt and dies before recording it; the attempt that follows once its
// lease lapses is announced as the third.
func TestAttemptLostWithItsInstanceCounts(t *testing.T) {
	t.Parallel()
	eachWebhookBackend(t, func(t *testing.T, h *harness) {
		rc := newReceiver(t, 500, 200)
		a := h.register(t)
		ep := h.subscribe(t, a, rc.srv.URL+"/hook")
		h.createProfile(t, a, nil)
		h.waitDelivery(t, a, ep, "pending", 1)

		due := h.clock.Now().Add(5 * time.Second)
		claimed, err := h.store.Deliveries().Claim(context.Background(), webhookstore.DeliveryClaim{
			Owner: "dsp_killed", Now: due, LeaseUntil: due.Add(time.Minute), Limit: 10,
		})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("the killed instance's claim = %d deliveries, %v; want 1", len(claimed), err)
		}
		h.clock.Advance(70 * time.Second)
		got := rc.waitFor(2)
		if n := got[1].header.Get("X-Service-Delivery-Attempt"); n != "3" {
			t.Fatalf("the attempt after a lost one is announced as %q, want 3", n)
		}
		d := h.waitDelivery(t, a, ep, "succeeded", 2)
		if n := asList(d["attempts"])[1].(map[string]any)["n"]; n != float64(3) {
			t.Fatalf("the attempt after a lost one is recorded as number %v, want 3", n)
		}
	})
}

// TestEndpointGetsOnlyLaterEvents: an event written before an endpoint was
// created never reaches it; the next one does. The dispatcher polls rarely,
// so each delivery goes out on its write's wake-up.
func TestEndpointGetsOnlyLaterEvents(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			h := start(t, options{
				databaseURL: b.url(t),
				env:         map[string]string{"ALLOW_PRIVATE_TARGETS": "true"},
				extra:       []fx.Option{fx.Decorate(func() wiring.DispatcherPoll { return wiring.DispatcherPoll(time.Hour) })},
			})
			a := h.register(t)
			early, late := newReceiver(t, 200), newReceiver(t, 200)
			h.subscribe(t, a, early.srv.URL, "profile.created")
			h.createProfile(t, a, nil)
			early.waitFor(1)
			h.subscribe(t, a, late.srv.URL, "profile.created")
			after := h.createProfile(t, a, nil)

			early.waitFor(2)
			got := late.waitFor(1)
			poll.Until(t, "the early endpoint's deliveries to settle", func() bool { return len(early.requests()) == 2 })
			if len(late.requests()) != 1 {
				t.Fatalf("the endpoint created after an event got %d deliveries, want 1", len(late.requests()))
			}
			profile, _ := got[0].payload["data"].(map[string]any)["profile"].(map[string]any)
			if profile["id"] != after {
				t.Fatalf("the later endpoint got %v, want the event of %s only", got[0].payload, after)
			}
		})
	}
}

// TestUnansweringTeamDoesNotStopAnother: one team's twenty endpoints never
// answer (their attempts hang until a 30 s time-out); another team's event
// is still delivered while they hang.
func TestUnansweringTeamDoesNotStopAnother(t *testing.T) {
	t.Parallel()
	eachBackendEnv(t, map[string]string{"WEBHOOK_TIMEOUT": "30s"}, func(t *testing.T, h *harness) {
		noisy, quiet := h.register(t), h.register(t)
		hang, fast := newReceiver(t, 200), newReceiver(t, 200)
		hang.gate = make(chan struct{})
		defer close(hang.gate)
		for i := range 20 {
			h.subscribe(t, noisy, hang.srv.URL+"/"+strconv.Itoa(i), "profile.created")
		}
		for range 3 {
			h.createProfile(t, noisy, nil)
		}
		hang.waitFor(8)
		h.subscribe(t, quiet, fast.srv.URL, "profile.created")
		id := h.createProfile(t, quiet, nil)
		got := fast.waitFor(1)
		if p, _ := got[0].payload["data"].(map[string]any)["profile"].(map[string]any); p["id"] != id {
			t.Fatalf("the quiet team's receiver got %v, want its profile %s", got[0].payload, id)
		}
	})
}

// TestWebhookEndpointLimits: maxInFlight (default 16) and rateLimit (null
// for none) are set on create, changed or removed by PATCH, and refused out
// of range with 422 naming the field.
func TestWebhookEndpointLimits(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		r := h.post("/v1/webhooks", map[string]any{"url": "https://hooks.example.test/in", "events": []string{"*"}, "secret": webhookSecret}, auth...)
		expect(t, r, http.StatusCreated)
		if r.data()["maxInFlight"] != float64(16) || r.data()["rateLimit"] != nil {
			t.Fatalf("defaults: %s", r.raw)
		}
		r = h.post("/v1/webhooks", map[string]any{"url": "https://hooks.example.test/in", "events": []string{"*"}, "secret": webhookSecret,
			"maxInFlight": 4, "rateLimit": 20}, auth...)
		expect(t, r, http.StatusCreated)
		id := str(r.data()["id"])
		if r.data()["maxInFlight"] != float64(4) || r.data()["rateLimit"] != float64(20) {
			t.Fatalf("create with limits: %s", r.raw)
		}
		r = h.get("/v1/webhooks/"+id, auth...)
		expect(t, r, http.StatusOK)
		if r.data()["maxInFlight"] != float64(4) || r.data()["rateLimit"] != float64(20) {
			t.Fatalf("get: %s", r.raw)
		}
		r = h.patch("/v1/webhooks/"+id, map[string]any{"maxInFlight": 64}, auth...)
		expect(t, r, http.StatusOK)
		if r.data()["maxInFlight"] != float64(64) || r.data()["rateLimit"] != float64(20) {
			t.Fatalf("patch maxInFlight: %s", r.raw)
		}
		r = h.patch("/v1/webhooks/"+id, map[string]any{"rateLimit": nil}, auth...)
		expect(t, r, http.StatusOK)
		if r.data()["maxInFlight"] != float64(64) || r.data()["rateLimit"] != nil {
			t.Fatalf("patch rateLimit null: %s", r.raw)
		}
		for name, tc := range map[string]struct {
			body  map[string]any
			field string
		}{
			"maxInFlight 0":        {map[string]any{"maxInFlight": 0}, "maxInFlight"},
			"maxInFlight 257":      {map[string]any{"maxInFlight": 257}, "maxInFlight"},
			"rateLimit negative":   {map[string]any{"rateLimit": -1}, "rateLimit"},
			"rateLimit over 100k":  {map[string]any{"rateLimit": 100001}, "rateLimit"},
			"maxInFlight a string": {map[string]any{"maxInFlight": "8"}, "maxInFlight"},
			"rateLimit a string":   {map[string]any{"rateLimit": "8"}, "rateLimit"},
		} {
			t.Run(name, func(t *testing.T) {
				expectField := func(r response) {
					t.Helper()
					expect(t, r, http.StatusUnprocessableEntity)
					if !slices.Contains(r.errFields(), tc.field) {
						t.Fatalf("details do not name %s: %s", tc.field, r.raw)
					}
				}
				expectField(h.patch("/v1/webhooks/"+id, tc.body, auth...))
				create := map[string]any{"url": "https://hooks.example.test/in", "events": []string{"*"}, "secret": webhookSecret}
				for k, v := range tc.body {
					create[k] = v
				}
				expectField(h.post("/v1/webhooks", create, auth...))
			})
		}
	})
}
