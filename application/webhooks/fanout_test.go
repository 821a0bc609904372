package webhooks

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// commit appends an event of the team to the outbox, as a use case's unit
// of work does.
func (f *fixture) commit(t *testing.T, id, teamID string, typ event.Type) {
	t.Helper()
	e := event.Event{ID: id, TeamID: teamID, Type: typ, OccurredAt: t0, Data: []byte(`{"profile":{"id":"prf_1"}}`)}
	if err := f.store.Outbox().Append(ctx, e); err != nil {
		t.Fatal(err)
	}
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

func TestFanOutToSubscribedEndpointsOnly(t *testing.T) {
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

	n, err := f.svc.FanOut(ctx)
	if err != nil || n != 4 {
		t.Fatalf("fanned out %d, %v", n, err)
	}
	wantStrings(t, "whk_001", f.deliveredEvents(t, "team_1", "whk_001"), "evt_a")
	wantStrings(t, "whk_002", f.deliveredEvents(t, "team_1", "whk_002"), "evt_a", "evt_b")
	wantStrings(t, "whk_003 (disabled)", f.deliveredEvents(t, "team_1", "whk_003"))
	wantStrings(t, "whk_004 (team_2)", f.deliveredEvents(t, "team_2", "whk_004"), "evt_c")

	d := f.stored(t, "dlv_001")
	if d.EndpointID != "whk_001" || d.Status != webhook.StatusPending || !d.NextAttemptAt.Equal(t0) ||
		string(d.Payload) != `{"id":"evt_a","type":"profile.created","created_at":"2030-01-01T12:00:00Z","data":{"profile":{"id":"prf_1"}}}` {
		t.Fatalf("delivery %+v", d)
	}
	if n, err := f.svc.FanOut(ctx); n != 0 || err != nil {
		t.Fatalf("second fan-out took %d, %v", n, err)
	}
}

// A fan-out reports how long the oldest event it found has waited, and 0
// when it found none.
func TestFanOutReportsTheOutboxLag(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.commit(t, "evt_a", "team_1", event.ProfileCreated)
	f.clock.Advance(90 * time.Second)
	f.commit(t, "evt_b", "team_1", event.ProfileCreated)
	if _, err := f.svc.FanOut(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.FanOut(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.metrics.Lags(); !slices.Equal(got, []time.Duration{90 * time.Second, 0}) {
		t.Fatalf("lags %v, want [1m30s 0s]", got)
	}
}

func TestFanOutRollsBackWhenAnEndpointListFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.endpoint(t, "https://a.example.com", "*")
	f.commit(t, "evt_a", "team_1", event.ProfileCreated)
	f.commit(t, "evt_b", "team_2", event.ProfileCreated)
	working := f.deps.Endpoints
	f.deps.Endpoints = &enabledHook{Endpoints: working, fn: func(ctx context.Context, teamID string) ([]webhook.Endpoint, error) {
		if teamID == "team_2" {
			return nil, errors.New("endpoints: statement timeout")
		}
		return working.ListEnabled(ctx, teamID)
	}}
	f.build()

	if _, err := f.svc.FanOut(ctx); err == nil || err.Error() != "endpoints: statement timeout" {
		t.Fatalf("fan-out error %v", err)
	}
	wantStrings(t, "deliveries after a failed fan-out", f.deliveredEvents(t, "team_1", "whk_001"))

	// Nothing was marked: the next fan-out takes both events again.
	f.deps.Endpoints = working
	f.build()
	if n, err := f.svc.FanOut(ctx); n != 2 || err != nil {
		t.Fatalf("fanned out %d, %v", n, err)
	}
	wantStrings(t, "deliveries", f.deliveredEvents(t, "team_1", "whk_001"), "evt_a")
}

func TestFanOutAllTakesEveryBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Policy.FanOutBatch = 2
	f.build()
	f.endpoint(t, "https://a.example.com", "*")
	for _, id := range []string{"evt_a", "evt_b", "evt_c", "evt_d"} {
		f.commit(t, id, "team_1", event.ProfileUpdated)
	}

	if err := f.svc.fanOutAll(ctx); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "deliveries", f.deliveredEvents(t, "team_1", "whk_001"), "evt_a", "evt_b", "evt_c", "evt_d")
	left, err := f.store.Outbox().ClaimUndispatched(ctx, 10)
	if err != nil || len(left) != 0 {
		t.Fatalf("undispatched %+v %v", left, err)
	}
}

