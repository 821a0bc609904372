-- Profiles: a team's browser identities, each with the session (lease) under
-- which it runs at most once, and their tags.
-- As in the accounts migration: no foreign keys, and timestamps are set by
-- the service in UTC.
-- The fingerprint has a column per field rather than a JSON document, so
-- that every store returns exactly the values written.
-- The session columns are all NULL while the profile is idle; session_id is
-- the one the store tests.

-- Profiles are paged in id order: byte order ("C"), whatever the database's
-- collation, so that it matches the order in which ids are generated.
CREATE TABLE profiles (
    id                  text COLLATE "C" PRIMARY KEY,
    team_id             text NOT NULL,
    name                text NOT NULL,
    template_id         text NOT NULL,
    browser             text NOT NULL,
    user_agent          text NOT NULL,
    platform            text NOT NULL,
    locale              text NOT NULL,
    timezone            text NOT NULL,
    screen_width        integer NOT NULL,
    screen_height       integer NOT NULL,
    proxy_id            text,
    notes               text NOT NULL,
    version             integer NOT NULL,
    created_by          text NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    session_id          text,
    session_started_at  timestamptz,
    session_expires_at  timestamptz,
    session_launched_by text,
    session_headless    boolean,
    session_cdp_url     text
);

-- A team's page of profiles, newest (highest id) first.
CREATE INDEX profiles_team_id_idx ON profiles (team_id, id);

-- The reaper's scan of expired leases covers only running profiles.
CREATE INDEX profiles_session_expiry_idx ON profiles (session_expires_at, id)
    WHERE session_id IS NOT NULL;

-- position keeps the tags in the order the profile lists them.
CREATE TABLE profile_tags (
    profile_id text COLLATE "C" NOT NULL,
    team_id    text NOT NULL,
    tag        text NOT NULL,
    position   integer NOT NULL,
    PRIMARY KEY (profile_id, tag)
);

CREATE INDEX profile_tags_team_tag_idx ON profile_tags (team_id, tag);
