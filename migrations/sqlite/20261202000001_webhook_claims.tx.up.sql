-- Webhook claims that cost the same whatever the backlog, and per-endpoint
-- delivery limits.

-- How many attempts to an endpoint a dispatcher makes at once, and how many
-- per second (0: no limit).
ALTER TABLE webhook_endpoints ADD COLUMN max_in_flight INTEGER NOT NULL DEFAULT 16;
ALTER TABLE webhook_endpoints ADD COLUMN rate_limit INTEGER NOT NULL DEFAULT 0;

-- claimable_at is when a pending delivery can next be claimed: its
-- next_attempt_at, or while a dispatcher holds it the end of its lease.
-- Like the other time columns it is TEXT in UTC, compared as text.
ALTER TABLE webhook_deliveries ADD COLUMN claimable_at TEXT NOT NULL DEFAULT '';
UPDATE webhook_deliveries
   SET claimable_at = CASE WHEN lease_until > next_attempt_at THEN lease_until ELSE next_attempt_at END;

-- "Due now, per endpoint, oldest first".
CREATE INDEX webhook_deliveries_claim_idx ON webhook_deliveries (endpoint_id, claimable_at, id)
    WHERE status = 'pending';

-- The dispatcher's idle check: the next claimable and the oldest pending
-- delivery, each one index entry away.
DROP INDEX webhook_deliveries_due_idx;
CREATE INDEX webhook_deliveries_claimable_idx ON webhook_deliveries (claimable_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_pending_created_idx ON webhook_deliveries (created_at)
    WHERE status = 'pending';
