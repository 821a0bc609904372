-- A profile's tags, as a JSON array in its order, on the profile's own row
-- (as on PostgreSQL): a read no longer looks them up in profile_tags row by
-- row. profile_tags stays the index that a filter by tag reads; the store
-- writes both in the same transaction.
ALTER TABLE profiles ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';

UPDATE profiles SET tags = (
    SELECT json_group_array(tag) FROM (SELECT pt.tag FROM profile_tags AS pt WHERE pt.profile_id = profiles.id ORDER BY pt.position)
) WHERE EXISTS (SELECT 1 FROM profile_tags AS pt WHERE pt.profile_id = profiles.id);
