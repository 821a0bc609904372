-- Teams: invited members, some of whom have no account yet, and the
-- single-use invitations that make them active.
-- As in the accounts migration: no foreign keys, timestamps are TEXT in UTC
-- written by the service, and tables are STRICT.

-- A member invited by an email that no account has yet has an empty
-- user_id: a user is a member of a team once, but any number of invited
-- members may wait for an account.
DROP INDEX memberships_team_user_key;
CREATE UNIQUE INDEX memberships_team_user_key ON memberships (team_id, user_id)
    WHERE user_id <> '';

-- An email is a member of a team once, whatever its case; ByEmail looks it
-- up with the same expression, and so this index.
CREATE UNIQUE INDEX memberships_team_email_key ON memberships (team_id, lower(email));

-- A team's page of members, newest (highest id) first. TEXT compares
-- bytewise (BINARY), so ids sort in the order they are generated.
CREATE INDEX memberships_team_id_idx ON memberships (team_id, id);

-- Only the hash of an invitation's secret is kept.
CREATE TABLE invitations (
    id         TEXT PRIMARY KEY,
    team_id    TEXT NOT NULL,
    member_id  TEXT NOT NULL,
    email      TEXT NOT NULL,
    hash       BLOB NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT
) STRICT;
