package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap/zapcore"

	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// logged waits for the line msg whose fields hold every one of want, and
// returns its fields.
func (h *harness) logged(t *testing.T, msg string, want map[string]any) map[string]any {
	t.Helper()
	var found map[string]any
	poll.Check(t, poll.Timeout, fmt.Sprintf("a %q line with %v", msg, want), func() error {
		var seen []map[string]any
		for _, e := range h.logs.FilterMessage(msg).All() {
			fields := e.ContextMap()
			fields["level"] = e.Level
			ok := true
			for k, v := range want {
				if fmt.Sprint(fields[k]) != fmt.Sprint(v) {
					ok = false
				}
			}
			if ok {
				found = fields
				return nil
			}
			seen = append(seen, fields)
		}
		return fmt.Errorf("seen %v", seen)
	})
	return found
}

// noSecretLogged fails when a line, its message or a field, holds one of
// secrets.
func (h *harness) noSecretLogged(t *testing.T, secrets ...string) {
	t.Helper()
	for _, e := range h.logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		for _, s := range secrets {
			if s != "" && strings.Contains(line, s) {
				t.Fatalf("a log line holds a secret: %s", line)
			}
		}
	}
}

// A launch, a release and an expiry are each a line at info with the
// request that made it (none for the reaper), the team, the profile and
// the session.
func TestSessionsAreLogged(t *testing.T) {
	t.Parallel()
	eachBackendWith(t, []fx.Option{fastReaper}, func(t *testing.T, h *harness) {
		a := h.register(t)
		id := h.createProfile(t, a, nil)
		auth := bearer(a.access)
		r := h.post("/api/v1/profiles/"+id+"/launch", map[string]any{"ttlSeconds": 60}, append(auth, "X-Request-ID", "launch-1")...)
		expect(t, r, http.StatusOK)
		sess := r.data()["session"].(map[string]any)
		sid := str(sess["id"])
		l := h.logged(t, "profile launched", map[string]any{"request_id": "launch-1", "team_id": a.teamID, "profile_id": id, "session_id": sid, "launched_by": a.userID})
		if l["level"] != zapcore.InfoLevel {
			t.Errorf("launch logged at %v", l["level"])
		}
		expect(t, h.post("/api/v1/profiles/"+id+"/release", nil, append(auth, "X-Request-ID", "release-1")...), http.StatusOK)
		h.logged(t, "profile stopped", map[string]any{"request_id": "release-1", "team_id": a.teamID, "profile_id": id, "session_id": sid, "reason": "released"})

		r = h.post("/api/v1/profiles/"+id+"/launch", map[string]any{"ttlSeconds": 60}, auth...)
		expect(t, r, http.StatusOK)
		again := str(r.data()["session"].(map[string]any)["id"])
		h.clock.Advance(time.Minute)
		l = h.logged(t, "profile stopped", map[string]any{"team_id": a.teamID, "profile_id": id, "session_id": again, "reason": "expired"})
		if _, ok := l["request_id"]; ok {
			t.Errorf("the reaper's line names a request: %v", l)
		}
		h.noSecretLogged(t, a.access, a.refresh, a.password, str(sess["cdpToken"]))
	})
}

// A request refused by a throttle is a warning naming who, where and for
// how long.
func TestThrottlingIsLogged(t *testing.T) {
	t.Parallel()
	eachBackendEnv(t, map[string]string{"RATE_LIMIT": "2/1m"}, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := append(bearer(a.access), "X-Request-ID", "throttled-1")
		codes := []int{}
		for range 3 {
			codes = append(codes, h.get("/api/v1/profiles", auth...).status)
		}
		if codes[2] != http.StatusTooManyRequests {
			t.Fatalf("statuses %v, want the third refused", codes)
		}
		l := h.logged(t, "request throttled", map[string]any{"request_id": "throttled-1", "team_id": a.teamID, "user_id": a.userID, "path": "/api/v1/profiles"})
		if l["level"] != zapcore.WarnLevel || l["retry_after_s"] == nil {
			t.Errorf("throttle line %v", l)
		}
		h.noSecretLogged(t, a.access, a.password)
	})
}

// A failed webhook attempt is a warning, the last one an error, each
// naming the team, the delivery, the endpoint and the event.
func TestWebhookFailuresAreLogged(t *testing.T) {
	t.Parallel()
	eachWebhookBackend(t, func(t *testing.T, h *harness) {
		rc := newReceiver(t, 503)
		a := h.register(t)
		ep := h.subscribe(t, a, rc.srv.URL, "profile.created")
		h.createProfile(t, a, nil)
		d := h.waitDelivery(t, a, ep, "pending", 1)
		want := map[string]any{"team_id": a.teamID, "endpoint_id": ep, "delivery_id": str(d["id"]), "status_code": 503}
		first := h.logged(t, "webhook attempt failed", merge(want, map[string]any{"attempt": 1}))
		if first["level"] != zapcore.WarnLevel || first["event_id"] == "" {
			t.Errorf("attempt line %v", first)
		}
		for i, gap := range []time.Duration{5 * time.Second, 25 * time.Second, 125 * time.Second} {
			h.clock.Advance(gap)
			h.waitDelivery(t, a, ep, map[bool]string{true: "failed", false: "pending"}[i == 2], i+2)
		}
		last := h.logged(t, "webhook delivery failed: no attempt left", merge(want, map[string]any{"attempt": 4}))
		if last["level"] != zapcore.ErrorLevel {
			t.Errorf("final line %v", last)
		}
	})
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// A failed proxy check is a warning naming the request, the team and the
// proxy, and never the proxy's password.
func TestProxyCheckFailuresAreLogged(t *testing.T) {
	t.Parallel()
	eachProxyBackend(t, nil, func(t *testing.T, h *harness, pr *fakeProber, _ string) {
		a := h.register(t)
		p := h.addProxy(t, a, map[string]any{"name": "Tokyo", "url": "socks5://carol:" + proxyPassword + "@jp.example.com:1080"})
		pr.set(ports.ProbeResult{Error: "the proxy refused the username or password"})
		expect(t, h.post("/api/v1/proxies/"+str(p["id"])+"/check", nil, append(bearer(a.access), "X-Request-ID", "check-1")...), http.StatusOK)
		l := h.logged(t, "proxy check failed", map[string]any{"request_id": "check-1", "team_id": a.teamID, "proxy_id": str(p["id"]),
			"error": "the proxy refused the username or password"})
		if l["level"] != zapcore.WarnLevel {
			t.Errorf("check line %v", l)
		}
		h.noSecretLogged(t, proxyPassword, a.access)
	})
}
