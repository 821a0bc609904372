package bunstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"

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
	MaxInFlight  int       `bun:"max_in_flight"`
	RateLimit    int       `bun:"rate_limit"`
	AfterSeq     int64     `bun:"after_seq"`
}

// webhookEndpointUpdateColumns are what Update replaces.
var webhookEndpointUpdateColumns = []string{
	"url", "events", "secret_sealed", "enabled", "updated_at", "max_in_flight", "rate_limit",
}

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
		MaxInFlight:  e.MaxInFlight,
		RateLimit:    e.RateLimit,
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
		MaxInFlight:  r.MaxInFlight,
		RateLimit:    r.RateLimit,
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
	return inTx(ctx, r.db, func(ctx context.Context, tx bun.Tx) error {
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

// pgClaim leases due deliveries in one statement whose cost grows with the
// endpoints that have pending deliveries, not with the deliveries:
//
//   - eps walks the distinct endpoints of pending deliveries, one index
//     descent each (a loose index scan of webhook_deliveries_claim_idx);
//   - bounds gives each endpoint its bound for this claim: the owner's
//     room for it, else its stored max_in_flight (and rate_limit), capped
//     by Limit, none for an excluded team;
//   - picked reads, per endpoint, only the first n due rows of the index
//     and locks them, skipping those a concurrent claim holds; a row a
//     concurrent claim leased and committed meanwhile is re-checked after
//     its lock, fails claimable_at <= now (the lease moved it) and is
//     skipped, so no delivery is leased twice;
//   - chosen keeps at most PerTeam of a team and Limit in all, earliest
//     first, among those few rows;
//   - the UPDATE leases them and moves claimable_at to the lease's end,
//     out of "due", until the lease lapses or Complete frees it.
//
// Rows picked but not chosen stay locked until the statement's transaction
// ends, a moment later.
const pgClaim = `
WITH RECURSIVE eps AS (
    (SELECT endpoint_id, team_id FROM webhook_deliveries
      WHERE status = 'pending' ORDER BY endpoint_id LIMIT 1)
    UNION ALL
    SELECT nxt.endpoint_id, nxt.team_id FROM eps CROSS JOIN LATERAL (
        SELECT w.endpoint_id, w.team_id FROM webhook_deliveries AS w
         WHERE w.status = 'pending' AND w.endpoint_id > eps.endpoint_id
         ORDER BY w.endpoint_id LIMIT 1) AS nxt
), room AS (
    SELECT r.endpoint_id COLLATE "C" AS endpoint_id, r.n
      FROM unnest(?::text[], ?::int[]) AS r(endpoint_id, n)
), bounds AS (
    SELECT eps.endpoint_id,
           least(coalesce(room.n, CASE WHEN e.rate_limit > 0 THEN least(e.max_in_flight, e.rate_limit)
                                       ELSE nullif(e.max_in_flight, 0) END),
                 ?::int) AS n
      FROM eps
      LEFT JOIN room ON room.endpoint_id = eps.endpoint_id
      LEFT JOIN webhook_endpoints AS e ON e.id = eps.endpoint_id
     WHERE eps.team_id <> ALL (?::text[])
), picked AS (
    SELECT d.id, d.team_id, d.claimable_at FROM bounds CROSS JOIN LATERAL (
        SELECT w.id, w.team_id, w.claimable_at FROM webhook_deliveries AS w
         WHERE w.endpoint_id = bounds.endpoint_id AND w.status = 'pending' AND w.claimable_at <= ?
         ORDER BY w.claimable_at, w.id
         LIMIT bounds.n
           FOR UPDATE SKIP LOCKED) AS d
     WHERE bounds.n > 0
), chosen AS (
    SELECT id FROM (
        SELECT id, claimable_at,
               row_number() OVER (PARTITION BY team_id ORDER BY claimable_at, id) AS team_rn
          FROM picked) AS ranked
     WHERE team_rn <= ?
     ORDER BY claimable_at, id
     LIMIT ?
)
UPDATE webhook_deliveries AS wd
   SET lease_owner = ?, lease_until = ?, claimable_at = ?, started = wd.started + 1
  FROM chosen
 WHERE wd.id = chosen.id
RETURNING wd.*`

// Claim leases due deliveries in a transaction of its own or a savepoint of
// the caller's unit of work. A limit below one claims nothing. Leased rows
// come back earliest due first; their NextAttemptAt is as stored, the
// lease being the store's own business.
func (r deliveryRepository) Claim(ctx context.Context, c webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
	if c.Limit < 1 {
		return []webhook.Delivery{}, nil
	}
	var rows []webhookDeliveryRow
	err := inTx(ctx, r.db, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if tx.Dialect().Name() == dialect.PG {
			rows, err = claimPG(ctx, tx, c)
		} else {
			rows, err = claimOneWriter(ctx, tx, c)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b webhookDeliveryRow) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	return webhookDeliveries(rows)
}

// claimPG commits without waiting for the WAL flush: a claim lost with the
// database's last moments only ends its leases early, and the deliveries
// are attempted again, as after a lapsed lease (at least once). Whatever
// is written after it (the outcome of an attempt) waits for the flush,
// which takes the claim with it.
func claimPG(ctx context.Context, tx bun.Tx, c webhookstore.DeliveryClaim) ([]webhookDeliveryRow, error) {
	if _, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
		return nil, fmt.Errorf("bunstore: claim deliveries: %w", err)
	}
	var rows []webhookDeliveryRow
	if err := pgClaimQuery(tx, c).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, readErr(err, "deliveries")
	}
	return rows, nil
}

// pgClaimQuery is pgClaim with c's values.
func pgClaimQuery(db bun.IDB, c webhookstore.DeliveryClaim) *bun.RawQuery {
	roomIDs, roomN := make([]string, 0, len(c.Room)), make([]int, 0, len(c.Room))
	for id, n := range c.Room {
		roomIDs, roomN = append(roomIDs, id), append(roomN, max(n, 0))
	}
	excluded := c.ExcludeTeams
	if excluded == nil {
		excluded = []string{}
	}
	perTeam := c.PerTeam
	if perTeam <= 0 {
		perTeam = c.Limit
	}
	return db.NewRaw(pgClaim,
		pgdialect.Array(roomIDs), pgdialect.Array(roomN), c.Limit, pgdialect.Array(excluded),
		utc(c.Now), perTeam, c.Limit,
		c.Owner, utc(c.LeaseUntil), utc(c.LeaseUntil),
	)
}

// claimOneWriter is Claim where one writing transaction runs at a time
// (SQLite), so nothing needs locking: it reads the endpoints of pending
// deliveries (one index lookup each), each endpoint's first due rows up to
// its bound, and keeps the earliest within the team bound and the limit.
func claimOneWriter(ctx context.Context, tx bun.Tx, c webhookstore.DeliveryClaim) ([]webhookDeliveryRow, error) {
	var endpointIDs []string
	err := tx.NewRaw(`
WITH RECURSIVE eps(id) AS (
    SELECT min(endpoint_id) FROM webhook_deliveries WHERE status = 'pending'
    UNION ALL
    SELECT (SELECT min(endpoint_id) FROM webhook_deliveries
             WHERE status = 'pending' AND endpoint_id > eps.id)
      FROM eps WHERE eps.id IS NOT NULL
)
SELECT id FROM eps WHERE id IS NOT NULL`).Scan(ctx, &endpointIDs)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, readErr(err, "deliveries")
	}
	if len(endpointIDs) == 0 {
		return nil, nil
	}
	var endpoints []webhookEndpointRow
	err = tx.NewSelect().Model(&endpoints).Column("id", "max_in_flight", "rate_limit").
		Where("id IN (?)", bun.List(endpointIDs)).Scan(ctx)
	if err != nil {
		return nil, readErr(err, "webhook endpoints")
	}
	stored := make(map[string]webhookEndpointRow, len(endpoints))
	for _, e := range endpoints {
		stored[e.ID] = e
	}
	var due []webhookDeliveryRow
	for _, id := range endpointIDs {
		n := c.Limit
		if room, ok := c.Room[id]; ok {
			n = min(n, room)
		} else if e, ok := stored[id]; ok && e.MaxInFlight > 0 {
			n = min(n, e.MaxInFlight)
			if e.RateLimit > 0 {
				n = min(n, e.RateLimit)
			}
		}
		if n < 1 {
			continue
		}
		var rows []webhookDeliveryRow
		q := tx.NewSelect().Model(&rows).Column("id", "team_id", "claimable_at").
			Where("endpoint_id = ?", id).
			Where("status = ?", string(webhook.StatusPending)).
			Where("claimable_at <= ?", utc(c.Now)).
			OrderExpr("claimable_at ASC, id ASC").
			Limit(int64(n))
		if len(c.ExcludeTeams) > 0 {
			q = q.Where("team_id NOT IN (?)", bun.List(c.ExcludeTeams))
		}
		if err := q.Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, readErr(err, "deliveries")
		}
		due = append(due, rows...)
	}
	slices.SortFunc(due, func(a, b webhookDeliveryRow) int {
		return cmp.Or(a.ClaimableAt.Compare(b.ClaimableAt), cmp.Compare(a.ID, b.ID))
	})
	var ids []string
	perTeam := map[string]int{}
	for _, d := range due {
		if len(ids) == c.Limit {
			break
		}
		if c.PerTeam > 0 && perTeam[d.TeamID] == c.PerTeam {
			continue
		}
		perTeam[d.TeamID]++
		ids = append(ids, d.ID)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	_, err = tx.NewUpdate().Model((*webhookDeliveryRow)(nil)).
		Set("lease_owner = ?", c.Owner).
		Set("lease_until = ?", utc(c.LeaseUntil)).
		Set("claimable_at = ?", utc(c.LeaseUntil)).
		// The attempt counts from its claim: if this owner dies before
		// recording it, the next claim numbers its own after it.
		Set("started = started + 1").
		Where("id IN (?)", bun.List(ids)).
		Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("bunstore: write deliveries: %w", err)
	}
	var rows []webhookDeliveryRow
	if err := tx.NewSelect().Model(&rows).Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, readErr(err, "deliveries")
	}
	return rows, nil
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
			Where("NOT EXISTS (SELECT 1 FROM outbox_pending AS op WHERE op.id = o.id)").
			Where("seq < (SELECT max(seq) FROM outbox_events)").
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

// WebhookEndpoints returns the webhook endpoint repository.
func (s *Store) WebhookEndpoints() webhookstore.Endpoints { return webhookEndpointRepository{db: s.db} }

// Deliveries returns the delivery repository.
func (s *Store) Deliveries() webhookstore.Deliveries { return deliveryRepository{db: s.db} }
