package api_test

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// TestFleetShowsEachInstanceByItsNumbers asks GET /api/v1/fleet of a
// service alone: it shows itself, by an id, with its numbers, and neither
// its address nor anything of a team's sessions.
func TestFleetShowsEachInstanceByItsNumbers(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		id := h.createProfile(t, a, nil)
		expect(t, h.post("/api/v1/profiles/"+id+"/launch", nil, auth...), http.StatusOK)
		var fleet map[string]any
		poll.Check(t, 10*time.Second, "the instance to record itself", func() error {
			r := h.get("/api/v1/fleet", auth...)
			if r.status != http.StatusOK {
				return fmt.Errorf("status %d: %s", r.status, r.raw)
			}
			fleet = r.data()
			if n := len(asList(fleet["instances"])); n != 1 {
				return fmt.Errorf("%d instances", n)
			}
			return nil
		})
		in := asList(fleet["instances"])[0].(map[string]any)
		if !strings.HasPrefix(str(in["id"]), "ins_") || in["draining"] != false || in["version"] != "dev" {
			t.Fatalf("the instance is shown as %v", in)
		}
		raw := fmt.Sprint(fleet)
		for _, secret := range []string{strings.TrimPrefix(h.base, "http://"), id, a.userID} {
			if strings.Contains(raw, secret) {
				t.Fatalf("the fleet shows %q: %s", secret, raw)
			}
		}
	})
}

// peerRequest is a request of another instance to path, signed by the
// fleet's rules computed here (HKDF-SHA256 of SECRET_KEY, then HMAC-SHA256
// over path, time, the instance's address and the body), or unsigned when
// key is "".
func peerRequest(h *harness, key, path, body string) req {
	headers := map[string]string{"X-Test-Unrouted": "1"}
	if key != "" {
		k, err := hkdf.Key(sha256.New, []byte(key), nil, "profilesvc fleet peers v1 hmac-sha256", 32)
		if err != nil {
			h.t.Fatal(err)
		}
		ts := strconv.FormatInt(h.clock.Now().Unix(), 10)
		m := hmac.New(sha256.New, k)
		m.Write([]byte(path + "\n" + ts + "\n" + h.base + "\n" + body))
		headers["X-Profilesvc-Fleet-Time"] = ts
		headers["X-Profilesvc-Fleet-Signature"] = hex.EncodeToString(m.Sum(nil))
	}
	return req{method: http.MethodPost, path: path, rawBody: []byte(body), headers: headers}
}

// TestOnlyAnotherInstanceOfTheFleetPlacesALaunch sends the endpoint that
// takes launches from other instances a launch naming the owner of a
// team: unsigned or signed with another key it is refused and launches
// nothing; signed with the fleet's key it launches the profile, as that
// owner, and answers its session and token.
func TestOnlyAnotherInstanceOfTheFleetPlacesALaunch(t *testing.T) {
	t.Parallel()
	h := start(t, options{databaseURL: "memory://", extra: []fx.Option{newFakeRuntime().option()}})
	a := h.register(t)
	auth := bearer(a.access)
	id := h.createProfile(t, a, nil)
	body := fmt.Sprintf(`{"actor":{"userId":%q,"teamId":%q,"memberId":"","role":"owner","apiKeyId":""},"profileId":%q,"headless":true,"ttlSeconds":null}`, a.userID, a.teamID, id)
	for name, key := range map[string]string{"unsigned": "", "another fleet's key": "another-fleet-secret-key-0123456789abcdef0123"} {
		if r := h.do(peerRequest(h, key, "/internal/v1/launches", body)); r.status != http.StatusUnauthorized {
			t.Fatalf("%s: %d %s; want 401", name, r.status, r.raw)
		}
	}
	if d := h.get("/api/v1/profiles/"+id, auth...).data(); d["status"] != "idle" {
		t.Fatalf("a refused placement launched the profile: %v", d)
	}
	r := h.do(peerRequest(h, sharedSecrets.key, "/internal/v1/launches", body))
	var placed struct {
		SessionID string `json:"sessionId"`
		Token     string `json:"token"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.raw, &placed) != nil || placed.Token == "" {
		t.Fatalf("a launch signed with the fleet's key: %d %s", r.status, r.raw)
	}
	sess := h.get("/api/v1/profiles/"+id, auth...).data()["session"].(map[string]any)
	if sess["id"] != placed.SessionID || sess["launchedBy"] != a.userID {
		t.Fatalf("the profile holds session %v; want %s launched by %s", sess, placed.SessionID, a.userID)
	}
}
