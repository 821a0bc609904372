package bunstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// webhookDeliveryRow is a delivery with its attempts as a JSON array of
// text and the lease of the dispatcher attempting it, NULL while none does.
type webhookDeliveryRow struct {
	bun.BaseModel `bun:"table:webhook_deliveries,alias:wd"`

	ID         string `bun:"id,pk"`
	TeamID     string `bun:"team_id"`
	EndpointID string `bun:"endpoint_id"`
	EventID    string `bun:"event_id"`
	EventType  string `bun:"event_type"`
	// Payload is a string, not bytes, so that it is written as text: the
	// column keeps the body exactly as it is signed and sent.
	Payload       string    `bun:"payload"`
	Status        string    `bun:"status"`
	Attempts      string    `bun:"attempts"`
	Started       int       `bun:"started"`
	RoundStart    int       `bun:"round_start"`
	NextAttemptAt time.Time `bun:"next_attempt_at"`
	// ClaimableAt is NextAttemptAt, or the lease's end while a dispatcher
	// holds the delivery: claims look for due rows by it alone.
	ClaimableAt time.Time  `bun:"claimable_at"`
	LeaseOwner  *string    `bun:"lease_owner"`
	LeaseUntil  *time.Time `bun:"lease_until"`
	CreatedAt   time.Time  `bun:"created_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
}

// deliveryCompleteColumns are what Complete stores; it also frees the lease.
var deliveryCompleteColumns = []string{
	"status", "attempts", "round_start", "next_attempt_at", "claimable_at", "updated_at", "lease_owner", "lease_until",
}

// deliveryRequeueColumns are what Requeue stores; it also frees the lease.
var deliveryRequeueColumns = []string{
	"status", "round_start", "next_attempt_at", "claimable_at", "updated_at", "lease_owner", "lease_until",
}

// attemptJSON is one attempt as the attempts column keeps it; the time is
// RFC 3339 in UTC with nanoseconds, so it comes back exactly.
type attemptJSON struct {
	N          int    `json:"n"`
	At         string `json:"at"`
	StatusCode int    `json:"statusCode"`
	LatencyMs  int64  `json:"latencyMs"`
	Error      string `json:"error"`
	Answer     string `json:"answer,omitempty"`
}

func encodeAttempts(attempts []webhook.Attempt) (string, error) {
	out := make([]attemptJSON, len(attempts))
	for i, a := range attempts {
		out[i] = attemptJSON{
			N: a.N, At: a.At.UTC().Format(time.RFC3339Nano),
			StatusCode: a.StatusCode, LatencyMs: a.LatencyMs, Error: a.Error, Answer: a.Answer,
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	return string(raw), nil
}

func decodeAttempts(raw string) ([]webhook.Attempt, error) {
	var in []attemptJSON
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return nil, err
	}
	out := make([]webhook.Attempt, len(in))
	for i, a := range in {
		at, err := time.Parse(time.RFC3339Nano, a.At)
		if err != nil {
			return nil, err
		}
		out[i] = webhook.Attempt{
			N: a.N, At: at.UTC(), StatusCode: a.StatusCode, LatencyMs: a.LatencyMs, Error: a.Error, Answer: a.Answer,
		}
	}
	return out, nil
}

// newWebhookDeliveryRow converts d with no lease.
func newWebhookDeliveryRow(d webhook.Delivery) (*webhookDeliveryRow, error) {
	attempts, err := encodeAttempts(d.Attempts)
	if err != nil {
		return nil, fmt.Errorf("bunstore: write delivery: encode attempts: %w", err)
	}
	return &webhookDeliveryRow{
		ID:            d.ID,
		TeamID:        d.TeamID,
		EndpointID:    d.EndpointID,
		EventID:       d.EventID,
		EventType:     string(d.EventType),
		Payload:       string(d.Payload),
		Status:        string(d.Status),
		Attempts:      attempts,
		Started:       d.Started,
		RoundStart:    d.RoundStart,
		NextAttemptAt: utc(d.NextAttemptAt),
		ClaimableAt:   utc(d.NextAttemptAt),
		CreatedAt:     utc(d.CreatedAt),
		UpdatedAt:     utc(d.UpdatedAt),
	}, nil
}

func (r *webhookDeliveryRow) delivery() (webhook.Delivery, error) {
	attempts, err := decodeAttempts(r.Attempts)
	if err != nil {
		return webhook.Delivery{}, fmt.Errorf("bunstore: read delivery %s: decode attempts: %w", r.ID, err)
	}
	return webhook.Delivery{
		ID:            r.ID,
		TeamID:        r.TeamID,
		EndpointID:    r.EndpointID,
		EventID:       r.EventID,
		EventType:     event.Type(r.EventType),
		Payload:       []byte(r.Payload),
		Status:        webhook.Status(r.Status),
		Attempts:      attempts,
		Started:       r.Started,
		RoundStart:    r.RoundStart,
		NextAttemptAt: utc(r.NextAttemptAt),
		CreatedAt:     utc(r.CreatedAt),
		UpdatedAt:     utc(r.UpdatedAt),
	}, nil
}

func webhookDeliveries(rows []webhookDeliveryRow) ([]webhook.Delivery, error) {
	out := make([]webhook.Delivery, 0, len(rows))
	for i := range rows {
		d, err := rows[i].delivery()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

type deliveryRepository struct{ db *bun.DB }

// Create writes the deliveries with one multi-row INSERT.
func (r deliveryRepository) Create(ctx context.Context, ds ...webhook.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	rows := make([]webhookDeliveryRow, len(ds))
	for i, d := range ds {
		row, err := newWebhookDeliveryRow(d)
		if err != nil {
			return err
		}
		rows[i] = *row
	}
	if _, err := conn(ctx, r.db).NewInsert().Model(&rows).Exec(ctx); err != nil {
		return writeErr(err, "delivery", "delivery already exists")
	}
	return nil
}

func (r deliveryRepository) ByID(ctx context.Context, teamID, id string) (webhook.Delivery, error) {
	var row webhookDeliveryRow
	err := conn(ctx, r.db).NewSelect().Model(&row).
		Where("team_id = ?", teamID).
		Where("id = ?", id).
		Scan(ctx)
	if err != nil {
		return webhook.Delivery{}, readErr(err, "delivery")
	}
	return row.delivery()
}

// List returns nothing for a limit below one: bun reads LIMIT 0 as "no
// limit". A status other than the three matches nothing.
func (r deliveryRepository) List(ctx context.Context, teamID, endpointID string, f webhookstore.DeliveryFilter) ([]webhook.Delivery, error) {
	if f.Limit < 1 {
		return []webhook.Delivery{}, nil
	}
	var rows []webhookDeliveryRow
	q := conn(ctx, r.db).NewSelect().Model(&rows).
		Where("team_id = ?", teamID).
		Where("endpoint_id = ?", endpointID)
	if f.Status != "" {
		q = q.Where("status = ?", string(f.Status))
	}
	if f.BeforeID != "" {
		q = q.Where("id < ?", f.BeforeID)
	}
	if err := q.OrderExpr("id DESC").Limit(int64(f.Limit)).Scan(ctx); err != nil {
		return nil, readErr(err, "deliveries")
	}
	return webhookDeliveries(rows)
}

// pgComplete stores a batch of outcomes in one statement; each row applies
// only while owner holds its lease, so that a dispatcher whose lease lapsed
// and was taken over cannot overwrite what the new owner stores.
const pgComplete = `
UPDATE webhook_deliveries AS wd
   SET status = v.status, attempts = v.attempts, round_start = v.round_start,
       next_attempt_at = v.next_attempt_at, claimable_at = v.next_attempt_at,
       updated_at = v.updated_at, lease_owner = NULL, lease_until = NULL
  FROM (SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::int[], ?::timestamptz[], ?::timestamptz[]))
       AS v(id, status, attempts, round_start, next_attempt_at, updated_at)
 WHERE wd.id = v.id COLLATE "C" AND wd.lease_owner = ?
