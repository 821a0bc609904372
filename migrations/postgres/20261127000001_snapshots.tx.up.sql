-- Snapshots: the time machine. A profile refers to its browser data and
-- cookies by the sha256 of their blobs; a snapshot keeps a profile's
-- settings and those references as they were at one moment. Blobs are
-- shared by content, so one is deleted only once no profile and no snapshot
-- of any team refers to it: blob_garbage holds the candidates released by
-- whoever dropped a reference, and blob_uploads the uploads in progress,
-- during which no candidate may go.
-- As in the accounts migration: no foreign keys, and timestamps are set by
-- the service in UTC.

-- The data and cookie columns are all NULL while the profile has none.
ALTER TABLE profiles ADD COLUMN data_sha256 text;
ALTER TABLE profiles ADD COLUMN data_size bigint;
ALTER TABLE profiles ADD COLUMN data_updated_at timestamptz;
ALTER TABLE profiles ADD COLUMN cookies_sha256 text;
ALTER TABLE profiles ADD COLUMN cookies_size bigint;

-- Whether a profile still refers to a candidate blob.
CREATE INDEX profiles_data_sha256_idx ON profiles (data_sha256) WHERE data_sha256 IS NOT NULL;
CREATE INDEX profiles_cookies_sha256_idx ON profiles (cookies_sha256) WHERE cookies_sha256 IS NOT NULL;

-- The fingerprint has a column per field, as in profiles. proxy_id is the
-- proxy the profile used; the proxy_ref columns are how it looked then, all
-- NULL when it is not shown. tags is a JSON array, in the profile's order.
-- Snapshots are paged in id order: byte order ("C"), as profiles are.
CREATE TABLE snapshots (
    id             text COLLATE "C" PRIMARY KEY,
    team_id        text NOT NULL,
    profile_id     text COLLATE "C" NOT NULL,
    label          text NOT NULL,
    kind           text NOT NULL,
    name           text NOT NULL,
    template_id    text NOT NULL,
    browser        text NOT NULL,
    user_agent     text NOT NULL,
    platform       text NOT NULL,
    locale         text NOT NULL,
    timezone       text NOT NULL,
    screen_width   integer NOT NULL,
    screen_height  integer NOT NULL,
    proxy_id       text,
    proxy_ref_id   text,
    proxy_ref_type text,
    proxy_ref_host text,
    proxy_ref_port integer,
    tags           text NOT NULL,
    notes          text NOT NULL,
    data_sha256    text,
    data_size      bigint,
    cookies_sha256 text,
    cookies_size   bigint,
    created_by     text NOT NULL,
    created_at     timestamptz NOT NULL
);

-- A profile's page of snapshots, newest (highest id) first.
CREATE INDEX snapshots_team_profile_id_idx ON snapshots (team_id, profile_id, id);

-- Whether a snapshot still refers to a candidate blob.
CREATE INDEX snapshots_data_sha256_idx ON snapshots (data_sha256) WHERE data_sha256 IS NOT NULL;
CREATE INDEX snapshots_cookies_sha256_idx ON snapshots (cookies_sha256) WHERE cookies_sha256 IS NOT NULL;

-- Uploads in progress, until they end or expire. A collector locks the
-- table against new rows while it deletes blobs.
CREATE TABLE blob_uploads (
    id         text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);

CREATE INDEX blob_uploads_expires_at_idx ON blob_uploads (expires_at);

-- Blobs that may have lost their last reference, and when.
CREATE TABLE blob_garbage (
    sha256      text PRIMARY KEY,
    released_at timestamptz NOT NULL
);

CREATE INDEX blob_garbage_released_at_idx ON blob_garbage (released_at, sha256);
