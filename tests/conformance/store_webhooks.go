package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/storage"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// storePayload is a webhook body that a store re-encoding JSON would change:
// keys out of order, spacing, a number written "2.50" and an escaped quote.
const storePayload = `{"id":"evt_1","type":"profile.created",  "created_at":"2031-03-14T15:09:26.535897932Z",` +
	`"data":{"zeta":"z \u00e9\u4e16 \"quoted\"", "alpha":[1, 2.50, 1e3],"mid":{}}}` + "\n"

func (f storeFixture) endpoint(teamID string) webhook.Endpoint {
	return webhook.Endpoint{
		ID: storeID("whe"), TeamID: teamID, URL: "https://hooks.example.com/in?team=" + teamID,
		// Not in alphabetical order: the order must be kept.
		Events:       []string{string(event.ProfileUpdated), webhook.AllEvents, string(event.ProfileCreated)},
		SecretSealed: storeHash(23), Enabled: true,
		CreatedAt: storeAt(0).In(storeZone), UpdatedAt: storeAt(time.Minute).In(storeZone),
	}
}

// delivery returns a pending delivery of the endpoint due at due.
func (f storeFixture) delivery(ep webhook.Endpoint, due time.Time) webhook.Delivery {
	return webhook.Delivery{
		ID: storeID("dlv"), TeamID: ep.TeamID, EndpointID: ep.ID, EventID: storeID("evt"),
		EventType: event.ProfileCreated, Payload: []byte(storePayload), Status: webhook.StatusPending,
		NextAttemptAt: due, CreatedAt: storeAt(-time.Hour), UpdatedAt: storeAt(-time.Hour),
	}
}

func (f storeFixture) createEndpoints(es ...webhook.Endpoint) {
	f.t.Helper()
	for _, e := range es {
		f.must("create webhook endpoint "+e.ID, f.s.WebhookEndpoints().Create(f.ctx, e))
	}
}

func (f storeFixture) createDeliveries(ds ...webhook.Delivery) {
	f.t.Helper()
	for _, d := range ds {
		f.must("create delivery "+d.ID, f.s.Deliveries().Create(f.ctx, d))
	}
}

func (f storeFixture) expectEndpoint(ctx context.Context, want webhook.Endpoint) {
	f.t.Helper()
	got, err := f.s.WebhookEndpoints().ByID(ctx, want.TeamID, want.ID)
	if err != nil {
		f.t.Fatalf("webhook endpoint %s: %v", want.ID, err)
	}
	checkEqual(f.t, "endpoint", got, want)
}

func (f storeFixture) expectDelivery(ctx context.Context, want webhook.Delivery) {
	f.t.Helper()
	got, err := f.s.Deliveries().ByID(ctx, want.TeamID, want.ID)
	if err != nil {
		f.t.Fatalf("delivery %s: %v", want.ID, err)
	}
	checkEqual(f.t, "delivery", got, want)
}

func (f storeFixture) claim(c webhookstore.DeliveryClaim) []webhook.Delivery {
	f.t.Helper()
	got, err := f.s.Deliveries().Claim(f.ctx, c)
	if err != nil {
		f.t.Fatalf("Claim %+v: %v", c, err)
	}
	return got
}

// completeOne is Complete of one delivery.
func (f storeFixture) completeOne(d webhook.Delivery, owner string) (bool, error) {
	applied, err := f.s.Deliveries().Complete(f.ctx, owner, d)
	if err != nil {
		return false, err
	}
	if len(applied) != 1 {
		f.t.Fatalf("Complete of one delivery reported %d", len(applied))
	}
	return applied[0], nil
}

func endpointIDs(es []webhook.Endpoint) []string {
	return ids(es, func(e webhook.Endpoint) string { return e.ID })
}

func deliveryIDs(ds ...webhook.Delivery) []string {
	return ids(ds, func(d webhook.Delivery) string { return d.ID })
}

// newestFirst returns the ids of ds from last to first.
func newestFirst(ds ...webhook.Delivery) []string {
	out := deliveryIDs(ds...)
	slices.Reverse(out)
	return out
}

