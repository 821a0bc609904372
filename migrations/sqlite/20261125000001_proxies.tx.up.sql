-- Proxies: a team's proxy pool. Only the sealed (encrypted) password is
-- kept, empty when there is none. last_check is the JSON object of the last
-- check made through the proxy, NULL until one is made.
-- As in the accounts migration: no foreign keys, timestamps are TEXT in UTC
-- written by the service, and tables are STRICT.
CREATE TABLE proxies (
    id              TEXT PRIMARY KEY,
    team_id         TEXT NOT NULL,
    name            TEXT NOT NULL,
    type            TEXT NOT NULL,
    host            TEXT NOT NULL,
    port            INTEGER NOT NULL,
    username        TEXT NOT NULL,
    password_sealed BLOB NOT NULL,
    status          TEXT NOT NULL,
    last_check      TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
) STRICT;

-- A team's page of proxies, newest (highest id) first.
CREATE INDEX proxies_team_id_idx ON proxies (team_id, id);

-- Whether a profile of the team uses a proxy, before the proxy is deleted.
CREATE INDEX profiles_team_proxy_idx ON profiles (team_id, proxy_id) WHERE proxy_id IS NOT NULL;
