-- A team's list of profiles is validated against the database: changes
-- counts every write of the team's profiles, and of a proxy they show, in
-- the transaction of the write (see the PostgreSQL migration). A create and
-- a delete count it with the profile; the triggers count the rest.
ALTER TABLE team_profile_counts ADD COLUMN changes INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER profiles_list_changed AFTER UPDATE ON profiles
BEGIN
    INSERT INTO team_profile_counts (team_id, shard, profiles, changes) VALUES (NEW.team_id, 0, 0, 1)
    ON CONFLICT (team_id, shard) DO UPDATE SET changes = changes + 1;
END;

-- Profiles show their proxy's type, host and port.
CREATE TRIGGER proxies_list_changed AFTER UPDATE ON proxies
WHEN OLD.type IS NOT NEW.type OR OLD.host IS NOT NEW.host OR OLD.port IS NOT NEW.port
BEGIN
    INSERT INTO team_profile_counts (team_id, shard, profiles, changes) VALUES (NEW.team_id, 0, 0, 1)
    ON CONFLICT (team_id, shard) DO UPDATE SET changes = changes + 1;
END;
