-- Idempotency records live in the primary store, written in the transaction
-- of the request's effect: a request whose effect committed always has its
-- record, and of two requests with one key only one commits. As in the
-- accounts migration: no foreign keys, timestamps set by the service in UTC.
-- headers is a JSON object; body is empty while the request runs and when the
-- response is withheld (credentials, or over the size kept).

CREATE TABLE idempotency_records (
    team_id     text NOT NULL,
    scope       text NOT NULL,
    idem_key    text NOT NULL,
    fingerprint bytea NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    done        boolean NOT NULL,
    withheld    text NOT NULL,
    status      integer NOT NULL,
    headers     text NOT NULL,
    body        bytea NOT NULL,
    PRIMARY KEY (team_id, scope, idem_key)
);

-- A team's live records are counted against its bound on every new key.
CREATE INDEX idempotency_records_team_expires ON idempotency_records (team_id, expires_at);
-- Expired records are deleted in small batches, oldest first.
CREATE INDEX idempotency_records_expires ON idempotency_records (expires_at);
