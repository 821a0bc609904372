-- Blobs: large immutable content addressed by its sha256 (lowercase hex).
-- Content is kept in chunks of at most 1 MiB, written one statement at a
-- time under an upload id before the blobs row that makes them visible is
-- inserted, so that no transaction lasts as long as an upload. Chunks whose
-- upload id no blobs row names are the remains of a failed or abandoned
-- upload, removed once old.
CREATE SEQUENCE blob_upload_ids;

CREATE TABLE blobs (
    sha256     text PRIMARY KEY,
    size       bigint NOT NULL,
    upload_id  bigint NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE blob_chunks (
    upload_id  bigint NOT NULL,
    n          integer NOT NULL,
    data       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (upload_id, n)
);

-- The sweep of abandoned chunks looks them up by age.
CREATE INDEX blob_chunks_created_at_idx ON blob_chunks (created_at);
