-- Accounts: users, teams, memberships and credentials, plus the outbox that
-- carries events out of the transaction that caused them.
-- There are no foreign keys: every store, the in-memory one included, must
-- accept the same writes, so which rows may refer to which is the
-- application's rule, not the schema's.
-- Timestamps are set by the service in UTC; no column has a time default.

CREATE TABLE users (
    id              text PRIMARY KEY,
    email           text NOT NULL,
    name            text NOT NULL,
    password_hash   text NOT NULL,
    default_team_id text NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- Emails are unique case-insensitively even when a caller stores one that is
-- not normalised; lookups use the same expression, and so this index.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE teams (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE memberships (
    id         text PRIMARY KEY,
    team_id    text NOT NULL,
    user_id    text NOT NULL,
    email      text NOT NULL,
    role       text NOT NULL,
    status     text NOT NULL,
    invited_at timestamptz NOT NULL,
    joined_at  timestamptz
);

CREATE UNIQUE INDEX memberships_team_user_key ON memberships (team_id, user_id);
CREATE INDEX memberships_user_idx ON memberships (user_id, invited_at);

CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    team_id      text NOT NULL,
    user_id      text NOT NULL,
    name         text NOT NULL,
    prefix       text NOT NULL,
    hash         bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz
);

CREATE INDEX api_keys_team_user_idx ON api_keys (team_id, user_id, created_at);

CREATE TABLE refresh_tokens (
    id         text PRIMARY KEY,
    family_id  text NOT NULL,
    user_id    text NOT NULL,
    team_id    text NOT NULL,
    hash       bytea NOT NULL,
    issued_at  timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    revoked_at timestamptz
);

CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user_idx ON refresh_tokens (user_id);

CREATE TABLE reset_tokens (
    id         text PRIMARY KEY,
    user_id    text NOT NULL,
    hash       bytea NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

-- The outbox is read in id order: byte order ("C"), whatever the database's
-- collation, so that it matches the order in which ids are generated.
-- data is json, not jsonb: json keeps the bytes exactly as written.
CREATE TABLE outbox_events (
    id          text COLLATE "C" PRIMARY KEY,
    team_id     text NOT NULL,
    type        text NOT NULL,
    occurred_at timestamptz NOT NULL,
    data        json NOT NULL,
    created_at  timestamptz NOT NULL
);
