package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// swReceiver is a customer's receiver built on the Standard Webhooks
// reference library: it answers 200 to what the library verifies (the
// signature of id.timestamp.body, the timestamp within the library's five
// minutes of the receiver's own clock) and 401 to anything else.
type swReceiver struct {
	srv      *httptest.Server
	verifier *standardwebhooks.Webhook
	mu       sync.Mutex
	got      []swDelivery
}

type swDelivery struct {
	body   []byte
	header http.Header
	err    error // what the library said of it
}

func newSWReceiver(t *testing.T) *swReceiver {
	v, err := standardwebhooks.NewWebhookRaw([]byte(webhookSecret))
	if err != nil {
		t.Fatal(err)
	}
	rc := &swReceiver{verifier: v}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		checkDelivery(t, r.Header, body)
		err := rc.verifier.Verify(body, r.Header)
		rc.mu.Lock()
		rc.got = append(rc.got, swDelivery{body: body, header: r.Header.Clone(), err: err})
		rc.mu.Unlock()
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *swReceiver) received() []swDelivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// replay posts a captured delivery to the receiver again, with header as
// given, and returns the status.
func (rc *swReceiver) replay(t *testing.T, d swDelivery, header http.Header) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rc.srv.URL, bytes.NewReader(d.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A receiver on the Standard Webhooks reference library verifies the
// service's deliveries, and refuses a delivery signed longer ago than its
// window, also when the replayer moves its timestamp to now.
func TestStandardWebhooksReceiverVerifiesAndRefusesReplays(t *testing.T) {
	t.Parallel()
	eachWebhookBackend(t, func(t *testing.T, h *harness) {
		rc := newSWReceiver(t)
		owner := h.register(t)
		auth := bearer(owner.access)
		h.clock.Set(time.Now())
		ep := h.subscribe(t, owner, rc.srv.URL, "profile.created")

		// A delivery signed now: verified, and its webhook-id is the event's.
		h.createProfile(t, owner, nil)
		poll.Until(t, "the profile.created delivery", func() bool { return len(rc.received()) == 1 })
		fresh := rc.received()[0]
		if fresh.err != nil {
			t.Fatalf("the library refused a fresh delivery: %v (headers %v)", fresh.err, fresh.header)
		}
		var event struct{ ID string }
		if err := json.Unmarshal(fresh.body, &event); err != nil || fresh.header.Get("webhook-id") != event.ID {
			t.Fatalf("webhook-id %q, the event's id %q (%v)", fresh.header.Get("webhook-id"), event.ID, err)
		}

		// A delivery signed ten minutes ago reaches the receiver now: what
		// a captured delivery replayed later looks like. Refused as too old.
		h.clock.Set(time.Now().Add(-10 * time.Minute))
		expect(t, h.post("/v1/webhooks/"+ep+"/test", map[string]any{"event_type": "profile.created"}, auth...), http.StatusAccepted)
		poll.Until(t, "the test event's first attempt", func() bool { return len(rc.received()) == 2 })
		old := rc.received()[1]
		if !errors.Is(old.err, standardwebhooks.ErrMessageTooOld) {
			t.Fatalf("a delivery signed ten minutes ago: the library said %v, want %v", old.err, standardwebhooks.ErrMessageTooOld)
		}
		if got := rc.replay(t, old, old.header.Clone()); got != http.StatusUnauthorized {
			t.Fatalf("the old delivery replayed as captured: %d, want 401", got)
		}
		// The replayer sets webhook-timestamp to now: the signature covers
		// the timestamp, so it no longer matches.
		moved := old.header.Clone()
		moved.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix(), 10))
		if got := rc.replay(t, old, moved); got != http.StatusUnauthorized {
			t.Fatalf("the old delivery replayed with a fresh timestamp: %d, want 401", got)
		}
		if last := rc.received()[len(rc.received())-1]; !errors.Is(last.err, standardwebhooks.ErrNoMatchingSignature) {
			t.Fatalf("the library said %v of a moved timestamp, want %v", last.err, standardwebhooks.ErrNoMatchingSignature)
		}

		// The service's next attempt is signed at its own time and succeeds,
		// with the same webhook-id as the refused one. The clock moves once
		// the refused attempt is stored: moved before, the retry is due
		// while its outcome is being recorded, the dispatcher leaves it to
		// its lease (a real clock takes 5 s to get there), and a frozen
		// clock never lets the lease lapse.
		h.waitDelivery(t, owner, ep, "pending", 1)
		h.clock.Set(time.Now())
		poll.Until(t, "the test event's retry", func() bool { return len(rc.received()) == 5 })
		retry := rc.received()[4]
		if retry.err != nil {
			t.Fatalf("the library refused the retry: %v", retry.err)
		}
		if retry.header.Get("webhook-id") != old.header.Get("webhook-id") {
			t.Fatalf("webhook-id %q on the retry, %q on the first attempt", retry.header.Get("webhook-id"), old.header.Get("webhook-id"))
		}
		poll.Until(t, "the test event's delivery to succeed", func() bool {
			return len(h.deliveries(t, owner, ep, "succeeded")) == 2
		})
	})
}
