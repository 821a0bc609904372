-- How many profiles each team holds, so that a create checks the quota in
-- the statement that counts it (PostgreSQL needs the row lock; SQLite keeps
-- the same table so that both stores count alike).
CREATE TABLE team_profile_counts (
    team_id  TEXT PRIMARY KEY,
    profiles INTEGER NOT NULL
);

INSERT INTO team_profile_counts (team_id, profiles)
SELECT team_id, count(*) FROM profiles GROUP BY team_id;
