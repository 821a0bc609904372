package bunstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// webhookEndpointRow is an endpoint with its event types as a JSON array of
// text, kept in the order the endpoint lists them.
type webhookEndpointRow struct {
	bun.BaseModel `bun:"table:webhook_endpoints,alias:we"`

	ID           string    `bun:"id,pk"`
	TeamID       string    `bun:"team_id"`
	URL          string    `bun:"url"`
	Events       string    `bun:"events"`
	SecretSealed []byte    `bun:"secret_sealed"`
	Enabled      bool      `bun:"enabled"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`
	AfterSeq     int64     `bun:"after_seq"`
}

// webhookEndpointUpdateColumns are what Update replaces.
var webhookEndpointUpdateColumns = []string{"url", "events", "secret_sealed", "enabled", "updated_at"}

func newWebhookEndpointRow(e webhook.Endpoint) (*webhookEndpointRow, error) {
	events := e.Events
	if events == nil {
		events = []string{}
	}
	raw, err := json.Marshal(events)
	if err != nil {
		return nil, fmt.Errorf("bunstore: write webhook endpoint: encode events: %w", err)
	}
	secret := e.SecretSealed
	if secret == nil {
		// NOT NULL column: no secret is stored as no bytes.
		secret = []byte{}
	}
	return &webhookEndpointRow{
		ID:           e.ID,
		TeamID:       e.TeamID,
		URL:          e.URL,
		Events:       string(raw),
		SecretSealed: secret,
		Enabled:      e.Enabled,
		CreatedAt:    utc(e.CreatedAt),
		UpdatedAt:    utc(e.UpdatedAt),
	}, nil
}

func (r *webhookEndpointRow) endpoint() (webhook.Endpoint, error) {
	events := []string{}
	if err := json.Unmarshal([]byte(r.Events), &events); err != nil {
		return webhook.Endpoint{}, fmt.Errorf("bunstore: read webhook endpoint %s: decode events: %w", r.ID, err)
	}
	if events == nil {
		events = []string{}
	}
	return webhook.Endpoint{
		ID:           r.ID,
		TeamID:       r.TeamID,
		URL:          r.URL,
		Events:       events,
		SecretSealed: r.SecretSealed,
		Enabled:      r.Enabled,
		CreatedAt:    utc(r.CreatedAt),
		UpdatedAt:    utc(r.UpdatedAt),
		AfterSeq:     r.AfterSeq,
	}, nil
}

