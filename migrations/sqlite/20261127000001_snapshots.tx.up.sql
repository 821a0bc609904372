-- Snapshots: the time machine. A profile refers to its browser data and
-- cookies by the sha256 of their blobs; a snapshot keeps a profile's
-- settings and those references as they were at one moment. Blobs are
-- shared by content, so one is deleted only once no profile and no snapshot
-- of any team refers to it: blob_garbage holds the candidates released by
-- whoever dropped a reference, and blob_uploads the uploads in progress,
-- during which no candidate may go.
-- As in the accounts migration: no foreign keys, timestamps are TEXT in UTC
-- written by the service, and tables are STRICT.

-- The data and cookie columns are all NULL while the profile has none.
ALTER TABLE profiles ADD COLUMN data_sha256 TEXT;
ALTER TABLE profiles ADD COLUMN data_size INTEGER;
ALTER TABLE profiles ADD COLUMN data_updated_at TEXT;
ALTER TABLE profiles ADD COLUMN cookies_sha256 TEXT;
ALTER TABLE profiles ADD COLUMN cookies_size INTEGER;

-- Whether a profile still refers to a candidate blob.
CREATE INDEX profiles_data_sha256_idx ON profiles (data_sha256) WHERE data_sha256 IS NOT NULL;
CREATE INDEX profiles_cookies_sha256_idx ON profiles (cookies_sha256) WHERE cookies_sha256 IS NOT NULL;

-- The fingerprint has a column per field, as in profiles. proxy_id is the
-- proxy the profile used; the proxy_ref columns are how it looked then, all
-- NULL when it is not shown. tags is a JSON array, in the profile's order.
CREATE TABLE snapshots (
    id             TEXT PRIMARY KEY,
    team_id        TEXT NOT NULL,
    profile_id     TEXT NOT NULL,
    label          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    name           TEXT NOT NULL,
    template_id    TEXT NOT NULL,
    browser        TEXT NOT NULL,
    user_agent     TEXT NOT NULL,
    platform       TEXT NOT NULL,
    locale         TEXT NOT NULL,
    timezone       TEXT NOT NULL,
    screen_width   INTEGER NOT NULL,
    screen_height  INTEGER NOT NULL,
    proxy_id       TEXT,
    proxy_ref_id   TEXT,
    proxy_ref_type TEXT,
    proxy_ref_host TEXT,
    proxy_ref_port INTEGER,
    tags           TEXT NOT NULL,
    notes          TEXT NOT NULL,
    data_sha256    TEXT,
    data_size      INTEGER,
    cookies_sha256 TEXT,
    cookies_size   INTEGER,
    created_by     TEXT NOT NULL,
    created_at     TEXT NOT NULL
) STRICT;

-- A profile's page of snapshots, newest (highest id) first.
CREATE INDEX snapshots_team_profile_id_idx ON snapshots (team_id, profile_id, id);

-- Whether a snapshot still refers to a candidate blob.
CREATE INDEX snapshots_data_sha256_idx ON snapshots (data_sha256) WHERE data_sha256 IS NOT NULL;
CREATE INDEX snapshots_cookies_sha256_idx ON snapshots (cookies_sha256) WHERE cookies_sha256 IS NOT NULL;

-- Uploads in progress, until they end or expire.
CREATE TABLE blob_uploads (
    id         TEXT PRIMARY KEY,
    expires_at TEXT NOT NULL
) STRICT;

CREATE INDEX blob_uploads_expires_at_idx ON blob_uploads (expires_at);

-- Blobs that may have lost their last reference, and when.
CREATE TABLE blob_garbage (
    sha256      TEXT PRIMARY KEY,
    released_at TEXT NOT NULL
) STRICT;

CREATE INDEX blob_garbage_released_at_idx ON blob_garbage (released_at, sha256);
