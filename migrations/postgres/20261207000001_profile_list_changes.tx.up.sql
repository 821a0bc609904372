-- A team's list of profiles is validated against the database: changes
-- counts every write of the team's profiles, and of a proxy they show, in
-- the transaction of the write, so the sum of a team's changes is a
-- version of its list that a committed write always moves forward. An
-- instance may then serve a page it rendered while that sum has not moved,
-- reading 16 small rows instead of 50 profiles.
--
-- A create and a delete count the change in the shard they count the
-- profile in (bunstore). Any other write is counted by the triggers below,
-- in the shard the connection names (profilesvc.list_shard, set by the
-- service on each of its connections, so its concurrent writers do not
-- wait on one row lock), 0 for any other client.
ALTER TABLE team_profile_counts ADD COLUMN changes bigint NOT NULL DEFAULT 0;

CREATE FUNCTION profile_list_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO team_profile_counts AS t (team_id, shard, profiles, changes)
    VALUES (NEW.team_id, coalesce(nullif(current_setting('profilesvc.list_shard', true), '')::integer, 0), 0, 1)
    ON CONFLICT (team_id, shard) DO UPDATE SET changes = t.changes + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER profiles_list_changed AFTER UPDATE ON profiles
    FOR EACH ROW EXECUTE FUNCTION profile_list_changed();

-- Profiles show their proxy's type, host and port.
CREATE TRIGGER proxies_list_changed AFTER UPDATE ON proxies
    FOR EACH ROW
    WHEN (OLD.type IS DISTINCT FROM NEW.type OR OLD.host IS DISTINCT FROM NEW.host OR OLD.port IS DISTINCT FROM NEW.port)
    EXECUTE FUNCTION profile_list_changed();
