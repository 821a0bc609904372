package webhooks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// pruneHook stands in for Deliveries.Prune: it records each call, runs
// after with the call's number (from 1), and answers with results in order,
// the last one (repeated) with err.
type pruneHook struct {
	webhookstore.Deliveries
	calls   []pruneCall
	results []webhookstore.Pruned
	err     error
	after   func(n int)
}

type pruneCall struct {
	cutoff time.Time
	limit  int
}

func (h *pruneHook) Prune(_ context.Context, cutoff time.Time, limit int) (webhookstore.Pruned, error) {
	h.calls = append(h.calls, pruneCall{cutoff, limit})
	n := len(h.calls)
	if h.after != nil {
		h.after(n)
	}
	if n < len(h.results) {
		return h.results[n-1], nil
	}
	return h.results[len(h.results)-1], h.err
}

func TestPruneDeletesWhatRetentionOutlived(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Policy.Retention, f.deps.Policy.PruneBatch = 24*time.Hour, 2
	f.build()
	ep := f.endpoint(t, "https://a.example.com", "*")
	for _, id := range []string{"evt_1", "evt_2", "evt_3", "evt_4", "evt_5"} {
		f.commit(t, id, "team_1", event.ProfileCreated)
	}
	for range 5 {
		f.dispatchOnce()
	}
	if _, _, pending, err := f.store.Deliveries().Pending(ctx); pending || err != nil {
		t.Fatalf("deliveries still pending (%v) after dispatch: %v", pending, err)
	}
	// Never attempted: it stays however old it is.
	waiting := f.delivery(t, ep)

	f.clock.Advance(24 * time.Hour)
	if n, err := f.svc.Prune(ctx); n != 0 || err != nil {
		t.Fatalf("Prune exactly one retention later = %d, %v; want nothing deleted", n, err)
	}
	f.clock.Advance(time.Second)
	// 5 deliveries and 5 events, in batches of 2.
	if n, err := f.svc.Prune(ctx); n != 10 || err != nil {
		t.Fatalf("Prune after the retention = %d, %v; want 10 rows deleted", n, err)
	}
	if events := f.outbox(t); len(events) != 0 {
		t.Fatalf("outbox after Prune: %v; want it empty", events)
	}
	left, err := f.store.Deliveries().List(ctx, "team_1", ep.ID, webhookstore.DeliveryFilter{Limit: 10})
	if err != nil || len(left) != 1 || left[0].ID != waiting.ID || left[0].Status != webhook.StatusPending {
		t.Fatalf("deliveries after Prune: %v, %v; want the pending %s alone", left, err, waiting.ID)
	}
	if n, err := f.svc.Prune(ctx); n != 0 || err != nil {
		t.Fatalf("second Prune = %d, %v; want nothing deleted", n, err)
	}
}

func TestPruneRunsBatchesUntilOneIsShort(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hook := &pruneHook{Deliveries: f.deps.Deliveries, results: []webhookstore.Pruned{
		{Events: 3, Deliveries: 1}, {Events: 0, Deliveries: 3}, {Events: 2, Deliveries: 2},
	}}
	f.deps.Deliveries = hook
	f.deps.Policy.Retention, f.deps.Policy.PruneBatch = time.Hour, 3
	f.build()
	f.clock.Advance(90 * time.Minute)

	n, err := f.svc.Prune(ctx)
	if n != 11 || err != nil {
		t.Fatalf("Prune = %d, %v; want 11 rows deleted", n, err)
	}
	want := pruneCall{t0.Add(30 * time.Minute), 3}
	if len(hook.calls) != 3 {
		t.Fatalf("%d batches, want 3: %v", len(hook.calls), hook.calls)
	}
	for i, c := range hook.calls {
		if !c.cutoff.Equal(want.cutoff) || c.limit != want.limit {
			t.Errorf("batch %d: cutoff %s, limit %d; want %s, %d", i+1, c.cutoff, c.limit, want.cutoff, want.limit)
		}
	}
}

func TestPruneDefaultsToAWeekInBatchesOf500(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hook := &pruneHook{Deliveries: f.deps.Deliveries, results: []webhookstore.Pruned{{}}}
	f.deps.Deliveries = hook
	f.build()
	if n, err := f.svc.Prune(ctx); n != 0 || err != nil {
		t.Fatalf("Prune = %d, %v; want nothing deleted", n, err)
	}
	want := pruneCall{t0.Add(-7 * 24 * time.Hour), 500}
	if len(hook.calls) != 1 || !hook.calls[0].cutoff.Equal(want.cutoff) || hook.calls[0].limit != want.limit {
		t.Fatalf("batches %v, want one %v", hook.calls, want)
	}
}

func TestPruneStopsAtAnError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	failure := errors.New("deliveries: statement timeout")
	hook := &pruneHook{Deliveries: f.deps.Deliveries, err: failure, results: []webhookstore.Pruned{
		{Events: 2, Deliveries: 2}, {Events: 1},
	}}
	f.deps.Deliveries = hook
	f.deps.Policy.PruneBatch = 2
	f.build()
	n, err := f.svc.Prune(ctx)
	if !errors.Is(err, failure) || n != 5 || len(hook.calls) != 2 {
		t.Fatalf("Prune = %d, %v after %d batches; want 5, the store's error, 2 batches", n, err, len(hook.calls))
	}
}

func TestPruneStopsWhenCanceled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hook := &pruneHook{Deliveries: f.deps.Deliveries, results: []webhookstore.Pruned{{Deliveries: 2}}}
	hook.after = func(n int) {
		if n == 2 {
			cancel()
		}
	}
	f.deps.Deliveries = hook
	f.deps.Policy.PruneBatch = 2
	f.build()
	n, err := f.svc.Prune(runCtx)
	if !errors.Is(err, context.Canceled) || n != 4 || len(hook.calls) != 2 {
		t.Fatalf("Prune = %d, %v after %d batches; want 4, canceled, 2 batches", n, err, len(hook.calls))
	}
}
