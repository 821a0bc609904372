-- Proxies: a team's proxy pool. Only the sealed (encrypted) password is
-- kept, empty when there is none. last_check is the JSON object of the last
-- check made through the proxy, NULL until one is made.
CREATE TABLE proxies (
    id              text PRIMARY KEY,
    team_id         text NOT NULL,
    name            text NOT NULL,
    type            text NOT NULL,
    host            text NOT NULL,
    port            integer NOT NULL,
    username        text NOT NULL,
    password_sealed bytea NOT NULL,
    status          text NOT NULL,
    last_check      text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- A team's page of proxies, newest (highest id) first.
CREATE INDEX proxies_team_id_idx ON proxies (team_id, id);

-- Whether a profile of the team uses a proxy, before the proxy is deleted.
CREATE INDEX profiles_team_proxy_idx ON profiles (team_id, proxy_id) WHERE proxy_id IS NOT NULL;
