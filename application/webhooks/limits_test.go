package webhooks

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// limitedEndpoint creates an endpoint of team_1 with its own limits.
func (f *fixture) limitedEndpoint(t *testing.T, url string, maxInFlight, rateLimit int) webhook.Endpoint {
	t.Helper()
	ep, err := f.svc.Create(ctx, admin, CreateInput{URL: url, Events: []string{"*"}, Secret: secret,
		MaxInFlight: &maxInFlight, RateLimit: &rateLimit})
	if err != nil {
		t.Fatalf("create endpoint %s: %v", url, err)
	}
	return ep
}

// countingSender holds every request to a URL containing "slow" until
// release gets a value (or is closed), and counts the requests in flight
// to it; the rest go to the fake sender at once.
type countingSender struct {
	*fakeSender
	release chan struct{}

	mu       sync.Mutex
	inFlight int
	most     int
}

func (s *countingSender) Send(ctx context.Context, r ports.WebhookRequest) (ports.WebhookResponse, error) {
	if !strings.Contains(r.URL, "slow") {
		return s.fakeSender.Send(ctx, r)
	}
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	<-s.release
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	return ports.WebhookResponse{StatusCode: 200, Latency: time.Second}, nil
}

func (s *countingSender) counts() (inFlight, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight, s.most
}

func (f *fixture) statusOf(t *testing.T, ds []webhook.Delivery) map[webhook.Status]int {
	t.Helper()
	out := map[webhook.Status]int{}
	for _, d := range ds {
		out[f.stored(t, d.ID).Status]++
	}
	return out
}

// A slow receiver at its MaxInFlight holds only that many workers: the
// team's fast receiver keeps delivering meanwhile, and the slow one's
// other deliveries wait for room, unattempted.
func TestDispatcherFastEndpointDeliversWhileASlowOneIsAtItsLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sender := &countingSender{fakeSender: f.sender, release: make(chan struct{})}
	f.deps.Sender = sender
	f.deps.Policy.Workers, f.deps.Policy.PerTeam = 8, 8
	f.build()
	slow := f.limitedEndpoint(t, "https://slow.example.com/in", 2, 0)
	fast := f.limitedEndpoint(t, "https://fast.example.com/in", 16, 0)
	slows := f.deliveries(t, slow, 4)
	var fasts []webhook.Delivery
	disp := f.dispatcher()
	f.claim(disp)
	poll.Until(t, "two attempts held by the slow receiver", func() bool { n, _ := sender.counts(); return n == 2 })

	for round := range 3 {
		for range 3 {
			fasts = append(fasts, f.delivery(t, fast))
		}
		f.claim(disp)
		poll.Until(t, "the fast receiver's deliveries", func() bool {
			return f.statusOf(t, fasts)[webhook.StatusSucceeded] == len(fasts)
		})
		if n, most := sender.counts(); n != 2 || most != 2 {
			t.Fatalf("round %d: slow receiver has %d in flight (at most %d), want 2", round, n, most)
		}
	}
	if got := f.statusOf(t, slows); got[webhook.StatusPending] != 4 {
		t.Fatalf("slow deliveries %v, want 4 pending", got)
	}
	for _, d := range slows[2:] {
		if got := f.stored(t, d.ID); got.Started != 0 {
			t.Fatalf("%s claimed %d times while its endpoint had no room", d.ID, got.Started)
		}
	}
	close(sender.release)
	disp.wg.Wait()
}

// However the dispatcher runs, the receiver never sees more requests at
// once than the endpoint's MaxInFlight, and every delivery gets there.
func TestDispatcherNeverExceedsAnEndpointsMaxInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sender := &countingSender{fakeSender: f.sender, release: make(chan struct{})}
	f.deps.Sender = sender
	f.deps.Policy.Workers, f.deps.Policy.PerTeam = 8, 8
	f.build()
	ep := f.limitedEndpoint(t, "https://slow.example.com/in", 3, 0)
	ds := f.deliveries(t, ep, 10)
	stop := f.run(t)
	defer stop()
	for released := range len(ds) {
		want := min(3, len(ds)-released)
		poll.Until(t, "the receiver at its limit", func() bool { n, _ := sender.counts(); return n == want })
		sender.release <- struct{}{}
	}
	poll.Until(t, "every delivery to succeed", func() bool {
		return f.statusOf(t, ds)[webhook.StatusSucceeded] == len(ds)
	})
	if _, most := sender.counts(); most != 3 {
		t.Fatalf("at most %d requests at once, want the endpoint's 3", most)
	}
}

