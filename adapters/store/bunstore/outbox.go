package bunstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

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
	// DispatchedAt is NULL until the event has been fanned out.
	DispatchedAt *time.Time `bun:"dispatched_at"`
	// Seq is numbered by the database on insert (PostgreSQL: an identity
	// column; SQLite: a trigger): the service leaves it zero, which
	// nullzero writes as DEFAULT.
	Seq int64 `bun:"seq,nullzero"`
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
		Seq:        r.Seq,
	}
}

type outbox struct{ db *bun.DB }

// Append stamps created_at with the wall clock: it records when the row was
// written, for operators, and no behaviour depends on it.
func (o outbox) Append(ctx context.Context, e event.Event) error {
	return appendEvents(ctx, conn(ctx, o.db), []event.Event{e})
}

// appendEvents inserts events into the outbox on db, in one statement.
func appendEvents(ctx context.Context, db bun.IDB, events []event.Event) error {
	if len(events) == 0 {
		return nil
	}
	now := time.Now()
	rows := make([]*outboxEventRow, len(events))
	for i, e := range events {
		rows[i] = newOutboxEventRow(e, now)
	}
	if _, err := db.NewInsert().Model(&rows).Exec(ctx); err != nil {
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
	events := make([]event.Event, 0, len(rows))
	for i := range rows {
		events = append(events, rows[i].event())
	}
	return events, nil
}

// ClaimUndispatched locks the rows it returns until the caller's unit of
// work ends: on PostgreSQL, concurrent units skip them (SKIP LOCKED) rather
// than wait, and see them again if the unit rolls back. SQLite runs one
// writing transaction at a time, so it needs no lock clause.
func (o outbox) ClaimUndispatched(ctx context.Context, limit int) ([]event.Event, error) {
	if limit <= 0 {
		return []event.Event{}, nil
	}
	var rows []outboxEventRow
	q := conn(ctx, o.db).NewSelect().Model(&rows).
		Where("dispatched_at IS NULL").
		OrderExpr("id ASC").
		Limit(int64(limit))
	if conn(ctx, o.db).Dialect().Name() == dialect.PG {
		q = q.For("UPDATE SKIP LOCKED")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, readErr(err, "outbox events")
	}
	events := make([]event.Event, 0, len(rows))
	for i := range rows {
		events = append(events, rows[i].event())
	}
	return events, nil
}

// MarkDispatched keeps the first dispatch time of an event marked twice and
// ignores ids that are not in the outbox.
func (o outbox) MarkDispatched(ctx context.Context, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := conn(ctx, o.db).NewUpdate().Model((*outboxEventRow)(nil)).
		Set("dispatched_at = ?", utc(at)).
		Where("id IN (?)", bun.List(ids)).
		Where("dispatched_at IS NULL").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("bunstore: write outbox events: %w", err)
	}
	return nil
}

// Outbox returns the outbox.
func (s *Store) Outbox() storage.Outbox { return outbox{db: s.db} }
