package webhooks

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// commit appends an event of the team in a unit of work of its own, as a
// use case's write does.
func (f *fixture) commit(t *testing.T, id, teamID string, typ event.Type) {
	t.Helper()
	if err := f.write(id, teamID, typ, `{"profile":{"id":"prf_1"}}`); err != nil {
		t.Fatal(err)
	}
}

// write appends an event of the team with data in a unit of its own.
func (f *fixture) write(id, teamID string, typ event.Type, data string) error {
	e := event.Event{ID: id, TeamID: teamID, Type: typ, OccurredAt: t0, Data: []byte(data)}
	return f.deps.Tx.Do(ctx, func(ctx context.Context) error { return f.svc.Append(ctx, e) })
}

// deliveredEvents lists the event ids of an endpoint's deliveries, sorted.
func (f *fixture) deliveredEvents(t *testing.T, teamID, endpointID string) []string {
	t.Helper()
	ds, err := f.store.Deliveries().List(ctx, teamID, endpointID, webhookstore.DeliveryFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, d.EventID)
	}
	slices.Sort(out)
	return out
}

// outbox lists the ids of the events stored.
func (f *fixture) outbox(t *testing.T) []string {
	t.Helper()
	events, err := f.store.Outbox().ListAfter(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range events {
		ids = append(ids, e.ID)
	}
	return ids
}

func TestAppendQueuesADeliveryToEachSubscribedEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.endpoint(t, "https://a.example.com", "profile.created")
	f.endpoint(t, "https://b.example.com", "*")
	f.endpoint(t, "https://c.example.com", "*")
	off := false
	if _, err := f.svc.Update(ctx, admin, "whk_003", UpdateInput{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Create(ctx, other, CreateInput{URL: "https://d.example.com", Events: []string{"*"}, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "evt_a", "team_1", event.ProfileCreated)
	f.commit(t, "evt_b", "team_1", event.ProfileDeleted)
	f.commit(t, "evt_c", "team_2", event.ProfileCreated)
	f.commit(t, "evt_d", "team_3", event.ProfileCreated)

	wantStrings(t, "outbox", f.outbox(t), "evt_a", "evt_b", "evt_c", "evt_d")
	wantStrings(t, "whk_001", f.deliveredEvents(t, "team_1", "whk_001"), "evt_a")
	wantStrings(t, "whk_002", f.deliveredEvents(t, "team_1", "whk_002"), "evt_a", "evt_b")
	wantStrings(t, "whk_003 (disabled)", f.deliveredEvents(t, "team_1", "whk_003"))
	wantStrings(t, "whk_004 (team_2)", f.deliveredEvents(t, "team_2", "whk_004"), "evt_c")

	d := f.stored(t, "dlv_001")
	if d.EndpointID != "whk_001" || d.Status != webhook.StatusPending || !d.NextAttemptAt.Equal(t0) ||
		string(d.Payload) != `{"id":"evt_a","type":"profile.created","created_at":"2030-01-01T12:00:00Z","data":{"profile":{"id":"prf_1"}}}` {
		t.Fatalf("delivery %+v", d)
	}
}

// An endpoint takes the events written once it exists, none from before.
func TestAnEndpointTakesTheEventsWrittenOnceItExists(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.commit(t, "evt_a", "team_1", event.ProfileCreated)
	ep := f.endpoint(t, "https://a.example.com", "*")
	f.commit(t, "evt_b", "team_1", event.ProfileCreated)
	wantStrings(t, "deliveries", f.deliveredEvents(t, "team_1", ep.ID), "evt_b")
}

// An event and its deliveries commit together or not at all: a write
// whose unit fails, or whose endpoints cannot be read, leaves neither.
func TestAnAppendThatFailsLeavesNoEventAndNoDelivery(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://a.example.com", "*")
	boom := errors.New("boom")
	err := f.deps.Tx.Do(ctx, func(ctx context.Context) error {
		e := event.Event{ID: "evt_a", TeamID: "team_1", Type: event.ProfileCreated, OccurredAt: t0, Data: []byte(`{}`)}
		if err := f.svc.Append(ctx, e); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("the unit returned %v", err)
	}
	if f.woken() {
		t.Fatal("a write whose unit rolled back woke the dispatcher")
	}

	working := f.deps.Endpoints
	f.deps.Endpoints = &enabledHook{Endpoints: working, fn: func(context.Context, string) ([]webhook.Endpoint, error) {
		return nil, errors.New("endpoints: statement timeout")
	}}
	f.build()
	if err := f.write("evt_b", "team_1", event.ProfileCreated, `{}`); err == nil || err.Error() != "endpoints: statement timeout" {
		t.Fatalf("append error %v", err)
	}

	// Data that is not JSON makes no payload.
	f.deps.Endpoints = working
	f.build()
	if err := f.write("evt_c", "team_1", event.ProfileCreated, `{"profile":`); err == nil {
		t.Fatal("an event whose data is not JSON was queued")
	}
	wantStrings(t, "outbox", f.outbox(t))
	wantStrings(t, "deliveries", f.deliveredEvents(t, "team_1", ep.ID))
}

// The dispatcher is woken once a write that queued deliveries has
// committed: not before, and not by a write whose events no endpoint takes.
func TestAppendWakesTheDispatcherOnceItsDeliveriesCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.endpoint(t, "https://a.example.com", "profile.deleted")
	f.woken()
	err := f.deps.Tx.Do(ctx, func(ctx context.Context) error {
		e := event.Event{ID: "evt_a", TeamID: "team_1", Type: event.ProfileDeleted, OccurredAt: t0, Data: []byte(`{}`)}
		if err := f.svc.Append(ctx, e); err != nil {
			return err
		}
		if f.woken() {
			t.Error("woken before the unit committed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !f.woken() {
		t.Fatal("a committed write that queued a delivery did not wake the dispatcher")
	}
	f.commit(t, "evt_b", "team_1", event.ProfileCreated)
	f.commit(t, "evt_c", "team_2", event.ProfileDeleted)
	if f.woken() {
		t.Fatal("writes that queued no delivery woke the dispatcher")
	}
}

// queuedCount counts what the dispatchers are told.
type queuedCount struct{ n atomic.Int32 }

func (q *queuedCount) DeliveriesQueued() { q.n.Add(1) }

// Every way of queueing a delivery tells every instance's dispatcher
// (Deps.Queued), not only this one's: an event's, a test event's and a
// retried failure's.
func TestEveryQueuedDeliveryIsTold(t *testing.T) {
	t.Parallel()
	f := newFixture(t, reply{status: 500})
	told := &queuedCount{}
	f.deps.Queued = told
	f.deps.Policy.Schedule = webhook.Schedule{0}
	f.build()
	ep := f.endpoint(t, "https://a.example.com", "*")
	f.commit(t, "evt_a", "team_1", event.ProfileCreated)
	if n := told.n.Load(); n != 1 {
		t.Fatalf("told %d times after an event's delivery, want 1", n)
	}
	id, err := f.svc.Test(ctx, admin, ep.ID, string(event.ProfileDeleted))
	if err != nil {
		t.Fatal(err)
	}
	if n := told.n.Load(); n != 2 {
		t.Fatalf("told %d times after a test event, want 2", n)
	}
	f.dispatchOnce()
	if d := f.stored(t, id); d.Status != webhook.StatusFailed {
		t.Fatalf("the test delivery is %s after its one attempt failed", d.Status)
	}
	if _, err := f.svc.Retry(ctx, admin, ep.ID, id); err != nil {
		t.Fatal(err)
	}
	if n := told.n.Load(); n != 3 {
		t.Fatalf("told %d times after a retry, want 3", n)
	}
}

// createHook counts the deliveries of each Create.
type createHook struct {
	webhookstore.Deliveries
	mu      sync.Mutex
	batches []int
}

func (h *createHook) Create(ctx context.Context, ds ...webhook.Delivery) error {
	h.mu.Lock()
	h.batches = append(h.batches, len(ds))
	h.mu.Unlock()
	return h.Deliveries.Create(ctx, ds...)
}

// An event's deliveries are written together, not one statement each.
func TestAppendWritesAnEventsDeliveriesTogether(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hook := &createHook{Deliveries: f.deps.Deliveries}
	f.deps.Deliveries = hook
	f.build()
	for _, url := range []string{"https://a.example.com", "https://b.example.com", "https://c.example.com"} {
		f.endpoint(t, url, "*")
	}
	f.commit(t, "evt_a", "team_1", event.ProfileCreated)
	if !slices.Equal(hook.batches, []int{3}) {
		t.Fatalf("Create calls with %v deliveries, want one of 3", hook.batches)
	}
}

// run starts Run and returns a function that stops it and waits for it
// to return.
func (f *fixture) run(t *testing.T) (stop func()) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.svc.Run(runCtx)
	}()
	return func() {
		t.Helper()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	}
}

// A committed write's delivery goes out at once: the commit wakes Run,
// which would otherwise wait for its poll (an hour here).
func TestRunDeliversCommittedEventsAndStopsWithItsContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Policy.PollInterval = time.Hour
	f.build()
	f.endpoint(t, "https://a.example.com", "*")
	stop := f.run(t)
	poll.Until(t, "Run idle", func() bool { return slices.Contains(f.metrics.Oldest(), 0) })

	f.commit(t, "evt_a", "team_1", event.ProfileCreated)
	if r := f.sender.arrived(t); r.Headers["X-Service-Event-Id"] != "evt_a" {
		t.Fatalf("request %+v", r)
	}
	poll.Until(t, "the delivery to succeed", func() bool {
		return f.stored(t, "dlv_001").Status == webhook.StatusSucceeded
	})
	stop()
	wantStrings(t, "outcomes", f.metrics.Outcomes(), "succeeded")
}

func TestRunWaitsForTheAttemptsInFlightWhenStopped(t *testing.T) {
	t.Parallel()
	// In a bubble, synctest.Wait tells when Run can go no further.
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		f := newFixture(t, reply{status: 200, hold: gate})
		d := f.delivery(t, f.endpoint(t, "https://a.example.com", "*"))
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.svc.Run(runCtx)
		}()

		f.sender.arrived(t)
		cancel()
		synctest.Wait()
		select {
		case <-done:
			t.Error("Run returned while an attempt was in flight")
		default:
		}
		close(gate)
		<-done
		synctest.Wait() // an attempt Run left behind ends inside the bubble
		// The attempt recorded its outcome though Run's context had ended.
		if got := f.stored(t, d.ID); got.Status != webhook.StatusSucceeded {
			t.Fatalf("delivery %s when Run returned", got.Status)
		}
	})
}

