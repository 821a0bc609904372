package memory

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/ports/storage"
)

type outbox struct{ s *Store }

func (r outbox) Append(ctx context.Context, e event.Event) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		return st.appendEvent(undo, e)
	})
}

// appendEvent numbers e and adds it to the outbox.
func (st *state) appendEvent(undo *undoLog, e event.Event) error {
	st.outboxSeq++
	e.Seq = st.outboxSeq
	return st.outbox.insert(undo, outboxRow{e: e})
}

func (r outbox) ListAfter(ctx context.Context, afterID string, limit int) ([]event.Event, error) {
	rows, err := readValue(ctx, r.s, func(st *state) ([]outboxRow, error) {
		return st.outbox.query(func(row *outboxRow) bool { return row.e.ID > afterID }, st.outbox.lowestIDFirst, limit), nil
	})
	return eventsOf(rows), err
}

// ClaimUndispatched needs no lock of its own: a unit of work holds the
// store's write lock until it ends, so no other unit sees the events before
// this one has marked them or rolled back.
func (r outbox) ClaimUndispatched(ctx context.Context, limit int) ([]event.Event, error) {
	rows, err := readValue(ctx, r.s, func(st *state) ([]outboxRow, error) {
		return st.outbox.take(st.outbox.scanBacklog(all, st.outbox.lowestIDFirst), limit), nil
	})
	return eventsOf(rows), err
}

// MarkDispatched ignores ids that are not in the outbox or marked already.
func (r outbox) MarkDispatched(ctx context.Context, ids []string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		for _, id := range ids {
			row, err := st.outbox.get(id)
			if err != nil || row.dispatched {
				continue
			}
			row.dispatched = true
			st.outbox.put(undo, row)
		}
		return nil
	})
}

func eventsOf(rows []outboxRow) []event.Event {
	out := make([]event.Event, len(rows))
	for i, row := range rows {
		out[i] = row.e
	}
	return out
}

// Outbox returns the outbox.
func (s *Store) Outbox() storage.Outbox { return outbox{s: s} }