func webhookEndpoints(rows []webhookEndpointRow) ([]webhook.Endpoint, error) {
	out := make([]webhook.Endpoint, 0, len(rows))
	for i := range rows {
		e, err := rows[i].endpoint()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

type webhookEndpointRepository struct{ db *bun.DB }

func (r webhookEndpointRepository) Create(ctx context.Context, e webhook.Endpoint) error {
	row, err := newWebhookEndpointRow(e)
	if err != nil {
		return err
	}
	// The statement reads the outbox as committed when it starts: every
	// event committed before the endpoint's unit began is at or below
	// after_seq, every event written after the endpoint committed above it.
	_, err = conn(ctx, r.db).NewInsert().Model(row).
		Value("after_seq", "(SELECT coalesce(max(seq), 0) FROM outbox_events)").
		Exec(ctx)
	if err != nil {
		return writeErr(err, "webhook endpoint", "webhook endpoint already exists")
	}
	return nil
}

func (r webhookEndpointRepository) ByID(ctx context.Context, teamID, id string) (webhook.Endpoint, error) {
	var row webhookEndpointRow
	err := conn(ctx, r.db).NewSelect().Model(&row).
		Where("team_id = ?", teamID).
		Where("id = ?", id).
		Scan(ctx)
	if err != nil {
		return webhook.Endpoint{}, readErr(err, "webhook endpoint")
	}
	return row.endpoint()
}

// List returns nothing for a limit below one: bun reads LIMIT 0 as "no
// limit".
func (r webhookEndpointRepository) List(ctx context.Context, teamID, beforeID string, limit int) ([]webhook.Endpoint, error) {
	if limit < 1 {
		return []webhook.Endpoint{}, nil
	}
	var rows []webhookEndpointRow
	q := conn(ctx, r.db).NewSelect().Model(&rows).Where("team_id = ?", teamID)
	if beforeID != "" {
		q = q.Where("id < ?", beforeID)
	}
	if err := q.OrderExpr("id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, readErr(err, "webhook endpoints")
	}
	return webhookEndpoints(rows)
}

func (r webhookEndpointRepository) Count(ctx context.Context, teamID string) (int, error) {
	n, err := conn(ctx, r.db).NewSelect().Model((*webhookEndpointRow)(nil)).Where("team_id = ?", teamID).Count(ctx)
	if err != nil {
		return 0, readErr(err, "webhook endpoints")
	}
	return int(n), nil
}

// ListEnabled returns the endpoints in id order, oldest first.
func (r webhookEndpointRepository) ListEnabled(ctx context.Context, teamID string) ([]webhook.Endpoint, error) {
	var rows []webhookEndpointRow
	err := conn(ctx, r.db).NewSelect().Model(&rows).
		Where("team_id = ?", teamID).
		Where("enabled = ?", true).
		OrderExpr("id ASC").
		Scan(ctx)
	if err != nil {
		return nil, readErr(err, "webhook endpoints")
	}
	return webhookEndpoints(rows)
}

func (r webhookEndpointRepository) Update(ctx context.Context, e webhook.Endpoint) error {
	row, err := newWebhookEndpointRow(e)
	if err != nil {
		return err
	}
	res, err := conn(ctx, r.db).NewUpdate().Model(row).
		Column(webhookEndpointUpdateColumns...).
		Where("team_id = ?", e.TeamID).
		Where("id = ?", e.ID).
		Exec(ctx)
	return touchedOne(res, err, "webhook endpoint")
}

// Delete removes the endpoint and its deliveries together: in a transaction
// of its own, or in a savepoint of the caller's unit of work.
func (r webhookEndpointRepository) Delete(ctx context.Context, teamID, id string) error {
	return conn(ctx, r.db).RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*webhookEndpointRow)(nil)).
			Where("team_id = ?", teamID).
			Where("id = ?", id).
			Exec(ctx)
		if err := touchedOne(res, err, "webhook endpoint"); err != nil {
			return err
		}
		_, err = tx.NewDelete().Model((*webhookDeliveryRow)(nil)).
			Where("team_id = ?", teamID).
			Where("endpoint_id = ?", id).
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("bunstore: write deliveries: %w", err)
		}
		return nil
	})
}

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
	Payload       string     `bun:"payload"`
	Status        string     `bun:"status"`
	Attempts      string     `bun:"attempts"`
	Started       int        `bun:"started"`
	RoundStart    int        `bun:"round_start"`
	NextAttemptAt time.Time  `bun:"next_attempt_at"`
	LeaseOwner    *string    `bun:"lease_owner"`
	LeaseUntil    *time.Time `bun:"lease_until"`
	CreatedAt     time.Time  `bun:"created_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`
}

// deliveryCompleteColumns are what Complete stores; it also frees the lease.
var deliveryCompleteColumns = []string{
	"status", "attempts", "round_start", "next_attempt_at", "updated_at", "lease_owner", "lease_until",
}

// deliveryRequeueColumns are what Requeue stores; it also frees the lease.
var deliveryRequeueColumns = []string{
	"status", "round_start", "next_attempt_at", "updated_at", "lease_owner", "lease_until",
}

// attemptJSON is one attempt as the attempts column keeps it; the time is
// RFC 3339 in UTC with nanoseconds, so it comes back exactly.
type attemptJSON struct {
	N          int    `json:"n"`
	At         string `json:"at"`
	StatusCode int    `json:"statusCode"`
	LatencyMs  int64  `json:"latencyMs"`
	Error      string `json:"error"`
}

