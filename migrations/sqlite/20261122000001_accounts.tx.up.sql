-- Accounts: users, teams, memberships and credentials, plus the outbox that
-- carries events out of the transaction that caused them.
-- There are no foreign keys: every store, the in-memory one included, must
-- accept the same writes, so which rows may refer to which is the
-- application's rule, not the schema's.
-- Timestamps are TEXT written by the service in UTC with a fixed "+00:00"
-- suffix (microsecond precision), which sorts in time order; no column has a
-- time default. STRICT tables refuse values of the wrong type.

CREATE TABLE users (
    id              TEXT PRIMARY KEY,
    email           TEXT NOT NULL,
    name            TEXT NOT NULL,
    password_hash   TEXT NOT NULL,
    default_team_id TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
) STRICT;

-- Emails are unique case-insensitively even when a caller stores one that is
-- not normalised; lookups use the same expression, and so this index.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE teams (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;

CREATE TABLE memberships (
    id         TEXT PRIMARY KEY,
    team_id    TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    email      TEXT NOT NULL,
    role       TEXT NOT NULL,
    status     TEXT NOT NULL,
    invited_at TEXT NOT NULL,
    joined_at  TEXT
) STRICT;

CREATE UNIQUE INDEX memberships_team_user_key ON memberships (team_id, user_id);
CREATE INDEX memberships_user_idx ON memberships (user_id, invited_at);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    hash         BLOB NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT
) STRICT;

CREATE INDEX api_keys_team_user_idx ON api_keys (team_id, user_id, created_at);

CREATE TABLE refresh_tokens (
    id         TEXT PRIMARY KEY,
    family_id  TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    team_id    TEXT NOT NULL,
    hash       BLOB NOT NULL,
    issued_at  TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT,
    revoked_at TEXT
) STRICT;

CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user_idx ON refresh_tokens (user_id);

CREATE TABLE reset_tokens (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    hash       BLOB NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT
) STRICT;

-- data keeps the event's JSON bytes exactly as written.
CREATE TABLE outbox_events (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL,
    type        TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    data        TEXT NOT NULL,
    created_at  TEXT NOT NULL
) STRICT;
