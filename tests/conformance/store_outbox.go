package conformance

import (
	"slices"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
)

func eventIDs(es []event.Event) []string {
	return ids(es, func(e event.Event) string { return e.ID })
}

func runOutbox(t *testing.T, newStore NewStore) {
	t.Run("empty outbox lists nothing", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		got, err := f.s.Outbox().ListAfter(f.ctx, "", 10)
		f.must("ListAfter", err)
		if len(got) != 0 {
			t.Fatalf("ListAfter on an empty store: got %d events", len(got))
		}
	})

	t.Run("events round trip byte for byte", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		e := f.event(storeID("tm"), storeAt(time.Second).In(storeZone))
		want := e
		want.Data = slices.Clone(e.Data)
		f.must("Append", f.s.Outbox().Append(f.ctx, e))
		e.Data[0] = ' '

		got, err := f.s.Outbox().ListAfter(f.ctx, "", 10)
		f.must("ListAfter", err)
		if len(got) != 1 {
			t.Fatalf("ListAfter: got %d events, want 1", len(got))
		}
		checkEqual(t, "event", got[0], want)

		got[0].Data[0] = ' '
		again, err := f.s.Outbox().ListAfter(f.ctx, "", 10)
		f.must("ListAfter", err)
		checkEqual(t, "event", again[0], want)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		e := f.event(storeID("tm"), storeAt(0))
		f.must("Append", f.s.Outbox().Append(f.ctx, e))
		again := f.event(storeID("tm"), storeAt(time.Second))
		again.ID = e.ID
		expectConflict(t, "Append with the same id", f.s.Outbox().Append(f.ctx, again))
	})

	// Appended out of id order, from several teams: the outbox is one stream
	// ordered by id alone.
	t.Run("ListAfter pages in id order", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		const n = 7
		events := make([]event.Event, n)
		for i := range events {
			teamID := storeID("tm")
			events[i] = f.event(teamID, storeAt(time.Duration(n-i)*time.Second))
		}
		for _, i := range []int{3, 0, 6, 1, 5, 2, 4} {
			f.must("Append", f.s.Outbox().Append(f.ctx, events[i]))
		}
		all := eventIDs(events)

		got, err := f.s.Outbox().ListAfter(f.ctx, "", 100)
		f.must("ListAfter all", err)
		checkIDs(t, "ListAfter(\"\", 100)", eventIDs(got), all)
		for i := range got {
			if i < len(events) {
				checkEqual(t, "event", got[i], events[i])
			}
		}

		var paged []string
		after := ""
		for page := 0; ; page++ {
			if page > n {
				t.Fatalf("paging did not end after %d pages: %v", page, paged)
			}
			got, err := f.s.Outbox().ListAfter(f.ctx, after, 3)
			f.must("ListAfter page", err)
			if len(got) > 3 {
				t.Fatalf("ListAfter(%q, 3) returned %d events", after, len(got))
			}
			if len(got) == 0 {
				break
			}
			paged = append(paged, eventIDs(got)...)
			after = got[len(got)-1].ID
		}
		checkIDs(t, "pages of 3", paged, all)

		// An id that was never appended still marks a position. The suffix is
		// a digit so that byte order and any collation agree on where it sits.
		between := events[2].ID + "0"
		got, err = f.s.Outbox().ListAfter(f.ctx, between, 2)
		f.must("ListAfter between ids", err)
		checkIDs(t, "ListAfter between ids", eventIDs(got), all[3:5])

		got, err = f.s.Outbox().ListAfter(f.ctx, events[n-1].ID, 10)
		f.must("ListAfter the last id", err)
		if len(got) != 0 {
			t.Fatalf("ListAfter the last id: got %v", eventIDs(got))
		}
	})
}
