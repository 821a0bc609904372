-- Webhook claims that cost the same whatever the backlog, and per-endpoint
-- delivery limits.

-- How many attempts to an endpoint a dispatcher makes at once, and how many
-- per second (0: no limit).
ALTER TABLE webhook_endpoints ADD COLUMN max_in_flight integer NOT NULL DEFAULT 16;
ALTER TABLE webhook_endpoints ADD COLUMN rate_limit integer NOT NULL DEFAULT 0;

-- claimable_at is when a pending delivery can next be claimed: its
-- next_attempt_at, or while a dispatcher holds it the end of its lease. A
-- claim moves a delivery out of "due" by writing it, so the claim's index
-- scan never reads leased rows again, and a lapsed lease makes the delivery
-- due with no other change.
ALTER TABLE webhook_deliveries ADD COLUMN claimable_at timestamptz;
UPDATE webhook_deliveries
   SET claimable_at = CASE WHEN lease_until > next_attempt_at THEN lease_until ELSE next_attempt_at END;
ALTER TABLE webhook_deliveries ALTER COLUMN claimable_at SET NOT NULL;

-- "Due now, per endpoint, oldest first": a claim reads, for each endpoint
-- with pending deliveries, only the few it takes.
CREATE INDEX webhook_deliveries_claim_idx ON webhook_deliveries (endpoint_id, claimable_at, id)
    WHERE status = 'pending';

-- The dispatcher's idle check: the next claimable and the oldest pending
-- delivery, each one index entry away.
DROP INDEX webhook_deliveries_due_idx;
CREATE INDEX webhook_deliveries_claimable_idx ON webhook_deliveries (claimable_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_pending_created_idx ON webhook_deliveries (created_at)
    WHERE status = 'pending';

-- Every claim and every outcome leaves a dead version of the delivery in
-- the claim index, at the front of its endpoint's range, where the next
-- claim starts reading; only VACUUM removes them. By default a table is
-- vacuumed once a fifth of it is dead, which with a week of finished
-- deliveries kept is hundreds of thousands of versions: vacuum it after a
-- fixed number instead, so the pages a claim walks stay few.
ALTER TABLE webhook_deliveries SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000);
