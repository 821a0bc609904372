-- Idempotency records live in the primary store, written in the transaction
-- of the request's effect: a request whose effect committed always has its
-- record, and of two requests with one key only one commits. As in the
-- accounts migration: no foreign keys, timestamps are TEXT in UTC written by
-- the service, and tables are STRICT. headers is a JSON object; body is empty
-- while the request runs and when the response is withheld (credentials, or
-- over the size kept).

CREATE TABLE idempotency_records (
    team_id     TEXT NOT NULL,
    scope       TEXT NOT NULL,
    idem_key    TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    done        INTEGER NOT NULL,
    withheld    TEXT NOT NULL,
    status      INTEGER NOT NULL,
    headers     TEXT NOT NULL,
    body        BLOB NOT NULL,
    PRIMARY KEY (team_id, scope, idem_key)
) STRICT;

-- A team's live records are counted against its bound on every new key.
CREATE INDEX idempotency_records_team_expires ON idempotency_records (team_id, expires_at);
-- Expired records are deleted in small batches, oldest first.
CREATE INDEX idempotency_records_expires ON idempotency_records (expires_at);
