package bunstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/ports/storage"
)

type outboxEventRow struct {
	bun.BaseModel `bun:"table:outbox_events,alias:o"`

	ID         string    `bun:"id,pk"`
	TeamID     string    `bun:"team_id"`
	Type       string    `bun:"type"`
	OccurredAt time.Time `bun:"occurred_at"`
	// Data is a string, not bytes, so that it is written as text: the
	// column keeps the JSON exactly as the event carries it.
	Data      string    `bun:"data"`
	CreatedAt time.Time `bun:"created_at"`
}

func newOutboxEventRow(e event.Event, now time.Time) *outboxEventRow {
	return &outboxEventRow{
		ID:         e.ID,
		TeamID:     e.TeamID,
		Type:       string(e.Type),
		OccurredAt: utc(e.OccurredAt),
		Data:       string(e.Data),
		CreatedAt:  utc(now),
	}
}

func (r *outboxEventRow) event() event.Event {
	return event.Event{
		ID:         r.ID,
		TeamID:     r.TeamID,
		Type:       event.Type(r.Type),
		OccurredAt: utc(r.OccurredAt),
		Data:       json.RawMessage(r.Data),
	}
}

type outbox struct{ db *bun.DB }

// Append stamps created_at with the wall clock: it records when the row was
// written, for operators, and no behaviour depends on it.
func (o outbox) Append(ctx context.Context, e event.Event) error {
	if _, err := conn(ctx, o.db).NewInsert().Model(newOutboxEventRow(e, time.Now())).Exec(ctx); err != nil {
		return writeErr(err, "outbox event", "event already in the outbox")
	}
	return nil
}

func (o outbox) ListAfter(ctx context.Context, afterID string, limit int) ([]event.Event, error) {
	if limit <= 0 {
		// bun reads LIMIT 0 as "no limit".
		return []event.Event{}, nil
	}
	var rows []outboxEventRow
	err := conn(ctx, o.db).NewSelect().Model(&rows).
		Where("id > ?", afterID).
		OrderExpr("id ASC").
		Limit(int64(limit)).
		Scan(ctx)
	if err != nil {
		return nil, readErr(err, "outbox events")
	}
	return outboxEvents(rows), nil
}

func outboxEvents(rows []outboxEventRow) []event.Event {
	events := make([]event.Event, 0, len(rows))
	for i := range rows {
		events = append(events, rows[i].event())
	}
	return events
}

// Outbox returns the outbox.
func (s *Store) Outbox() storage.Outbox { return outbox{db: s.db} }
