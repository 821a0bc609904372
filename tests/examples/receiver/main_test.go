package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const testSecret = "a webhook secret of 32 characters or more"

// delivery is what a sender puts on the wire: the body and the Standard
// Webhooks headers.
type delivery struct {
	body, id, timestamp, signature string
}

// signed is body sent as id at at, signed with secret as the Standard
// Webhooks specification says: base64 HMAC-SHA256 of "id.timestamp.body".
func signed(secret, id string, at time.Time, body string) delivery {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(id + "." + ts + "." + body))
	return delivery{body: body, id: id, timestamp: ts, signature: "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))}
}

// deliver posts d to rc and returns the status.
func deliver(rc *receiver, d delivery) int {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(d.body))
	req.Header.Set("webhook-id", d.id)
	req.Header.Set("webhook-timestamp", d.timestamp)
	req.Header.Set("webhook-signature", d.signature)
	rec := httptest.NewRecorder()
	rc.ServeHTTP(rec, req)
	return rec.Code
}

func TestReceiverVerifiesAndPrintsEachEventOnce(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	rc := newReceiver([]byte(testSecret), &out)
	body := "{\"id\": \"evt_1\",\n \"type\": \"profile.launched\", \"data\": {}}"
	now := time.Now()
	good := signed(testSecret, "evt_1", now, body)
	// A delivery captured six minutes ago, its timestamp moved to now by
	// whoever replays it: the signature no longer matches.
	old := signed(testSecret, "evt_1", now.Add(-6*time.Minute), body)
	refreshed := old
	refreshed.timestamp = good.timestamp
	changed := good
	changed.body = body + " "
	notEvent := signed(testSecret, "evt_2", now, `{"type": "profile.launched"}`)

	for _, c := range []struct {
		name string
		d    delivery
		want int
	}{
		{"no signature", delivery{body: body, id: "evt_1", timestamp: good.timestamp}, http.StatusUnauthorized},
		{"another secret", signed("another secret of 32 characters or more", "evt_1", now, body), http.StatusUnauthorized},
		{"the body changed", changed, http.StatusUnauthorized},
		{"replayed six minutes later", old, http.StatusUnauthorized},
		{"replayed with a fresh timestamp", refreshed, http.StatusUnauthorized},
		{"from six minutes ahead", signed(testSecret, "evt_1", now.Add(6*time.Minute), body), http.StatusUnauthorized},
		{"signed, not an event", notEvent, http.StatusBadRequest},
	} {
		if got := deliver(rc, c.d); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if out.Len() != 0 {
		t.Fatalf("printed %q for deliveries it refused", out.String())
	}

	// The same event delivered by several attempts at once: each is
	// answered 200, and it is printed once, on one line.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := deliver(rc, good); got != http.StatusOK {
				t.Errorf("a signed delivery: %d, want 200", got)
			}
		})
	}
	wg.Wait()
	if want := `{"id":"evt_1","type":"profile.launched","data":{}}` + "\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}

	rec := httptest.NewRecorder()
	rc.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", rec.Code)
	}
}
