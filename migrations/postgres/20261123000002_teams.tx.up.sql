-- Teams: invited members, some of whom have no account yet, and the
-- single-use invitations that make them active.
-- As in the accounts migration: no foreign keys, and timestamps are set by
-- the service in UTC.

-- A member invited by an email that no account has yet has an empty
-- user_id: a user is a member of a team once, but any number of invited
-- members may wait for an account.
DROP INDEX memberships_team_user_key;
CREATE UNIQUE INDEX memberships_team_user_key ON memberships (team_id, user_id)
    WHERE user_id <> '';

-- An email is a member of a team once, whatever its case; ByEmail looks it
-- up with the same expression, and so this index.
CREATE UNIQUE INDEX memberships_team_email_key ON memberships (team_id, lower(email));

-- A team's members are paged in id order: byte order ("C"), whatever the
-- database's collation, as profiles are, so that it matches the order in
-- which ids are generated. Changing the collation rebuilds the primary key.
ALTER TABLE memberships ALTER COLUMN id TYPE text COLLATE "C";

-- A team's page of members, newest (highest id) first.
CREATE INDEX memberships_team_id_idx ON memberships (team_id, id);

-- Only the hash of an invitation's secret is kept.
CREATE TABLE invitations (
    id         text PRIMARY KEY,
    team_id    text NOT NULL,
    member_id  text NOT NULL,
    email      text NOT NULL,
    hash       bytea NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