RETURNING wd.id`

// Complete writes the batch in one statement on PostgreSQL, and one UPDATE
// per delivery in one transaction elsewhere (SQLite: in-process, one
// writer).
func (r deliveryRepository) Complete(ctx context.Context, owner string, ds ...webhook.Delivery) ([]bool, error) {
	applied := make([]bool, len(ds))
	if len(ds) == 0 {
		return applied, nil
	}
	rows := make([]*webhookDeliveryRow, len(ds))
	for i, d := range ds {
		row, err := newWebhookDeliveryRow(d)
		if err != nil {
			return nil, err
		}
		rows[i] = row
	}
	err := inTx(ctx, r.db, func(ctx context.Context, tx bun.Tx) error {
		if tx.Dialect().Name() == dialect.PG {
			return completePG(ctx, tx, owner, rows, applied)
		}
		for i, row := range rows {
			res, err := tx.NewUpdate().Model(row).
				Column(deliveryCompleteColumns...).
				Where("id = ?", row.ID).
				Where("lease_owner = ?", owner).
				Exec(ctx)
			n, err := rowsAffected(res, err, "delivery")
			if err != nil {
				return err
			}
			applied[i] = n > 0
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

func completePG(ctx context.Context, tx bun.Tx, owner string, rows []*webhookDeliveryRow, applied []bool) error {
	n := len(rows)
	ids, statuses, attempts := make([]string, n), make([]string, n), make([]string, n)
	rounds, next, updated := make([]int, n), make([]time.Time, n), make([]time.Time, n)
	at := make(map[string]int, n)
	for i, row := range rows {
		ids[i], statuses[i], attempts[i] = row.ID, row.Status, row.Attempts
		rounds[i], next[i], updated[i] = row.RoundStart, row.NextAttemptAt, row.UpdatedAt
		at[row.ID] = i
	}
	var done []string
	err := tx.NewRaw(pgComplete,
		pgdialect.Array(ids), pgdialect.Array(statuses), pgdialect.Array(attempts),
		pgdialect.Array(rounds), pgdialect.Array(next), pgdialect.Array(updated), owner,
	).Scan(ctx, &done)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("bunstore: write deliveries: %w", err)
	}
	for _, id := range done {
		applied[at[id]] = true
	}
	return nil
}

// Requeue is one UPDATE conditional on the stored status, so that of
// concurrent retries of one failed delivery exactly one applies.
func (r deliveryRepository) Requeue(ctx context.Context, d webhook.Delivery) (bool, error) {
	row, err := newWebhookDeliveryRow(d)
	if err != nil {
		return false, err
	}
	res, err := conn(ctx, r.db).NewUpdate().Model(row).
		Column(deliveryRequeueColumns...).
		Where("team_id = ?", d.TeamID).
		Where("id = ?", d.ID).
		Where("status = ?", string(webhook.StatusFailed)).
		Exec(ctx)
	n, err := rowsAffected(res, err, "delivery")
	return n > 0, err
}

// Pending reads two partial indexes of pending deliveries, one entry
// each, so the dispatcher's idle check costs the same whatever the backlog.
func (r deliveryRepository) Pending(ctx context.Context) (nextDue, oldestCreated time.Time, ok bool, err error) {
	db := conn(ctx, r.db)
	var next, oldest []time.Time
	err = db.NewSelect().Model((*webhookDeliveryRow)(nil)).
		Column("claimable_at").
		Where("status = ?", string(webhook.StatusPending)).
		OrderExpr("claimable_at ASC").
		Limit(1).
		Scan(ctx, &next)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, time.Time{}, false, readErr(err, "deliveries")
	}
	if len(next) == 0 {
		return time.Time{}, time.Time{}, false, nil
	}
	err = db.NewSelect().Model((*webhookDeliveryRow)(nil)).
		Column("created_at").
		Where("status = ?", string(webhook.StatusPending)).
		OrderExpr("created_at ASC").
		Limit(1).
		Scan(ctx, &oldest)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, time.Time{}, false, readErr(err, "deliveries")
	}
	if len(oldest) == 0 {
		// The last pending delivery finished between the two reads.
		return time.Time{}, time.Time{}, false, nil
	}
	return utc(next[0]), utc(oldest[0]), true, nil
}

// finishedStatuses are the states a delivery leaves only by a retry.
var finishedStatuses = bun.List([]string{string(webhook.StatusSucceeded), string(webhook.StatusFailed)})

// Prune deletes each batch with one DELETE whose subquery picks the oldest
// rows (through the partial indexes of the retention migration), in a
// transaction of its own or in the caller's unit of work. The
// DELETE repeats the subquery's conditions on the row itself: on
// PostgreSQL, a row a concurrent unit changed (a delivery retried, so
// pending again) is re-checked as it now stands and kept.
func (r deliveryRepository) Prune(ctx context.Context, cutoff time.Time, limit int) (webhookstore.Pruned, error) {
	var out webhookstore.Pruned
	if limit < 1 {
		return out, nil
	}
	cutoff = utc(cutoff)
	err := inTx(ctx, r.db, func(ctx context.Context, tx bun.Tx) error {
		finished := tx.NewSelect().Model((*webhookDeliveryRow)(nil)).
			Column("id").
			Where("status IN (?)", finishedStatuses).
			Where("updated_at < ?", cutoff).
			OrderExpr("updated_at ASC, id ASC").
			Limit(int64(limit))
		res, err := tx.NewDelete().Model((*webhookDeliveryRow)(nil)).
			Where("id IN (?)", finished).
			Where("status IN (?)", finishedStatuses).
			Where("updated_at < ?", cutoff).
			Exec(ctx)
		n, err := rowsAffected(res, err, "deliveries")
		if err != nil {
			return err
		}
		out.Deliveries = int(n)

		events := tx.NewSelect().Model((*outboxEventRow)(nil)).
			Column("id").
			Where("occurred_at < ?", cutoff).
			Where("NOT EXISTS (SELECT 1 FROM webhook_deliveries AS pd WHERE pd.event_id = o.id AND pd.status = ?)",
				string(webhook.StatusPending)).
			OrderExpr("occurred_at ASC, id ASC").
			Limit(int64(limit))
		res, err = tx.NewDelete().Model((*outboxEventRow)(nil)).
			Where("id IN (?)", events).
			Exec(ctx)
		if n, err = rowsAffected(res, err, "outbox events"); err != nil {
			return err
		}
		out.Events = int(n)
		return nil
	})
	if err != nil {
		return webhookstore.Pruned{}, err
	}
	return out, nil
}

// Deliveries returns the delivery repository.
func (s *Store) Deliveries() webhookstore.Deliveries { return deliveryRepository{db: s.db} }
