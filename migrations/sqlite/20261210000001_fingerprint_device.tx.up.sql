-- A profile's fingerprint became a whole device (as on PostgreSQL): the six
-- columns it had stay, the rest is one JSON document in device, on
-- profiles and on snapshots. Rows written before hold '' there, and are
-- read with a device derived from the profile's id.
ALTER TABLE profiles ADD COLUMN device TEXT NOT NULL DEFAULT '';

ALTER TABLE snapshots ADD COLUMN device TEXT NOT NULL DEFAULT '';
