package conformance

import (
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// retentionCutoff is the cutoff of the retention checks, in a non-UTC zone:
// rows an hour before it are old, rows an hour after it recent.
var retentionCutoff = storeAt(0).In(storeZone)

// appendAt appends an event of the team that occurred at at.
func (f storeFixture) appendAt(teamID string, at time.Time) event.Event {
	f.t.Helper()
	e := f.event(teamID, at)
	f.must("Append", f.s.Outbox().Append(f.ctx, e))
	return e
}

// finished returns a delivery of the event in status, last changed at.
func (f storeFixture) finished(ep webhook.Endpoint, e event.Event, status webhook.Status, at time.Time) webhook.Delivery {
	d := f.delivery(ep, storeAt(-48*time.Hour))
	d.EventID, d.Status, d.UpdatedAt = e.ID, status, at
	return d
}

func (f storeFixture) prune(cutoff time.Time, limit int, want webhookstore.Pruned) {
	f.t.Helper()
	got, err := f.s.Deliveries().Prune(f.ctx, cutoff, limit)
	f.must("Prune", err)
	if got != want {
		f.t.Fatalf("Prune(limit %d): got %+v, want %+v", limit, got, want)
	}
}

func (f storeFixture) expectOutbox(want ...event.Event) {
	f.t.Helper()
	got, err := f.s.Outbox().ListAfter(f.ctx, "", 100)
	f.must("ListAfter", err)
	checkIDs(f.t, "outbox", eventIDs(got), eventIDs(want))
}

// expectDeliveries checks which of ds are still stored.
func (f storeFixture) expectDeliveries(kept []webhook.Delivery, gone []webhook.Delivery) {
	f.t.Helper()
	for _, d := range kept {
		if _, err := f.s.Deliveries().ByID(f.ctx, d.TeamID, d.ID); err != nil {
			f.t.Errorf("delivery %s (%s, updated %s) should stay: %v", d.ID, d.Status, d.UpdatedAt, err)
		}
	}
	for _, d := range gone {
		_, err := f.s.Deliveries().ByID(f.ctx, d.TeamID, d.ID)
		expectNotFound(f.t, "pruned delivery "+d.ID+" ("+string(d.Status)+")", err)
	}
}

func runWebhookRetention(t *testing.T, newStore NewStore) {
	old, recent := storeAt(-time.Hour).In(storeZone), storeAt(time.Hour)

	t.Run("old finished rows go, the rest stays", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		ep := f.endpoint(teamID)
		f.createEndpoints(ep)

		f.appendAt(teamID, old) // no delivery refers to it
		done := f.appendAt(teamID, old)
		waiting := f.appendAt(teamID, old)
		leased := f.appendAt(teamID, old)
		fresh := f.appendAt(teamID, recent)

		succeededOld := f.finished(ep, done, webhook.StatusSucceeded, old)
		failedOld := f.finished(ep, done, webhook.StatusFailed, old)
		failedRecent := f.finished(ep, done, webhook.StatusFailed, recent)
		succeededAtCutoff := f.finished(ep, fresh, webhook.StatusSucceeded, retentionCutoff)
		pendingOld := f.finished(ep, waiting, webhook.StatusPending, old)
		pendingOld.NextAttemptAt = storeAt(24 * time.Hour)
		leasedOld := f.finished(ep, leased, webhook.StatusPending, old)
		leasedOld.NextAttemptAt = old
		f.createDeliveries(succeededOld, failedOld, failedRecent, succeededAtCutoff, pendingOld, leasedOld)
		claimed := f.claim(webhookstore.DeliveryClaim{
			Owner: "dsp_retention", Now: storeAt(0), LeaseUntil: storeAt(24 * time.Hour), Limit: 10,
		})
		checkIDs(t, "claimed", deliveryIDs(claimed...), deliveryIDs(leasedOld))

		f.prune(retentionCutoff, 100, webhookstore.Pruned{Events: 2, Deliveries: 2})
		f.expectDeliveries(
			[]webhook.Delivery{failedRecent, succeededAtCutoff, pendingOld, leasedOld},
			[]webhook.Delivery{succeededOld, failedOld})
		f.expectOutbox(waiting, leased, fresh)
		if t.Failed() {
			return
		}
		f.prune(retentionCutoff, 100, webhookstore.Pruned{})
	})

	t.Run("the limit bounds each kind, oldest first, and repeated calls drain", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		ep := f.endpoint(teamID)
		f.createEndpoints(ep)
		// Dispatched and changed in an order other than their ids'.
		ages := []time.Duration{3, 5, 1, 4, 2}
		events := make([]event.Event, len(ages))
		ds := make([]webhook.Delivery, len(ages))
		for i, age := range ages {
			at := storeAt(-age * time.Hour)
			events[i] = f.appendAt(teamID, at)
			ds[i] = f.finished(ep, events[i], webhook.StatusSucceeded, at)
		}
		f.createDeliveries(ds...)

		f.prune(retentionCutoff, 2, webhookstore.Pruned{Events: 2, Deliveries: 2})
		f.expectOutbox(events[0], events[2], events[4])
		f.expectDeliveries([]webhook.Delivery{ds[0], ds[2], ds[4]}, []webhook.Delivery{ds[1], ds[3]})
		f.prune(retentionCutoff, 2, webhookstore.Pruned{Events: 2, Deliveries: 2})
		f.expectOutbox(events[2])
		f.prune(retentionCutoff, 2, webhookstore.Pruned{Events: 1, Deliveries: 1})
		f.prune(retentionCutoff, 2, webhookstore.Pruned{})
		f.expectOutbox()
		f.expectDeliveries(nil, ds)
	})

	t.Run("a limit below one deletes nothing", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		ep := f.endpoint(teamID)
		f.createEndpoints(ep)
		e := f.appendAt(teamID, old)
		d := f.finished(ep, e, webhook.StatusFailed, old)
		f.createDeliveries(d)
		f.prune(retentionCutoff, 0, webhookstore.Pruned{})
		f.prune(retentionCutoff, -1, webhookstore.Pruned{})
		f.expectOutbox(e)
		f.expectDeliveries([]webhook.Delivery{d}, nil)
	})
}
