-- Profiles are written as plain rows: the quota is counted by the service
-- in its write transaction (SQLite runs one writer at a time), so the
-- team's profile count and the shard each profile remembered go, and so
-- do the list's change counts (nothing serves copies of a page any more).
-- No profile or proxy changes.
DROP TRIGGER profiles_list_changed;
DROP TRIGGER proxies_list_changed;
DROP TABLE team_profile_counts;
ALTER TABLE profiles DROP COLUMN quota_shard;
