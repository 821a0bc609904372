-- The fleet's registry: one row per instance of the service sharing the
-- database, keyed by its NODE_URL and replaced by each of its beats. A row
-- found gone keeps its gone_at until it is removed; a beat in between makes
-- it live again. As in the accounts migration: no foreign keys, timestamps
-- set by the service in UTC. The node sorts by its bytes, whatever the
-- database's collation, so that List orders alike in every store.

CREATE TABLE instances (
    node       text COLLATE "C" PRIMARY KEY,
    id         text NOT NULL,
    capacity   integer NOT NULL,
    running    integer NOT NULL,
    draining   boolean NOT NULL,
    version    text NOT NULL,
    engine     text NOT NULL,
    started_at timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL,
    gone_at    timestamptz
);