// An endpoint's rate limit holds under a fake clock: a second's worth of
// attempts at once, then one per 1/rate of a second; the dispatcher says
// when the next is allowed, so its loop need not poll for it.
func TestDispatcherKeepsAnEndpointsRateLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Policy.Workers, f.deps.Policy.PerTeam = 8, 8
	f.build()
	ep := f.limitedEndpoint(t, "https://hooks.example.com/in", 16, 2)
	ds := f.deliveries(t, ep, 6)
	disp := f.dispatcher()
	step := func(advance time.Duration, wantSent int, wantWait time.Duration) {
		t.Helper()
		f.clock.Advance(advance)
		_, wait := f.svc.claimAndStart(ctx, disp)
		disp.wg.Wait()
		if n := len(f.sender.Sent()); n != wantSent {
			t.Fatalf("after %v more: %d sent, want %d", advance, n, wantSent)
		}
		if wait != wantWait {
			t.Fatalf("after %v more: next attempt allowed in %v, want %v", advance, wait, wantWait)
		}
	}
	step(0, 2, 0)
	step(0, 2, 500*time.Millisecond)
	step(250*time.Millisecond, 2, 250*time.Millisecond)
	step(250*time.Millisecond, 3, 0)
	step(0, 3, 500*time.Millisecond)
	step(time.Second, 5, 0)
	step(10*time.Second, 6, 0)
	if got := f.statusOf(t, ds); got[webhook.StatusSucceeded] != 6 {
		t.Fatalf("deliveries %v", got)
	}
}

// A new rate limit starts with a full second of it, as the store's bound
// for an endpoint no dispatcher has in hand assumes, rather than with what
// was left of the old one.
func TestDispatcherStartsAChangedRateLimitWithAFullSecond(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Policy.Workers, f.deps.Policy.PerTeam = 8, 8
	f.build()
	ep := f.limitedEndpoint(t, "https://hooks.example.com/in", 16, 2)
	ds := f.deliveries(t, ep, 6)
	disp := f.dispatcher()
	dispatch := func(wantSent int) {
		t.Helper()
		f.claim(disp)
		disp.wg.Wait()
		if n := len(f.sender.Sent()); n != wantSent {
			t.Fatalf("%d sent, want %d", n, wantSent)
		}
	}
	dispatch(2)
	four := 4
	if _, err := f.svc.Update(ctx, admin, ep.ID, UpdateInput{RateLimit: &four}); err != nil {
		t.Fatal(err)
	}
	// Half a second of the old rate allows one attempt; reading the
	// endpoint for it finds the new rate, whose second has three more.
	f.clock.Advance(500 * time.Millisecond)
	dispatch(3)
	dispatch(6)
	if got := f.statusOf(t, ds); got[webhook.StatusSucceeded] != 6 {
		t.Fatalf("deliveries %v", got)
	}
}

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

// However fast an endpoint answers, a delivery to it is claimed only when
// it has room: the deliveries beyond its MaxInFlight stay unclaimed until
// an attempt ends, and each is claimed once.
func TestDispatcherClaimsOnlyWhatAnEndpointHasRoomFor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sender := &gatedSender{fakeSender: f.sender, release: make(chan struct{}), sent: map[string]bool{}}
	f.deps.Sender = sender
	f.build()
	ep := f.limitedEndpoint(t, "https://fast.example.com/in", 2, 0)
	ds := f.deliveries(t, ep, 6)
	claimed := func() int {
		n := 0
		for _, d := range ds {
			if f.stored(t, d.ID).Started > 0 {
				n++
			}
		}
		return n
	}
	disp := f.dispatcher()
	// Registered after the dispatcher's, so it runs first: a test that
	// fails with attempts held lets them end rather than hang.
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(sender.release) }) }
	t.Cleanup(releaseAll)
	f.claim(disp)
	poll.Until(t, "two attempts in flight", func() bool { n, _, _ := sender.counts(); return n == 2 })
	for answered := 1; answered <= 4; answered++ {
		if n := claimed(); n != answered+1 {
			t.Fatalf("after %d answers: %d deliveries claimed, want %d", answered-1, n, answered+1)
		}
		sender.release <- struct{}{}
		poll.Until(t, "the outcome recorded", func() bool {
			return f.statusOf(t, ds)[webhook.StatusSucceeded] == answered
		})
		f.claim(disp)
		poll.Until(t, "the endpoint at its limit again", func() bool { n, _, _ := sender.counts(); return n == 2 })
	}
	releaseAll()
	disp.wg.Wait()
	if _, most, sent := sender.counts(); most != 2 || sent != 6 {
		t.Fatalf("at most %d in flight and %d sent, want 2 and 6", most, sent)
	}
	for _, d := range ds {
		if got := f.stored(t, d.ID); got.Status != webhook.StatusSucceeded || got.Started != 1 {
			t.Fatalf("%s: %s, claimed %d times; want succeeded, claimed once", d.ID, got.Status, got.Started)
		}
	}
}

func TestEndpointLimitsValidationAndUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, c := range []struct {
		maxInFlight, rateLimit int
		want                   []domain.FieldIssue
	}{
		{0, 0, []domain.FieldIssue{{Field: "maxInFlight", Issue: "must be 1 to 256"}}},
		{257, -1, []domain.FieldIssue{
			{Field: "maxInFlight", Issue: "must be 1 to 256"},
			{Field: "rateLimit", Issue: "must be 1 to 100000 attempts per second, or null for no limit"},
		}},
		{1, 100001, []domain.FieldIssue{{Field: "rateLimit", Issue: "must be 1 to 100000 attempts per second, or null for no limit"}}},
	} {
		_, err := f.svc.Create(ctx, admin, CreateInput{URL: "https://hooks.example.com/in", Events: []string{"*"}, Secret: secret,
			MaxInFlight: &c.maxInFlight, RateLimit: &c.rateLimit})
		wantFields(t, err, c.want...)
	}

	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	if ep.MaxInFlight != webhook.DefaultMaxInFlight || ep.RateLimit != 0 {
		t.Fatalf("defaults: max in flight %d, rate limit %d", ep.MaxInFlight, ep.RateLimit)
	}
	one, fifty := 1, 50
	ep, err := f.svc.Update(ctx, admin, ep.ID, UpdateInput{MaxInFlight: &one, RateLimit: &fifty})
	if err != nil || ep.MaxInFlight != 1 || ep.RateLimit != 50 {
		t.Fatalf("update: %+v %v", ep, err)
	}
	zero := 0
	if _, err := f.svc.Update(ctx, admin, ep.ID, UpdateInput{MaxInFlight: &zero}); err == nil {
		t.Fatal("update to max in flight 0 accepted")
	}
	ep, err = f.svc.Update(ctx, admin, ep.ID, UpdateInput{RateLimit: &zero})
	if err != nil || ep.MaxInFlight != 1 || ep.RateLimit != 0 {
		t.Fatalf("update removing the rate limit: %+v %v", ep, err)
	}
	stored, err := f.svc.Get(ctx, admin, ep.ID)
	if err != nil || stored.MaxInFlight != 1 || stored.RateLimit != 0 {
		t.Fatalf("stored: %+v %v", stored, err)
	}
}

// Outcomes that finish while one is being written are written together in
// the next statement, and every attempt is recorded.
func TestDispatcherRecordsOutcomesInBatches(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate := make(chan struct{})
	// The first attempt finishes alone; the others only once its outcome
	// is being written, so they finish while it is.
	sender := &holdAfterFirst{fakeSender: f.sender, rest: make(chan struct{})}
	f.deps.Sender = sender
	inner := f.deps.Deliveries
	var (
		mu      sync.Mutex
		batches []int
	)
	f.deps.Deliveries = &completeHook{Deliveries: inner, fn: func(ctx context.Context, owner string, ds ...webhook.Delivery) ([]bool, error) {
		mu.Lock()
		first := len(batches) == 0
		batches = append(batches, len(ds))
		mu.Unlock()
		if first {
			close(sender.rest)
			<-gate
		}
		return inner.Complete(ctx, owner, ds...)
	}}
	f.deps.Policy.Workers, f.deps.Policy.PerTeam = 8, 8
	f.build()
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	ds := f.deliveries(t, ep, 5)
	disp := f.dispatcher()
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	defer release()
	f.claim(disp)
	// The first write holds the first outcome; the rest queue behind it.
	poll.Until(t, "the other outcomes queued behind the first write", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(batches) == 1 && batches[0]+len(disp.outcomes) == len(ds)
	})
	release()
	disp.wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(batches) != 2 || batches[0] != 1 || batches[1] != 4 {
		t.Fatalf("Complete calls with %v outcomes, want one of 1 then one of 4", batches)
	}
	for _, d := range ds {
		if got := f.stored(t, d.ID); got.Status != webhook.StatusSucceeded || len(got.Attempts) != 1 {
			t.Fatalf("%s: %s with %d attempts", d.ID, got.Status, len(got.Attempts))
		}
	}
}

// holdAfterFirst sends the first request at once and the others once rest
// is closed.
type holdAfterFirst struct {
	*fakeSender
	sent atomic.Int32
	rest chan struct{}
}

func (s *holdAfterFirst) Send(ctx context.Context, r ports.WebhookRequest) (ports.WebhookResponse, error) {
	if s.sent.Add(1) > 1 {
		<-s.rest
	}
	return s.fakeSender.Send(ctx, r)
}