// The delivery loop is woken by a fan-out that made deliveries, not by
// one whose events no endpoint takes.
func TestFanOutAllWakesTheDeliveriesOnlyForDeliveries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.endpoint(t, "https://a.example.com", "profile.deleted")
	f.woken()
	f.commit(t, "evt_a", "team_1", event.ProfileCreated)
	f.commit(t, "evt_b", "team_2", event.ProfileDeleted)
	if err := f.svc.fanOutAll(ctx); err != nil {
		t.Fatal(err)
	}
	if f.woken() {
		t.Fatal("a fan-out that made no delivery woke the delivery loop")
	}
	f.commit(t, "evt_c", "team_1", event.ProfileDeleted)
	if err := f.svc.fanOutAll(ctx); err != nil {
		t.Fatal(err)
	}
	if !f.woken() {
		t.Fatal("a fan-out that made a delivery did not wake the delivery loop")
	}
	wantStrings(t, "deliveries", f.deliveredEvents(t, "team_1", "whk_001"), "evt_c")
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

func TestRunDeliversCommittedEventsAndStopsWithItsContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.endpoint(t, "https://a.example.com", "*")
	stop := f.run(t)

	f.commit(t, "evt_a", "team_1", event.ProfileCreated)
	f.svc.d.Waker.EventsCommitted()
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
	f.deps.Outbox = &outboxHook{OutboxClaims: f.deps.Outbox, fn: func(context.Context, int) ([]event.Event, error) {
		return nil, errors.New("outbox: relation does not exist")
	}}
	claims := &claimHook{Deliveries: f.deps.Deliveries, fn: func(context.Context, int, webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
		return nil, errors.New("deliveries: relation does not exist")
	}}
	f.deps.Deliveries = claims
	f.build()
	stop := f.run(t)

	// Each poll tries again: more than one claim without any wake-up.
	poll.Until(t, "a second claim", func() bool { return claims.calls.Load() >= 2 })
	stop()
	logs := f.logs.Lines()
	for _, want := range []string{"ERROR webhook fan-out error=outbox: relation does not exist", "ERROR webhook claim error=deliveries: relation does not exist"} {
		if !slices.Contains(logs, want) {
			t.Fatalf("logs %q lack %q", logs, want)
		}
	}
}

func TestRunWithAnEndedContextDoesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	claimed := 0
	f.deps.Outbox = &outboxHook{OutboxClaims: f.deps.Outbox, fn: func(context.Context, int) ([]event.Event, error) {
		claimed++
		return nil, nil
	}}
	f.build()
	ended, cancel := context.WithCancel(ctx)
	cancel()

	f.svc.Run(ended)

	if claimed != 0 {
		t.Fatalf("%d fan-outs after the context ended", claimed)
	}
	if logs := f.logs.Lines(); len(logs) != 0 {
		t.Fatalf("logs %s", strings.Join(logs, "; "))
	}
}

func TestFanOutOfAnEventWithUnreadableData(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.endpoint(t, "https://a.example.com", "*")
	e := event.Event{ID: "evt_a", TeamID: "team_1", Type: event.ProfileCreated, OccurredAt: t0, Data: []byte(`{"profile":`)}
	if err := f.store.Outbox().Append(ctx, e); err != nil {
		t.Fatal(err)
	}

	if _, err := f.svc.FanOut(ctx); err == nil {
		t.Fatal("an event that is not JSON was fanned out")
	}
	left, err := f.store.Outbox().ClaimUndispatched(ctx, 10)
	if err != nil || len(left) != 1 || left[0].ID != "evt_a" {
		t.Fatalf("undispatched %+v %v", left, err)
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

// A fan-out writes its deliveries together, not one statement each: five
// events to three endpoints are one Create of fifteen.
func TestFanOutCreatesTheDeliveriesOfABatchTogether(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hook := &createHook{Deliveries: f.deps.Deliveries}
	f.deps.Deliveries = hook
	f.build()
	for _, url := range []string{"https://a.example.com", "https://b.example.com", "https://c.example.com"} {
		f.endpoint(t, url, "*")
	}
	for i := range 5 {
		f.commit(t, "evt_"+strconv.Itoa(i), "team_1", event.ProfileCreated)
	}

	if n, err := f.svc.FanOut(ctx); err != nil || n != 5 {
		t.Fatalf("fanned out %d, %v", n, err)
	}
	if !slices.Equal(hook.batches, []int{15}) {
		t.Fatalf("Create calls with %v deliveries, want one of 15", hook.batches)
	}
	wantStrings(t, "whk_002", f.deliveredEvents(t, "team_1", "whk_002"), "evt_0", "evt_1", "evt_2", "evt_3", "evt_4")
}