func encodeAttempts(attempts []webhook.Attempt) (string, error) {
	out := make([]attemptJSON, len(attempts))
	for i, a := range attempts {
		out[i] = attemptJSON{
			N: a.N, At: a.At.UTC().Format(time.RFC3339Nano),
			StatusCode: a.StatusCode, LatencyMs: a.LatencyMs, Error: a.Error,
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
			N: a.N, At: at.UTC(), StatusCode: a.StatusCode, LatencyMs: a.LatencyMs, Error: a.Error,
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

func (r deliveryRepository) Create(ctx context.Context, d webhook.Delivery) error {
	row, err := newWebhookDeliveryRow(d)
	if err != nil {
		return err
	}
	if _, err := conn(ctx, r.db).NewInsert().Model(row).Exec(ctx); err != nil {
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

// whereDue keeps the deliveries c may claim: pending, due, with no lease or
// a lapsed one, of an endpoint not excluded.
func whereDue(q *bun.SelectQuery, c webhookstore.DeliveryClaim) *bun.SelectQuery {
	now := utc(c.Now)
	q = q.Where("status = ?", string(webhook.StatusPending)).
		Where("next_attempt_at <= ?", now).
		Where("(lease_until IS NULL OR lease_until <= ?)", now)
	if len(c.ExcludeEndpoints) > 0 {
		q = q.Where("endpoint_id NOT IN (?)", bun.List(c.ExcludeEndpoints))
	}
	if len(c.ExcludeTeams) > 0 {
		q = q.Where("team_id NOT IN (?)", bun.List(c.ExcludeTeams))
	}
	return q
}

// Claim picks the deliveries with window functions, at most PerEndpoint
// of each endpoint, then at most PerTeam of each team among those, and
// Limit in all, earliest due first, and leases them, in a transaction of
// its own or a savepoint of the caller's unit of work.
// A limit or per-endpoint bound below one claims nothing.
//
// PostgreSQL forbids FOR UPDATE in a query with window functions, so the
// windowed choice is a subquery of the query that locks: that one re-checks
// that each chosen row is still due and free and skips the rows a
// concurrent claim holds (SKIP LOCKED). A row leased by a claim that
// committed meanwhile is re-read after its lock and fails the re-check, so
// concurrent claims never lease one delivery twice; they may lease fewer
// than Limit, and the next claim takes the rest. SQLite runs one writing
// transaction at a time and needs no lock clause.
func (r deliveryRepository) Claim(ctx context.Context, c webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
	if c.Limit < 1 || c.PerEndpoint < 1 {
		return []webhook.Delivery{}, nil
	}
	var rows []webhookDeliveryRow
	err := conn(ctx, r.db).RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ranked := whereDue(tx.NewSelect().TableExpr("webhook_deliveries").
			Column("id", "team_id", "next_attempt_at").
			ColumnExpr("ROW_NUMBER() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_at, id) AS rn"), c)
		perEndpoint := tx.NewSelect().TableExpr("(?) AS ranked", ranked).
			Column("id", "next_attempt_at").
			ColumnExpr("ROW_NUMBER() OVER (PARTITION BY team_id ORDER BY next_attempt_at, id) AS team_rn").
			Where("rn <= ?", c.PerEndpoint)
		chosen := tx.NewSelect().TableExpr("(?) AS per_endpoint", perEndpoint).
			Column("id").
			OrderExpr("next_attempt_at ASC, id ASC").
			Limit(int64(c.Limit))
		if c.PerTeam > 0 {
			chosen = chosen.Where("team_rn <= ?", c.PerTeam)
		}
		lock := whereDue(tx.NewSelect().Model((*webhookDeliveryRow)(nil)).
			Column("id").
			Where("id IN (?)", chosen), c)
		if tx.Dialect().Name() == dialect.PG {
			lock = lock.For("UPDATE SKIP LOCKED")
		}
		var ids []string
		if err := lock.Scan(ctx, &ids); err != nil {
			return readErr(err, "deliveries")
		}
		if len(ids) == 0 {
			return nil
		}
		_, err := tx.NewUpdate().Model((*webhookDeliveryRow)(nil)).
			Set("lease_owner = ?", c.Owner).
			Set("lease_until = ?", utc(c.LeaseUntil)).
			// The attempt counts from its claim: if this owner dies before
			// recording it, the next claim numbers its own after it.
			Set("started = started + 1").
			Where("id IN (?)", bun.List(ids)).
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("bunstore: write deliveries: %w", err)
		}
		err = tx.NewSelect().Model(&rows).
			Where("id IN (?)", bun.List(ids)).
			OrderExpr("next_attempt_at ASC, id ASC").
			Scan(ctx)
		if err != nil {
			return readErr(err, "deliveries")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return webhookDeliveries(rows)
}

// Complete is one UPDATE conditional on the lease owner, so that a
// dispatcher whose lease lapsed and was taken over cannot overwrite what the
// new owner stores.
func (r deliveryRepository) Complete(ctx context.Context, d webhook.Delivery, owner string) (bool, error) {
	row, err := newWebhookDeliveryRow(d)
	if err != nil {
		return false, err
	}
	res, err := conn(ctx, r.db).NewUpdate().Model(row).
		Column(deliveryCompleteColumns...).
		Where("id = ?", d.ID).
		Where("lease_owner = ?", owner).
		Exec(ctx)
	n, err := rowsAffected(res, err, "delivery")
	return n > 0, err
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

// Pending reads the partial index of pending deliveries.
func (r deliveryRepository) Pending(ctx context.Context) (nextDue, oldestCreated time.Time, ok bool, err error) {
	var (
		n            int
		next, oldest bun.NullTime
	)
	err = conn(ctx, r.db).NewSelect().Model((*webhookDeliveryRow)(nil)).
		ColumnExpr("count(*)").
		ColumnExpr("min(next_attempt_at)").
		ColumnExpr("min(created_at)").
		Where("status = ?", string(webhook.StatusPending)).
		Scan(ctx, &n, &next, &oldest)
	if err != nil {
		return time.Time{}, time.Time{}, false, readErr(err, "deliveries")
	}
	if n == 0 {
		return time.Time{}, time.Time{}, false, nil
	}
	return utc(next.Time), utc(oldest.Time), true, nil
}

// finishedStatuses are the states a delivery leaves only by a retry.
var finishedStatuses = bun.List([]string{string(webhook.StatusSucceeded), string(webhook.StatusFailed)})

// Prune deletes each batch with one DELETE whose subquery picks the oldest
// rows (through the partial indexes of the retention migration), in a
// transaction of its own or a savepoint of the caller's unit of work. The
// DELETE repeats the subquery's conditions on the row itself: on
// PostgreSQL, a row a concurrent unit changed (a delivery retried, so
// pending again) is re-checked as it now stands and kept.
//
// The event with the highest seq stays because SQLite's trigger numbers a
// new event one above the highest left: were it deleted, the next event
// would take its number, and an endpoint created after it (after_seq)
// would never receive that event.
func (r deliveryRepository) Prune(ctx context.Context, cutoff time.Time, limit int) (webhookstore.Pruned, error) {
	var out webhookstore.Pruned
	if limit < 1 {
		return out, nil
	}
	cutoff = utc(cutoff)
	err := conn(ctx, r.db).RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
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
			Where("dispatched_at IS NOT NULL").
			Where("dispatched_at < ?", cutoff).
			Where("seq < (SELECT max(seq) FROM outbox_events)").
			Where("NOT EXISTS (SELECT 1 FROM webhook_deliveries AS pd WHERE pd.event_id = o.id AND pd.status = ?)",
				string(webhook.StatusPending)).
			OrderExpr("dispatched_at ASC, id ASC").
			Limit(int64(limit))
		res, err = tx.NewDelete().Model((*outboxEventRow)(nil)).
			Where("id IN (?)", events).
			Where("dispatched_at < ?", cutoff).
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

// WebhookEndpoints returns the webhook endpoint repository.
func (s *Store) WebhookEndpoints() webhookstore.Endpoints { return webhookEndpointRepository{db: s.db} }

// Deliveries returns the delivery repository.
func (s *Store) Deliveries() webhookstore.Deliveries { return deliveryRepository{db: s.db} }
