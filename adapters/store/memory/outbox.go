package memory

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/ports/storage"
)

type outbox struct{ s *Store }

func (r outbox) Append(ctx context.Context, e event.Event) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		return st.outbox.insert(undo, e)
	})
}

func (r outbox) ListAfter(ctx context.Context, afterID string, limit int) ([]event.Event, error) {
	return readValue(ctx, r.s, func(st *state) ([]event.Event, error) {
		return st.outbox.query(func(e *event.Event) bool { return e.ID > afterID }, st.outbox.lowestIDFirst, limit), nil
	})
}

// Outbox returns the outbox.
func (s *Store) Outbox() storage.Outbox { return outbox{s: s} }
