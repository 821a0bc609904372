package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

const testSecret = "a webhook secret of 32 characters or more"

// deliver posts body to rc signed with signature and returns the status.
func deliver(rc *receiver, body, signature string) int {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set("X-Service-Signature", signature)
	rec := httptest.NewRecorder()
	rc.ServeHTTP(rec, req)
	return rec.Code
}

func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestReceiverVerifiesAndPrintsEachEventOnce(t *testing.T) {
	var out bytes.Buffer
	rc := &receiver{secret: []byte(testSecret), out: &out, seen: map[string]bool{}}
	body := "{\"id\": \"evt_1\",\n \"type\": \"profile.launched\", \"data\": {}}"

	for _, c := range []struct {
		name, body, signature string
		want                  int
	}{
		{"no signature", body, "", http.StatusUnauthorized},
		{"another secret", body, sign("another secret of 32 characters or more", body), http.StatusUnauthorized},
		{"uppercase hex", body, strings.ToUpper(sign(testSecret, body)), http.StatusUnauthorized},
		{"the body changed", body + " ", sign(testSecret, body), http.StatusUnauthorized},
		{"signed, not an event", `{"type": "profile.launched"}`, sign(testSecret, `{"type": "profile.launched"}`), http.StatusBadRequest},
	} {
		if got := deliver(rc, c.body, c.signature); got != c.want {
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
			if got := deliver(rc, body, sign(testSecret, body)); got != http.StatusOK {
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