func TestRunReportsTheOldestPendingDelivery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, reply{status: 500})
	f.delivery(t, f.endpoint(t, "https://a.example.com", "*"))
	f.clock.Advance(30 * time.Second)
	stop := f.run(t)

	poll.Until(t, "the oldest pending age", func() bool {
		return slices.Contains(f.metrics.Oldest(), 30*time.Second)
	})
	stop()
}

func TestRunReportsNothingPending(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	stop := f.run(t)

	poll.Until(t, "an empty queue reported", func() bool {
		return slices.Contains(f.metrics.Oldest(), 0)
	})
	stop()
}

func TestRunLogsFailuresAndKeepsPolling(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	claims := &claimHook{Deliveries: f.deps.Deliveries, fn: func(context.Context, int, webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
		return nil, errors.New("deliveries: relation does not exist")
	}}
	f.deps.Deliveries = claims
	f.build()
	stop := f.run(t)

	// Each poll tries again: more than one claim without any wake-up.
	poll.Until(t, "a second claim", func() bool { return claims.calls.Load() >= 2 })
	stop()
	if logs, want := f.logs.Lines(), "ERROR webhook claim error=deliveries: relation does not exist"; !slices.Contains(logs, want) {
		t.Fatalf("logs %q lack %q", logs, want)
	}
}

func TestRunWithAnEndedContextDoesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	claims := &claimHook{Deliveries: f.deps.Deliveries, fn: func(context.Context, int, webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
		return nil, nil
	}}
	f.deps.Deliveries = claims
	f.build()
	ended, cancel := context.WithCancel(ctx)
	cancel()

	f.svc.Run(ended)

	if n := claims.calls.Load(); n != 0 {
		t.Fatalf("%d claims after the context ended", n)
	}
	if logs := f.logs.Lines(); len(logs) != 0 {
		t.Fatalf("logs %s", strings.Join(logs, "; "))
	}
}