func runWebhookEndpoints(t *testing.T, newStore NewStore) {
	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		e := f.endpoint(storeID("tm"))
		one := f.endpoint(e.TeamID)
		one.Events, one.Enabled = []string{string(event.TeamMemberAdded)}, false
		f.createEndpoints(e, one)
		f.expectEndpoint(f.ctx, e)
		f.expectEndpoint(f.ctx, one)
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		e := f.endpoint(storeID("tm"))
		want := e
		want.Events, want.SecretSealed = slices.Clone(e.Events), slices.Clone(e.SecretSealed)
		f.createEndpoints(e)
		e.Events[0], e.SecretSealed[0] = "changed", e.SecretSealed[0]+1
		got, err := f.s.WebhookEndpoints().ByID(f.ctx, want.TeamID, want.ID)
		f.must("ByID", err)
		checkEqual(t, "endpoint", got, want)
		got.Events[0], got.SecretSealed[0] = "changed", got.SecretSealed[0]+1
		f.expectEndpoint(f.ctx, want)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		e := f.endpoint(storeID("tm"))
		f.createEndpoints(e)
		again := f.endpoint(storeID("tm"))
		again.ID = e.ID
		expectConflict(t, "Create with the same id", f.s.WebhookEndpoints().Create(f.ctx, again))
		f.expectEndpoint(f.ctx, e)
	})

	t.Run("missing and another team's endpoint are not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		e := f.endpoint(storeID("tm"))
		f.createEndpoints(e)
		_, err := f.s.WebhookEndpoints().ByID(f.ctx, e.TeamID, storeID("whe"))
		expectNotFound(t, "ByID of an unknown id", err)
		other := storeID("tm")
		_, err = f.s.WebhookEndpoints().ByID(f.ctx, other, e.ID)
		expectNotFound(t, "ByID from another team", err)
		if err != nil && err.Error() != domain.NotFound("webhook endpoint").Error() {
			t.Errorf("ByID from another team: message %q, want %q", err, domain.NotFound("webhook endpoint"))
		}
		moved := e
		moved.TeamID, moved.URL = other, "https://elsewhere.example.com/"
		expectNotFound(t, "Update from another team", f.s.WebhookEndpoints().Update(f.ctx, moved))
		expectNotFound(t, "Delete from another team", f.s.WebhookEndpoints().Delete(f.ctx, other, e.ID))
		missing := f.endpoint(e.TeamID)
		expectNotFound(t, "Update of an unknown id", f.s.WebhookEndpoints().Update(f.ctx, missing))
		expectNotFound(t, "Delete of an unknown id", f.s.WebhookEndpoints().Delete(f.ctx, e.TeamID, missing.ID))
		f.expectEndpoint(f.ctx, e)
	})

	t.Run("List pages newest first within the team", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		es := make([]webhook.Endpoint, 5)
		for i := range es {
			es[i] = f.endpoint(teamID)
		}
		f.createEndpoints(f.endpoint(storeID("tm")))
		for _, i := range []int{2, 0, 4, 1, 3} {
			f.createEndpoints(es[i])
		}
		all := endpointIDs(es)
		slices.Reverse(all)

		got, err := f.s.WebhookEndpoints().List(f.ctx, teamID, "", 10)
		f.must("List", err)
		checkIDs(t, "List all", endpointIDs(got), all)
		for i := range got {
			checkEqual(t, "endpoint", got[i], es[len(es)-1-i])
		}
		got, err = f.s.WebhookEndpoints().List(f.ctx, teamID, "", 2)
		f.must("List first page", err)
		checkIDs(t, "first page", endpointIDs(got), all[:2])
		got, err = f.s.WebhookEndpoints().List(f.ctx, teamID, all[1], 2)
		f.must("List second page", err)
		checkIDs(t, "second page", endpointIDs(got), all[2:4])
		got, err = f.s.WebhookEndpoints().List(f.ctx, teamID, all[4], 2)
		f.must("List past the last", err)
		checkIDs(t, "past the last", endpointIDs(got), []string{})
		got, err = f.s.WebhookEndpoints().List(f.ctx, teamID, "", 0)
		f.must("List with limit 0", err)
		checkIDs(t, "limit 0", endpointIDs(got), []string{})
		got, err = f.s.WebhookEndpoints().List(f.ctx, storeID("tm"), "", 10)
		f.must("List of a team without endpoints", err)
		checkIDs(t, "team without endpoints", endpointIDs(got), []string{})
	})

	t.Run("Count counts the team's endpoints, enabled or not", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		a, b, other := f.endpoint(teamID), f.endpoint(teamID), f.endpoint(storeID("tm"))
		b.Enabled = false
		f.createEndpoints(a, b, other)
		n, err := f.s.WebhookEndpoints().Count(f.ctx, teamID)
		f.must("Count", err)
		none, err := f.s.WebhookEndpoints().Count(f.ctx, storeID("tm"))
		f.must("Count", err)
		if n != 2 || none != 0 {
			t.Fatalf("Count = %d for the team and %d for a team without endpoints, want 2 and 0", n, none)
		}
	})

	t.Run("ListEnabled returns the team's enabled endpoints", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		on1, off, on2 := f.endpoint(teamID), f.endpoint(teamID), f.endpoint(teamID)
		off.Enabled = false
		elsewhere := f.endpoint(storeID("tm"))
		f.createEndpoints(on1, off, elsewhere, on2)
		got, err := f.s.WebhookEndpoints().ListEnabled(f.ctx, teamID)
		f.must("ListEnabled", err)
		gotIDs := endpointIDs(got)
		slices.Sort(gotIDs)
		checkIDs(t, "ListEnabled", gotIDs, []string{on1.ID, on2.ID})
		for _, e := range got {
			if e.ID == on1.ID {
				checkEqual(t, "endpoint", e, on1)
			}
		}
		got, err = f.s.WebhookEndpoints().ListEnabled(f.ctx, storeID("tm"))
		f.must("ListEnabled of a team without endpoints", err)
		checkIDs(t, "team without endpoints", endpointIDs(got), []string{})
	})

	t.Run("Update replaces the settings and keeps the creation", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		e := f.endpoint(storeID("tm"))
		f.createEndpoints(e)
		next := e
		next.URL = "https://other.example.com/hooks/\u00e9"
		next.Events = []string{string(event.ProxyFailed), string(event.ProfileDeleted)}
		next.SecretSealed = storeHash(99)
		next.Enabled = false
		next.UpdatedAt = storeAt(time.Hour).In(storeZone)
		next.CreatedAt = storeAt(48 * time.Hour)
		f.must("Update", f.s.WebhookEndpoints().Update(f.ctx, next))
		want := next
		want.CreatedAt = e.CreatedAt
		f.expectEndpoint(f.ctx, want)

		next.Enabled = true
		f.must("Update enabling", f.s.WebhookEndpoints().Update(f.ctx, next))
		want.Enabled = true
		f.expectEndpoint(f.ctx, want)
	})

	t.Run("Delete removes the endpoint and its deliveries", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		gone, kept := f.endpoint(storeID("tm")), f.endpoint(storeID("tm"))
		f.createEndpoints(gone, kept)
		goneDs := []webhook.Delivery{f.delivery(gone, storeAt(0)), f.delivery(gone, storeAt(0))}
		keptD := f.delivery(kept, storeAt(0))
		f.createDeliveries(goneDs[0], keptD, goneDs[1])

		// A unit that deletes and then fails leaves everything.
		err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			if err := tx.WebhookEndpoints().Delete(ctx, gone.TeamID, gone.ID); err != nil {
				return err
			}
			return errUnitFailed
		})
		if !errors.Is(err, errUnitFailed) {
			t.Fatalf("Do: %v, want the unit's error", err)
		}
		f.expectEndpoint(f.ctx, gone)
		f.expectDelivery(f.ctx, goneDs[0])
		f.expectDelivery(f.ctx, goneDs[1])

		f.must("Delete", f.s.WebhookEndpoints().Delete(f.ctx, gone.TeamID, gone.ID))
		_, err = f.s.WebhookEndpoints().ByID(f.ctx, gone.TeamID, gone.ID)
		expectNotFound(t, "deleted endpoint", err)
		for _, d := range goneDs {
			_, err = f.s.Deliveries().ByID(f.ctx, d.TeamID, d.ID)
			expectNotFound(t, "delivery of the deleted endpoint", err)
		}
		list, err := f.s.Deliveries().List(f.ctx, gone.TeamID, gone.ID, webhookstore.DeliveryFilter{Limit: 10})
		f.must("List", err)
		checkIDs(t, "deliveries of the deleted endpoint", deliveryIDs(list...), []string{})
		eps, err := f.s.WebhookEndpoints().List(f.ctx, gone.TeamID, "", 10)
		f.must("List endpoints", err)
		checkIDs(t, "endpoints after Delete", endpointIDs(eps), []string{})
		expectNotFound(t, "Delete again", f.s.WebhookEndpoints().Delete(f.ctx, gone.TeamID, gone.ID))

		f.expectEndpoint(f.ctx, kept)
		f.expectDelivery(f.ctx, keptD)
		claimed := f.claim(webhookstore.DeliveryClaim{Owner: "a", Now: storeAt(time.Hour), LeaseUntil: storeAt(2 * time.Hour), Limit: 10})
		checkIDs(t, "Claim after Delete", deliveryIDs(claimed...), []string{keptD.ID})
	})
}

