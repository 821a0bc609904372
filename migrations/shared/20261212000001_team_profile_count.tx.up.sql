-- Each team's number of profiles, which the profile store keeps in the
-- transaction that inserts or deletes one. A create reads it under the
-- team row's lock to check the quota in one row, where counting the
-- team's profiles read them all.
ALTER TABLE teams ADD COLUMN profile_count integer NOT NULL DEFAULT 0;

UPDATE teams SET profile_count = (SELECT count(*) FROM profiles WHERE profiles.team_id = teams.id);
