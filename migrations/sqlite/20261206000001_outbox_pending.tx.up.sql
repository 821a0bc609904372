-- The outbox's events not yet fanned out are listed in outbox_pending (a
-- trigger adds every event written), and a fan-out deletes them from it:
-- outbox_events is only ever inserted into and pruned, as on PostgreSQL.
-- Retention now counts from when an event occurred (occurred_at), once it
-- has been fanned out.
CREATE TABLE outbox_pending (
    id TEXT PRIMARY KEY
);

INSERT INTO outbox_pending (id) SELECT id FROM outbox_events WHERE dispatched_at IS NULL;

DROP INDEX outbox_events_undispatched_idx;
DROP INDEX outbox_events_dispatched_idx;
ALTER TABLE outbox_events DROP COLUMN dispatched_at;

CREATE TRIGGER outbox_events_pending AFTER INSERT ON outbox_events
BEGIN
    INSERT INTO outbox_pending (id) VALUES (NEW.id);
END;

-- Events are pruned oldest first.
CREATE INDEX outbox_events_occurred_idx ON outbox_events (occurred_at, id);
