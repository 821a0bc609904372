-- Webhooks: a team's endpoints, the deliveries of its events to them with
-- every attempt, and the outbox's record of which events have been fanned
-- out to deliveries.
-- As in the accounts migration: no foreign keys, timestamps are TEXT in UTC
-- written by the service, and tables are STRICT.

-- dispatched_at is NULL until the event has been fanned out; the dispatcher
-- claims undispatched events in id order through the partial index.
ALTER TABLE outbox_events ADD COLUMN dispatched_at TEXT;

CREATE INDEX outbox_events_undispatched_idx ON outbox_events (id)
    WHERE dispatched_at IS NULL;

-- events is a JSON array of event types, in the order the endpoint lists
-- them; only the sealed (encrypted) secret is kept.
CREATE TABLE webhook_endpoints (
    id            TEXT PRIMARY KEY,
    team_id       TEXT NOT NULL,
    url           TEXT NOT NULL,
    events        TEXT NOT NULL,
    secret_sealed BLOB NOT NULL,
    enabled       INTEGER NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;

-- A team's page of endpoints, newest (highest id) first. TEXT compares
-- bytewise (BINARY), so ids sort in the order they are generated.
CREATE INDEX webhook_endpoints_team_id_idx ON webhook_endpoints (team_id, id);

-- payload keeps the exact bytes sent, which the signature covers. attempts
-- is a JSON array of the attempts. The lease columns are NULL while no
-- dispatcher holds the delivery.
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    team_id         TEXT NOT NULL,
    endpoint_id     TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        TEXT NOT NULL,
    round_start     INTEGER NOT NULL,
    next_attempt_at TEXT NOT NULL,
    lease_owner     TEXT,
    lease_until     TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
) STRICT;

-- An endpoint's page of deliveries, newest (highest id) first.
CREATE INDEX webhook_deliveries_team_endpoint_id_idx ON webhook_deliveries (team_id, endpoint_id, id);

-- The dispatcher's scan of due deliveries covers only pending ones.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at, id)
    WHERE status = 'pending';
