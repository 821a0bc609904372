package bunstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

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

// Claim leases due deliveries in a transaction of its own or in
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
