-- A team's profile count is one row again: a create counts itself in it
-- with an upsert conditional on the quota, which holds the row's lock
-- until the create commits, and a delete uncounts itself there. The 16
-- shards per team, the bound each carried and the shard each profile
-- remembered are gone; each team's row holds the sum of its shards'
-- profiles and changes, so no count is lost and its list's version
-- (the sum of its changes) stays where it was.
CREATE TABLE team_profile_counts_one (
    team_id  text PRIMARY KEY,
    profiles integer NOT NULL,
    changes  bigint NOT NULL DEFAULT 0
);

INSERT INTO team_profile_counts_one (team_id, profiles, changes)
SELECT team_id, sum(profiles), sum(changes) FROM team_profile_counts GROUP BY team_id;

DROP TABLE team_profile_counts;
ALTER TABLE team_profile_counts_one RENAME TO team_profile_counts;
ALTER INDEX team_profile_counts_one_pkey RENAME TO team_profile_counts_pkey;

ALTER TABLE profiles DROP COLUMN quota_shard;

-- The other writes of a team's profiles (and of a proxy they show) count
-- their change in the team's row too; connections no longer name a shard.
CREATE OR REPLACE FUNCTION profile_list_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO team_profile_counts AS t (team_id, profiles, changes) VALUES (NEW.team_id, 0, 1)
    ON CONFLICT (team_id) DO UPDATE SET changes = t.changes + 1;
    RETURN NULL;
END
$$;

-- A profile read joins its proxy's view from proxies, as on SQLite; the
-- copy kept in the profile's row, and the triggers that kept it, go.
DROP TRIGGER profiles_proxy_view_insert ON profiles;
DROP TRIGGER profiles_proxy_view_update ON profiles;
DROP TRIGGER proxies_profiles_view ON proxies;
DROP TRIGGER proxies_profiles_view_delete ON proxies;
DROP FUNCTION profile_proxy_view();
DROP FUNCTION proxy_profiles_view();
ALTER TABLE profiles DROP COLUMN proxy_view;
