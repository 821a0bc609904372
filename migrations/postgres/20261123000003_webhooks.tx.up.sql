-- Webhooks: a team's endpoints, the deliveries of its events to them with
-- every attempt, and the outbox's record of which events have been fanned
-- out to deliveries.
-- As in the accounts migration: no foreign keys, and timestamps are set by
-- the service in UTC.

-- dispatched_at is NULL until the event has been fanned out; the dispatcher
-- claims undispatched events in id order through the partial index.
ALTER TABLE outbox_events ADD COLUMN dispatched_at timestamptz;

CREATE INDEX outbox_events_undispatched_idx ON outbox_events (id)
    WHERE dispatched_at IS NULL;

-- Endpoints are paged in id order: byte order ("C"), whatever the
-- database's collation, so that it matches the order in which ids are
-- generated. events is a JSON array of event types as text, in the order
-- the endpoint lists them; only the sealed (encrypted) secret is kept.
CREATE TABLE webhook_endpoints (
    id            text COLLATE "C" PRIMARY KEY,
    team_id       text NOT NULL,
    url           text NOT NULL,
    events        text NOT NULL,
    secret_sealed bytea NOT NULL,
    enabled       boolean NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);

-- A team's page of endpoints, newest (highest id) first.
CREATE INDEX webhook_endpoints_team_id_idx ON webhook_endpoints (team_id, id);

-- payload is text, not json: the exact bytes sent, which the signature
-- covers. attempts is a JSON array of the attempts as text. The lease
-- columns are NULL while no dispatcher holds the delivery.
CREATE TABLE webhook_deliveries (
    id              text COLLATE "C" PRIMARY KEY,
    team_id         text NOT NULL,
    endpoint_id     text COLLATE "C" NOT NULL,
    event_id        text NOT NULL,
    event_type      text NOT NULL,
    payload         text NOT NULL,
    status          text NOT NULL,
    attempts        text NOT NULL,
    round_start     integer NOT NULL,
    next_attempt_at timestamptz NOT NULL,
    lease_owner     text,
    lease_until     timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- An endpoint's page of deliveries, newest (highest id) first.
CREATE INDEX webhook_deliveries_team_endpoint_id_idx ON webhook_deliveries (team_id, endpoint_id, id);

-- The dispatcher's scan of due deliveries covers only pending ones.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at, id)
    WHERE status = 'pending';
