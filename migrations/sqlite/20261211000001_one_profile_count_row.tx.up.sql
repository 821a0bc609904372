-- A team's profile count is one row, keyed by the team (as on
-- PostgreSQL): the shard column, always 0 here, and the shard each profile
-- remembered are gone. The triggers that count changes name the table's
-- key, so they are made again with it.
DROP TRIGGER profiles_list_changed;
DROP TRIGGER proxies_list_changed;

CREATE TABLE team_profile_counts_one (
    team_id  TEXT PRIMARY KEY,
    profiles INTEGER NOT NULL,
    changes  INTEGER NOT NULL DEFAULT 0
);

INSERT INTO team_profile_counts_one (team_id, profiles, changes)
SELECT team_id, sum(profiles), sum(changes) FROM team_profile_counts GROUP BY team_id;

DROP TABLE team_profile_counts;
ALTER TABLE team_profile_counts_one RENAME TO team_profile_counts;

ALTER TABLE profiles DROP COLUMN quota_shard;

CREATE TRIGGER profiles_list_changed AFTER UPDATE ON profiles
BEGIN
    INSERT INTO team_profile_counts (team_id, profiles, changes) VALUES (NEW.team_id, 0, 1)
    ON CONFLICT (team_id) DO UPDATE SET changes = changes + 1;
END;

-- Profiles show their proxy's type, host and port.
CREATE TRIGGER proxies_list_changed AFTER UPDATE ON proxies
WHEN OLD.type IS NOT NEW.type OR OLD.host IS NOT NEW.host OR OLD.port IS NOT NEW.port
BEGIN
    INSERT INTO team_profile_counts (team_id, profiles, changes) VALUES (NEW.team_id, 0, 1)
    ON CONFLICT (team_id) DO UPDATE SET changes = changes + 1;
END;
