-- The fleet's registry: one row per instance of the service sharing the
-- database, keyed by its NODE_URL and replaced by each of its beats. A row
-- found gone keeps its gone_at until it is removed; a beat in between makes
-- it live again. As in the accounts migration: no foreign keys, timestamps
-- are TEXT in UTC written by the service, booleans are INTEGER, and tables
-- are STRICT.

CREATE TABLE instances (
    node       TEXT PRIMARY KEY,
    id         TEXT NOT NULL,
    capacity   INTEGER NOT NULL,
    running    INTEGER NOT NULL,
    draining   INTEGER NOT NULL,
    version    TEXT NOT NULL,
    engine     TEXT NOT NULL,
    started_at TEXT NOT NULL,
    seen_at    TEXT NOT NULL,
    gone_at    TEXT
) STRICT;
