-- Tenancy: quotas count a team's recent invitations; deliveries count the
-- attempts claimed, so an attempt lost with its instance still counts; and
-- endpoints take only the events committed after they were created.

-- A team's invitations of the last day, for the daily quota.
CREATE INDEX invitations_team_created_idx ON invitations (team_id, created_at);

-- started counts the attempts claimed, finished or not: a dispatcher that
-- dies mid-attempt has still made it. Existing rows start from the attempts
-- they recorded.
ALTER TABLE webhook_deliveries ADD COLUMN started INTEGER NOT NULL DEFAULT 0;
UPDATE webhook_deliveries SET started = json_array_length(attempts);

-- seq orders the outbox by insertion, set by the trigger below (SQLite
-- writes one transaction at a time, so insertion order is commit order);
-- existing rows are numbered as they stand. An endpoint records the highest
-- seq when it is created (after_seq) and takes only events above it, so an
-- event committed before the endpoint existed never reaches it.
ALTER TABLE outbox_events ADD COLUMN seq INTEGER;
UPDATE outbox_events SET seq = rowid;
CREATE INDEX outbox_events_seq_idx ON outbox_events (seq);
CREATE TRIGGER outbox_events_seq AFTER INSERT ON outbox_events
BEGIN
    UPDATE outbox_events
    SET seq = (SELECT coalesce(max(seq), 0) + 1 FROM outbox_events)
    WHERE rowid = NEW.rowid;
END;
ALTER TABLE webhook_endpoints ADD COLUMN after_seq INTEGER NOT NULL DEFAULT 0;
