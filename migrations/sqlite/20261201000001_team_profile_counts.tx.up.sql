-- How many profiles each team holds, so that a create checks the quota in
-- the statement that counts it. The table has PostgreSQL's shape (a count
-- spread over shards, a profile remembering its shard); SQLite runs one
-- writer at a time, so it uses one shard, 0.
CREATE TABLE team_profile_counts (
    team_id  TEXT NOT NULL,
    shard    INTEGER NOT NULL,
    profiles INTEGER NOT NULL,
    PRIMARY KEY (team_id, shard)
);

ALTER TABLE profiles ADD COLUMN quota_shard INTEGER NOT NULL DEFAULT 0;

INSERT INTO team_profile_counts (team_id, shard, profiles)
SELECT team_id, 0, count(*) FROM profiles GROUP BY team_id;