func runDeliveries(t *testing.T, newStore NewStore) {
	runDeliveryBounds(t, newStore)
	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		ep := f.endpoint(storeID("tm"))
		fresh := f.delivery(ep, storeAt(time.Second).In(storeZone))
		tried := f.delivery(ep, storeAt(time.Minute))
		tried.EventType = event.TeamMemberRemoved
		tried.Status = webhook.StatusFailed
		tried.RoundStart = 2
		tried.Attempts = []webhook.Attempt{
			{N: 1, At: storeAt(time.Second).In(storeZone), StatusCode: 500, LatencyMs: 1234, Answer: "temporarily down \u2014 \u00e9\u4e16 \"quoted\""},
			{N: 2, At: storeAt(time.Minute + 7), Error: "dial tcp: connection refused \u2014 \u00e9\u4e16 \"quoted\""},
			{N: 3, At: storeAt(time.Hour), StatusCode: 301, LatencyMs: 0},
		}
		tried.CreatedAt = storeAt(-time.Minute).In(storeZone)
		tried.UpdatedAt = storeAt(time.Hour).In(storeZone)
		f.createDeliveries(fresh, tried)
		f.expectDelivery(f.ctx, fresh)
		f.expectDelivery(f.ctx, tried)
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		d := f.delivery(f.endpoint(storeID("tm")), storeAt(0))
		d.Attempts = []webhook.Attempt{{N: 1, At: storeAt(0), StatusCode: 503}}
		want := d
		want.Payload, want.Attempts = slices.Clone(d.Payload), slices.Clone(d.Attempts)
		f.createDeliveries(d)
		d.Payload[0], d.Attempts[0].StatusCode = ' ', 200
		got, err := f.s.Deliveries().ByID(f.ctx, d.TeamID, d.ID)
		f.must("ByID", err)
		checkEqual(t, "delivery", got, want)
		got.Payload[0], got.Attempts[0].StatusCode = ' ', 200
		f.expectDelivery(f.ctx, want)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		d := f.delivery(f.endpoint(storeID("tm")), storeAt(0))
		f.createDeliveries(d)
		again := f.delivery(f.endpoint(storeID("tm")), storeAt(time.Hour))
		again.ID = d.ID
		expectConflict(t, "Create with the same id", f.s.Deliveries().Create(f.ctx, again))
		f.expectDelivery(f.ctx, d)
	})

	t.Run("missing and another team's delivery are not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		d := f.delivery(f.endpoint(storeID("tm")), storeAt(0))
		f.createDeliveries(d)
		_, err := f.s.Deliveries().ByID(f.ctx, d.TeamID, storeID("dlv"))
		expectNotFound(t, "ByID of an unknown id", err)
		_, err = f.s.Deliveries().ByID(f.ctx, storeID("tm"), d.ID)
		expectNotFound(t, "ByID from another team", err)
		if err != nil && err.Error() != domain.NotFound("delivery").Error() {
			t.Errorf("ByID from another team: message %q, want %q", err, domain.NotFound("delivery"))
		}
	})

	t.Run("List pages newest first, filters by status, and keeps to the endpoint", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		ep := f.endpoint(storeID("tm"))
		statuses := []webhook.Status{webhook.StatusPending, webhook.StatusFailed, webhook.StatusSucceeded,
			webhook.StatusFailed, webhook.StatusPending, webhook.StatusFailed}
		ds := make([]webhook.Delivery, len(statuses))
		for i, s := range statuses {
			ds[i] = f.delivery(ep, storeAt(time.Duration(i)*time.Second))
			ds[i].Status = s
		}
		sibling := f.endpoint(ep.TeamID)
		// Another team's delivery naming the same endpoint id is not listed.
		foreign := f.delivery(ep, storeAt(0))
		foreign.TeamID = storeID("tm")
		f.createDeliveries(f.delivery(sibling, storeAt(0)), foreign)
		for _, i := range []int{3, 0, 5, 1, 4, 2} {
			f.createDeliveries(ds[i])
		}
		list := func(filter webhookstore.DeliveryFilter) []string {
			t.Helper()
			got, err := f.s.Deliveries().List(f.ctx, ep.TeamID, ep.ID, filter)
			f.must(fmt.Sprintf("List %+v", filter), err)
			return deliveryIDs(got...)
		}
		all := newestFirst(ds...)
		checkIDs(t, "List all", list(webhookstore.DeliveryFilter{Limit: 10}), all)
		checkIDs(t, "first page", list(webhookstore.DeliveryFilter{Limit: 4}), all[:4])
		checkIDs(t, "second page", list(webhookstore.DeliveryFilter{Limit: 4, BeforeID: all[3]}), all[4:])
		checkIDs(t, "failed", list(webhookstore.DeliveryFilter{Status: webhook.StatusFailed, Limit: 10}),
			newestFirst(ds[1], ds[3], ds[5]))
		checkIDs(t, "failed, first page", list(webhookstore.DeliveryFilter{Status: webhook.StatusFailed, Limit: 2}),
			newestFirst(ds[3], ds[5]))
		checkIDs(t, "failed, second page",
			list(webhookstore.DeliveryFilter{Status: webhook.StatusFailed, Limit: 2, BeforeID: ds[3].ID}), []string{ds[1].ID})
		checkIDs(t, "pending", list(webhookstore.DeliveryFilter{Status: webhook.StatusPending, Limit: 10}),
			newestFirst(ds[0], ds[4]))
		checkIDs(t, "succeeded", list(webhookstore.DeliveryFilter{Status: webhook.StatusSucceeded, Limit: 10}), []string{ds[2].ID})
		checkIDs(t, "unknown status", list(webhookstore.DeliveryFilter{Status: "bogus", Limit: 10}), []string{})
		checkIDs(t, "limit 0", list(webhookstore.DeliveryFilter{}), []string{})

		got, err := f.s.Deliveries().List(f.ctx, ep.TeamID, ep.ID, webhookstore.DeliveryFilter{Limit: 1})
		f.must("List", err)
		if len(got) == 1 {
			checkEqual(t, "delivery", got[0], ds[5])
		}
		got, err = f.s.Deliveries().List(f.ctx, foreign.TeamID, ep.ID, webhookstore.DeliveryFilter{Limit: 10})
		f.must("List of the other team", err)
		checkIDs(t, "other team's deliveries", deliveryIDs(got...), []string{foreign.ID})
	})

	t.Run("Claim leases due deliveries until the lease lapses", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		ep := f.endpoint(storeID("tm"))
		now := storeAt(time.Hour)
		early := f.delivery(ep, now.Add(-3*time.Minute).In(storeZone))
		tieA := f.delivery(ep, now.Add(-time.Minute))
		tieB := f.delivery(ep, now.Add(-time.Minute))
		atNow := f.delivery(ep, now)
		later := f.delivery(ep, now.Add(time.Second))
		done := f.delivery(ep, now.Add(-time.Hour))
		done.Status = webhook.StatusSucceeded
		failed := f.delivery(ep, now.Add(-time.Hour))
		failed.Status = webhook.StatusFailed
		f.createDeliveries(later, tieB, done, atNow, failed, tieA, early)

		c := webhookstore.DeliveryClaim{Owner: "a", Now: now.In(storeZone), LeaseUntil: now.Add(30 * time.Second), Limit: 10}
		got := f.claim(c)
		checkIDs(t, "first claim", deliveryIDs(got...), deliveryIDs(early, tieA, tieB, atNow))
		if len(got) > 0 {
			checkEqual(t, "delivery", got[0], early)
		}
		c.Owner = "b"
		checkIDs(t, "claim while leased", deliveryIDs(f.claim(c)...), []string{})

		c.Now, c.LeaseUntil = now.Add(10*time.Second), now.Add(40*time.Second)
		checkIDs(t, "claim once the later one is due", deliveryIDs(f.claim(c)...), []string{later.ID})

		c.Owner = "c"
		c.Now, c.LeaseUntil = now.Add(30*time.Second), now.Add(time.Minute)
		checkIDs(t, "claim when a's lease lapses", deliveryIDs(f.claim(c)...), deliveryIDs(early, tieA, tieB, atNow))

		// A claim that fails with its unit leases nothing.
		c.Owner = "d"
		c.Now, c.LeaseUntil = now.Add(time.Hour), now.Add(2*time.Hour)
		err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			got, err := tx.Deliveries().Claim(ctx, c)
			if err != nil {
				return err
			}
			checkIDs(t, "claim inside a unit", deliveryIDs(got...), deliveryIDs(early, tieA, tieB, atNow, later))
			return errUnitFailed
		})
		if !errors.Is(err, errUnitFailed) {
			t.Fatalf("Do: %v, want the unit's error", err)
		}
		c.Owner = "e"
		checkIDs(t, "claim after the unit rolled back", deliveryIDs(f.claim(c)...), deliveryIDs(early, tieA, tieB, atNow, later))
		f.expectDelivery(f.ctx, early)
	})

	t.Run("Claim takes at most Limit, an endpoint's room, none excluded", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		epA, epB, epC := f.endpoint(teamID), f.endpoint(teamID), f.endpoint(storeID("tm"))
		now := storeAt(time.Hour)
		var as, bs []webhook.Delivery
		for i := range 5 {
			as = append(as, f.delivery(epA, now.Add(time.Duration(i-10)*time.Minute)))
		}
		for i := range 2 {
			bs = append(bs, f.delivery(epB, now.Add(time.Duration(i-5)*time.Minute)))
		}
		c1 := f.delivery(epC, now.Add(-3*time.Minute))
		f.createDeliveries(c1, bs[1], as[4], as[0], bs[0], as[2], as[1], as[3])

		two := map[string]int{epA.ID: 2, epB.ID: 2, epC.ID: 2}
		c := webhookstore.DeliveryClaim{Owner: "a", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 3, Room: two}
		checkIDs(t, "Limit 3, room for 2 of each", deliveryIDs(f.claim(c)...), deliveryIDs(as[0], as[1], bs[0]))
		c.Limit = 10
		checkIDs(t, "Limit 10, room for 2 of each", deliveryIDs(f.claim(c)...), deliveryIDs(as[2], as[3], bs[1], c1))
		checkIDs(t, "the rest", deliveryIDs(f.claim(c)...), deliveryIDs(as[4]))

		f2 := newStoreFixture(t, newStore)
		f2.createDeliveries(c1, bs[1], as[4], as[0], bs[0], as[2], as[1], as[3])
		c = webhookstore.DeliveryClaim{Owner: "b", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10,
			Room: map[string]int{epA.ID: 0}}
		checkIDs(t, "excluding A", deliveryIDs(f2.claim(c)...), deliveryIDs(bs[0], bs[1], c1))
		c.Room = map[string]int{epA.ID: 0, epC.ID: 0}
		checkIDs(t, "excluding A and C", deliveryIDs(f2.claim(c)...), []string{})
		c.Room = map[string]int{epB.ID: 0, epC.ID: 0}
		checkIDs(t, "excluding B and C", deliveryIDs(f2.claim(c)...), deliveryIDs(as...))
		c.Limit, c.Room = 0, nil
		checkIDs(t, "Limit 0", deliveryIDs(f2.claim(c)...), []string{})

		f3 := newStoreFixture(t, newStore)
		f3.createDeliveries(c1, bs[1], as[4], as[0], bs[0], as[2], as[1], as[3])
		c = webhookstore.DeliveryClaim{Owner: "c", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10, Room: two, PerTeam: 3}
		checkIDs(t, "room for 2 of each, PerTeam 3", deliveryIDs(f3.claim(c)...), deliveryIDs(as[0], as[1], bs[0], c1))
		checkIDs(t, "room for 2 of each, PerTeam 3 again", deliveryIDs(f3.claim(c)...), deliveryIDs(as[2], as[3], bs[1]))

		f4 := newStoreFixture(t, newStore)
		f4.createDeliveries(c1, bs[1], as[4], as[0], bs[0], as[2], as[1], as[3])
		c = webhookstore.DeliveryClaim{Owner: "d", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10,
			ExcludeTeams: []string{teamID}}
		checkIDs(t, "excluding A and B's team", deliveryIDs(f4.claim(c)...), deliveryIDs(c1))
	})

	t.Run("concurrent claims lease each delivery once", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		const (
			total    = 200
			claimers = 8
		)
		now := storeAt(time.Hour)
		var eps []webhook.Endpoint
		for range 10 {
			eps = append(eps, f.endpoint(storeID("tm")))
		}
		for i := range total {
			f.createDeliveries(f.delivery(eps[i%len(eps)], now.Add(-time.Duration(i%17)*time.Second)))
		}
		var (
			mu      sync.Mutex
			claimed = map[string]int{}
			count   atomic.Int64
		)
		deadline := time.Now().Add(storeHangLimit / 2)
		storeWithin(t, "concurrent claims", func() {
			errs := runConcurrently(claimers, func(i int) error {
				c := webhookstore.DeliveryClaim{Owner: fmt.Sprintf("dispatcher-%d", i), Now: now,
					LeaseUntil: now.Add(time.Hour), Limit: 10}
				for count.Load() < total {
					if time.Now().After(deadline) {
						return fmt.Errorf("only %d of %d deliveries claimed in time", count.Load(), total)
					}
					got, err := f.s.Deliveries().Claim(f.ctx, c)
					if err != nil {
						return err
					}
					if len(got) > c.Limit {
						return fmt.Errorf("claim returned %d deliveries, over the limit of %d", len(got), c.Limit)
					}
					mu.Lock()
					for _, d := range got {
						claimed[d.ID]++
					}
					mu.Unlock()
					count.Add(int64(len(got)))
					if len(got) == 0 {
						time.Sleep(time.Millisecond)
					}
				}
				return nil
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("claimer %d: %v", i, err)
				}
			}
		})
		if len(claimed) != total {
			t.Errorf("%d distinct deliveries claimed, want %d", len(claimed), total)
		}
		for id, n := range claimed {
			if n != 1 {
				t.Errorf("delivery %s claimed %d times", id, n)
			}
		}
		left := f.claim(webhookstore.DeliveryClaim{Owner: "late", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10})
		checkIDs(t, "claim after all were claimed", deliveryIDs(left...), []string{})
	})

	t.Run("Complete applies only for the lease owner and frees the lease", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		ep := f.endpoint(storeID("tm"))
		now := storeAt(time.Hour)
		d := f.delivery(ep, now)
		never := f.delivery(ep, now.Add(time.Hour))
		f.createDeliveries(d, never)
		schedule := webhook.Schedule{0, time.Minute, time.Hour}

		next := d.Record(webhook.Attempt{At: now.Add(time.Second), StatusCode: 502, LatencyMs: 87}, schedule, now.Add(2*time.Second))
		if ok, err := f.completeOne(next, "a"); err != nil || ok {
			t.Fatalf("Complete of an unclaimed delivery = %v, %v; want false", ok, err)
		}
		if ok, err := f.completeOne(f.delivery(ep, now), "a"); err != nil || ok {
			t.Fatalf("Complete of an unknown delivery = %v, %v; want false", ok, err)
		}
		c := webhookstore.DeliveryClaim{Owner: "a", Now: now, LeaseUntil: now.Add(30 * time.Second), Limit: 10}
		checkIDs(t, "claim", deliveryIDs(f.claim(c)...), []string{d.ID})
		if ok, err := f.completeOne(next, "b"); err != nil || ok {
			t.Fatalf("Complete by another owner = %v, %v; want false", ok, err)
		}
		f.expectDelivery(f.ctx, d)
		if ok, err := f.completeOne(next, "a"); err != nil || !ok {
			t.Fatalf("Complete by the owner = %v, %v; want true", ok, err)
		}
		f.expectDelivery(f.ctx, next)
		if ok, err := f.completeOne(next, "a"); err != nil || ok {
			t.Fatalf("Complete again after the lease was freed = %v, %v; want false", ok, err)
		}

		// The lease is free: the next attempt is claimed when due, even
		// before a's lease would have lapsed.
		c.Owner, c.Now = "b", next.NextAttemptAt
		c.LeaseUntil = c.Now.Add(10 * time.Second)
		if c.Now.Before(now.Add(30 * time.Second)) {
			t.Fatalf("schedule: next attempt %v before the lease lapses", c.Now)
		}
		checkIDs(t, "claim of the next attempt", deliveryIDs(f.claim(c)...), []string{d.ID})

		// Complete takes no time: b's lease has lapsed by when it completes,
		// but no one took the delivery over, so it is still b's.
		final := next.Record(webhook.Attempt{At: c.Now.Add(time.Minute), StatusCode: 200, LatencyMs: 12}, schedule, c.Now.Add(time.Minute))
		if ok, err := f.completeOne(final, "b"); err != nil || !ok {
			t.Fatalf("Complete after the lease lapsed = %v, %v; want true", ok, err)
		}
		checkEqual(t, "status after a 200", final.Status, webhook.StatusSucceeded)
		f.expectDelivery(f.ctx, final)
		c.Owner, c.Now, c.LeaseUntil = "c", now.Add(30*time.Minute), now.Add(time.Hour)
		checkIDs(t, "claim of a succeeded delivery", deliveryIDs(f.claim(c)...), []string{})
	})

	t.Run("Claim counts the attempt it leases, finished or not", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		ep := f.endpoint(storeID("tm"))
		now := storeAt(time.Hour)
		d := f.delivery(ep, now)
		f.createDeliveries(d)

		c := webhookstore.DeliveryClaim{Owner: "killed", Now: now, LeaseUntil: now.Add(time.Minute), Limit: 1}
		first := f.claim(c)
		if len(first) != 1 || first[0].Started != 1 {
			t.Fatalf("first claim: %d deliveries, started %v; want 1 started once", len(first), first)
		}
		// The owner dies without recording; its lease lapses.
		c.Owner, c.Now, c.LeaseUntil = "next", now.Add(2*time.Minute), now.Add(3*time.Minute)
		second := f.claim(c)
		if len(second) != 1 || second[0].Started != 2 || second[0].AttemptNumber() != 2 {
			t.Fatalf("claim after a lost attempt: %v; want started twice, attempt number 2", second)
		}
		done := second[0].Record(webhook.Attempt{At: c.Now, StatusCode: 200}, webhook.Schedule{0, time.Second, time.Second}, c.Now)
		ok, err := f.completeOne(done, "next")
		f.must("Complete", err)
		if !ok {
			t.Fatal("Complete by the lease owner did not apply")
		}
		got, err := f.s.Deliveries().ByID(f.ctx, d.TeamID, d.ID)
		f.must("ByID", err)
		if got.Started != 2 || len(got.Attempts) != 1 || got.Attempts[0].N != 2 {
			t.Fatalf("stored: started %d, attempts %+v; want started 2 and one attempt numbered 2", got.Started, got.Attempts)
		}
	})

	t.Run("Requeue applies only to a failed delivery of the team", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		ep := f.endpoint(storeID("tm"))
		now := storeAt(time.Hour)
		d := f.delivery(ep, now)
		d.Status, d.Attempts = webhook.StatusFailed, []webhook.Attempt{{N: 1, At: now, StatusCode: 500}}
		pending := f.delivery(ep, now)
		f.createDeliveries(d, pending)

		if _, ok := pending.Retry(now); ok {
			t.Fatal("domain: Retry of a pending delivery")
		}
		forced := pending
		forced.RoundStart, forced.NextAttemptAt = 5, now.Add(time.Hour)
		if ok, err := f.s.Deliveries().Requeue(f.ctx, forced); err != nil || ok {
			t.Fatalf("Requeue of a pending delivery = %v, %v; want false", ok, err)
		}
		f.expectDelivery(f.ctx, pending)

		retried, ok := d.Retry(now.Add(time.Minute).In(storeZone))
		if !ok {
			t.Fatal("domain: Retry of a failed delivery refused")
		}
		foreign := retried
		foreign.TeamID = storeID("tm")
		if ok, err := f.s.Deliveries().Requeue(f.ctx, foreign); err != nil || ok {
			t.Fatalf("Requeue from another team = %v, %v; want false", ok, err)
		}
		f.expectDelivery(f.ctx, d)
		if ok, err := f.s.Deliveries().Requeue(f.ctx, retried); err != nil || !ok {
			t.Fatalf("Requeue = %v, %v; want true", ok, err)
		}
		f.expectDelivery(f.ctx, retried)
		if ok, err := f.s.Deliveries().Requeue(f.ctx, retried); err != nil || ok {
			t.Fatalf("Requeue again = %v, %v; want false", ok, err)
		}
		c := webhookstore.DeliveryClaim{Owner: "a", Now: now.Add(time.Minute), LeaseUntil: now.Add(time.Hour), Limit: 10}
		checkIDs(t, "claim after Requeue", deliveryIDs(f.claim(c)...), deliveryIDs(pending, d))
	})

	t.Run("Pending reports the earliest due and oldest pending delivery", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		_, _, ok, err := f.s.Deliveries().Pending(f.ctx)
		if err != nil || ok {
			t.Fatalf("Pending on an empty store = %v, %v; want false", ok, err)
		}
		now := storeAt(time.Hour)
		old := f.delivery(f.endpoint(storeID("tm")), now.Add(time.Minute))
		old.CreatedAt = now.Add(-2 * time.Hour).In(storeZone)
		soon := f.delivery(f.endpoint(storeID("tm")), now.Add(-time.Second).In(storeZone))
		soon.CreatedAt = now.Add(-time.Hour)
		for _, s := range []webhook.Status{webhook.StatusSucceeded, webhook.StatusFailed} {
			d := f.delivery(f.endpoint(storeID("tm")), now.Add(-24*time.Hour))
			d.Status, d.CreatedAt = s, now.Add(-24*time.Hour)
			f.createDeliveries(d)
		}
		_, _, ok, err = f.s.Deliveries().Pending(f.ctx)
		if err != nil || ok {
			t.Fatalf("Pending with only finished deliveries = %v, %v; want false", ok, err)
		}
		f.createDeliveries(old, soon)
		next, oldest, ok, err := f.s.Deliveries().Pending(f.ctx)
		if err != nil || !ok {
			t.Fatalf("Pending = %v, %v; want true", ok, err)
		}
		checkEqual(t, "next due", next, soon.NextAttemptAt)
		checkEqual(t, "oldest created", oldest, old.CreatedAt)
	})
}

