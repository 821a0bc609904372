package webhooks

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// gatedSender answers 200 within a millisecond (a fast receiver) once
// release gives a value (or is closed), and counts the deliveries in
// flight and sent.
type gatedSender struct {
	*fakeSender
	release chan struct{}

	mu             sync.Mutex
	inFlight, most int
	sent           map[string]bool
}

func (s *gatedSender) Send(_ context.Context, r ports.WebhookRequest) (ports.WebhookResponse, error) {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.sent[r.Headers["X-Service-Event-Id"]] = true
	s.mu.Unlock()
	<-s.release
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	return ports.WebhookResponse{StatusCode: 200, Latency: time.Millisecond}, nil
}

func (s *gatedSender) counts() (inFlight, most, sent int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight, s.most, len(s.sent)
}

func newGated(f *fixture) *gatedSender {
	s := &gatedSender{fakeSender: f.sender, release: make(chan struct{}), sent: map[string]bool{}}
	f.deps.Sender = s
	f.build()
	return s
}

// An endpoint that answers fast has up to its MaxInFlight more deliveries
// claimed than it has room for, each started as an attempt ends, with no
// claim in between; the receiver never sees more than MaxInFlight at once.
func TestDispatcherClaimsAheadForAFastEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sender := newGated(f)
	ep := f.limitedEndpoint(t, "https://fast.example.com/in", 2, 0)
	var ds []webhook.Delivery
	for range 6 {
		ds = append(ds, f.delivery(t, ep))
	}
	disp := f.dispatcher()
	f.claim(disp)
	poll.Until(t, "two attempts in flight", func() bool { n, _, _ := sender.counts(); return n == 2 })
	// Nothing is known of the endpoint's answers yet: nothing ahead.
	for _, d := range ds[2:] {
		if got := f.stored(t, d.ID).Started; got != 0 {
			t.Fatalf("%s claimed before its endpoint answered fast", d.ID)
		}
	}

	sender.release <- struct{}{}
	poll.Until(t, "the first outcome recorded", func() bool {
		return f.statusOf(t, ds[:2])[webhook.StatusSucceeded] == 1
	})
	f.claim(disp)
	// One started at once, two claimed ahead: five claimed in all.
	claimed := 0
	for _, d := range ds {
		if f.stored(t, d.ID).Started > 0 {
			claimed++
		}
	}
	if claimed != 5 {
		t.Fatalf("%d deliveries claimed, want 5: one more in flight and two ahead", claimed)
	}
	poll.Until(t, "the endpoint at its limit", func() bool { n, _, _ := sender.counts(); return n == 2 })

	// Each answer starts the next claimed ahead, without a claim.
	for sent := 4; sent <= 5; sent++ {
		sender.release <- struct{}{}
		poll.Until(t, "the next delivery claimed ahead sent", func() bool { _, _, n := sender.counts(); return n == sent })
	}
	close(sender.release)
	disp.wg.Wait()
	if _, most, sent := sender.counts(); most != 2 || sent != 5 {
		t.Fatalf("at most %d in flight and %d sent, want 2 and 5", most, sent)
	}
	if got := f.statusOf(t, ds); got[webhook.StatusSucceeded] != 5 || f.stored(t, ds[5].ID).Started != 0 {
		t.Fatalf("deliveries %v, the last claimed %d times; want 5 succeeded, the last unclaimed", got, f.stored(t, ds[5].ID).Started)
	}
}

// A delivery claimed ahead that waited past half its lease is not
// attempted: another dispatcher may take it once the lease lapses.
func TestDispatcherLetsGoOfADeliveryClaimedAheadTooLongAgo(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Policy.LeaseTTL = time.Minute
	sender := newGated(f)
	ep := f.limitedEndpoint(t, "https://fast.example.com/in", 2, 0)
	var ds []webhook.Delivery
	for range 4 {
		ds = append(ds, f.delivery(t, ep))
	}
	disp := f.dispatcher()
	f.claim(disp)
	poll.Until(t, "two attempts in flight", func() bool { n, _, _ := sender.counts(); return n == 2 })
	sender.release <- struct{}{}
	poll.Until(t, "the first outcome recorded", func() bool {
		return f.statusOf(t, ds[:2])[webhook.StatusSucceeded] == 1
	})
	f.claim(disp)
	poll.Until(t, "the third in flight", func() bool { _, _, n := sender.counts(); return n == 3 })
	if f.stored(t, ds[3].ID).Started != 1 {
		t.Fatal("the fourth delivery was not claimed ahead")
	}

	f.clock.Advance(31 * time.Second)
	close(sender.release)
	disp.wg.Wait()
	if _, _, sent := sender.counts(); sent != 3 {
		t.Fatalf("%d deliveries sent, want 3: the one claimed ahead too long ago is let go", sent)
	}
	if got := f.stored(t, ds[3].ID); got.Status != webhook.StatusPending || len(got.Attempts) != 0 {
		t.Fatalf("the delivery let go is %s with %d attempts, want pending with none", got.Status, len(got.Attempts))
	}
	if n := len(disp.flight.deliveries); n != 0 {
		t.Fatalf("%d deliveries still in hand", n)
	}
}
