-- Profiles are written as plain rows. The quota is counted by the service
-- under the team's row lock (SELECT ... FOR UPDATE on teams), so the
-- team's profile count, spread over 16 shards, and the shard each profile
-- remembered go; so do the list's change counts (nothing serves copies of
-- a page any more) and the copy of each profile's proxy view, which a
-- read now joins from proxies, as on SQLite. No profile or proxy changes.
DROP TRIGGER profiles_list_changed ON profiles;
DROP TRIGGER proxies_list_changed ON proxies;
DROP FUNCTION profile_list_changed();
DROP TABLE team_profile_counts;
ALTER TABLE profiles DROP COLUMN quota_shard;

DROP TRIGGER profiles_proxy_view_insert ON profiles;
DROP TRIGGER profiles_proxy_view_update ON profiles;
DROP TRIGGER proxies_profiles_view ON proxies;
DROP TRIGGER proxies_profiles_view_delete ON proxies;
DROP FUNCTION profile_proxy_view();
DROP FUNCTION proxy_profiles_view();
ALTER TABLE profiles DROP COLUMN proxy_view;
