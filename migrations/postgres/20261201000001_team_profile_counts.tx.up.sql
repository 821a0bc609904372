-- How many profiles each team holds, so that a create checks the quota in
-- the statement that inserts the profile. The count is spread over 16 rows
-- per team (shards): a create counts itself in one, under that row's lock
-- until it commits, so a team's creates do not all queue on one row (and
-- one commit's flush after another). A shard admits creates up to its share
-- of the quota; the shares add up to the quota. A profile remembers its
-- shard (quota_shard) so that its delete uncounts it there. The number of
-- shards is bunstore's profileShards: change both together.
CREATE TABLE team_profile_counts (
    team_id  text NOT NULL,
    shard    integer NOT NULL,
    profiles integer NOT NULL,
    PRIMARY KEY (team_id, shard)
);

ALTER TABLE profiles ADD COLUMN quota_shard integer NOT NULL DEFAULT 0;

-- Existing profiles are spread evenly, lower shards first, as the shares
-- are: a team within its quota has every shard within its share.
UPDATE profiles AS p SET quota_shard = s.n % 16
FROM (SELECT id, row_number() OVER (PARTITION BY team_id ORDER BY id) - 1 AS n FROM profiles) AS s
WHERE p.id = s.id;

INSERT INTO team_profile_counts (team_id, shard, profiles)
SELECT team_id, quota_shard, count(*) FROM profiles GROUP BY team_id, quota_shard;
