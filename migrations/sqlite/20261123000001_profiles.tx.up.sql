-- Profiles: a team's browser identities, each with the session (lease) under
-- which it runs at most once, and their tags.
-- As in the accounts migration: no foreign keys, timestamps are TEXT in UTC
-- written by the service, and tables are STRICT.
-- The fingerprint has a column per field rather than a JSON document, so
-- that every store returns exactly the values written.
-- The session columns are all NULL while the profile is idle; session_id is
-- the one the store tests.

CREATE TABLE profiles (
    id                  TEXT PRIMARY KEY,
    team_id             TEXT NOT NULL,
    name                TEXT NOT NULL,
    template_id         TEXT NOT NULL,
    browser             TEXT NOT NULL,
    user_agent          TEXT NOT NULL,
    platform            TEXT NOT NULL,
    locale              TEXT NOT NULL,
    timezone            TEXT NOT NULL,
    screen_width        INTEGER NOT NULL,
    screen_height       INTEGER NOT NULL,
    proxy_id            TEXT,
    notes               TEXT NOT NULL,
    version             INTEGER NOT NULL,
    created_by          TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    session_id          TEXT,
    session_started_at  TEXT,
    session_expires_at  TEXT,
    session_launched_by TEXT,
    session_headless    INTEGER,
    session_cdp_url     TEXT
) STRICT;

-- A team's page of profiles, newest (highest id) first.
CREATE INDEX profiles_team_id_idx ON profiles (team_id, id);

-- The reaper's scan of expired leases covers only running profiles.
CREATE INDEX profiles_session_expiry_idx ON profiles (session_expires_at, id)
    WHERE session_id IS NOT NULL;

-- position keeps the tags in the order the profile lists them.
CREATE TABLE profile_tags (
    profile_id TEXT NOT NULL,
    team_id    TEXT NOT NULL,
    tag        TEXT NOT NULL,
    position   INTEGER NOT NULL,
    PRIMARY KEY (profile_id, tag)
) STRICT;

CREATE INDEX profile_tags_team_tag_idx ON profile_tags (team_id, tag);