// runDeliveryBounds checks what bounds a claim per endpoint: the stored
// MaxInFlight and RateLimit of an endpoint the claim gives no room for,
// the room it gives otherwise; and that Create of several deliveries
// stores all or none.
func runDeliveryBounds(t *testing.T, newStore NewStore) {
	t.Run("Claim bounds each endpoint by its room or its stored limits", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		narrow, limited, open := f.endpoint(teamID), f.endpoint(teamID), f.endpoint(teamID)
		narrow.MaxInFlight = 2
		limited.MaxInFlight, limited.RateLimit = 16, 3
		f.createEndpoints(narrow, limited, open)
		f.expectEndpoint(f.ctx, narrow)
		f.expectEndpoint(f.ctx, limited)
		now := storeAt(time.Hour)
		var ns, ls, os []webhook.Delivery
		for i := range 5 {
			due := now.Add(time.Duration(i-10) * time.Minute)
			ns, ls, os = append(ns, f.delivery(narrow, due)), append(ls, f.delivery(limited, due)), append(os, f.delivery(open, due))
		}
		f.createDeliveries(append(append(append([]webhook.Delivery(nil), ns...), ls...), os...)...)

		c := webhookstore.DeliveryClaim{Owner: "a", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 20}
		got := deliveryIDs(f.claim(c)...)
		want := deliveryIDs(ns[0], ls[0], os[0], ns[1], ls[1], os[1], ls[2], os[2], os[3], os[4])
		slices.Sort(got)
		slices.Sort(want)
		checkIDs(t, "claim by stored limits", got, want)

		c.Owner, c.Room = "b", map[string]int{narrow.ID: 1, limited.ID: 0}
		checkIDs(t, "claim by room", deliveryIDs(f.claim(c)...), []string{ns[2].ID})

		changed := narrow
		changed.MaxInFlight, changed.RateLimit = 5, 1
		f.must("Update", f.s.WebhookEndpoints().Update(f.ctx, changed))
		f.expectEndpoint(f.ctx, changed)
		c.Owner, c.Room = "c", nil
		checkIDs(t, "claim after the limits changed", deliveryIDs(f.claim(c)...), deliveryIDs(ns[3], ls[3], ls[4]))
	})

	t.Run("Create of several deliveries stores all or none", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		ep := f.endpoint(storeID("tm"))
		now := storeAt(time.Hour)
		a, b, c := f.delivery(ep, now), f.delivery(ep, now), f.delivery(ep, now)
		f.createDeliveries(a)
		expectConflict(t, "Create of a batch with a stored id", f.s.Deliveries().Create(f.ctx, b, a, c))
		for _, d := range []webhook.Delivery{b, c} {
			_, err := f.s.Deliveries().ByID(f.ctx, d.TeamID, d.ID)
			expectNotFound(t, "a delivery of the refused batch", err)
		}
		f.must("Create of a batch", f.s.Deliveries().Create(f.ctx, b, c))
		f.expectDelivery(f.ctx, b)
		f.expectDelivery(f.ctx, c)
		f.must("Create of nothing", f.s.Deliveries().Create(f.ctx))
	})
}
